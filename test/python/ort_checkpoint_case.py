#!/usr/bin/env python3
"""Makes onnxruntime-training checkpoints for amp-run's --weights tests.

  ort_checkpoint_case.py trained ART OUT [START]   trains ART (the MLP
      fixture's artifacts) 2 steps with ORT's training API from ART's
      checkpoint (or START), saves the checkpoint with its optimizer state
      to OUT and the parameters to OUT.npz; then goes on for 3 steps on
      batches it saves to OUT.batches/<input>.npy, and saves their losses
      and the final parameters to OUT.continued.npz. ORT saves with
      external data (OUT.data) when START had it
  ort_checkpoint_case.py compare OUT LOG TRAINED.onnx   checks amp-run's
      continuation (its --log and -o) against ORT's: losses and weights
      within 1e-5 relative (numpy and onnx only: run with any Python)
  ort_checkpoint_case.py nominal FORWARD DIR   generate_artifacts with
      nominal_checkpoint=True into DIR
  ort_checkpoint_case.py data ART DIR ROWS SEED   ROWS random samples for
      ART's two data inputs (features, class labels) as DIR/<input>.npy
  ort_checkpoint_case.py continue CKPT ART DATA STEPS   ORT's training API
      loads CKPT (a checkpoint amp-run wrote with --ort-checkpoint) with
      ART's models, prints its properties, trains STEPS batches of 8 of
      DATA in order, and saves the losses and parameters to
      CKPT.continued.npz (for `compare`)

Run with the Python of .venv-ort-training.
"""

import os
import sys

import numpy as np
import onnx


def trained(art, out, start=None):
    # amp_run_vs_ort loads onnxruntime.training without its torch-based
    # package __init__.
    from amp_run_vs_ort import ort_open, orttrain
    state, model, opt = ort_open(art, start)
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
    # The continuation: 3 batches, in the order amp-run --no-shuffle reads
    # them.
    os.makedirs(out + ".batches", exist_ok=True)
    x = rng.standard_normal((24, width)).astype(np.float32)
    y = rng.integers(0, 10, 24).astype(np.int64)
    names = [i.name for i in
             onnx.load(os.path.join(art, "training_model.onnx")).graph.input]
    np.save(os.path.join(out + ".batches", names[0] + ".npy"), x)
    np.save(os.path.join(out + ".batches", names[1] + ".npy"), y)
    losses = []
    for s in range(3):
        losses.append(float(np.asarray(
            model(x[8 * s:8 * s + 8], y[8 * s:8 * s + 8]))))
        opt.step()
        model.lazy_reset_grad()
    np.savez(out + ".continued.npz", losses=np.array(losses),
             **{"param:" + n: np.array(p.data) for n, p in state.parameters})
    print("trained checkpoint written")


def compare(out, log, trained):
    import csv
    from onnx import numpy_helper
    ref = np.load(out + ".continued.npz")
    with open(log) as f:
        losses = [float(r["loss"]) for r in csv.DictReader(f)]
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref["losses"]))
    ok = len(losses) == len(ref["losses"]) and worst <= 1e-5
    print(f"losses: {len(losses)}, max rel diff {worst:.2e}",
          "ok" if ok else "FAIL")
    got = {t.name: numpy_helper.to_array(t)
           for t in onnx.load(trained).graph.initializer}
    for k in sorted(ref.files):
        if not k.startswith("param:"):
            continue
        r = ref[k]
        err = float(np.max(np.abs(got[k[6:]] - r))) / float(np.max(np.abs(r)))
        good = err <= 1e-5
        ok &= good
        print(f"weight {k[6:]}: max rel diff {err:.2e}",
              "ok" if good else "FAIL")
    print("ort-checkpoint-continuation:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def data(art, out, rows, seed):
    rows = int(rows)
    inputs = onnx.load(os.path.join(art, "training_model.onnx")).graph.input
    width = inputs[0].type.tensor_type.shape.dim[1].dim_value
    rng = np.random.default_rng(int(seed))
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, inputs[0].name + ".npy"),
            rng.standard_normal((rows, width)).astype(np.float32))
    np.save(os.path.join(out, inputs[1].name + ".npy"),
            rng.integers(0, 10, rows).astype(np.int64))
    print(f"{rows} rows written")


def continue_(ckpt, art, data_dir, steps):
    from amp_run_vs_ort import ort_open
    state, model, opt = ort_open(art, ckpt)
    for name, value in sorted(state.properties):
        print(f"property {name} = {value!r}")
    model.train()
    names = [i.name for i in
             onnx.load(os.path.join(art, "training_model.onnx")).graph.input]
    x = np.load(os.path.join(data_dir, names[0] + ".npy"))
    y = np.load(os.path.join(data_dir, names[1] + ".npy"))
    losses = []
    for s in range(int(steps)):
        losses.append(float(np.asarray(
            model(x[8 * s:8 * s + 8], y[8 * s:8 * s + 8]))))
        opt.step()
        model.lazy_reset_grad()
    np.savez(ckpt + ".continued.npz", losses=np.array(losses),
             **{"param:" + n: np.array(p.data) for n, p in state.parameters})
    print(f"ORT went on for {steps} steps")


def nominal(forward, out):
    import amp_run_vs_ort  # noqa: F401 (onnxruntime.training without torch)
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
    sys.exit({"trained": trained, "nominal": nominal, "compare": compare,
              "data": data, "continue": continue_}[sys.argv[1]](
                  *sys.argv[2:]))
