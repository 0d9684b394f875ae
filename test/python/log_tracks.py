#!/usr/bin/env python3
"""Compares two amp-run --log files: whether the second's loss curve tracks
the first's within a relative tolerance, step by step, and how many steps
each skipped (a step whose loss scaler found a non-finite gradient). A
step non-finite in both runs matches.

    log_tracks.py REFERENCE.csv OTHER.csv --rtol 1e-3

Prints one line per step and a last line, "tracks: yes" or "tracks: no
(...)"; exits 0 either way (FileCheck decides).
"""
import argparse
import csv
import math


def read(path):
    with open(path) as f:
        return [(float(r["loss"]), int(r["all_finite"]))
                for r in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--rtol", type=float, required=True)
    args = ap.parse_args()
    ref, oth = read(args.reference), read(args.other)
    worst, bad = 0.0, []
    for i, ((a, _), (b, finite)) in enumerate(zip(ref, oth)):
        if not math.isfinite(a) and not math.isfinite(b):
            rel = 0.0  # both runs lost the step (a skip on both sides)
        else:
            rel = (abs(b - a) / max(abs(a), 1e-30) if math.isfinite(b)
                   else math.inf)
        worst = max(worst, rel)
        print("step %d: %.9g %.9g rel %.3g%s" % (i, a, b, rel,
                                                 "" if finite else " skipped"))
        if not rel <= args.rtol:
            bad.append(i)
    skipped = sum(1 for _, f in oth if not f)
    print("skipped %d of %d" % (skipped, len(oth)))
    if bad or len(ref) != len(oth):
        print("tracks: no (%d steps past rtol %g)" % (len(bad), args.rtol))
    else:
        print("tracks: yes (worst rel %.3g <= %g)" % (worst, args.rtol))


if __name__ == "__main__":
    main()
