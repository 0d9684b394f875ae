#!/usr/bin/env python3
# ===- external_data_export.py - ONNX external data out of the tools -----=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""The exporter's external data, on small models with forced thresholds.

Every mechanism of the >2 GiB path, checked in seconds:

  always      amp-opt --onnx-external-data=always --onnx-external-data-threshold=T:
              every initializer of at least T bytes is external in
              <out>.onnx.data (location, offset, length; 64 KiB-aligned from
              1 MiB), the smaller ones inline, and the model's values are the
              input's (onnx_compare.py reads the external data)
  auto-keeps  that model through amp-opt (default auto) and through
              amp-translate's import + export: its external tensors stay
              external, in the new output's own data file, same values
  never       --onnx-external-data=never: everything inline again, equal to
              the original model
  limit       --onnx-protobuf-limit (a hidden test option) below the model's
              size: auto moves the tensors out with a remark; never exits 1,
              says nothing was written, and writes nothing
  in-place    amp-opt OUT.onnx -o OUT.onnx rewrites the data file it reads
              from (mapped) without corrupting it
  location    --onnx-external-data-location names the data file; one that
              leaves the folder, or lies in a missing folder, is an error
              and nothing is written
  stdout      amp-translate --export-onnx to standard output cannot place a
              data file: an error, exit 1
  bytecode    amp-opt --emit-bytecode writes MLIR bytecode (resources raw);
              .onnx -> .mlirbc -> .onnx keeps every value, and external
              tensors stay external, byte for byte

    external_data_export.py --tools BIN --model M.onnx --workdir DIR

Ends with `external-data: N passed, M failed`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_compare  # noqa: E402

passed = failed = 0


def check(ok: bool, what: str) -> None:
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}")


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def same_values(a: str, b: str, what: str) -> None:
    diffs = onnx_compare.compare_models(a, b, allow_empty_names=True)
    check(not diffs, f"{what}: {diffs[:3]}")


def size_of(t: TensorProto) -> int:
    return int(np.prod(t.dims, dtype=np.int64)) * np.dtype(
        helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize


def externals(path: str) -> dict[str, dict]:
    m = onnx_compare.load_model(path)
    return {t.name: {e.key: e.value for e in t.external_data}
            for t in m.graph.initializer if t.data_location == TensorProto.EXTERNAL}


def fresh(directory: str) -> str:
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    return directory


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", required=True)
    parser.add_argument("--model", required=True, help="an ONNX model with initializers")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--threshold", type=int, default=1024)
    args = parser.parse_args(argv)
    opt = os.path.join(args.tools, "amp-opt")
    translate = os.path.join(args.tools, "amp-translate")
    work = fresh(os.path.abspath(args.workdir))
    original = os.path.abspath(args.model)
    inits = onnx_compare.load_model(original).graph.initializer
    big = {t.name for t in inits if size_of(t) >= args.threshold and t.data_type != TensorProto.STRING}
    print(f"{os.path.basename(original)}: {len(inits)} initializers, {len(big)} of at least "
          f"{args.threshold} bytes")
    check(len(big) >= 2 and len(big) < len(inits), "the model has tensors on both sides")

    # always: the big tensors out, the small ones in.
    d = fresh(os.path.join(work, "always"))
    out = os.path.join(d, "model.onnx")
    p = run([opt, original, "--onnx-external-data=always",
             f"--onnx-external-data-threshold={args.threshold}", "-o", out])
    check(p.returncode == 0, f"always: exit {p.returncode}: {p.stderr}")
    check(sorted(os.listdir(d)) == ["model.onnx", "model.onnx.data"], f"always wrote {os.listdir(d)}")
    ext = externals(out)
    check(set(ext) == big, f"always: external {sorted(ext)} != {sorted(big)}")
    data_size = os.path.getsize(os.path.join(d, "model.onnx.data"))
    ends = []
    for name, e in ext.items():
        off, length = int(e["offset"]), int(e["length"])
        ends.append((off, off + length))
        check(e["location"] == "model.onnx.data" and off + length <= data_size,
              f"{name}: {e} in a file of {data_size} bytes")
        if length >= 1 << 20:
            check(off % 65536 == 0, f"{name} is 64 KiB-aligned")
    ends.sort()
    check(all(a[1] <= b[0] for a, b in zip(ends, ends[1:])), "tensors do not overlap")
    same_values(original, out, "always")
    onnx.checker.check_model(out, full_check=True)
    full = onnx.load(out)
    check(len(full.graph.initializer) == len(inits), "onnx.load reads the external data")

    # auto keeps them external: amp-opt, and amp-translate's MLIR round trip.
    d2 = fresh(os.path.join(work, "auto"))
    back = os.path.join(d2, "back.onnx")
    p = run([opt, out, "-o", back])
    check(p.returncode == 0 and set(externals(back)) == big
          and os.path.exists(back + ".data"), f"auto through amp-opt: {p.stderr}")
    same_values(original, back, "auto through amp-opt")
    mlir = os.path.join(d2, "model.mlir")
    via = os.path.join(d2, "via.onnx")
    p1 = run([translate, "--import-onnx", out, "-o", mlir])
    p2 = run([translate, "--export-onnx", mlir, "-o", via])
    check(p1.returncode == 0 and p2.returncode == 0 and set(externals(via)) == big
          and os.path.exists(via + ".data"), f"auto through amp-translate: {p1.stderr}{p2.stderr}")
    same_values(original, via, "auto through amp-translate")

    # never: inline again.
    inline = os.path.join(d2, "inline.onnx")
    p = run([opt, out, "--onnx-external-data=never", "-o", inline])
    check(p.returncode == 0 and not externals(inline) and not os.path.exists(inline + ".data"),
          f"never: {p.stderr}")
    same_values(original, inline, "never")

    # The 2 GiB rule, at a forced limit below the model's size.
    limit = os.path.getsize(original) // 2
    d3 = fresh(os.path.join(work, "limit"))
    moved = os.path.join(d3, "moved.onnx")
    p = run([opt, original, f"--onnx-protobuf-limit={limit}",
             f"--onnx-external-data-threshold={args.threshold}", "-o", moved])
    check(p.returncode == 0 and "remark" in p.stderr and "moved.onnx.data" in p.stderr
          and set(externals(moved)) == big, f"limit, auto: exit {p.returncode}: {p.stderr}")
    same_values(original, moved, "limit, auto")
    check(os.path.getsize(moved) <= limit, "limit, auto: the model fits the limit")
    d4 = fresh(os.path.join(work, "limit-never"))
    p = run([opt, original, f"--onnx-protobuf-limit={limit}", "--onnx-external-data=never",
             "-o", os.path.join(d4, "x.onnx")])
    check(p.returncode == 1 and "nothing was written" in p.stderr and os.listdir(d4) == [],
          f"limit, never: exit {p.returncode}, left {os.listdir(d4)}: {p.stderr}")

    # In place: the data file being read (mapped) is the one replaced.
    d5 = fresh(os.path.join(work, "in-place"))
    target = os.path.join(d5, "model.onnx")
    shutil.copy(out, target)
    shutil.copy(out + ".data", target + ".data")
    p = run([opt, target, "--onnx-external-data=always",
             f"--onnx-external-data-threshold={args.threshold}", "-o", target])
    check(p.returncode == 0 and sorted(os.listdir(d5)) == ["model.onnx", "model.onnx.data"],
          f"in place: {p.stderr} {os.listdir(d5)}")
    same_values(original, target, "in place")

    # The data file's name.
    d6 = fresh(os.path.join(work, "location"))
    named = os.path.join(d6, "named.onnx")
    p = run([opt, original, "--onnx-external-data=always", "--onnx-external-data-location=w.bin",
             "-o", named])
    check(p.returncode == 0 and sorted(os.listdir(d6)) == ["named.onnx", "w.bin"]
          and all(e["location"] == "w.bin" for e in externals(named).values()),
          f"location: {p.stderr} {os.listdir(d6)}")
    same_values(original, named, "location")
    for bad, words in (("../up.bin", "leaves the model folder"),
                       ("/tmp/abs.bin", "absolute"),
                       ("missing/w.bin", "cannot create")):
        d7 = fresh(os.path.join(work, "bad-location"))
        p = run([opt, original, "--onnx-external-data=always",
                 f"--onnx-external-data-location={bad}", "-o", os.path.join(d7, "x.onnx")])
        check(p.returncode == 1 and words in p.stderr and os.listdir(d7) == []
              and not os.path.exists(os.path.join(work, "up.bin")),
              f"location {bad}: exit {p.returncode}, left {os.listdir(d7)}: {p.stderr}")

    # Standard output cannot hold a data file.
    p = run([translate, "--export-onnx", mlir])
    check(p.returncode == 1 and "-o" in p.stderr and "external data" in p.stderr,
          f"stdout: exit {p.returncode}: {p.stderr[:300]}")

    # MLIR bytecode.
    d8 = fresh(os.path.join(work, "bytecode"))
    bc = os.path.join(d8, "model.mlirbc")
    p = run([opt, original, "--emit-bytecode", "-o", bc])
    with open(bc, "rb") as f:
        magic = f.read(4)
    check(p.returncode == 0 and magic == b"ML\xefR", f"--emit-bytecode: {magic!r} {p.stderr}")
    text = os.path.join(d8, "model.mlir")
    run([opt, original, "-o", text])
    check(os.path.getsize(bc) < os.path.getsize(text), "bytecode is smaller than the hex text")
    again = os.path.join(d8, "again.onnx")
    p = run([opt, bc, "-o", again])
    check(p.returncode == 0, f"bytecode -> onnx: {p.stderr}")
    same_values(original, again, "onnx -> mlirbc -> onnx")
    bc2 = os.path.join(d8, "external.mlirbc")
    again2 = os.path.join(d8, "again-external.onnx")
    p1 = run([opt, out, "--emit-bytecode", "-o", bc2])
    p2 = run([opt, bc2, "-o", again2])
    check(p1.returncode == 0 and p2.returncode == 0 and set(externals(again2)) == big,
          f"external onnx -> mlirbc -> onnx: {p1.stderr}{p2.stderr}")
    same_values(original, again2, "external onnx -> mlirbc -> onnx")
    amp_bc = os.path.join(d8, "amp.mlirbc")
    p = run([opt, original, "--auto-mixed-precision", "--emit-bytecode", "-o", amp_bc])
    p2 = run([opt, amp_bc, "-o", os.path.join(d8, "amp.onnx")])
    check(p.returncode == 0 and p2.returncode == 0, f"AMP to bytecode: {p.stderr}{p2.stderr}")

    print(f"external-data: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
