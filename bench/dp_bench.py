#!/usr/bin/env python3
# ===- dp_bench.py - data-parallel training: samples/s over ranks -------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Data-parallel scaling of amp-run (issue 24): samples/s for 1, 2 and 4
ranks (mpirun) at a fixed batch per rank, against one rank, measured in the
same run.

For each rank count N, amp-run trains the model under `mpirun -np N` at
--batch B per rank (global batch N * B) with --log-time; the step time is
(seconds[n2] - seconds[n1]) / (n2 - n1) of rank 0's log (the import, the
lowering and the first steps are not counted), the median of --repeat
processes. Printed per N: the step time, the global samples/s, the speedup
over one rank and the efficiency (speedup / N). A CPU machine with fewer
cores than ranks is oversubscribed: the ranks share the cores, and what
the numbers then show is the cost of the reductions, not a speedup.

The estimate of docs/Distributed.md for more ranks takes the step time of
one rank and the all-reduce bandwidth (on a GPU: NCCL's):
    t(N) = t(1) + 2 (N - 1) / N * bytes / bandwidth   (no overlap)

    bench/dp_bench.py --amp-run build/bin/amp-run \\
        --inputs test/Inputs/fixtures --models transformer --batch 64
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def step_time(cmd, n1, n2, env):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.csv")
        r = subprocess.run(cmd + ["--log", log, "--log-time"],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))
        rows = list(csv.DictReader(open(log)))
        s = [float(x["seconds"]) for x in rows]
        return (s[n2] - s[n1]) / (n2 - n1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--models", default="mlp,transformer")
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--mpirun-args",
                    default="--oversubscribe --bind-to none --mca "
                            "mpi_yield_when_idle 1",
                    help="for more ranks than cores: no binding, and a "
                         "waiting rank yields its core instead of polling")
    args = ap.parse_args()
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("dp_bench: mpirun not found (utils/setup.sh installs Open "
                 "MPI)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    n1, n2 = 5, args.steps - 1
    print("dp_bench: batch %d per rank, %s, steps %d..%d, median of %d, %d "
          "CPU cores" % (args.batch, "AMP fp16" if args.amp else "fp32",
                         n1, n2, args.repeat, os.cpu_count()))
    for m in args.models.split(","):
        d = os.path.join(args.inputs, m)
        base = [args.amp_run, os.path.join(d, "training_model.onnx"),
                os.path.join(d, "optimizer_model.onnx"), "--weights",
                os.path.join(d, "forward.onnx"), "--batch", str(args.batch),
                "--steps", str(args.steps), "--data", "synthetic:3",
                "--quiet"] + (["--amp"] if args.amp else [])
        one = None
        for n in [int(x) for x in args.ranks.split(",")]:
            cmd = base if n == 1 else ([mpirun] + args.mpirun_args.split() +
                                       ["-np", str(n)] + base)
            t = statistics.median(step_time(cmd, n1, n2, env)
                                  for _ in range(args.repeat))
            if one is None:
                one = t
            samples = n * args.batch / t
            speedup = one / t * n
            print("%-12s %d rank%s  step %8.3f ms  %10.0f samples/s  "
                  "speedup %5.2fx  efficiency %5.1f%%" %
                  (m, n, " " if n == 1 else "s", t * 1e3, samples, speedup,
                   100 * speedup / n))


if __name__ == "__main__":
    main()
