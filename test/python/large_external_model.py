#!/usr/bin/env python3
# ===- large_external_model.py - amp-opt on a model over 2 GiB ----------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""amp-opt's AMP on a forward graph whose weights pass 2 GiB (external data).

Generates, at run time and never committed, a chain of MatMul/Add/Relu
layers whose weights are external data (most in one file, one in a file of
its own, the biases inline), runs

    amp-opt model.onnx --auto-mixed-precision -o out/model.amp.onnx

and checks what issue 21 asks of it:

  * the output passes onnx.checker (full check, by path) and loads;
  * it keeps its weights as external data (tensors that were external stay
    external) in one file next to it, `model.amp.onnx.data`, and every
    external tensor's bytes are identical to the input's; inline tensors
    are unchanged; nothing else (no temporary) is left in the folder;
  * onnxruntime runs both models and the AMP output is within fp16
    tolerance of the fp32 one;
  * amp-opt's peak RSS (the child's ru_maxrss) is under --rss-bound times
    the weight bytes (0.25 by default: the bytes are copied file to file);
  * with --onnx-external-data=never the model would pass 2 GiB: amp-opt
    exits 1, says so, and writes nothing.

    large_external_model.py --amp-opt BIN --workdir DIR [--gib 2.25]

Prints the measurements (seconds, peak RSS) and ends with
`large-external: N passed, M failed`. The workdir's big files are deleted
at the end unless --keep.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 8192


def layer_dims(total_bytes: float) -> list[tuple[int, int]]:
    """Weight shapes of the chain: pairs [H, 2H], [2H, H] (1 GiB each pair
    at H = 8192), then [H, H] ones (256 MiB), until the weights hold at
    least `total_bytes`."""
    pair = 2 * HIDDEN * 2 * HIDDEN * 4
    dims = [(HIDDEN, 2 * HIDDEN), (2 * HIDDEN, HIDDEN)] * int(total_bytes // pair)
    left = total_bytes - len(dims) // 2 * pair
    dims += [(HIDDEN, HIDDEN)] * int(np.ceil(left / (HIDDEN * HIDDEN * 4)))
    return dims


def external(tensor: TensorProto, location: str, offset: int, length: int) -> None:
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


def make_model(directory: str, total_bytes: float, seed: int) -> tuple[str, int]:
    """Writes model.onnx + weights.bin + extra.bin; returns (path, weight bytes)."""
    rng = np.random.default_rng(seed)
    dims = layer_dims(total_bytes)
    nodes, inits = [], []
    x = "input"
    weight_bytes = 0
    with open(os.path.join(directory, "weights.bin"), "wb") as main_file, \
            open(os.path.join(directory, "extra.bin"), "wb") as extra_file:
        for i, (k, n) in enumerate(dims):
            w = rng.standard_normal((k, n), dtype=np.float32)
            w *= np.float32(1.0 / np.sqrt(k))
            t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[k, n])
            # The second weight lives in a file of its own, at an odd offset.
            f, location = (extra_file, "extra.bin") if i == 1 else (main_file, "weights.bin")
            if i == 1:
                f.write(b"\0" * 12)
            offset = f.tell()
            w.tofile(f)
            external(t, location, offset, w.nbytes)
            weight_bytes += w.nbytes
            del w
            inits.append(t)
            b = numpy_helper.from_array(
                (rng.standard_normal(n, dtype=np.float32) * np.float32(0.1)), f"b{i}")
            inits.append(b)  # inline (raw_data)
            nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"], name=f"MatMul_{i}"))
            nodes.append(helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"add{i}"], name=f"Add_{i}"))
            last = i == len(dims) - 1
            if not last:
                nodes.append(helper.make_node("Relu", [f"add{i}"], [f"relu{i}"], name=f"Relu_{i}"))
            x = f"add{i}" if last else f"relu{i}"
    graph = helper.make_graph(
        nodes, "large_chain",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, HIDDEN])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = os.path.join(directory, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, weight_bytes


def run_rss(argv: list[str]) -> tuple[int, str, float, int]:
    """(exit code, stderr, seconds, peak RSS in bytes) of one child, reaped
    with wait4 so that its own ru_maxrss is read."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(devnull.fileno(), 1)
            os.dup2(err_w, 2)
            os.close(err_r)
            try:
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        os.close(err_w)
        chunks = []
        while True:
            data = os.read(err_r, 65536)
            if not data:
                break
            chunks.append(data)
        os.close(err_r)
        _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return code, b"".join(chunks).decode(errors="replace"), seconds, usage.ru_maxrss * 1024


def files_equal(a: str, a_off: int, b: str, b_off: int, length: int) -> bool:
    piece = 64 << 20
    with open(a, "rb") as fa, open(b, "rb") as fb:
        fa.seek(a_off)
        fb.seek(b_off)
        left = length
        while left:
            n = min(piece, left)
            if fa.read(n) != fb.read(n):
                return False
            left -= n
    return True


def external_info(t: TensorProto) -> dict:
    return {e.key: e.value for e in t.external_data}


def tensor_bytes(t: TensorProto) -> int:
    return int(np.prod(t.dims)) * np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--amp-opt", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--gib", type=float, default=2.25, help="weight GiB (default 2.25)")
    parser.add_argument("--rss-bound", type=float, default=0.25,
                        help="amp-opt's peak RSS at most this times the weight bytes")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--no-ort", action="store_true", help="skip the onnxruntime comparison")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args(argv)

    work = os.path.abspath(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    src, out_dir = os.path.join(work, "in"), os.path.join(work, "out")
    os.makedirs(src)
    os.makedirs(out_dir)
    passed = failed = 0

    def check(ok: bool, what: str) -> None:
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {what}")

    try:
        t0 = time.perf_counter()
        model_path, weight_bytes = make_model(src, args.gib * 2 ** 30, args.seed)
        print(f"generated {model_path}: {weight_bytes} weight bytes "
              f"({weight_bytes / 2 ** 30:.2f} GiB) in {time.perf_counter() - t0:.1f} s")
        check(weight_bytes > 2 ** 31, "the weights pass 2 GiB")

        # Never: the inline model would pass 2 GiB, so nothing is written.
        never = os.path.join(out_dir, "never.onnx")
        code, err, _, _ = run_rss([args.amp_opt, model_path, "--auto-mixed-precision",
                                   "--onnx-external-data=never", "-o", never])
        check(code == 1 and "2 GiB" in err and "nothing was written" in err,
              f"--onnx-external-data=never: exit {code}, stderr {err.strip()[:300]!r}")
        check(os.listdir(out_dir) == [], f"never left {os.listdir(out_dir)}")

        out = os.path.join(out_dir, "model.amp.onnx")
        code, err, seconds, rss = run_rss([args.amp_opt, model_path, "--auto-mixed-precision",
                                           "-o", out])
        print(f"amp-opt --auto-mixed-precision: exit {code}, {seconds:.2f} s, peak RSS "
              f"{rss / 2 ** 20:.1f} MiB = {rss / weight_bytes:.4f} x the weight bytes")
        check(code == 0, f"amp-opt exit {code}: {err.strip()[-500:]}")
        check("Total nodes converted" in err, "the AMP summary is printed")
        check(rss < args.rss_bound * weight_bytes,
              f"peak RSS {rss} >= {args.rss_bound} x {weight_bytes}")
        data_name = "model.amp.onnx.data"
        check(sorted(os.listdir(out_dir)) == ["model.amp.onnx", data_name],
              f"out folder holds {sorted(os.listdir(out_dir))}")
        if code != 0:
            return 1

        onnx.checker.check_model(out, full_check=True)
        check(True, "checker")
        original = onnx.load(model_path, load_external_data=False)
        amp = onnx.load(out, load_external_data=False)
        before = {t.name: t for t in original.graph.initializer}
        after = {t.name: t for t in amp.graph.initializer}
        check(list(before) == list(after), "initializers keep their names and order")
        data_path = os.path.join(out_dir, data_name)
        for name, t in before.items():
            u = after[name]
            if t.data_location == TensorProto.EXTERNAL:
                i, o = external_info(t), external_info(u)
                ok = (u.data_location == TensorProto.EXTERNAL and o.get("location") == data_name
                      and int(o["length"]) == int(i["length"]) == tensor_bytes(u)
                      and u.data_type == t.data_type and list(u.dims) == list(t.dims))
                check(ok, f"{name} stays external in {data_name}: {o}")
                if ok:
                    check(files_equal(os.path.join(src, i["location"]), int(i.get("offset", 0)),
                                      data_path, int(o["offset"]), int(o["length"])),
                          f"{name}'s bytes are identical")
                    if int(o["length"]) >= 2 ** 20:
                        check(int(o["offset"]) % 65536 == 0, f"{name} starts 64 KiB-aligned")
            else:
                check(u == t, f"inline initializer {name} unchanged")
        casts = sum(n.op_type == "Cast" for n in amp.graph.node)
        halves = [n for n in amp.graph.node if n.op_type == "MatMul"]
        print(f"output: {len(amp.graph.node)} nodes, {casts} Cast, {len(halves)} MatMul")
        check(casts > 0, "the AMP pass inserted casts")

        if not args.no_ort:
            import onnxruntime as ort
            x = np.random.default_rng(args.seed + 1).standard_normal((1, HIDDEN),
                                                                    dtype=np.float32)
            so = ort.SessionOptions()
            so.intra_op_num_threads = 2
            outputs = []
            for path in (model_path, out):
                t0 = time.perf_counter()
                session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                outputs.append(session.run(None, {"input": x})[0].astype(np.float64))
                del session
                print(f"onnxruntime ran {os.path.basename(path)} in "
                      f"{time.perf_counter() - t0:.1f} s")
            ref, got = outputs
            scale = max(1.0, float(np.abs(ref).max()))
            err = np.abs(got - ref)
            tol = 1e-2 * scale + 2e-2 * np.abs(ref)
            print(f"onnxruntime: AMP vs fp32 max abs diff {err.max():.3g} (max |ref| "
                  f"{np.abs(ref).max():.3g}); tolerance 1e-2 max(1, max|ref|) + 2e-2 |ref|")
            check(bool(np.all(err <= tol)) and err.max() > 0,
                  "the AMP output is within fp16 tolerance of fp32 (and not identical)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"large-external: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
