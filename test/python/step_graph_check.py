#!/usr/bin/env python3
"""Trains ONNX Runtime training artifacts with amp-run twice from the same
weights and synthetic batches, once with the step recorded as one graph
(--cuda-graph=on) and once call by call (--cuda-graph=off), and checks
that the two runs are the same bits: every log row (loss, loss scale,
all-finite flag, skipped and optimizer steps) and the trained model -o
writes. A graph launches the calls it recorded, so any value the host fed
the recording that should change from step to step (the random offset,
a synthetic batch's seed, a counter) shows up here as a difference.

On a device it also checks what the graph run says of its waits: the
status line naming the graph, and none of the steady state's steps
draining the device's queue (docs/amp-run.md, "Steps without waiting").

Usage: step_graph_check.py --amp-run AMP_RUN [--device cuda|cpu]
  [--steps N] [--batch B] [--amp MODE] [--files]
  [--variant-a=FLAGS --variant-b=FLAGS] DIR [DIR...]
--files feeds batches from npy files (loss_logs.py's, the host-side path:
staged in page-locked memory and copied before each launch) instead of the
synthetic stream drawn inside the step.
--device cpu checks the script itself on a machine without a GPU: the CPU
has no graphs, so both runs go call by call (auto and off). Prints one line
per model and "PASS" or "FAIL" at the end.
--variant-a and --variant-b compare two other ways of running instead, each
a string of amp-run flags (e.g. --variant-a=--channels-last=all
--variant-b=--channels-last=off: a lowering that must not change a bit on
the device it runs on); the graph's checks are then skipped.
"""

import argparse
import filecmp
import os
import re
import subprocess
import sys
import tempfile


def data_folder(args, d, tmp):
    """--data's value for model `d`: the synthetic stream, or (--files) a
    folder of npy files written once."""
    if not args.files:
        return "synthetic:5"
    import loss_logs
    rel = "/".join(os.path.normpath(d).split(os.sep)[-2:])
    folder = os.path.join(tmp, rel.replace("/", "_") + "-data")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        loss_logs.write_data(d, loss_logs.FILE_DATA.get(rel, {}), folder)
    return folder


def run(args, d, flags, tag, tmp):
    name = os.path.basename(os.path.normpath(d))
    log = os.path.join(tmp, "%s-%s.csv" % (name, tag))
    out = os.path.join(tmp, "%s-%s.onnx" % (name, tag))
    cmd = [args.amp_run, os.path.join(d, "training_model.onnx"),
           os.path.join(d, "optimizer_model.onnx"), "--weights",
           os.path.join(d, "forward.onnx"), "--batch", str(args.batch),
           "--steps", str(args.steps), "--data", data_folder(args, d, tmp),
           "--device",
           args.device, "--log", log, "-o", out] + flags
    if args.amp:
        cmd.append("--amp=" + args.amp)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd),
                                                    p.returncode, p.stderr))
    with open(log) as f:
        return f.read(), out, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--amp", default="")
    ap.add_argument("--files", action="store_true")
    ap.add_argument("--variant-a")
    ap.add_argument("--variant-b")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    graphs = args.variant_a is None and args.variant_b is None
    if graphs:
        graph = "on" if args.device != "cpu" else "auto"
        variants = [["--cuda-graph", graph], ["--cuda-graph", "off"]]
    else:
        variants = [(v or "").split() for v in (args.variant_a,
                                               args.variant_b)]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for d in args.dirs:
            name = os.path.basename(os.path.normpath(d))
            try:
                log_g, out_g, err_g = run(args, d, variants[0], "a", tmp)
                log_e, out_e, _ = run(args, d, variants[1], "b", tmp)
            except RuntimeError as e:
                print("%s: %s" % (name, e))
                ok = False
                continue
            problems = []
            rows = log_g.splitlines()
            if len(rows) != args.steps + 1:
                problems.append("%d log rows" % (len(rows) - 1))
            if log_g != log_e:
                first = next(i for i, (a, b) in enumerate(
                    zip(log_g.splitlines(), log_e.splitlines())) if a != b)
                problems.append("logs differ from row %d: %r vs %r" % (
                    first, log_g.splitlines()[first],
                    log_e.splitlines()[first]))
            if not filecmp.cmp(out_g, out_e, shallow=False):
                problems.append("trained models differ")
            if graphs and args.device != "cpu":
                if "launch one CUDA graph each" not in err_g:
                    problems.append("no graph line")
                m = re.search(r"drained the device's queue (\d+) times and "
                              r"waited (\d+) times", err_g)
                if not m:
                    problems.append("no waits line")
                elif m.group(1) != "0":
                    problems.append("%s drains in the steady state"
                                    % m.group(1))
            waits = re.search(r"amp-run: steps \d+ to \d+: .*", err_g)
            print("%s: %d steps, %s%s" % (
                name, args.steps,
                "same bits" if not problems else "; ".join(problems),
                "; " + waits.group(0) if waits else ""))
            ok = ok and not problems
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
