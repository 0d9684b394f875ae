#!/usr/bin/env python3
"""Crafted models that fail in mixed precision, each with the node at
fault known (issue 23; docs/Diagnostics.md):

  activation_overflow  |x| (x uniform in [-1, 1), amp-run's synthetic data)
                       times weights near 1000 summed over 256 inputs: the
                       Linear layer's outputs are near 1.3e5, finite in fp32,
                       inf past fp16's 65504 in the f16 GEMM (node
                       "fc/Gemm", forward); then scaled by 1e-5, so that the
                       loss and its gradients are of order one

  optimizer_nan        a Linear layer whose output the loss multiplies by
                       zero: its gradients are exactly 0, and the AdamW
                       node's epsilon is set to 0 (a bad optimizer
                       setting), so its update is 0 / 0: the optimizer
                       (node "onnx::AdamWOptimizer::...") makes the weights
                       NaN from finite inputs

  reduction_overflow   a sum over 4096 features written as a MatMul with a
                       ones matrix (as pooling layers write sums): each term
                       40 |x| is at most 40, far inside fp16's range, but
                       the sums are near 8.2e4, past 65504, so the f16
                       MatMul's outputs are inf (node "pool/MatMul",
                       forward); then scaled by 1e-5

  gradient_underflow   a Linear layer whose output is scaled by 1e-4 (small
                       outputs fitted to small targets, from the data folder
                       `data/` written beside the model): the loss's
                       gradient is near 6e-6 and, through the Mul's
                       gradient (fp32: its inputs are), near 6e-10, under
                       fp16's smallest subnormal (6e-8) unless the loss
                       scale lifts it: at a static loss scale of 1 the f16
                       weight-gradient Gemm (node "fc/Gemm_Grad/Gemm_0")
                       reads it as 0, so the weights do not learn; at 65536
                       it is 4e-5

  lost_update          a frozen base weight of 3 plus a trained low-rank
                       change (LoRA's B A, B from 0), merged before the
                       product (node "merge/Add") as DoRA and merged
                       adapters do; inputs centered so that x W0 = 0 and the
                       output is the change's alone. The change, near 5e-4,
                       is under half of fp16's spacing at 3 (2^-10): the f16
                       product (node "fc/Gemm", which the default policy
                       also paints the merge fp16 for) reads the merged
                       weight as 3 and outputs 0; the trained masters keep
                       the change (fp32), so the loss stalls, then jumps as
                       the change crosses the spacing

Each is written as onnxruntime-training's generate_artifacts writes a
training model (MSE loss against a `target` input, AdamW), with a
`faults.txt` naming the node at fault. Run with the onnxruntime-training
venv's python:  failure_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import amp_run_vs_ort  # noqa: E402,F401 (onnxruntime.training without torch)
from onnxruntime.training import artifacts  # noqa: E402


def overflow_inits(w):
    """The overflow models' initializers: the Linear's weight `w`, a zero
    bias of 8 and the 1e-5 scale before the loss."""
    return [numpy_helper.from_array(w, "fc.weight"),
            numpy_helper.from_array(np.zeros(8, np.float32), "fc.bias"),
            numpy_helper.from_array(np.array(1e-5, np.float32), "scale")]


def activation_overflow():
    rng = np.random.default_rng(0)
    w = rng.uniform(900.0, 1100.0, (8, 256)).astype(np.float32)
    nodes = [helper.make_node("Abs", ["input"], ["magnitude"], name="abs/Abs"),
             helper.make_node("Gemm", ["magnitude", "fc.weight", "fc.bias"],
                              ["hidden"], name="fc/Gemm", transB=1),
             helper.make_node("Mul", ["hidden", "scale"], ["output"],
                              name="scale/Mul")]
    return nodes, overflow_inits(w), 256, 8, "fc/Gemm"


def matmul_overflow():
    """activation_overflow's Linear as PyTorch exports one on [batch, seq,
    features]: MatMul with the weight, then the Add of the bias. The product
    before the bias is the value that overflows (amprt-fuse makes the two one
    gemm; --collect-ranges must still measure the product)."""
    rng = np.random.default_rng(0)
    w = rng.uniform(900.0, 1100.0, (256, 8)).astype(np.float32)
    nodes = [helper.make_node("Abs", ["input"], ["magnitude"], name="abs/Abs"),
             helper.make_node("MatMul", ["magnitude", "fc.weight"],
                              ["product"], name="fc/MatMul"),
             helper.make_node("Add", ["product", "fc.bias"], ["hidden"],
                              name="fc/Add"),
             helper.make_node("Mul", ["hidden", "scale"], ["output"],
                              name="scale/Mul")]
    return nodes, overflow_inits(w), 256, 8, "fc/MatMul"


def scaled_linear(factor_name, factor):
    """A Linear layer 16 -> 8 (weights N(0, 0.1), zero bias) whose output
    `hidden` is multiplied by the scalar `factor_name` = `factor` (node
    "<factor_name>/Mul") into `output`."""
    rng = np.random.default_rng(0)
    w = rng.normal(0.0, 0.1, (8, 16)).astype(np.float32)
    b = np.zeros(8, np.float32)
    nodes = [helper.make_node("Gemm", ["input", "fc.weight", "fc.bias"],
                              ["hidden"], name="fc/Gemm", transB=1),
             helper.make_node("Mul", ["hidden", factor_name], ["output"],
                              name=factor_name + "/Mul")]
    inits = [numpy_helper.from_array(w, "fc.weight"),
             numpy_helper.from_array(b, "fc.bias"),
             numpy_helper.from_array(np.array(factor, np.float32),
                                     factor_name)]
    return nodes, inits


def optimizer_nan():
    nodes, inits = scaled_linear("zero", 0.0)
    return nodes, inits, 16, 8, "AdamWOptimizer"


def zero_epsilon(directory):
    """The optimizer model's AdamW with epsilon 0."""
    path = os.path.join(directory, "optimizer_model.onnx")
    model = onnx.load(path)
    for node in model.graph.node:
        if node.op_type == "AdamWOptimizer":
            for a in node.attribute:
                if a.name == "epsilon":
                    a.f = 0.0
    onnx.save(model, path)


def reduction_overflow():
    rng = np.random.default_rng(0)
    w = rng.normal(0.0, 0.3, (8, 8)).astype(np.float32)
    b = np.zeros(8, np.float32)
    nodes = [helper.make_node("Abs", ["input"], ["magnitude"], name="abs/Abs"),
             helper.make_node("Mul", ["magnitude", "gain"], ["terms"],
                              name="gain/Mul"),
             helper.make_node("MatMul", ["terms", "ones"], ["pooled"],
                              name="pool/MatMul"),
             helper.make_node("Mul", ["pooled", "scale"], ["features"],
                              name="scale/Mul"),
             helper.make_node("Gemm", ["features", "fc.weight", "fc.bias"],
                              ["output"], name="fc/Gemm", transB=1)]
    inits = [numpy_helper.from_array(np.array(40.0, np.float32), "gain"),
             numpy_helper.from_array(np.ones((4096, 8), np.float32), "ones"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "scale"),
             numpy_helper.from_array(w, "fc.weight"),
             numpy_helper.from_array(b, "fc.bias")]
    return nodes, inits, 4096, 8, "pool/MatMul"


def gradient_underflow():
    nodes, inits = scaled_linear("scale", 1e-4)
    return nodes, inits, 16, 8, "fc/Gemm_Grad/Gemm_0"


def lost_update():
    # A frozen base weight of 3 everywhere plus a trained low-rank change
    # B A (LoRA's, B starting at 0), merged before the product as DoRA and
    # merged adapters write it. fp16's spacing at 3 is 2^-9: a change under
    # 2^-10 (1e-3) is lost in the merge. The inputs (the data folder's)
    # sum to 0 along each row, so x W0 = 0 and the output is the change's
    # alone: x (W0 + B A) = x B A.
    base = np.full((8, 16), 3.0, np.float32)
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 0.5, (4, 16)).astype(np.float32)
    b = np.zeros((8, 4), np.float32)
    nodes = [helper.make_node("MatMul", ["lora.B", "lora.A"], ["delta"],
                              name="lora/MatMul"),
             helper.make_node("Add", ["base.weight", "delta"], ["weight"],
                              name="merge/Add"),
             helper.make_node("Gemm", ["input", "weight"], ["output"],
                              name="fc/Gemm", transB=1)]
    inits = [numpy_helper.from_array(base, "base.weight"),
             numpy_helper.from_array(a, "lora.A"),
             numpy_helper.from_array(b, "lora.B")]
    return nodes, inits, 16, 8, "fc/Gemm"


def fine_tune_targets(directory):
    """A data folder: 256 samples x with rows summing to 0 (multiples of
    2^-6, exact in fp16, centered) and targets x (W0 + D) for a rank-4
    change D of entries near 5e-4 (what the adapter has to learn, under
    half of fp16's spacing at 3)."""
    rng = np.random.default_rng(1)
    x = rng.integers(-64, 65, (256, 16)).astype(np.float64)
    x[:, -1] = -x[:, :-1].sum(axis=1)
    x = (x / 64.0).astype(np.float32)
    d = 5e-4 * (rng.normal(0.0, 1.0, (8, 4)) @ rng.normal(0.0, 0.5, (4, 16)))
    base = np.full((8, 16), 3.0)
    data = os.path.join(directory, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "input.npy"), x)
    np.save(os.path.join(data, "target.npy"),
            (x.astype(np.float64) @ (base + d).T).astype(np.float32))


def small_targets(directory):
    """A data folder: 256 samples x ~ N(0, 100^2) and targets 1e-4 * W x
    for W ~ N(0, 1) (the weights start near 0.1 of that). Large inputs make
    the weights' gradients (sums of x times the tiny hidden gradients) large
    enough for AdamW to move them (far above its epsilon) in fp32."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 100.0, (256, 16)).astype(np.float32)
    w = rng.normal(0.0, 1.0, (8, 16)).astype(np.float32)
    data = os.path.join(directory, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "input.npy"), x)
    np.save(os.path.join(data, "target.npy"),
            (1e-4 * (x @ w.T)).astype(np.float32))


MODELS = {"activation_overflow": activation_overflow,
          "matmul_overflow": matmul_overflow,
          "optimizer_nan": optimizer_nan,
          "reduction_overflow": reduction_overflow,
          "gradient_underflow": gradient_underflow,
          "lost_update": lost_update}
# Edits of the artifacts after generate_artifacts.
EDITS = {"optimizer_nan": zero_epsilon, "gradient_underflow": small_targets,
         "lost_update": fine_tune_targets}
# Trained parameters; the other initializers are frozen.
TRAINED = ("fc.", "lora.")


def main():
    out = sys.argv[1]
    for name, make in MODELS.items():
        nodes, inits, width, outs, fault = make()
        graph = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                           ["batch", width])],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                           ["batch", outs])], inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)])
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(model, os.path.join(d, "forward.onnx"))
        artifacts.generate_artifacts(
            model,
            requires_grad=[t.name for t in inits
                           if t.name.startswith(TRAINED)],
            frozen_params=[t.name for t in inits
                           if not t.name.startswith(TRAINED)],
            loss=artifacts.LossType.MSELoss,
            optimizer=artifacts.OptimType.AdamW, artifact_directory=d)
        if name in EDITS:
            EDITS[name](d)
        with open(os.path.join(d, "faults.txt"), "w") as f:
            f.write(fault + "\n")
        print("%s: node at fault %s" % (name, fault))


if __name__ == "__main__":
    main()
