#!/usr/bin/env python3
"""Trains ONNX Runtime training artifacts with amp-run on --device cpu and
on --device cuda from the same weights and synthetic batches, and checks
(1) that the per-step losses agree within --rtol relative (the device sums
in another order than the CPU reference; dropout and the other random ops
draw the same values on both), and (2) that no kernel of the CUDA run went
to the host (AMPRT_PROFILE's "on host" column, docs/RuntimeABI.md), which
would mean a kernel without a CUDA override on the model's path.

Usage: cuda_vs_cpu_training.py --amp-run AMP_RUN DIR [DIR...] [--amp]
  [--steps N] [--batch B] [--rtol R] [--device cuda|cpu] (cpu checks the
script itself on a machine without a GPU). Each DIR holds training_model.onnx,
optimizer_model.onnx and forward.onnx. Prints one line per model:
"NAME: N steps, worst relative loss difference D, host calls: none" (or the
kernels that ran on the host), and "PASS" or "FAIL" at the end.
"""

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile


def run(amp_run, d, device, args, log, profile):
    cmd = [amp_run, os.path.join(d, "training_model.onnx"),
           os.path.join(d, "optimizer_model.onnx"), "--weights",
           os.path.join(d, "forward.onnx"), "--batch", str(args.batch),
           "--steps", str(args.steps), "--data", "synthetic:1", "--device",
           device, "--log", log, "--quiet"] + (["--amp"] if args.amp else [])
    env = dict(os.environ)
    if profile:
        env["AMPRT_PROFILE"] = "1"
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd),
                                                    p.returncode, p.stderr))
    return p.stderr


def losses(path):
    return [float(r["loss"]) for r in csv.DictReader(open(path))]


def host_calls(profile_text):
    """{kernel: calls on the host} from AMPRT_PROFILE's tables."""
    out = {}
    for line in profile_text.splitlines():
        m = re.match(r"\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+[0-9.]+\s+[0-9.]+"
                     r"\s+[0-9.]+%$", line)
        if m and int(m.group(3)) > 0:
            out[m.group(1)] = out.get(m.group(1), 0) + int(m.group(3))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--device", default="cuda",
                    help="the device compared with cpu (cpu: check this "
                         "script without a GPU)")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for d in args.dirs:
            name = os.path.basename(os.path.normpath(d))
            a, b = os.path.join(tmp, name + ".cpu.csv"), \
                os.path.join(tmp, name + ".dev.csv")
            run(args.amp_run, d, "cpu", args, a, False)
            prof = run(args.amp_run, d, args.device, args, b, True)
            la, lb = losses(a), losses(b)
            worst = max((abs(x - y) / max(abs(x), 1e-30)
                         for x, y in zip(la, lb)), default=float("inf"))
            hosts = host_calls(prof)
            good = (len(la) == len(lb) == args.steps and worst <= args.rtol
                    and not hosts)
            ok &= good
            print("%s: %d steps, worst relative loss difference %.2e, host "
                  "calls: %s" % (name, len(lb), worst,
                                 ", ".join("%s %d" % kv for kv in
                                           sorted(hosts.items())) or "none"))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
