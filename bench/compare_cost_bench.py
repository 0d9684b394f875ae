#!/usr/bin/env python3
# ===- compare_cost_bench.py - --compare-precision against one fp32 step -=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""What `amp-run --compare-precision` costs per step, against one fp32
training step of the same model, batch and data (issue 23: at most 5x).

For each model, amp-run runs as one process per measurement: fp32 training
for N1 and N2 steps, and the comparison for N1 and N2 steps. A step's cost
is (T(N2) - T(N1)) / (N2 - N1) of the process wall times, so the import,
the passes, the lowering and the context creation of the runs (the
comparison makes two: fp32 and AMP, plus one per suggestion round) are not
counted. The median of --repeat measurements is printed, with the ratio.
The comparison's step is: the fp32 step call by call with every named value
read back, the AMP step call by call with every named value read back and
compared, and each rerunnable call run twice more (once on the fp32 run's
inputs, once as it was).

    bench/compare_cost_bench.py --amp-run build/bin/amp-run \\
        --inputs test/Inputs/fixtures --batch 64 [--device cuda]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def wall(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    t = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--inputs", required=True,
                    help="a folder of models (training_model.onnx, "
                         "optimizer_model.onnx, forward.onnx)")
    ap.add_argument("--models", default="mlp,cnn,transformer")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", default="2,6", help="N1,N2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", default="fp16")
    ap.add_argument("--device", default="cpu", help="amp-run's --device")
    args = ap.parse_args()
    n1, n2 = (int(x) for x in args.steps.split(","))
    print("compare_cost_bench: %s on %s, batch %d, steps %d..%d, median of "
          "%d, %d CPU threads available" % (args.mode, args.device,
                                            args.batch, n1, n2, args.repeat,
                                            os.cpu_count()))
    worst = 0.0
    for m in args.models.split(","):
        d = os.path.join(args.inputs, m)
        base = [args.amp_run, os.path.join(d, "training_model.onnx"),
                os.path.join(d, "optimizer_model.onnx"), "--weights",
                os.path.join(d, "forward.onnx"), "--batch", str(args.batch),
                "--data", "synthetic:3", "--device", args.device, "--quiet"]
        per = {}
        for name, extra in (("fp32", []),
                            ("compare", ["--compare-precision=" + args.mode,
                                         "--compare-top", "0"])):
            samples = []
            for _ in range(args.repeat):
                t1 = wall(base + ["--steps", str(n1)] + extra)
                t2 = wall(base + ["--steps", str(n2)] + extra)
                samples.append((t2 - t1) / (n2 - n1))
            per[name] = statistics.median(samples)
        if per["fp32"] <= 0 or per["compare"] <= 0:
            sys.exit("%s: a step cost came out <= 0 (fp32 %.2f ms, "
                     "comparison %.2f ms): the difference is noise; use more "
                     "steps or --repeat" % (m, per["fp32"] * 1e3,
                                            per["compare"] * 1e3))
        ratio = per["compare"] / per["fp32"]
        worst = max(worst, ratio)
        print("%-12s fp32 step %8.2f ms   comparison step %8.2f ms   "
              "ratio %5.2fx (target <= 5x)" % (m, per["fp32"] * 1e3,
                                              per["compare"] * 1e3, ratio))
    print("compare_cost_bench: worst ratio %.2fx: %s" %
          (worst, "PASS" if worst <= 5 else "over the 5x target"))


if __name__ == "__main__":
    main()
