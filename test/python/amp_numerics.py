#!/usr/bin/env python3
# ===- amp_numerics.py - AMP pass on real graphs: checker, ORT, structure -=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Runs `--auto-mixed-precision` on real ONNX graphs and checks the result.

Corpus: every .onnx under --testdata (the shared external test material,
never modified: variants are built in memory) and the fixtures
<--inputs>/fixtures/{mlp,cnn,transformer}/{forward,eval_model,training_model,
optimizer_model}.onnx. For each model:

1. amp-opt MODEL --auto-mixed-precision -o out.onnx (fp16) must succeed.
2. checker: when the original passes onnx.checker with full_check, so must
   the output; when it passes only the plain check (full_check fails, e.g.
   on ops ONNX shape inference does not know), the output must pass the
   plain check; when the original fails both, the model is counted as
   "checker skipped (original invalid)".
3. structure, from the MLIR of the import and of the pass (types are explicit
   there, also for com.microsoft ops ONNX cannot infer): every MatMul, Gemm,
   Conv, ConvTranspose, Einsum, Attention and com.microsoft FusedMatMul,
   TransposeMatMul, ConvGrad, Attention, MultiHeadAttention whose float
   ports were all f32 now has no f32 port (low precision); every loss op
   (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss, com.microsoft
   SoftmaxCrossEntropy*, SoftmaxCrossEntropyLoss*[Grad|Internal*]) and
   optimizer / accumulator op (AdamWOptimizer, AdamOptimizer, SGDOptimizerV2,
   ai.onnx.preview.training Adam/Adagrad/Momentum, InPlaceAccumulator[V2],
   ZeroGradient, IsAllFinite, ReduceAllL2) keeps exactly its original port
   types. Allow ops with a port of unknown element type in the file are
   counted as exempt (the pass cannot know they are f32 and leaves them).
4. numerics: when onnxruntime (CPU, graph optimizations off) can create a
   session for the original, it must for the rewritten model too, and both
   run on the same inputs: the model's shipped test_data_set_0 when it has
   one, else seeded random ones (floats U(-1, 1), divided by sqrt(last dim)
   for tensors of rank >= 2; integers in {0, 1}; bools false; symbolic dims
   2 unless listed in DIM_OVERRIDES). Models ORT cannot load (training-only
   com.microsoft ops, ai.onnx.preview.training ops, invalid files) are
   skipped with the reason printed and counted.
   Outputs are compared as in amp_property.py: an element passes when
       |amp - ref| <= ATOL * scale + RTOL * |ref| + 4 * spread
   with (RTOL, ATOL) = (2e-2, 1e-2) for fp16 and (1.25e-1, 6e-2) for bf16;
   scale = max(1, max |x| over the output and the float operands of the node
   computing it); spread = how far the output moves when every value of the
   f32 model is perturbed by its unit roundoff. Integer/bool outputs must be
   equal. The fp16 model is compared twice: emulated (every fp16 value
   rounded, computed in f32) and run as is by ORT. bf16 runs emulated only
   (ORT's CPU provider has almost no bf16 kernels), from a second amp-opt run
   with mode=bf16.

Last line: `amp-numerics: N models, C checker-valid (K skipped: original
invalid), S structure-checked, R ran in ORT (U skipped), F failed`.
Exit 1 when F > 0.

    amp_numerics.py --amp-opt build/bin/amp-opt --testdata ../shared/testdata/onnx-external --inputs test/Inputs
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, numpy_helper  # noqa: E402

import amp_property as ap  # noqa: E402

ap.STRICT_INFERENCE = False

FIXTURE_MODELS = ["forward", "eval_model", "training_model", "optimizer_model"]
FIXTURE_NETS = ["mlp", "cnn", "transformer"]

# Symbolic dims random inputs cannot guess (relative path -> dim -> value).
DIM_OVERRIDES = {
    # MNIST MLP: input-0 is [batch, 784] (fc1.weight is [500, 784]).
    "onnxruntime/training_api/eval_model.onnx": {"input-0_dim1": 784},
}

ALLOW_OPS = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "Attention",
             "FusedMatMul", "TransposeMatMul", "ConvGrad",
             "MultiHeadAttention"}
FP32_OPS = {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
            "SoftmaxCrossEntropy", "SoftmaxCrossEntropyGrad",
            "SoftmaxCrossEntropyLossGrad", "SoftmaxCrossEntropyLossInternal",
            "SoftmaxCrossEntropyLossInternalGrad", "AdamWOptimizer",
            "AdamOptimizer", "SGDOptimizerV2", "Adam", "Adagrad", "Momentum",
            "InPlaceAccumulator", "InPlaceAccumulatorV2", "ZeroGradient",
            "IsAllFinite", "ReduceAllL2"}

_NAME_RE = re.compile(r'train\.name = "((?:[^"\\]|\\.)*)"')
_OP_RE = re.compile(r'(?:^|[\s=])(?:train\.)?(?:[a-z]+\.)?([A-Z][A-Za-z0-9_]*)\(')
_GENERIC_RE = re.compile(r'op_type = "([^"]+)"')


class Failure(Exception):
    pass


def run_amp_opt(amp_opt: str, args: List[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([amp_opt] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)
    if proc.returncode != 0:
        err = [l for l in proc.stderr.decode(errors="replace").splitlines()
               if "error" in l][:2]
        raise Failure(f"amp-opt {' '.join(args[1:2])} exited "
                      f"{proc.returncode}: {' | '.join(err)}")
    return proc


def node_signatures(mlir: str) -> Dict[str, Tuple[str, str]]:
    """train.name -> (op_type, type signature) of every node line."""
    sigs = {}
    for line in mlir.splitlines():
        m = _NAME_RE.search(line)
        if not m or " : " not in line:
            continue
        g = _GENERIC_RE.search(line) if '"train.node"' in line else None
        if g:
            op = g.group(1)
        else:
            o = _OP_RE.search(line)
            if not o:
                continue
            op = o.group(1)
        sigs.setdefault(m.group(1), (op, line.rsplit(" : ", 1)[1]))
    return sigs


def _float_types(sig: str) -> List[str]:
    return re.findall(r"x?(bf16|f16|f32|f64)>", sig)


def check_structure(orig_mlir: str, amp_mlir: str, stats: Dict[str, int]):
    """Counts, per op type, the allow-list nodes found low precision
    ("low:<op>"), exempt ("exempt") and the loss/optimizer nodes found
    unchanged ("fp32:<op>") in stats."""
    before = node_signatures(orig_mlir)
    after = node_signatures(amp_mlir)
    for name, (op, sig0) in before.items():
        if name not in after:
            continue
        sig1 = after[name][1]
        if op in ALLOW_OPS:
            types0 = _float_types(sig0)
            if "f32" not in types0 or any(t != "f32" for t in types0):
                continue  # not an f32 node (already mixed, or integer)
            if "!train.unknown" in sig0:
                stats["exempt"] += 1
                continue
            stats["low:" + op] += 1
            if "f32" in _float_types(sig1):
                raise Failure(f"structure: {op} '{name}' did not become low "
                              f"precision: {sig1[:160]}")
        if op in FP32_OPS:
            stats["fp32:" + op] += 1
            if sig0 != sig1:
                raise Failure(f"structure: {op} '{name}' changed types: "
                              f"{sig0[:120]} -> {sig1[:120]}")


def check_checker(orig: onnx.ModelProto, out: onnx.ModelProto) -> str:
    """'full', 'plain' or 'skipped' (the level the original passes)."""
    for full in (True, False):
        try:
            onnx.checker.check_model(orig, full_check=full)
        except Exception:  # noqa: BLE001
            continue
        try:
            onnx.checker.check_model(out, full_check=full)
        except Exception as e:  # noqa: BLE001
            raise Failure("checker: the original passes "
                          f"{'full_check' if full else 'the plain check'}, "
                          "the output does not: " +
                          str(e).splitlines()[0][:200])
        return "full" if full else "plain"
    return "skipped"


def shipped_inputs(path: str, model: onnx.ModelProto):
    d = os.path.join(os.path.dirname(path), "test_data_set_0")
    if not os.path.isdir(d):
        return None
    inits = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = {}
    for k, name in enumerate(names):
        f = os.path.join(d, f"input_{k}.pb")
        if not os.path.exists(f):
            return None
        t = TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        feeds[name] = numpy_helper.to_array(t)
    return feeds


def random_inputs(model: onnx.ModelProto, rel: str, seed: int):
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    over = DIM_OVERRIDES.get(rel, {})
    feeds = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        if not i.type.HasField("tensor_type"):
            raise Failure("skip: a graph input is not a tensor")
        shape = []
        for d in t.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:
                shape.append(over.get(d.dim_param, 2))
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.floating):
            a = rng.uniform(-1, 1, size=shape)
            if len(shape) >= 2 and shape[-1] > 0:
                a = a / np.sqrt(shape[-1])
        elif np.issubdtype(dtype, np.integer):
            a = rng.integers(0, 2, size=shape)
        elif dtype == np.bool_:
            a = np.zeros(shape, dtype=bool)
        else:
            raise Failure(f"skip: input {i.name} has element type {dtype}")
        feeds[i.name] = a.astype(dtype)
    return feeds


def ort_loads(model: onnx.ModelProto) -> Optional[str]:
    """None if ORT creates a session, else the reason."""
    try:
        ap.run_ort_session(model)
        return None
    except Exception as e:  # noqa: BLE001
        msg = str(e).replace("\n", " ")
        m = re.search(r"Fatal error: ([^ ]+) is not a registered function/op",
                      msg)
        if m:
            return f"op {m.group(1)} not in onnxruntime"
        m = re.search(r"No Op registered for (\w+) with domain_version of (\d+)",
                      msg)
        if m:
            return f"op {m.group(1)}-{m.group(2)} not in onnxruntime"
        m = re.search(r"(Unrecognized attribute: \w+ for operator \w+)", msg)
        if m:
            return m.group(1)
        m = re.search(r"\] : \d+ : \w+ : (.*)", msg)
        return (m.group(1) if m else msg)[:140]


def compare(orig: onnx.ModelProto, out: onnx.ModelProto, feeds, mode: str,
            seed: int, direct: bool) -> None:
    ref, scales = ap.reference_run(orig, feeds)
    spread = ap.noise_spread(ref, ap.noise_run(orig, feeds, mode, seed))
    try:
        got = ap.run_ort(ap.emulate_low(out), feeds)
    except Exception as e:  # noqa: BLE001
        raise Failure(f"numerics ({mode}): ORT cannot run the emulated "
                      "rewritten model: " + str(e).splitlines()[0][:200])
    # Outputs the original declares fp16 come back from the emulation as f32
    # holding fp16 values.
    for name, a in ref.items():
        if got[name].dtype != a.dtype and a.dtype.kind == "f":
            got[name] = got[name].astype(a.dtype)
    try:
        ap.compare_outputs(ref, got, mode, set(), scales, spread,
                           f"{mode} emulated: ")
        if direct:
            got = ap.run_ort(out, feeds)
            ap.compare_outputs(ref, got, mode, set(), scales, spread,
                               f"{mode} direct: ")
    except ap.PropertyFailure as e:
        raise Failure(str(e))


def check_model(path: str, rel: str, amp_opt: str, work: str,
                stats: Dict[str, int], skips: Dict[str, List[str]],
                seed: int) -> None:
    orig = onnx.load(path)
    out_onnx = os.path.join(work, "out.onnx")
    out_bf16 = os.path.join(work, "out_bf16.onnx")
    report = os.path.join(work, "r.json")
    run_amp_opt(amp_opt, [path, f"--auto-mixed-precision=report={report}",
                          "-o", out_onnx])
    out = onnx.load(out_onnx)
    with open(report) as f:
        json.load(f)

    level = check_checker(orig, out)
    stats["checker " + level] += 1
    if level == "skipped":
        skips["checker skipped (original invalid)"].append(rel)

    orig_mlir = run_amp_opt(amp_opt, [path]).stdout.decode()
    amp_mlir = run_amp_opt(amp_opt, [
        path, "--auto-mixed-precision=summary=false"]).stdout.decode()
    check_structure(orig_mlir, amp_mlir, stats)
    stats["structure-checked"] += 1

    why = ort_loads(orig)
    if why is not None:
        skips[f"ORT: {why}"].append(rel)
        stats["ORT skipped"] += 1
        return
    feeds = shipped_inputs(path, orig)
    stats["shipped inputs" if feeds is not None else "random inputs"] += 1
    if feeds is None:
        feeds = random_inputs(orig, rel, seed)
    why = ort_loads(out)
    if why is not None:
        raise Failure(f"ORT loads the original but not the rewritten "
                      f"model: {why}")
    compare(orig, out, feeds, "fp16", seed, direct=True)
    run_amp_opt(amp_opt, [path, "--auto-mixed-precision=mode=bf16 "
                          "summary=false", "-o", out_bf16])
    compare(orig, onnx.load(out_bf16), feeds, "bf16", seed, direct=False)
    stats["ORT ran"] += 1


def corpus(testdata: Optional[str], inputs: Optional[str]) -> List[Tuple[str, str]]:
    items = []
    if testdata:
        for p in sorted(glob.glob(os.path.join(testdata, "**", "*.onnx"),
                                  recursive=True)):
            items.append((p, os.path.relpath(p, testdata)))
    if inputs:
        for net in FIXTURE_NETS:
            for name in FIXTURE_MODELS:
                p = os.path.join(inputs, "fixtures", net, name + ".onnx")
                items.append((p, f"fixtures/{net}/{name}.onnx"))
    return items


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--amp-opt", required=True)
    p.add_argument("--testdata", help="the shared external test data folder")
    p.add_argument("--inputs", help="test/Inputs (for the fixtures)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print one line per model")
    args = p.parse_args(argv)
    amp_opt = os.path.abspath(args.amp_opt)
    items = corpus(args.testdata, args.inputs)
    from collections import defaultdict
    stats: Dict[str, int] = defaultdict(int)
    skips: Dict[str, List[str]] = defaultdict(list)
    failures = []
    work = tempfile.mkdtemp(prefix="amp-numerics-")
    try:
        for k, (path, rel) in enumerate(items):
            if not os.path.exists(path):
                failures.append((rel, "missing"))
                continue
            before = stats["ORT ran"]
            start = time.time()
            try:
                check_model(path, rel, amp_opt, work, stats, skips,
                            args.seed + k)
                if args.verbose:
                    ran = "ran in ORT" if stats["ORT ran"] > before else \
                        "not run in ORT"
                    print(f"ok   {rel} ({ran}, {time.time() - start:.1f} s)")
            except Failure as e:
                if str(e).startswith("skip: "):
                    skips[str(e)[6:]].append(rel)
                    stats["ORT skipped"] += 1
                    continue
                failures.append((rel, str(e)))
                print(f"FAIL {rel}: {e}")
            except Exception as e:  # noqa: BLE001
                msg = f"internal: {type(e).__name__}: " + \
                    str(e).splitlines()[0][:200] if str(e) else type(e).__name__
                failures.append((rel, msg))
                print(f"FAIL {rel}: {msg}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for reason in sorted(skips):
        names = skips[reason]
        print(f"skipped ({len(names)}) {reason}: {', '.join(names[:4])}"
              f"{' ...' if len(names) > 4 else ''}")
    def breakdown(prefix):
        items = sorted((k[len(prefix):], v) for k, v in stats.items()
                       if k.startswith(prefix) and v)
        return sum(v for _, v in items), ", ".join(f"{k} {v}" for k, v in items)
    n_low, low = breakdown("low:")
    n_fp32, fp32 = breakdown("fp32:")
    print(f"structure: {n_low} allow-list nodes low precision ({low}); "
          f"{stats['exempt']} exempt (a port of unknown type)")
    print(f"structure: {n_fp32} loss/optimizer nodes unchanged fp32 ({fp32})")
    checker_ok = stats["checker full"] + stats["checker plain"]
    print(f"checker: {stats['checker full']} full_check, "
          f"{stats['checker plain']} plain check only; ORT inputs: "
          f"{stats['shipped inputs']} shipped, {stats['random inputs']} random")
    print(f"amp-numerics: {len(items)} models, {checker_ok} checker-valid "
          f"({stats['checker skipped']} skipped: original invalid), "
          f"{stats['structure-checked']} structure-checked, "
          f"{stats['ORT ran']} ran in ORT ({stats['ORT skipped']} skipped), "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
