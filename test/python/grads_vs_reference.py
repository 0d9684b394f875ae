#!/usr/bin/env python3
"""Checks amp-run's gradients against reference gradients computed in
float64 by another framework (examples/fixtures/gen_hf.py writes
reference.npz with PyTorch's).

The artifacts' optimizer must be SGD: one amp-run step with learning rate 1
from the forward model's weights leaves W1 = W0 - g, so g = W0 - W1 is the
gradient amp-run computed on the reference batch. Each tensor must agree
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-7)
    args = ap.parse_args()
    art = args.artifacts
    ref = np.load(os.path.join(art, "reference.npz"))
    w0 = {t.name: numpy_helper.to_array(t) for t in
          onnx.load(os.path.join(art, "forward.onnx")).graph.initializer}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("input", "labels"):
            np.save(os.path.join(tmp, name + ".npy"), ref[name])
        out = os.path.join(tmp, "w1.onnx")
        r = subprocess.run(
            [args.amp_run, os.path.join(art, "training_model.onnx"),
             os.path.join(art, "optimizer_model.onnx"), "--weights",
             os.path.join(art, "forward.onnx"), "--data", tmp, "--no-shuffle",
             "--batch", str(len(ref["labels"])), "--steps", "1", "--lr", "1",
             "--log", os.path.join(tmp, "loss.csv"), "-o", out, "--quiet"],
            capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        w1 = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(out).graph.initializer}
        loss = float(open(os.path.join(tmp, "loss.csv")).read()
                     .splitlines()[1].split(",")[1])
    grads = {k[5:]: ref[k] for k in ref.files if k.startswith("grad:")}
    top = max(float(np.abs(g).max()) for g in grads.values())
    failed = False
    rl = abs(loss - float(ref["loss"])) / abs(float(ref["loss"]))
    ok = rl <= args.rtol
    failed |= not ok
    print(f"loss: rel diff {rl:.2e} {'ok' if ok else 'FAIL'}")
    for name, g in sorted(grads.items()):
        ours = w0[name].astype(np.float64) - w1[name].astype(np.float64)
        err = float(np.abs(ours - g).max())
        bound = args.rtol * float(np.abs(g).max()) + args.atol * top
        ok = err <= bound
        failed |= not ok
        print(f"grad {name}: max abs diff {err:.2e} (bound {bound:.2e}) "
              f"{'ok' if ok else 'FAIL'}")
    print("grads-vs-reference:", "FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
