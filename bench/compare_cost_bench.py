#!/usr/bin/env python3
# ===- compare_cost_bench.py - --compare-precision against one fp32 step -=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""What `amp-run --compare-precision` costs per step, against one fp32
training step of the same model, batch and data (issue 23: at most 5x).

Both are measured inside one amp-run process each, so that the import, the
passes, the lowering and the context creation are not counted:

  fp32 step        amp-run --steps S --log --log-time: the median time
                   between consecutive steps' results, the first step
                   left out;
  comparison step  amp-run --steps S --compare-precision --compare-report:
                   its step_ms.total, the median wall time from one
                   step's start to the next's, the first step left out
                   (the fp32 run's programs with their values kept and
                   the AMP run's with every comparison and rerun, side
                   by side on the CPU -- the fp32 run a step ahead --
                   or in turn, and everything between them).

The median of --repeat processes of each is printed, with the ratio.

    bench/compare_cost_bench.py --amp-run build/bin/amp-run \\
        --inputs test/Inputs/fixtures --batch 512 [--device cuda]
        [--init SEED]     # models without weights (train_step_bench's)
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return r


def fp32_step_ms(base, steps, tmp):
    log = os.path.join(tmp, "fp32.csv")
    run(base + ["--steps", str(steps), "--log", log, "--log-time"])
    with open(log) as f:
        t = [float(row["seconds"]) for row in csv.DictReader(f)]
    return 1e3 * statistics.median(b - a for a, b in zip(t[1:], t[2:]))


def compare_step_ms(base, steps, mode, tmp):
    report = os.path.join(tmp, "cmp.json")
    run(base + ["--steps", str(steps), "--compare-precision=" + mode,
                "--compare-top", "0", "--compare-report", report])
    with open(report) as f:
        ms = json.load(f)["step_ms"]
    return ms["total"], ms["fp32_record"], ms["amp_compare"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--inputs", required=True,
                    help="a folder of models (training_model.onnx, "
                         "optimizer_model.onnx, forward.onnx)")
    ap.add_argument("--models", default="mlp,cnn,transformer")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6,
                    help="steps per process (the first is left out)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", default="fp16")
    ap.add_argument("--device", default="cpu", help="amp-run's --device")
    ap.add_argument("--init", type=int, default=None,
                    help="initialize the weights from this seed instead of "
                         "reading forward.onnx")
    args = ap.parse_args()
    if args.steps < 3:
        sys.exit("--steps must be at least 3 (the first is left out)")
    print("compare_cost_bench: %s on %s, batch %d, %d steps per process, "
          "median of %d processes, %d CPU threads available"
          % (args.mode, args.device, args.batch, args.steps, args.repeat,
             os.cpu_count()))
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for m in args.models.split(","):
            d = os.path.join(args.inputs, m)
            weights = (["--init", str(args.init)] if args.init is not None
                       else ["--weights", os.path.join(d, "forward.onnx")])
            base = [args.amp_run, os.path.join(d, "training_model.onnx"),
                    os.path.join(d, "optimizer_model.onnx")] + weights + [
                    "--batch", str(args.batch), "--data", "synthetic:3",
                    "--device", args.device, "--quiet"]
            fp32 = statistics.median(fp32_step_ms(base, args.steps, tmp)
                                     for _ in range(args.repeat))
            cmps = [compare_step_ms(base, args.steps, args.mode, tmp)
                    for _ in range(args.repeat)]
            total = statistics.median(c[0] for c in cmps)
            rec = statistics.median(c[1] for c in cmps)
            amp = statistics.median(c[2] for c in cmps)
            ratio = total / fp32
            worst = max(worst, ratio)
            print("%-12s fp32 step %8.2f ms   comparison step %8.2f ms "
                  "(fp32 kept %.2f, AMP compared %.2f)   ratio %5.2fx "
                  "(target <= 5x)" % (m, fp32, total, rec, amp, ratio))
    print("compare_cost_bench: worst ratio %.2fx: %s" %
          (worst, "PASS" if worst <= 5 else "over the 5x target"))


if __name__ == "__main__":
    main()
