#!/usr/bin/env python3
"""Makes onnxruntime-training checkpoints for amp-run's --weights tests.

  ort_checkpoint_case.py trained ART OUT   trains ART (the MLP fixture's
      artifacts) 2 steps with ORT's training API, saves the checkpoint with
      its optimizer state to OUT and the parameters to OUT.npz
  ort_checkpoint_case.py nominal FORWARD DIR   generate_artifacts with
      nominal_checkpoint=True into DIR

Run with the Python of .venv-ort-training.
"""

import os
import sys
import types

import numpy as np
import onnx
import onnxruntime

# Only onnxruntime.training.api / .artifacts are needed, not the torch-based
# package __init__ (as in amp_run_vs_ort.py).
_pkg = types.ModuleType("onnxruntime.training")
_pkg.__path__ = [os.path.join(os.path.dirname(onnxruntime.__file__),
                              "training")]
sys.modules["onnxruntime.training"] = _pkg


def trained(art, out):
    from onnxruntime.training import api as orttrain
    state = orttrain.CheckpointState.load_checkpoint(
        os.path.join(art, "checkpoint"))
    model = orttrain.Module(os.path.join(art, "training_model.onnx"), state,
                            os.path.join(art, "eval_model.onnx"),
                            device="cpu")
    opt = orttrain.Optimizer(os.path.join(art, "optimizer_model.onnx"), model)
    model.train()
    feature = onnx.load(os.path.join(art, "training_model.onnx")).graph.input[0]
    width = feature.type.tensor_type.shape.dim[1].dim_value
    rng = np.random.default_rng(0)
    for _ in range(2):
        model(rng.standard_normal((8, width)).astype(np.float32),
              rng.integers(0, 10, 8).astype(np.int64))
        opt.step()
        model.lazy_reset_grad()
    orttrain.CheckpointState.save_checkpoint(state, out,
                                             include_optimizer_state=True)
    np.savez(out + ".npz",
             **{n: np.array(p.data) for n, p in state.parameters})
    print("trained checkpoint written")


def nominal(forward, out):
    from onnxruntime.training import artifacts
    os.makedirs(out, exist_ok=True)
    m = onnx.load(forward)
    artifacts.generate_artifacts(
        m, requires_grad=[i.name for i in m.graph.initializer],
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.AdamW, artifact_directory=out,
        nominal_checkpoint=True)
    print("nominal checkpoint written")


if __name__ == "__main__":
    {"trained": trained, "nominal": nominal}[sys.argv[1]](*sys.argv[2:])
