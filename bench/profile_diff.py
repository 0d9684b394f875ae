#!/usr/bin/env python3
# ===- profile_diff.py - AMPRT_PROFILE tables of two runs, per step -----=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Per-step kernel times from the AMPRT_PROFILE tables of two runs of the
same command that differ only in --steps (N1 < N2): each context's table
(in the order the contexts print them) of the longer run minus the shorter
one's, divided by N2 - N1. The first steps' one-time costs (plans, lazy
module loading, cuDNN searches) cancel out.

    profile_diff.py SHORT.log LONG.log N1 N2
"""
import re
import sys


def tables(path):
    """[{kernel: (calls, on_host, total_ms)}] in print order."""
    out = []
    row = re.compile(r"^\s+(\S+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+\s+")
    for line in open(path, errors="replace"):
        if line.startswith("amprt profile ("):
            out.append({})
        elif out:
            m = row.match(line)
            if m and m.group(1) != "kernel":
                out[-1][m.group(1)] = (int(m.group(2)), int(m.group(3)),
                                       float(m.group(4)))
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    short, long_ = tables(sys.argv[1]), tables(sys.argv[2])
    n = int(sys.argv[4]) - int(sys.argv[3])
    if len(short) != len(long_) or n <= 0:
        sys.exit("profile_diff: the runs have %d and %d tables (steps %s..%s)"
                 % (len(short), len(long_), sys.argv[3], sys.argv[4]))
    for i, (a, b) in enumerate(zip(short, long_)):
        rows = []
        for k, (calls, host, ms) in b.items():
            c0, h0, m0 = a.get(k, (0, 0, 0.0))
            rows.append(((ms - m0) / n, (calls - c0) / n, (host - h0) / n, k))
        rows.sort(reverse=True)
        total = sum(r[0] for r in rows)
        print("context %d: %.3f ms of kernel calls per step" % (i + 1, total))
        for ms, calls, host, k in rows:
            if calls:
                print("  %-34s %8.1f calls %6.1f on host %9.3f ms"
                      % (k, calls, host, ms))


if __name__ == "__main__":
    main()
