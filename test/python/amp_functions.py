#!/usr/bin/env python3
"""A model with a model-local function (FunctionProto) through the AMP pass
(issue 23, item 5): the function, called twice, is typed from its calls and
painted as a graph is; the exported model passes onnx.checker's full check,
its function holds the casts, and onnxruntime runs it within fp16 tolerance
of the fp32 model.

    amp_functions.py AMP_OPT WORK_DIR      (onnxruntime's python)

Prints what it checks and "amp-functions: PASS", or exits non-zero.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def model():
    fn = helper.make_function(
        "local", "LinearRelu", ["x", "w", "b"], ["y"],
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="gemm",
                          transB=1),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(
                 rng.normal(0, 0.2, (32, 16)).astype(np.float32), "w1"),
             numpy_helper.from_array(np.zeros(32, np.float32), "b1"),
             numpy_helper.from_array(
                 rng.normal(0, 0.2, (8, 32)).astype(np.float32), "w2"),
             numpy_helper.from_array(np.zeros(8, np.float32), "b2")]
    nodes = [helper.make_node("LinearRelu", ["input", "w1", "b1"], ["h1"],
                              name="layer1", domain="local"),
             helper.make_node("LinearRelu", ["h1", "w2", "b2"], ["out"],
                              name="layer2", domain="local")]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT,
                                       ["batch", 8])], inits)
    m = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[fn])
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    amp_opt, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    src, dst = os.path.join(work, "fn.onnx"), os.path.join(work, "fn-amp.onnx")
    onnx.save(model(), src)
    r = subprocess.run([amp_opt, src, "--auto-mixed-precision", "-o", dst],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("amp-opt failed: " + r.stderr)
    out = onnx.load(dst)
    onnx.checker.check_model(out, full_check=True)
    print("checker: valid")
    fn = out.functions[0]
    print("function %s: %s" % (fn.name, " ".join(
        "%s(%s)" % (n.op_type, n.name) for n in fn.node)))
    x = np.random.default_rng(1).normal(size=(4, 16)).astype(np.float32)
    run = lambda p: ort.InferenceSession(  # noqa: E731
        p, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    ref, got = run(src), run(dst)
    rel = float(np.abs(ref - got).max() / np.abs(ref).max())
    ok = rel < 1e-2 and any(n.op_type == "Cast" for n in fn.node)
    print("onnxruntime: max error relative to max |out| %.1e (tolerance 1e-2)"
          % rel)
    print("amp-functions: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
