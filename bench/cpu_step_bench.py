#!/usr/bin/env python3
# ===- cpu_step_bench.py - CPU training step: amp-run against ORT -------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""CPU training-step time and memory: amp-run against ONNX Runtime's
training API on the same artifacts and the same batches (issue 25).

Models: the MLP, CNN and transformer of the test fixtures
(examples/fixtures/gen_fixtures.py) at bench sizes, and GPT-2 small
(transformers' GPT2LMHeadModel, 124M parameters, dropout 0, batch 2 x 128
tokens), each exported by the TorchScript exporter in training mode and
made into artifacts by onnxruntime-training's generate_artifacts (AdamW;
CrossEntropyLoss, over the sequence for GPT-2). Nothing is committed: the
artifacts are made in --work (a temp folder by default) and deleted after.

Per model, each in its own process (so that its peak RSS, ru_maxrss from
wait4, is its own):
  ort      ONNX Runtime's training API (CheckpointState, Module, Optimizer;
           intra-op threads = --threads), warm-up steps then timed steps,
           each step timed around model(...), optimizer.step() and
           lazy_reset_grad();
  fp32     amp-run --threads N on the same artifacts, parameters from
           their checkpoint, the same batches (--data DIR --no-shuffle),
           step times from its --log --log-time;
  bf16     the same with --amp=bf16;
  fp16     the same with --amp=fp16 (dynamic loss scaling; no target: the
           CPU computes f16 in f32 and converts with F16C);
  ref      (--reference) amp-run --cpu-reference: the plain loops.
A step's time is the median over the timed steps. The fp32 losses are
checked against ORT's (the same computation: within 1e-4 relative over
the timed steps, else the row is marked). Printed: the step times, amp-run
over ORT, bf16 over our fp32, peak RSS over ORT's; the issue's targets on
the last lines (fp32 <= 1.0x ORT on every model, bf16 faster than our fp32
where the CPU has AVX-512 BF16, peak RSS <= ORT's).

Needs a Python with torch, transformers and onnxruntime-training
(torch 2.4.1, transformers 4.45.2, onnxruntime-training 1.19.2, numpy < 2):

  python bench/cpu_step_bench.py --amp-run build/bin/amp-run \\
      [--models mlp,cnn,transformer,gpt2] [--threads 2] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples" / "fixtures"))
sys.path.insert(0, str(REPO / "test" / "python"))

LR = 1e-3
# Fixture sizes (gen_fixtures.FIXTURE_SIZES keys) and batch; GPT-2's batch
# and sequence. Sizes where ONNX Runtime's fp32 step takes tens of ms to a
# few seconds on a 2-core machine.
MODELS = {
    "mlp": dict(sizes=dict(features=1024, hidden=2048, layers=3,
                           classes=1000), batch=128),
    "cnn": dict(sizes=dict(channels=3, conv_channels=32, image=32,
                           classes=10), batch=64),
    "transformer": dict(sizes=dict(vocab=8192, d_model=256, heads=4, ff=1024,
                                   seq=128, layers=2, classes=10), batch=16),
    "gpt2": dict(batch=2, seq=128),
}


# ---------------------------------------------------------------------------
# make: artifacts and batches (torch + onnxruntime-training)
# ---------------------------------------------------------------------------

def make_fixture(name: str, work: Path, steps: int) -> None:
    import numpy as np
    import gen_fixtures

    import onnx

    spec = MODELS[name]
    out = work / name
    out.mkdir(parents=True, exist_ok=True)
    # gen_fixtures.generate less its size limit on the checkpoint.
    _, params = gen_fixtures.export_forward(name, out / "forward.onnx",
                                            spec["sizes"])
    gen_fixtures.make_artifacts(onnx.load(str(out / "forward.onnx")), out,
                                params)
    z = dict(gen_fixtures.FIXTURE_SIZES, **spec["sizes"])
    rng = np.random.default_rng(0)
    n = spec["batch"] * steps
    if name == "mlp":
        x = rng.standard_normal((n, z["features"])).astype(np.float32)
    elif name == "cnn":
        x = rng.standard_normal((n, z["channels"], z["image"], z["image"])) \
            .astype(np.float32)
    else:
        x = rng.integers(0, z["vocab"], (n, z["seq"])).astype(np.int64)
    y = rng.integers(0, z["classes"], (n,)).astype(np.int64)
    data = work / name / "data"
    data.mkdir(exist_ok=True)
    first = onnx.load(str(out / "forward.onnx")).graph.input[0].name
    np.save(data / f"{first}.npy", x)
    np.save(data / "labels.npy", y)


def make_gpt2(work: Path, steps: int) -> None:
    import numpy as np
    import onnx
    import torch
    import transformers
    import gen_fixtures
    import sweep_models

    spec = MODELS["gpt2"]
    out = work / "gpt2"
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, use_cache=False)
    cfg._attn_implementation = "eager"
    lm = transformers.GPT2LMHeadModel(cfg)

    model = sweep_models.sequence_logits(lm)
    params = [n for n, _ in model.named_parameters()]
    gen_fixtures.export_torchscript(
        model, torch.randint(0, cfg.vocab_size, (spec["batch"], spec["seq"])),
        out / "forward.onnx")
    del model, lm
    # gen_fixtures' artifacts (LayerNormalization's statistics exposed for
    # ORT's gradient builder, IR version capped) with the sequence loss.
    gen_fixtures.make_artifacts(onnx.load(str(out / "forward.onnx")), out,
                                params,
                                loss=sweep_models.sequence_loss(spec["seq"]))
    rng = np.random.default_rng(0)
    ids = rng.integers(0, cfg.vocab_size, (spec["batch"] * steps,
                                           spec["seq"] + 1))
    data = out / "data"
    data.mkdir(exist_ok=True)
    np.save(data / "input.npy", ids[:, :-1].astype(np.int64))
    np.save(data / "labels.npy", ids[:, 1:].astype(np.int64))


def child_make(args) -> int:
    work = Path(args.work)
    if args.model == "gpt2":
        make_gpt2(work, args.steps)
    else:
        make_fixture(args.model, work, args.steps)
    return 0


# ---------------------------------------------------------------------------
# ort: ONNX Runtime's training API
# ---------------------------------------------------------------------------

def child_ort(args) -> int:
    import numpy as np
    import onnxruntime
    from amp_run_vs_ort import orttrain

    art = Path(args.work) / args.model
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    state = orttrain.CheckpointState.load_checkpoint(str(art / "checkpoint"))
    model = orttrain.Module(str(art / "training_model.onnx"), state,
                            str(art / "eval_model.onnx"), device="cpu",
                            session_options=so)
    opt = orttrain.Optimizer(str(art / "optimizer_model.onnx"), model)
    opt.set_learning_rate(LR)
    model.train()
    names = model.input_names()
    data = {n: np.load(art / "data" / f"{n}.npy") for n in names}
    batch = args.batch
    losses, times = [], []
    for s in range(args.steps):
        feeds = [data[n][s * batch:(s + 1) * batch] for n in names]
        t0 = time.perf_counter()
        loss = model(*feeds)
        opt.step()
        model.lazy_reset_grad()
        loss = float(np.asarray(loss))
        times.append(time.perf_counter() - t0)
        losses.append(loss)
    print(json.dumps({"losses": losses, "seconds": times}))
    return 0


# ---------------------------------------------------------------------------
# run: the children, timed and measured
# ---------------------------------------------------------------------------

def run_child(cmd: list, env: dict | None = None) -> tuple[str, str, int]:
    """Runs cmd; (stdout, stderr, peak RSS in bytes from wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err,
                             env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        o, e = out.read(), err.read()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed "
                           f"({p.returncode}):\n{e[-3000:]}")
    return o, e, usage.ru_maxrss * 1024


def me(*args) -> list:
    return [sys.executable, str(Path(__file__).resolve()), *map(str, args)]


def amp_run(args, model: str, extra: list, env: dict | None = None) -> dict:
    art = args.work / model
    log = art / "amp-run.csv"
    cmd = [str(args.amp_run), str(art / "training_model.onnx"),
           str(art / "optimizer_model.onnx"), "--batch",
           str(MODELS[model]["batch"]), "--data", str(art / "data"),
           "--no-shuffle", "--steps", str(args.warmup + args.steps),
           "--lr", str(LR), "--threads", str(args.threads), "--log", str(log),
           "--log-time", "--quiet", *extra]
    _, err, rss = run_child(cmd, env)
    with open(log) as f:
        rows = list(csv.DictReader(f))
    ends = [float(r["seconds"]) for r in rows]
    steps = [b - a for a, b in zip(ends[args.warmup - 1:], ends[args.warmup:])]
    status = next((l for l in err.splitlines() if "runtime calls" in l), "")
    return {"losses": [float(r["loss"]) for r in rows],
            "step_s": statistics.median(steps), "rss": rss,
            "status": status.replace("amp-run: ", "")}


def measure(args, model: str) -> dict:
    steps = args.warmup + args.steps
    res = {"batch": MODELS[model]["batch"]}
    t0 = time.monotonic()
    run_child(me("_make", "--work", args.work, "--model", model,
                 "--steps", steps))
    res["make_s"] = round(time.monotonic() - t0, 1)
    out, _, rss = run_child(me("_ort", "--work", args.work, "--model", model,
                               "--steps", steps, "--batch",
                               MODELS[model]["batch"], "--threads",
                               args.threads))
    o = json.loads(out.strip().splitlines()[-1])
    res["ort"] = {"losses": o["losses"],
                  "step_s": statistics.median(o["seconds"][args.warmup:]),
                  "rss": rss}
    res["fp32"] = amp_run(args, model, [])
    res["bf16"] = amp_run(args, model, ["--amp=bf16"])
    res["fp16"] = amp_run(args, model, ["--amp=fp16"])
    if args.reference:
        res["ref"] = amp_run(args, model, ["--cpu-reference"])
    ref, got = res["ort"]["losses"], res["fp32"]["losses"]
    res["fp32_loss_rel_diff"] = max(abs(a - b) / max(abs(a), 1e-12)
                                    for a, b in zip(ref, got))
    shutil.rmtree(args.work / model, ignore_errors=True)
    return res


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> set:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def report(args, results: dict) -> str:
    lines = []
    say = lines.append
    say(f"CPU: {cpu_model()}, {os.cpu_count()} CPUs visible, "
        f"--threads {args.threads}; warm-up {args.warmup}, timed "
        f"{args.steps} steps (median)")
    first = next(iter(results.values()))
    say(f"amp-run: {first['fp32']['status'].split('; cpu ')[-1]}")
    say("")
    head = ("| model | batch | ORT fp32 ms | ours fp32 ms | ours/ORT | "
            "ours bf16 ms | bf16/fp32 | ours fp16 ms | fp16/fp32 | "
            + ("reference ms | " if args.reference else "")
            + "RSS ORT MB | RSS ours MB | RSS ours/ORT | fp32 loss vs ORT |")
    say(head)
    say("|" + "|".join(["---"] * (head.count("|") - 1)) + "|")
    ok_speed = ok_bf16 = ok_rss = True
    for name, r in results.items():
        o, f, b, h = r["ort"], r["fp32"], r["bf16"], r["fp16"]
        ratio = f["step_s"] / o["step_s"]
        bf = b["step_s"] / f["step_s"]
        hf = h["step_s"] / f["step_s"]
        rss = f["rss"] / o["rss"]
        ok_speed &= ratio <= 1.0
        ok_bf16 &= bf < 1.0
        ok_rss &= rss <= 1.0
        row = (f"| {name} | {r['batch']} | {o['step_s'] * 1e3:.1f} | "
               f"{f['step_s'] * 1e3:.1f} | {ratio:.2f}x | "
               f"{b['step_s'] * 1e3:.1f} | {bf:.2f}x | "
               f"{h['step_s'] * 1e3:.1f} | {hf:.2f}x | ")
        if args.reference:
            row += f"{r['ref']['step_s'] * 1e3:.1f} | "
        row += (f"{o['rss'] / 2**20:.0f} | {f['rss'] / 2**20:.0f} | "
                f"{rss:.2f} | {r['fp32_loss_rel_diff']:.1e}"
                f"{'' if r['fp32_loss_rel_diff'] <= 1e-4 else ' (differs!)'} |")
        say(row)
    say("")
    bf16_cpu = "avx512_bf16" in cpu_flags() or "amx_bf16" in cpu_flags()
    say(f"target fp32 step <= 1.0x ONNX Runtime's on every model: "
        f"{'met' if ok_speed else 'NOT met'}")
    say(f"target --amp=bf16 faster than our fp32 (CPU "
        f"{'has' if bf16_cpu else 'lacks'} AVX-512 BF16): "
        f"{'met' if ok_bf16 else 'NOT met'}")
    say(f"target peak RSS <= ONNX Runtime's: {'met' if ok_rss else 'NOT met'}")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] in ("_make", "_ort"):
        p = argparse.ArgumentParser()
        p.add_argument("child")
        p.add_argument("--work", required=True)
        p.add_argument("--model", required=True)
        p.add_argument("--steps", type=int, required=True)
        p.add_argument("--batch", type=int, default=0)
        p.add_argument("--threads", type=int, default=0)
        a = p.parse_args()
        return child_make(a) if a.child == "_make" else child_ort(a)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--amp-run", type=Path, default=REPO / "build/bin/amp-run")
    p.add_argument("--models", default="mlp,cnn,transformer,gpt2")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--reference", action="store_true",
                   help="also time amp-run --cpu-reference")
    p.add_argument("--work", type=Path, default=None,
                   help="where the artifacts are made (default: a temp "
                        "folder, deleted after)")
    p.add_argument("--json", type=Path, help="write the raw results here")
    p.add_argument("--markdown", type=Path, help="write the report here")
    args = p.parse_args()
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            p.error(f"unknown model {m!r} (have {', '.join(MODELS)})")
    if args.warmup < 1 or args.steps < 1:
        p.error("--warmup and --steps must be at least 1")
    tmp = None
    if args.work is None:
        tmp = tempfile.mkdtemp(prefix="amp-cpu-bench-")
        args.work = Path(tmp)
    args.work.mkdir(parents=True, exist_ok=True)
    results = {}
    try:
        for m in models:
            print(f"{m} ...", file=sys.stderr, flush=True)
            results[m] = measure(args, m)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    text = report(args, results)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
