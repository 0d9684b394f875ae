#!/usr/bin/env python3
"""ONNX's backend node tests through amp-run --run.

  onnx_backend_node.py generate OUT
      writes every node test case of the installed onnx package
      (onnx.backend.test.case.node) as OUT/<test>/model.onnx and
      test_data_set_<k>/{input,output}_<i>.pb; cases with sequence, map or
      optional values are left out (amp-run --run feeds tensors).
  onnx_backend_node.py run --amp-run BIN --data OUT [--expect FILE]
                           [--jobs J] [--report]
      runs amp-run BIN <test>/model.onnx --run <test>/test_data_set_0 on
      each test (J at a time, default the CPU count) and sorts it: pass, mismatch (ran, outputs differ), error (refused: an
      operator or a type without a kernel, an input the lowering needs to
      know). With --expect, every test named in FILE must pass (a
      regression is a failure); --report prints every test's class and the
      first error line.

Prints "onnx-backend-node: P of E expected passes pass (T run: p pass, m
mismatch, e error)" and exits 1 on a regression.
"""

import argparse
import os
import subprocess
import sys


def generate(out):
    from onnx import numpy_helper
    import onnx.backend.test.case.node as node

    written = 0
    for case in node.collect_testcases(None):
        d = os.path.join(out, case.name)
        sets = []
        try:
            for inputs, outputs in case.data_sets:
                files = {}
                for prefix, values, infos in (
                        ("input", inputs, case.model.graph.input),
                        ("output", outputs, case.model.graph.output)):
                    for j, x in enumerate(values):
                        if not infos[j].type.HasField("tensor_type"):
                            raise TypeError("not a tensor")
                        files["%s_%d.pb" % (prefix, j)] = numpy_helper.from_array(
                            x, infos[j].name).SerializeToString()
                sets.append(files)
        except (TypeError, AttributeError, ValueError):
            continue
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for k, files in enumerate(sets):
            ds = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(ds, exist_ok=True)
            for name, data in files.items():
                with open(os.path.join(ds, name), "wb") as f:
                    f.write(data)
        written += 1
    print("wrote %d node tests to %s" % (written, out))
    return 0


def classify(amp_run, d):
    """(class, first error or mismatch line) of one test."""
    r = subprocess.run([amp_run, os.path.join(d, "model.onnx"), "--run",
                        os.path.join(d, "test_data_set_0")],
                       capture_output=True, text=True, timeout=300)
    why = next((line for line in (r.stderr + r.stdout).splitlines()
                if "error" in line or "MISMATCH" in line), "")
    if r.returncode == 0:
        return "pass", why
    if r.returncode == 1 and "compared: FAIL" in r.stdout:
        return "mismatch", why
    if r.returncode == 1:
        return "error", why
    # A signal or another status: never right, expected to pass or not.
    return "crash", "exit %d %s" % (r.returncode, why)


def run(a):
    from concurrent.futures import ThreadPoolExecutor

    tests = sorted(t for t in os.listdir(a.data)
                   if os.path.isfile(os.path.join(a.data, t, "model.onnx")))
    expect = set()
    if a.expect:
        with open(a.expect) as f:
            expect = {line.strip() for line in f if line.strip()}
    with ThreadPoolExecutor(a.jobs or os.cpu_count()) as pool:
        results = list(pool.map(
            lambda t: classify(a.amp_run, os.path.join(a.data, t)), tests))
    counts = {}
    regressions = []
    for t, (c, why) in zip(tests, results):
        counts[c] = counts.get(c, 0) + 1
        if c == "crash" or (t in expect and c != "pass"):
            regressions.append("%s: %s %s" % (t, c, why[:200]))
        if a.report:
            print("%-8s %s %s" % (c, t, why[:200]))
    for r in regressions:
        print("REGRESSION " + r)
    missing = expect - set(tests)
    for t in sorted(missing):
        print("MISSING %s (expected to pass, not generated)" % t)
    passing = sum(1 for t, (c, _) in zip(tests, results)
                  if t in expect and c == "pass")
    print("onnx-backend-node: %d of %d expected passes pass (%d run: %s)"
          % (passing, len(expect), len(tests),
             ", ".join("%d %s" % (counts[k], k) for k in sorted(counts))))
    return 1 if regressions or missing else 0


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out")
    r = sub.add_parser("run")
    r.add_argument("--amp-run", required=True)
    r.add_argument("--data", required=True)
    r.add_argument("--expect")
    r.add_argument("--jobs", type=int, default=0)
    r.add_argument("--report", action="store_true")
    a = ap.parse_args()
    return generate(a.out) if a.cmd == "generate" else run(a)


if __name__ == "__main__":
    sys.exit(main())
