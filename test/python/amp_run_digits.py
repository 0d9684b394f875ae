#!/usr/bin/env python3
"""Trains a fixture's ORT training artifacts on scikit-learn's bundled
digits data set (1797 8x8 images, 10 classes) with amp-run, in fp32 and in
AMP mode (fp16 + dynamic loss scaling), and measures test accuracy with
onnxruntime on the forward model carrying the trained weights (amp-run -o).

The split is fixed by --seed: 80% train, 20% test, pixels scaled to [0, 1].
Checks: fp32 accuracy >= --min-accuracy, and |AMP - fp32| <= --max-gap
(accuracy points, as a fraction). Prints the numbers and
"amp-run-digits: PASS" or exits non-zero.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from sklearn.datasets import load_digits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--artifacts", required=True,
                    help="folder with training_model.onnx, "
                         "optimizer_model.onnx and forward.onnx")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-accuracy", type=float, default=0.85)
    ap.add_argument("--max-gap", type=float, default=0.01)
    args = ap.parse_args()

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(args.seed).permutation(len(y))
    x, y = x[order], y[order]
    n_train = int(0.8 * len(y))

    forward = os.path.join(args.artifacts, "forward.onnx")
    fwd = onnx.load(forward)
    in_shape = [d.dim_value for d in
                fwd.graph.input[0].type.tensor_type.shape.dim[1:]]
    in_name = fwd.graph.input[0].name
    x = x.reshape([len(y)] + in_shape)

    results = {}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, in_name + ".npy"), x[:n_train])
        np.save(os.path.join(tmp, "labels.npy"), y[:n_train])
        for mode in ("fp32", "amp"):
            out = os.path.join(tmp, mode + ".onnx")
            log = os.path.join(tmp, mode + ".csv")
            cmd = [args.amp_run,
                   os.path.join(args.artifacts, "training_model.onnx"),
                   os.path.join(args.artifacts, "optimizer_model.onnx"),
                   "--weights", forward, "--data", tmp,
                   "--seed", str(args.seed), "--batch", str(args.batch),
                   "--steps", str(args.steps), "--lr", str(args.lr),
                   "--log", log, "-o", out, "--quiet"]
            if mode == "amp":
                cmd.append("--amp")
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stderr)
                return 1
            with open(log) as f:
                rows = list(csv.DictReader(f))
            sess = ort.InferenceSession(out,
                                        providers=["CPUExecutionProvider"])
            logits = sess.run(None, {in_name: x[n_train:]})[0]
            acc = float(np.mean(np.argmax(logits, axis=1) == y[n_train:]))
            first = float(rows[0]["loss"])
            last = np.mean([float(r["loss"]) for r in rows[-20:]])
            skipped = int(rows[-1]["skipped"])
            results[mode] = acc
            print(f"{mode}: {args.steps} steps, loss {first:.4f} -> "
                  f"{last:.4f} (mean of the last 20), skipped {skipped}, "
                  f"test accuracy {acc:.4f} ({len(y) - n_train} images)")
    ok = results["fp32"] >= args.min_accuracy
    failed |= not ok
    print(f"fp32 accuracy {results['fp32']:.4f} >= {args.min_accuracy}: "
          f"{'ok' if ok else 'FAIL'}")
    gap = abs(results["amp"] - results["fp32"])
    ok = gap <= args.max_gap
    failed |= not ok
    print(f"|amp - fp32| = {gap:.4f} <= {args.max_gap}: "
          f"{'ok' if ok else 'FAIL'}")
    print("amp-run-digits:", "FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
