#!/usr/bin/env python3
"""Checks amp-run's gradients against reference gradients computed in
float64 by another framework (examples/fixtures/gen_hf.py writes
reference.npz with PyTorch's).

The artifacts' optimizer must be SGD: one amp-run step with learning rate
lr = 2^20 from the forward model's weights leaves W1 = W0 - lr g, so
g = (W0 - W1) / lr is the gradient amp-run computed on the reference batch
(amp_run_gradients). The rate is a power of two, so lr g is exact, and
large, so that W1's rounding is relative to the step: with a rate of 1 a
BatchNorm weight near 1 whose gradient is 1e-4 would keep only 10 bits of
it. Each tensor must agree
with the reference within

    max |g - ref| <= rtol * max |ref| + atol * (largest |ref| of any tensor)

(atol covers gradients too small for f32 to resolve next to the others).
Prints one line per tensor and "grads-vs-reference: PASS" or exits
non-zero. Needs numpy and onnx only.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


SGD_LR = 2.0 ** 20


def amp_run_gradients(amp_run, artifacts, weights, data, batch, names):
    """amp-run's gradients of the tensors `names` on one batch (DIR/<input>.npy
    files in `data`) at the initializers of `weights`, from one SGD step of
    the SGD `artifacts`: (grads in float64, the step's loss), or
    (None, amp-run's stderr) when it fails."""
    w0 = {t.name: numpy_helper.to_array(t) for t in
          onnx.load(weights).graph.initializer}
    with tempfile.TemporaryDirectory() as tmp:
        out, log = os.path.join(tmp, "w1.onnx"), os.path.join(tmp, "loss.csv")
        r = subprocess.run(
            [amp_run, os.path.join(artifacts, "training_model.onnx"),
             os.path.join(artifacts, "optimizer_model.onnx"), "--weights",
             weights, "--data", data, "--no-shuffle", "--batch", str(batch),
             "--steps", "1", "--lr", repr(SGD_LR), "--log", log, "-o", out,
             "--quiet"], capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr
        w1 = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(out).graph.initializer}
        loss = float(open(log).read().splitlines()[1].split(",")[1])
    return ({n: (w0[n].astype(np.float64) - w1[n].astype(np.float64)) / SGD_LR
             for n in names}, loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-7)
    args = ap.parse_args()
    art = args.artifacts
    ref = np.load(os.path.join(art, "reference.npz"))
    grads = {k[5:]: ref[k] for k in ref.files if k.startswith("grad:")}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("input", "labels"):
            np.save(os.path.join(tmp, name + ".npy"), ref[name])
        ours, loss = amp_run_gradients(
            args.amp_run, art, os.path.join(art, "forward.onnx"), tmp,
            len(ref["labels"]), grads)
    if ours is None:
        print(loss)
        return 1
    top = max(float(np.abs(g).max()) for g in grads.values())
    failed = False
    rl = abs(loss - float(ref["loss"])) / abs(float(ref["loss"]))
    ok = rl <= args.rtol
    failed |= not ok
    print(f"loss: rel diff {rl:.2e} {'ok' if ok else 'FAIL'}")
    for name, g in sorted(grads.items()):
        err = float(np.abs(ours[name] - g).max())
        bound = args.rtol * float(np.abs(g).max()) + args.atol * top
        ok = err <= bound
        failed |= not ok
        print(f"grad {name}: max abs diff {err:.2e} (bound {bound:.2e}) "
              f"{'ok' if ok else 'FAIL'}")
    print("grads-vs-reference:", "FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
