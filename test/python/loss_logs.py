#!/usr/bin/env python3
"""Trains every model of test/Inputs (the fixtures, the zoo, the Hugging
Face models and the sweep's) a few steps with amp-run in fp32, AMP fp16
(dynamic loss scaling) and AMP bf16, and compares each loss log and the
trained weights (-o) and the lowered programs (--dump-lowered: calls,
schedule and buffer plan) with the ones recorded in
test/Inputs/loss-logs.txt, bit for bit.

The record is the contract of refactors that must not change a result (the
lowering's passes, the runtime's files): a change that moves one loss by one
ulp fails here. A change meant to alter arithmetic (a new kernel, a new
fusion order) or the lowered program (a new schedule) rewrites the record
with --update, and its commit says why.

Data: amp-run's own synthetic stream (--data synthetic:3), which draws
integer inputs below the class count amp-run infers; models whose integer
inputs index something else (GatherND's tuples) get files drawn here below
a bound listed in FILE_DATA, fed as --data <folder> (the host-side path:
f32 batches rounded by amp-run, not drawn in 16 bits). The three fixtures
also run from files, so both data paths are pinned.

Prints one line per run and "loss-logs: PASS" or exits non-zero.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

STEPS = 3
BATCH = 4
MODES = [("fp32", []), ("amp", ["--amp"]), ("bf16", ["--amp=bf16"])]
# Models fed from files: integer data input -> exclusive upper bound.
FILE_DATA = {
    "zoo/gathernd": {"labels": 5, "index": 3},
    "fixtures/mlp": {},
    "fixtures/cnn": {},
    "fixtures/transformer": {"tokens": 50},
}


def models(inputs):
    found = []
    for root, _, files in os.walk(inputs):
        if "training_model.onnx" in files and "forward.onnx" in files:
            found.append(os.path.relpath(root, inputs))
    return sorted(found)


def write_data(model_dir, bounds, folder):
    """npy files for the data inputs (graph inputs that are no weight)."""
    graph = onnx.load(os.path.join(model_dir, "training_model.onnx"),
                      load_external_data=False).graph
    weights = {t.name for t in onnx.load(
        os.path.join(model_dir, "forward.onnx"),
        load_external_data=False).graph.initializer}
    rng = np.random.default_rng(7)
    n = STEPS * BATCH
    for vi in graph.input:
        if (vi.name in weights or vi.name.endswith(".accumulation.buffer")
                or vi.name == "lazy_reset_grad"):
            continue
        tt = vi.type.tensor_type
        rest = [d.dim_value for d in tt.shape.dim[1:]]
        if tt.elem_type == onnx.TensorProto.FLOAT:
            arr = rng.standard_normal([n] + rest).astype(np.float32)
        else:
            arr = rng.integers(0, bounds.get(vi.name, 10),
                               [n] + rest).astype(np.int64)
        np.save(os.path.join(folder, vi.name + ".npy"), arr)


def run(amp_run, model_dir, data, flags, tmp):
    log = os.path.join(tmp, "loss.csv")
    out = os.path.join(tmp, "trained.onnx")
    lowered = os.path.join(tmp, "lowered.mlir")
    cmd = [amp_run, os.path.join(model_dir, "training_model.onnx"),
           os.path.join(model_dir, "optimizer_model.onnx"),
           "--weights", os.path.join(model_dir, "forward.onnx"),
           "--batch", str(BATCH), "--steps", str(STEPS), "--data", data,
           "--no-shuffle", "--log", log, "-o", out, "--dump-lowered", lowered,
           "--quiet"] + flags
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode,
                                r.stderr.strip().splitlines()[-1:])
    with open(log) as f:
        rows = f.read().splitlines()[1:]
    # step,loss,loss_scale,all_finite,skipped,...: the loss and the scale.
    losses = " ".join(",".join(r.split(",")[1:3]) for r in rows)
    def digest(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    return "%s weights=%s lowered=%s" % (losses, digest(out), digest(lowered))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--inputs", required=True, help="test/Inputs")
    ap.add_argument("--expected", required=True)
    ap.add_argument("--update", action="store_true",
                    help="rewrite --expected with this build's results")
    args = ap.parse_args()

    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in models(args.inputs):
            model_dir = os.path.join(args.inputs, m)
            sources = []
            if m != "zoo/gathernd":
                sources.append(("synthetic", "synthetic:3"))
            if m in FILE_DATA:
                folder = os.path.join(tmp, m.replace("/", "_"))
                os.makedirs(folder)
                write_data(model_dir, FILE_DATA[m], folder)
                sources.append(("file", folder))
            for src, data in sources:
                for mode, flags in MODES:
                    result = run(args.amp_run, model_dir, data, flags, tmp)
                    lines.append("%s %s %s: %s" % (m, src, mode, result))

    if args.update:
        with open(args.expected, "w") as f:
            f.write("# test/python/loss_logs.py --update: per model, data "
                    "source and mode,\n# each step's loss,loss_scale and digests "
                    "of the trained weights\n# and of the lowered program\n")
            f.write("\n".join(lines) + "\n")
        print("loss-logs: wrote %d runs to %s" % (len(lines), args.expected))
        return 0

    with open(args.expected) as f:
        expected = [l for l in f.read().splitlines() if not l.startswith("#")]
    want = {l.split(":")[0]: l for l in expected}
    got = {l.split(":")[0]: l for l in lines}
    failed = False
    for key in sorted(set(want) | set(got)):
        if want.get(key) == got.get(key):
            print("%s: identical" % key)
            continue
        failed = True
        print("%s: DIFFERS\n  recorded %s\n  now      %s"
              % (key, want.get(key, "(none)"), got.get(key, "(none)")))
    print("loss-logs: %d runs, %s" % (len(lines), "FAIL" if failed else "PASS"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
