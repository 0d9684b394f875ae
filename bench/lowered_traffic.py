#!/usr/bin/env python3
"""Static memory-traffic model of lowered training steps.

Reads programs written by `amp-run ... --dump-lowered FILE` and, for the
training module, counts the runtime calls per kernel and the bytes of every
tensor each call names (inputs and outputs once each: a lower bound of what
a bandwidth-bound kernel moves). With two files it prints them side by side,
e.g. a step lowered before and after a change to the lowering:

    amp-run train.onnx opt.onnx --init 1 --batch 512 --steps 0 --amp \\
        --data synthetic:1 --dump-lowered before.mlir
    python3 bench/lowered_traffic.py before.mlir after.mlir

This is a model, not a timing: it says which passes over memory a change
removed, not how fast the kernels that remain run (GEMMs and convolutions
are listed apart: they are bound by arithmetic, not by these bytes).
"""

import argparse
import re
import sys

ELEM_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
              "i8": 1, "ui8": 1, "i1": 1}
COMPUTE_BOUND = {"gemm", "gemm_relu", "matmul", "fused_matmul", "conv",
                 "conv_grad"}
CALL = re.compile(r'amprt\.call "(\w+)".*\} : (.*)$')


def tensor_bytes(t):
    m = re.fullmatch(r"memref<(?:([0-9x]+)x)?(\w+)>", t.strip())
    if not m:
        return 0
    n = 1
    for d in (m.group(1) or "").split("x"):
        if d:
            n *= int(d)
    return n * ELEM_BYTES.get(m.group(2), 4)


def summarize(path):
    """{kernel: (calls, bytes)} of the @training module."""
    text = open(path).read()
    if "module @training" in text:
        text = text.split("module @training", 1)[1].split("module @optimizer")[0]
    out = {}
    for line in text.splitlines():
        m = CALL.search(line)
        if not m:
            continue
        calls, b = out.get(m.group(1), (0, 0))
        out[m.group(1)] = (calls + 1,
                           b + sum(tensor_bytes(t) for t in m.group(2).split(", ")))
    return out


def totals(s):
    calls = sum(c for c, _ in s.values())
    mem = sum(b for k, (_, b) in s.items() if k not in COMPUTE_BOUND)
    return calls, mem


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="one or two lowered programs")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    if len(a.files) > 2:
        ap.error("give one or two files")
    sums = [summarize(f) for f in a.files]
    for f, s in zip(a.files, sums):
        calls, mem = totals(s)
        print(f"{f}: {calls} calls per step, {mem / 1e9:.3f} GB named by "
              "bandwidth-bound calls")
    if len(sums) == 2:
        (c0, m0), (c1, m1) = totals(sums[0]), totals(sums[1])
        print(f"ratio (second / first): calls {c1 / c0:.2f}, "
              f"bandwidth-bound bytes {m1 / m0:.2f}")
    keys = sorted(set().union(*sums), key=lambda k: -max(s.get(k, (0, 0))[1]
                                                       for s in sums))
    print(f"{'kernel':32s}" + "".join(f"{'calls':>7s}{'MB':>10s}" for _ in sums))
    for k in keys[:a.top]:
        row = "".join(f"{s.get(k, (0, 0))[0]:7d}{s.get(k, (0, 0))[1] / 1e6:10.1f}"
                      for s in sums)
        print(f"{k + (' *' if k in COMPUTE_BOUND else ''):32s}{row}")
    print("(* compute-bound: not counted in the bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
