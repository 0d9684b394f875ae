#!/usr/bin/env python3
# ===- large_model_bench.py - a 2.66 GB Llama end to end ----------------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""amp-opt and amp-run on a model past 2 GB, beside ONNX Runtime (issue 21).

Not in CI: it needs torch, transformers and onnxruntime-training (a
virtualenv with torch 2.4.1, transformers 4.45.2, onnxruntime-training
1.19.2, onnx 1.16.2, numpy < 2), about 14 GB of free memory per heavy
phase, about 45 GB of disk at its peak and half an hour on 2 cores.

The model: a randomly initialized LlamaForCausalLM (hidden 1536, 20 layers,
12 heads, MLP 4096, vocabulary 32000: 664.6M parameters, 2.66 GB in fp32),
eager attention, exported by the TorchScript exporter in training mode
(opset 17; torch writes the weights as external data, one file per tensor),
then `generate_artifacts` given the model by path (ORT's way past 2 GB)
with ORT's CrossEntropyLoss on the logits transposed to [batch, vocab, seq]
and AdamW: training/eval/optimizer models and `checkpoint` +
`checkpoint.data`. Batches of 2 x 128 random token ids, the same for ORT
(its training API: CheckpointState, Module, Optimizer) and amp-run
(`--data DIR --no-shuffle`). lr 1e-3.

Phases (each child's wall time and peak RSS, ru_maxrss from wait4):

  make    the forward model, the artifacts and 8 samples (torch)
  opt     `cp` of the forward model's files, then amp-opt
          --auto-mixed-precision -o on them, twice each, alternating (the
          page cache warm for both); the same on the training model; the
          outputs checked (onnx.checker full check, external tensors
          byte-identical to the input's, onnxruntime runs the AMP forward
          model within fp16 tolerance of the fp32 one)
  ort     ORT's training API: 4 steps (the reference losses; peak RSS after
          2 steps), 2 steps + save_checkpoint with the optimizer state,
          2 steps + export_model_for_inferencing
  train   amp-run 2 steps fp32 (losses against ORT's) and --amp
  ortckpt amp-run 2 steps --ort-checkpoint; ORT goes on from it 2 steps
          (against ORT's own steps 3 and 4)
  export  amp-run 2 steps -o; onnxruntime's InferenceSession runs it on
          batch 3 (the eval model's loss, against ORT's step-3 loss)
  resume  amp-run 4 steps --checkpoint D; 2 steps --checkpoint A, then
          --resume A to step 4 --checkpoint C: C and D bit-identical, the
          logs of steps 3 and 4 too
  report  the tables (markdown with --markdown FILE) and the targets

    large_model_bench.py [--phases make,opt,...] [--work DIR] [--keep]

Results accumulate in DIR/results.json, so a later phase can be rerun alone
(`--phases resume --keep`) without making the model again. DIR (default
/tmp/amp-large-bench) is deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gc
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEST_PY = REPO / "test" / "python"
PHASES = ("make", "opt", "ort", "train", "ortckpt", "export", "resume", "report")
LLAMA = dict(hidden_size=1536, num_hidden_layers=20, num_attention_heads=12,
             num_key_value_heads=12, intermediate_size=4096, vocab_size=32000,
             max_position_embeddings=256)
BATCH, SEQ, SAMPLES = 2, 128, 8  # 4 steps of data
LR = 1e-3
ROUNDS = 5  # amp-opt against cp, alternating; the median ratio counts
GIB = 2 ** 30


# ---------------------------------------------------------------------------
# Children: their peak RSS and time
# ---------------------------------------------------------------------------

def wait_for_memory(min_gib: float, what: str) -> None:
    """Waits (up to 30 minutes) until MemAvailable reaches `min_gib`."""
    deadline = time.time() + 1800
    while True:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) for line in f}
        avail = info["MemAvailable"] * 1024 / GIB
        if avail >= min_gib:
            return
        if time.time() > deadline:
            sys.exit(f"{what}: only {avail:.1f} GiB available after 30 min "
                     f"(need {min_gib})")
        print(f"  {what}: {avail:.1f} GiB available, waiting for {min_gib}",
              flush=True)
        time.sleep(30)


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work)
        self.logs = self.work / "logs"
        self.res_path = self.work / "results.json"
        self.res = (json.loads(self.res_path.read_text())
                    if self.res_path.exists() else {})

    def save(self):
        tmp = self.res_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.res, indent=1) + "\n")
        tmp.rename(self.res_path)

    def run(self, name: str, cmd: list, heavy: bool = True,
            check: bool = True) -> dict:
        """Runs `cmd` (stdout/stderr to logs/NAME.*); records its wall time
        and peak RSS under runs[NAME]."""
        if heavy:
            wait_for_memory(self.args.min_free_gib, name)
        self.logs.mkdir(parents=True, exist_ok=True)
        cmd = [str(c) for c in cmd]
        with open(self.logs / f"{name}.out", "w") as out, \
                open(self.logs / f"{name}.err", "w") as err:
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, stdout=out, stderr=err)
            # ru_maxrss is the peak; sampling /proc tells what it is made
            # of: anonymous memory (heap, buffers) or mapped files.
            # Not for the quick ones (amp-opt, cp): polling would add to
            # their time.
            split = {"RssAnon": 0, "RssFile": 0}
            while True:
                pid, status, usage = os.wait4(p.pid, 0 if not heavy else os.WNOHANG)
                if pid:
                    break
                try:
                    with open(f"/proc/{p.pid}/status") as f:
                        for line in f:
                            key = line.split(":")[0]
                            if key in split:
                                split[key] = max(split[key], int(line.split()[1]) * 1024)
                except OSError:
                    pass
                time.sleep(0.5)
            seconds = time.monotonic() - t0
        rc = os.waitstatus_to_exitcode(status)
        r = {"cmd": " ".join(cmd), "seconds": round(seconds, 4),
             "peak_rss": usage.ru_maxrss * 1024, "rc": rc,
             "sampled_peak_anon": split["RssAnon"], "sampled_peak_file": split["RssFile"]}
        self.res.setdefault("runs", {})[name] = r
        self.save()
        print(f"  {name:28} {seconds:8.1f} s  peak RSS "
              f"{r['peak_rss'] / GIB:6.2f} GiB  exit {rc}", flush=True)
        if check and rc != 0:
            tail = (self.logs / f"{name}.err").read_text()[-3000:]
            sys.exit(f"{name} failed (exit {rc}): {' '.join(cmd)}\n{tail}")
        return r

    def stderr(self, name: str) -> str:
        return (self.logs / f"{name}.err").read_text()

    def stdout_json(self, name: str) -> dict:
        """The last line of a child's stdout that is a JSON object."""
        for line in reversed((self.logs / f"{name}.out").read_text()
                             .splitlines()):
            if line.startswith("{"):
                return json.loads(line)
        sys.exit(f"{name}: no result line in {self.logs / name}.out")

    def me(self, *args, torch: bool = False) -> list:
        """This script as a child: under --torch-python (make) or
        --ort-python (a venv without torch, so that ORT's peak RSS is not
        inflated by torch: onnxruntime imports it when it is installed)."""
        py = self.args.torch_python if torch else self.args.ort_python
        return [py, str(Path(__file__).resolve()), *args, "--work", str(self.work)]


# ---------------------------------------------------------------------------
# make (child): model, artifacts, data
# ---------------------------------------------------------------------------

def child_make(args) -> int:
    import numpy as np
    import torch
    import transformers

    sys.path.insert(0, str(REPO / "examples" / "fixtures"))
    import gen_fixtures
    import sweep_models

    work = Path(args.work)
    fwd, art, data = work / "fwd", work / "art", work / "data"
    for d in (fwd, art, data):
        d.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(**LLAMA, attention_dropout=0.0,
                                   tie_word_embeddings=False, use_cache=False)
    cfg._attn_implementation = "eager"
    t0 = time.monotonic()
    lm = transformers.LlamaForCausalLM(cfg)

    model = sweep_models.sequence_logits(lm)
    params = [n for n, _ in model.named_parameters()]
    count = sum(p.numel() for p in model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    t1 = time.monotonic()
    gen_fixtures.export_torchscript(
        model, torch.randint(0, LLAMA["vocab_size"], (BATCH, SEQ)),
        fwd / "forward.onnx")
    t2 = time.monotonic()
    del model, lm
    gc.collect()

    import onnx
    from onnxruntime.training import artifacts

    base = onnx.load(str(fwd / "forward.onnx"), load_external_data=False)
    inits = {t.name for t in base.graph.initializer}
    opset = next(o.version for o in base.opset_import if o.domain in ("", "ai.onnx"))
    del base
    requires_grad = [p for p in params if p in inits]
    missing = sorted(set(params) - inits)
    if missing:
        raise RuntimeError(f"parameters not exported as initializers: {missing}")
    artifacts.generate_artifacts(
        str(fwd / "forward.onnx"), requires_grad=requires_grad,
        frozen_params=sorted(inits - set(requires_grad)),
        loss=sweep_models.sequence_loss(SEQ),  # labels [batch, seq]
        optimizer=artifacts.OptimType.AdamW, artifact_directory=str(art))
    t3 = time.monotonic()
    # onnxruntime-training 1.19 reads IR version 10 at most.
    for f in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
        m = onnx.load(str(art / f), load_external_data=False)
        if m.ir_version > 10:
            m.ir_version = 10
            onnx.save(m, str(art / f))

    rng = np.random.default_rng(0)
    ids = rng.integers(0, LLAMA["vocab_size"], (SAMPLES, SEQ + 1))
    np.save(data / "input.npy", ids[:, :-1].astype(np.int64))
    np.save(data / "labels.npy", ids[:, 1:].astype(np.int64))  # next tokens
    print(json.dumps({
        "parameters": count, "param_bytes": param_bytes,
        "trainable": len(requires_grad), "frozen": len(inits) - len(requires_grad),
        "opset": opset, "build_s": round(t1 - t0, 1),
        "export_s": round(t2 - t1, 1), "artifacts_s": round(t3 - t2, 1),
        "files": {str(p.relative_to(work)): p.stat().st_size
                  for d in (fwd, art) for p in sorted(d.iterdir())}}))
    return 0


def phase_make(b: Bench) -> None:
    b.run("make", b.me("_make", torch=True))
    info = b.stdout_json("make")
    b.res["model"] = info
    b.save()
    fwd = sum(v for k, v in info["files"].items() if k.startswith("fwd/"))
    print(f"  {info['parameters'] / 1e6:.1f}M parameters, "
          f"{info['param_bytes'] / 1e9:.3f} GB; forward model + data "
          f"{fwd / 1e9:.3f} GB in {sum(k.startswith('fwd/') for k in info['files'])} "
          f"files; checkpoint.data "
          f"{info['files'].get('art/checkpoint.data', 0) / 1e9:.3f} GB")


# ---------------------------------------------------------------------------
# opt: amp-opt against cp, and the outputs' validity
# ---------------------------------------------------------------------------

def phase_opt(b: Bench) -> None:
    w = b.work
    amp_opt = b.args.tools / "amp-opt"
    cases = [("forward", w / "fwd", "forward.onnx"),
             ("training", w / "art", "training_model.onnx")]
    out = {}
    for case, src_dir, model in cases:
        # The model and every file its external data names (forward: all
        # of fwd/; training: its graph alone, the weights are inputs).
        files = ([p for p in sorted(src_dir.iterdir())] if case == "forward"
                 else [src_dir / model])
        nbytes = sum(p.stat().st_size for p in files)
        rows = []
        cp_dir, opt_dir = w / f"cp-{case}", w / f"opt-{case}"
        for rnd in range(1, ROUNDS + 1):
            # Each tool starts from the same state: the source in the page
            # cache, an empty destination, nothing dirty; neither fsyncs.
            for d in (cp_dir, opt_dir):
                shutil.rmtree(d, ignore_errors=True)
            cp_dir.mkdir()
            os.sync()
            c = b.run(f"cp-{case}-{rnd}", ["cp", *files, cp_dir], heavy=False)
            shutil.rmtree(cp_dir)
            opt_dir.mkdir()
            os.sync()
            a = b.run(f"amp-opt-{case}-{rnd}",
                      [amp_opt, src_dir / model, "--auto-mixed-precision",
                       "-o", opt_dir / (model.replace(".onnx", ".amp.onnx"))],
                      heavy=False)
            if rnd < ROUNDS:  # the last one is checked below
                shutil.rmtree(opt_dir)
            os.sync()
            ratio = a["seconds"] / max(c["seconds"], 1e-6)
            rows.append({"cp_s": c["seconds"], "amp_opt_s": a["seconds"],
                         "ratio": ratio, "amp_opt_rss": a["peak_rss"]})
            print(f"  {case} round {rnd}: amp-opt {a['seconds']:.3f} s, cp "
                  f"{c['seconds']:.3f} s of {nbytes / 1e9:.3f} GB: "
                  f"{ratio:.2f}x; peak RSS "
                  f"{a['peak_rss'] / 2**20:.0f} MiB = "
                  f"{a['peak_rss'] / max(b.res['model']['param_bytes'], 1):.3f}x "
                  f"the weight bytes")
        out[case] = {"bytes": nbytes, "files": len(files), "rounds": rows,
                     "outputs": {p.name: p.stat().st_size
                                 for p in sorted((w / f"opt-{case}").iterdir())}}
    b.res["opt"] = out
    b.save()
    b.run("validate-opt", b.me("_validate"))
    b.res["opt"]["validity"] = b.stdout_json("validate-opt")
    b.save()
    v = b.res["opt"]["validity"]
    for k, val in v.items():
        print(f"  {k}: {val}")
    if not b.args.keep:
        for case, _, _ in cases:
            shutil.rmtree(w / f"opt-{case}")


def child_validate(args) -> int:
    """The checker, the external tensors' bytes, and onnxruntime on the
    AMP forward model against the fp32 one."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    w = Path(args.work)
    res = {}
    src, dst = w / "fwd" / "forward.onnx", w / "opt-forward" / "forward.amp.onnx"
    train = w / "opt-training" / "training_model.amp.onnx"

    def checker(path):
        try:
            onnx.checker.check_model(str(path), full_check=True)
            return "ok"
        except Exception as e:  # noqa: BLE001 (reported, not fatal)
            return str(e).splitlines()[0][:200]

    res["forward checker"] = checker(dst)
    # ORT's training graphs hold ORT's own ops (SimplifiedLayerNormalization
    # in the default domain, ...), which onnx's checker does not know: the
    # output is held to the input's verdict, and onnxruntime must load it.
    got, want = checker(train), checker(w / "art" / "training_model.onnx")
    res["training checker"] = ("ok" if got == "ok" else
                               f"{got!r}, {'as' if got == want else 'unlike'} "
                               f"the input's")
    res["training checker ok"] = got == want
    try:
        s = ort.InferenceSession(str(train), providers=["CPUExecutionProvider"])
        res["training onnxruntime load"] = f"ok, {len(s.get_inputs())} inputs"
        res["training onnxruntime ok"] = True
        del s
    except Exception as e:  # noqa: BLE001 (reported)
        res["training onnxruntime load"] = brief(e)
        res["training onnxruntime ok"] = False

    def ext(t, folder):
        kv = {e.key: e.value for e in t.external_data}
        return (folder / kv["location"], int(kv.get("offset", 0)),
                int(kv["length"]) if "length" in kv else None)

    a = {t.name: t for t in onnx.load(str(src), load_external_data=False).graph.initializer}
    o = onnx.load(str(dst), load_external_data=False).graph.initializer
    same = differ = converted = inline = 0
    data_files = set()
    for t in o:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            inline += 1
            continue
        ref = a.get(t.name)
        if ref is None or ref.data_type != t.data_type or \
                ref.data_location != onnx.TensorProto.EXTERNAL:
            converted += 1
            continue
        (fa, oa, la), (fo, oo, lo) = ext(ref, src.parent), ext(t, dst.parent)
        data_files.add(fo.name)
        la = la if la is not None else fa.stat().st_size - oa
        equal = la == lo
        with open(fa, "rb") as x, open(fo, "rb") as y:
            x.seek(oa)
            y.seek(oo)
            left = la if equal else 0
            while equal and left:
                n = min(left, 16 << 20)
                equal = x.read(n) == y.read(n)
                left -= n
        same += equal
        differ += not equal
    res["external tensors"] = (f"{same} byte-identical, {differ} differ, "
                               f"{converted} not external in the input or "
                               f"retyped, {inline} inline; data files "
                               f"{sorted(data_files)}")
    res["external ok"] = differ == 0 and same > 0

    ids = np.load(w / "data" / "input.npy")[:BATCH]
    opts = ort.SessionOptions()
    outs = {}
    for name, path in (("fp32", src), ("amp", dst)):
        t0 = time.monotonic()
        s = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        outs[name] = s.run(None, {s.get_inputs()[0].name: ids})[0].astype(np.float32)
        res[f"onnxruntime {name} s"] = round(time.monotonic() - t0, 1)
        del s
        gc.collect()
    ref, got = outs["fp32"], outs["amp"]
    diff = float(np.max(np.abs(got - ref)))
    scale = float(np.max(np.abs(ref)))
    res["onnxruntime AMP vs fp32 logits"] = (
        f"max abs diff {diff:.3e}, max |fp32| {scale:.3e}, rel {diff / scale:.2e}")
    # fp16 tolerance, as test/python/large_external_model.py: 1e-2 * max(1,
    # max|ref|) + 2e-2 |ref| elementwise.
    bound = 1e-2 * max(1.0, scale) + 2e-2 * np.abs(ref)
    res["onnxruntime ok"] = bool(np.all(np.abs(got - ref) <= bound))
    print(json.dumps(res))
    return 0


# ---------------------------------------------------------------------------
# ORT's training API (child)
# ---------------------------------------------------------------------------

def brief(e: Exception) -> str:
    """An exception's message, its start and its end (ORT's put the
    source location first and the reason last)."""
    m = " ".join(str(e).split())
    return m if len(m) <= 500 else f"{m[:150]} ... {m[-350:]}"


def child_ort(args) -> int:
    import numpy as np

    sys.path.insert(0, str(TEST_PY))
    from amp_run_vs_ort import ort_open, orttrain  # training API without torch

    w = Path(args.work)
    state, model, opt = ort_open(str(w / "art"), args.checkpoint)
    opt.set_learning_rate(LR)
    model.train()
    names = model.input_names()
    data = {n: np.load(w / "data" / f"{n}.npy") for n in names}
    res = {"inputs": names, "losses": [], "peak_rss_after_step": [], "step_s": []}
    for s in range(args.first, args.first + args.steps):
        t0 = time.monotonic()
        loss = model(*[data[n][s * BATCH:(s + 1) * BATCH] for n in names])
        opt.step()
        model.lazy_reset_grad()
        res["losses"].append(float(np.asarray(loss)))
        res["step_s"].append(round(time.monotonic() - t0, 2))
        res["peak_rss_after_step"].append(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        print(f"step {s + 1}: loss {res['losses'][-1]:.7f}", flush=True)
    if args.save:
        t0 = time.monotonic()
        try:
            orttrain.CheckpointState.save_checkpoint(state, args.save, True)
            res["save"] = "ok, with the optimizer state"
        except Exception as e:  # noqa: BLE001 (ORT's limit, reported)
            res["save"] = f"with the optimizer state: {brief(e)}"
            orttrain.CheckpointState.save_checkpoint(state, args.save, False)
            res["save"] += "; saved without it"
        res["save_s"] = round(time.monotonic() - t0, 1)
        res["save_files"] = {p.name: p.stat().st_size
                             for p in Path(args.save).parent.iterdir()}
    if args.export:
        t0 = time.monotonic()
        try:
            # ORT 1.19 wants the path relative (its data file's location
            # is made from it): write from inside the folder.
            os.chdir(Path(args.export).parent)
            model.export_model_for_inferencing(Path(args.export).name, ["logits"])
            res["export"] = "ok"
        except Exception as e:  # noqa: BLE001 (reported)
            res["export"] = brief(e)
        res["export_s"] = round(time.monotonic() - t0, 1)
        res["export_files"] = {p.name: p.stat().st_size
                               for p in Path(args.export).parent.iterdir()}
    print(json.dumps(res))
    return 0


def child_infer(args) -> int:
    """onnxruntime's InferenceSession on amp-run's -o model (the eval model:
    input and labels in, the loss out) on batch `first`."""
    import numpy as np
    import onnxruntime as ort

    w = Path(args.work)
    s = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(w / "data" / f"{i.name}.npy")[
        args.first * BATCH:(args.first + 1) * BATCH] for i in s.get_inputs()}
    out = s.run(None, feeds)
    print(json.dumps({"inputs": sorted(feeds), "loss": float(np.asarray(out[0]))}))
    return 0


def phase_ort(b: Bench) -> None:
    w = b.work
    b.run("ort-4-steps", b.me("_ort", "--steps", "4"))
    r = b.stdout_json("ort-4-steps")
    b.res["ort"] = {"losses": r["losses"], "inputs": r["inputs"], "step_s": r["step_s"],
                    "peak_rss_after_2": r["peak_rss_after_step"][1],
                    "peak_rss_after_4": r["peak_rss_after_step"][3]}
    b.save()
    print(f"  ORT losses {r['losses']}; peak RSS after step 2 "
          f"{r['peak_rss_after_step'][1] / GIB:.2f} GiB")
    d = w / "ort-out"
    for what, flag, file in (("save", "--save", "checkpoint"),
                             ("export", "--export", "inference.onnx")):
        # ORT's own writers after 2 steps: save_checkpoint (with the
        # optimizer state) and export_model_for_inferencing.
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        name = f"ort-2-steps-{what}"
        b.run(name, b.me("_ort", "--steps", "2", flag, d / file))
        s = b.stdout_json(name)
        b.res["ort"][what] = {"result": s[what], "seconds": s[what + "_s"],
                              "files": s[what + "_files"]}
        b.save()
        print(f"  ORT {what}: {s[what]} ({s[what + '_files']})")
        if what == "save":
            ort_resume(b, d / file)
    shutil.rmtree(d)


def ort_resume(b: Bench, checkpoint: Path) -> None:
    """ORT going on from its own checkpoint (steps 3 and 4): the reference
    for going on from amp-run's."""
    r = b.run("ort-from-ort-checkpoint", b.me("_ort", "--checkpoint", checkpoint,
                                              "--first", "2", "--steps", "2"),
              check=False)
    if r["rc"] == 0:
        cont = b.stdout_json("ort-from-ort-checkpoint")["losses"]
        res = loss_diffs(cont, b.res["ort"]["losses"][2:4])
        res["result"] = f"max abs {res['max_abs']:.2e} from the 4-step run's"
    else:
        err = [ln for ln in b.stderr("ort-from-ort-checkpoint").splitlines()
               if "Error" in ln or "error" in ln]
        why = err[-1].split(" : ")[-1] if err else "?"
        res = {"result": f"fails: {why}"}
    b.res["ort"]["resume"] = res
    b.save()
    print(f"  ORT from its own checkpoint: {res['result']}")


# ---------------------------------------------------------------------------
# amp-run
# ---------------------------------------------------------------------------

def amp_run(b: Bench, name: str, steps: int, *extra) -> dict:
    w = b.work
    log = b.logs / f"{name}.csv"
    cmd = [b.args.tools / "amp-run", w / "art" / "training_model.onnx",
           w / "art" / "optimizer_model.onnx", "--weights", w / "art" / "checkpoint",
           "--data", w / "data", "--no-shuffle", "--batch", BATCH,
           "--steps", steps, "--lr", LR, "--log", log, "--log-time", "--quiet",
           *extra]
    r = b.run(name, cmd)
    with open(log) as f:
        r["log"] = [row for row in csv.DictReader(f)]
    r["losses"] = [float(row["loss"]) for row in r["log"]]
    # The training loop's own time (--log-time: when each step's results
    # are back); the rest of the wall time is start-up (import, reading
    # the weights, lowering) and what is written at the end.
    secs = [float(row.pop("seconds")) for row in r["log"]]
    r["loop_s"], r["step_s"] = secs[-1], [b - a for a, b in zip([0.0] + secs, secs)]
    err = b.stderr(name)
    r["start"] = [line for line in err.splitlines() if line.startswith("amp-run:")]
    b.save()
    for line in r["start"]:
        print(f"    {line}")
    return r


def loss_diffs(got: list, ref: list) -> dict:
    absd = [abs(a - c) for a, c in zip(got, ref)]
    return {"got": got, "ref": ref, "max_abs": max(absd),
            "max_rel": max(d / abs(c) for d, c in zip(absd, ref))}


def phase_train(b: Bench) -> None:
    ref = b.res["ort"]["losses"]
    r = amp_run(b, "amp-run-fp32", 2)
    b.res["fp32"] = loss_diffs(r["losses"], ref[:2])
    r = amp_run(b, "amp-run-amp", 2, "--amp")
    b.res["amp"] = loss_diffs(r["losses"], ref[:2])
    b.res["amp"]["skipped"] = r["log"][-1].get("skipped")
    b.save()
    for k in ("fp32", "amp"):
        print(f"  {k} losses {b.res[k]['got']} vs ORT {b.res[k]['ref']}: max abs "
              f"{b.res[k]['max_abs']:.2e}, max rel {b.res[k]['max_rel']:.2e}")


def phase_ortckpt(b: Bench) -> None:
    d = b.work / "amp-ortckpt"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    r = amp_run(b, "amp-run-ort-checkpoint", 2, "--ort-checkpoint", d / "checkpoint")
    files = {p.name: p.stat().st_size for p in sorted(d.iterdir())}
    b.run("ort-from-amp-run", b.me("_ort", "--checkpoint", d / "checkpoint",
                                   "--first", "2", "--steps", "2"))
    cont = b.stdout_json("ort-from-amp-run")["losses"]
    b.res["ortckpt"] = {"files": files, "amp_run_losses": r["losses"],
                        **loss_diffs(cont, b.res["ort"]["losses"][2:4])}
    b.save()
    print(f"  wrote {files}; ORT's steps 3-4 from it {cont} vs ORT's own "
          f"{b.res['ort']['losses'][2:4]}: max abs {b.res['ortckpt']['max_abs']:.2e}")
    shutil.rmtree(d)


def phase_export(b: Bench) -> None:
    d = b.work / "amp-export"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    amp_run(b, "amp-run-o", 2, "-o", d / "trained.onnx")
    files = {p.name: p.stat().st_size for p in sorted(d.iterdir())}
    b.run("ort-infer-o", b.me("_infer", "--model", d / "trained.onnx", "--first", "2"))
    got = b.stdout_json("ort-infer-o")
    b.res["export"] = {"files": files, "inputs": got["inputs"],
                       **loss_diffs([got["loss"]], b.res["ort"]["losses"][2:3])}
    b.save()
    print(f"  wrote {files}; InferenceSession: loss on batch 3 {got['loss']:.7f} "
          f"vs ORT's step-3 loss {b.res['ort']['losses'][2]:.7f}: abs "
          f"{b.res['export']['max_abs']:.2e}")
    shutil.rmtree(d)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(16 << 20):
            h.update(chunk)
    return h.hexdigest()


def phase_resume(b: Bench) -> None:
    d = b.work / "amp-ckpt"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    full = amp_run(b, "amp-run-4-steps-checkpoint", 4, "--checkpoint", d / "D")
    size = (d / "D").stat().st_size
    hd = sha256(d / "D")
    (d / "D").unlink()
    amp_run(b, "amp-run-checkpoint", 2, "--checkpoint", d / "A")
    res = amp_run(b, "amp-run-resume", 4, "--resume", d / "A", "--checkpoint", d / "C")
    (d / "A").unlink()
    hc = sha256(d / "C")
    (d / "C").unlink()
    b.res["resume"] = {
        "checkpoint_bytes": size, "identical": hc == hd, "sha256": hd,
        "logs_identical": res["log"] == full["log"][2:],
        **loss_diffs(res["losses"], b.res["ort"]["losses"][2:4])}
    b.save()
    print(f"  checkpoint {size / 1e9:.3f} GB; resumed == uninterrupted: "
          f"{hc == hd}; logs of steps 3-4 identical: {b.res['resume']['logs_identical']}")
    shutil.rmtree(d)


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------

def phase_report(b: Bench) -> None:
    res, runs = b.res, b.res["runs"]
    m = res["model"]
    state = 4 * m["param_bytes"]  # parameters, gradients, two Adam moments
    base = runs["amp-run-fp32"]["peak_rss"]
    ort2 = res["ort"]["peak_rss_after_2"]
    lines = []
    p = lines.append

    def gib(n):
        return f"{n / GIB:.2f}"

    p(f"LlamaForCausalLM, {m['parameters'] / 1e6:.1f}M parameters, "
      f"{m['param_bytes'] / 1e9:.3f} GB in fp32; amp-run's state (parameters, "
      f"gradient buffers, 2 Adam moments) {state / 1e9:.2f} GB "
      f"({state / GIB:.2f} GiB). Batch {BATCH} x {SEQ}, lr {LR}. {res['date']}, "
      f"{res['machine']}.")
    p("")
    p("amp-opt --auto-mixed-precision -o, against `cp` of the same files "
      f"(rounds alternate; median of {ROUNDS}):")
    p("")
    p("| input | bytes (files) | amp-opt s | cp s | amp-opt / cp | amp-opt peak RSS | / weight bytes |")
    p("|---|---|---|---|---|---|---|")
    for case in ("forward", "training"):
        o = res["opt"][case]
        med = sorted(o["rounds"], key=lambda r: r["ratio"])[len(o["rounds"]) // 2]
        rss = max(r["amp_opt_rss"] for r in o["rounds"])
        p(f"| {case} model | {o['bytes'] / 1e9:.3f} GB ({o['files']}) | "
          f"{med['amp_opt_s']:.3f} | {med['cp_s']:.3f} | {med['ratio']:.2f}x "
          "(rounds " + ", ".join("%.2f" % r["ratio"] for r in o["rounds"]) + ") | "
          f"{rss / 2**20:.0f} MiB | {rss / m['param_bytes']:.3f}x |")
    v = res["opt"]["validity"]
    p("")
    p(f"Outputs: forward: onnx.checker (full) {v['forward checker']}; "
      f"external tensors {v['external tensors']}; onnxruntime, AMP against fp32 "
      f"logits: {v['onnxruntime AMP vs fp32 logits']} "
      f"({'within' if v['onnxruntime ok'] else 'NOT within'} fp16 tolerance). "
      f"Training: onnx.checker {v['training checker']}; onnxruntime loads it: "
      f"{v['training onnxruntime load']}.")
    p("")
    p("Training (peak RSS: ru_maxrss of the process; amp-run's start-up "
      "is import, reading the checkpoint and lowering; its loop time from "
      "--log-time):")
    p("")
    p("| run | wall s | loop s | peak RSS GiB | added to fp32's 2 steps | ORT's equivalent | ORT's peak RSS GiB | result |")
    p("|---|---|---|---|---|---|---|---|")

    def ort_cell(name):
        return gib(runs[name]["peak_rss"]) if name in runs else ""

    ortres = res["ort"]
    o = runs["ort-4-steps"]
    p(f"| ORT's training API, 4 steps | {o['seconds']:.0f} | {sum(ortres['step_s']):.0f} | "
      f"{gib(o['peak_rss'])} (after step 2: {gib(ort2)}) | | | | losses "
      f"{[round(x, 7) for x in ortres['losses']]}; steps "
      f"{', '.join('%.1f' % x for x in ortres['step_s'])} s |")
    rows = [
        ("amp-run-fp32", "amp-run, 2 steps fp32", "2 steps (peak after step 2)", gib(ort2),
         f"losses {res['fp32']['got']} vs ORT's {[round(x, 7) for x in res['fp32']['ref']]}: "
         f"max abs {res['fp32']['max_abs']:.1e}, max rel {res['fp32']['max_rel']:.1e}"),
        ("amp-run-amp", "amp-run, 2 steps --amp", "", "",
         f"losses {res['amp']['got']}: max rel {res['amp']['max_rel']:.1e} from ORT's fp32; "
         f"skipped {res['amp']['skipped']}"),
        ("amp-run-ort-checkpoint", "amp-run, 2 steps --ort-checkpoint",
         "save_checkpoint (with the optimizer state)", ort_cell("ort-2-steps-save"),
         f"files {res['ortckpt']['files']}; ORT's steps 3-4 from it: "
         f"{[round(x, 7) for x in res['ortckpt']['got']]}, max abs {res['ortckpt']['max_abs']:.1e} "
         f"from ORT's uninterrupted run. ORT's own: {ortres['save']['result']}, "
         f"{ortres['save']['files']}; going on from it: {ortres['resume']['result']}"),
        ("ort-from-amp-run", "ORT, 2 steps from amp-run's --ort-checkpoint", "", "", ""),
        ("amp-run-o", "amp-run, 2 steps -o", "export_model_for_inferencing",
         ort_cell("ort-2-steps-export"),
         f"files {res['export']['files']}; InferenceSession, loss on batch 3 "
         f"{res['export']['got'][0]:.7f} vs ORT's step-3 loss: abs {res['export']['max_abs']:.1e}. "
         f"ORT's own: {ortres['export']['result']}, {ortres['export']['files']}"),
        ("ort-infer-o", "onnxruntime InferenceSession on -o's model", "", "", ""),
        ("amp-run-checkpoint", "amp-run, 2 steps --checkpoint", "", "",
         f"{res['resume']['checkpoint_bytes'] / 1e9:.3f} GB"),
        ("amp-run-resume", "amp-run --resume (steps 3-4) --checkpoint", "", "",
         f"checkpoint bit-identical to the 4-step run's: {res['resume']['identical']}; "
         f"log of steps 3-4 identical: {res['resume']['logs_identical']}; losses "
         f"{res['resume']['got']}, max abs {res['resume']['max_abs']:.1e} from ORT's"),
        ("amp-run-4-steps-checkpoint", "amp-run, 4 steps --checkpoint", "4 steps",
         gib(runs["ort-4-steps"]["peak_rss"]), ""),
    ]
    for name, what, ort_what, ort_peak, result in rows:
        o = runs[name]
        loop = (f"{o['loop_s']:.0f} (steps {', '.join('%.0f' % x for x in o['step_s'])})"
                if "loop_s" in o else "")
        added = (f"{(o['peak_rss'] - base) / 2**20:+.0f} MiB ({100 * (o['peak_rss'] - base) / state:+.2f}% "
                 f"of the state)" if name.startswith("amp-run") and name != "amp-run-fp32" else "")
        p(f"| {what} | {o['seconds']:.0f} | {loop} | {gib(o['peak_rss'])} | {added} | "
          f"{ort_what} | {ort_peak} | {result} |")
    p("")
    p("Where amp-run's memory goes (its start lines; peak anonymous and "
      "file-backed RSS sampled from /proc every 0.5 s):")
    p("")
    for name in ("amp-run-fp32", "amp-run-amp", "ort-4-steps"):
        o = runs[name]
        start = "; ".join(x.removeprefix("amp-run: ") for x in o.get("start", []))
        p(f"- {name}: peak RSS {o['peak_rss'] / 1e9:.3f} GB; sampled anonymous "
          f"{o.get('sampled_peak_anon', 0) / 1e9:.3f} GB, files "
          f"{o.get('sampled_peak_file', 0) / 1e9:.3f} GB" + (f"; {start}" if start else ""))
    p("")
    targets = []
    fo = res["opt"]["forward"]
    med = sorted(r["ratio"] for r in fo["rounds"])[len(fo["rounds"]) // 2]
    rss = max(r["amp_opt_rss"] for r in fo["rounds"]) / m["param_bytes"]
    targets.append(("amp-opt's peak RSS under 0.25x the weight bytes", rss < 0.25, f"{rss:.3f}x"))
    targets.append(("amp-opt within 1.5x of cp (median)", med <= 1.5, f"{med:.2f}x"))
    targets.append(("amp-opt's outputs valid", v["external ok"] and v["onnxruntime ok"]
                    and v["forward checker"] == "ok" and v["training checker ok"]
                    and v["training onnxruntime ok"], "checker, bytes, onnxruntime"))
    targets.append(("fp32 losses within 1e-5 of ORT's", res["fp32"]["max_abs"] <= 1e-5,
                    f"max abs {res['fp32']['max_abs']:.1e}"))
    targets.append(("ORT goes on from --ort-checkpoint (1e-5)", res["ortckpt"]["max_abs"] <= 1e-5,
                    f"max abs {res['ortckpt']['max_abs']:.1e}"))
    targets.append(("-o loads and runs in ORT (1e-5)", res["export"]["max_abs"] <= 1e-5,
                    f"abs {res['export']['max_abs']:.1e}"))
    targets.append(("--checkpoint / --resume bit-identical", res["resume"]["identical"]
                    and res["resume"]["logs_identical"], str(res["resume"]["identical"])))
    targets.append(("training peak RSS no higher than ORT's (2 steps)", base <= ort2,
                    f"{gib(base)} vs {gib(ort2)} GiB ({base / ort2:.3f}x)"))
    amp = runs["amp-run-amp"]["peak_rss"]
    targets.append(("--amp's peak RSS no higher than ORT's fp32", amp <= ort2,
                    f"{gib(amp)} GiB ({amp / ort2:.3f}x)"))
    for name, what in (("amp-run-ort-checkpoint", "--ort-checkpoint"), ("amp-run-o", "-o"),
                       ("amp-run-checkpoint", "--checkpoint"),
                       ("amp-run-resume", "--resume + --checkpoint")):
        add = (runs[name]["peak_rss"] - base) / state
        targets.append((f"{what} adds at most 5% of the state", add <= 0.05, f"{100 * add:+.2f}%"))
    p("| target | met | measured |")
    p("|---|---|---|")
    for what, ok, val in targets:
        p(f"| {what} | {'yes' if ok else 'NO'} | {val} |")
    text = "\n".join(lines) + "\n"
    print(text)
    res["targets"] = {what: [ok, val] for what, ok, val in targets}
    b.save()
    if b.args.markdown:
        Path(b.args.markdown).write_text(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", nargs="?", default="bench",
                    choices=("bench", "_make", "_validate", "_ort", "_infer"))
    ap.add_argument("--work", default="/tmp/amp-large-bench")
    ap.add_argument("--phases", default=",".join(PHASES))
    ap.add_argument("--tools", type=Path, default=REPO / "build" / "bin")
    ap.add_argument("--torch-python", default=sys.executable,
                    help="for make: torch, transformers, onnxruntime-training")
    ort_venv = REPO / ".venv-ort-training" / "bin" / "python"
    ap.add_argument("--ort-python",
                    default=str(ort_venv) if ort_venv.exists() else sys.executable,
                    help="for ORT's runs: onnxruntime-training without torch")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--markdown", help="write the report's tables here")
    ap.add_argument("--json", help="copy the results (results.json) here at the end")
    ap.add_argument("--min-free-gib", type=float, default=14.0,
                    help="wait before a heavy phase until this much memory is available")
    # children
    ap.add_argument("--checkpoint")
    ap.add_argument("--model")
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--save")
    ap.add_argument("--export")
    args = ap.parse_args()
    if args.cmd != "bench":
        return {"_make": child_make, "_validate": child_validate,
                "_ort": child_ort, "_infer": child_infer}[args.cmd](args)
    phases = args.phases.split(",")
    unknown = set(phases) - set(PHASES)
    if unknown:
        ap.error(f"unknown phases {sorted(unknown)}; phases are {', '.join(PHASES)}")
    b = Bench(args)
    b.work.mkdir(parents=True, exist_ok=True)
    b.res.setdefault("machine", f"{platform.node()}: {os.cpu_count()} CPUs, "
                     f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GIB:.0f} GiB")
    b.res["date"] = datetime.date.today().isoformat()
    funcs = {"make": phase_make, "opt": phase_opt, "ort": phase_ort,
             "train": phase_train, "ortckpt": phase_ortckpt,
             "export": phase_export, "resume": phase_resume, "report": phase_report}
    for ph in PHASES:
        if ph in phases:
            print(f"== {ph}", flush=True)
            t0 = time.monotonic()
            funcs[ph](b)
            b.res.setdefault("phase_s", {})[ph] = round(time.monotonic() - t0, 1)
            b.save()
    if args.json:
        shutil.copyfile(b.res_path, args.json)
    if not args.keep:
        shutil.rmtree(b.work)
        print(f"removed {b.work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
