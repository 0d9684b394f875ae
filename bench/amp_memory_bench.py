#!/usr/bin/env python3
# ===- amp_memory_bench.py - the memory of an AMP training step ---------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""What mixed precision saves in amp-run's arena (issue 21, item 5).

For each model and batch size, amp-run lowers the training step in fp32 and
in AMP (fp16 + loss scaling) and prints its arena (the step's temporaries:
activations, gradients, weight copies, workspace) and the split at its
peak. The script reports, per model:

  * the AMP arena against the fp32 arena at each batch (target: at most 1);
  * the growth per added sample, (arena(b2) - arena(b1)) / (b2 - b1), of
    AMP against fp32 (target: at most 0.6; fp16 activations would give 0.5).

Models: the committed MLP, CNN and transformer fixtures (batch 8 and 16),
and GPT-2 small (124M parameters, GPT2LMHeadModel with its default
configuration, 128 tokens, batch 2 and 8), which `make` builds with torch,
transformers and onnxruntime-training into a folder (about 1.5 GB; never
committed):

    amp_memory_bench.py make --out /tmp/gpt2-small        # needs torch
    amp_memory_bench.py run --amp-run build/bin/amp-run [--gpt2 /tmp/gpt2-small]
        [--markdown out.md]

`run` needs only amp-run. Nothing is trained: amp-run stops after lowering
(--steps 0).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "test" / "Inputs" / "fixtures"
SEQ = 128


def make(args) -> int:
    import torch
    import transformers

    sys.path.insert(0, str(REPO / "examples" / "fixtures"))
    import gen_fixtures
    import sweep_models

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    lm = transformers.GPT2LMHeadModel(cfg)

    model = sweep_models.sequence_logits(lm)
    example = torch.randint(0, cfg.vocab_size, (2, SEQ))
    forward = out / "forward.onnx"
    torch.onnx.export(model, (example,), str(forward), input_names=["input"],
                      output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=gen_fixtures.OPSET,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, dynamo=False)
    import onnx

    base = onnx.load(str(forward))
    params = [n for n, _ in model.named_parameters()]
    gen_fixtures.make_artifacts(base, out, params)
    print(f"made GPT-2 small ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M "
          f"parameters) artifacts in {out}")
    return 0


def lower(amp_run: str, model_dir: Path, batch: int, amp: str | None, dims: str | None) -> dict:
    """amp-run's arena line and split for one lowering."""
    argv = [amp_run, str(model_dir / "training_model.onnx"), str(model_dir / "optimizer_model.onnx"),
            "--batch", str(batch), "--steps", "0", "--data", "synthetic:1", "--quiet"]
    if dims:
        argv += ["--dims", dims]
    if amp:
        argv.append(f"--amp={amp}")
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    m = re.search(r"arena (\d+) \+ (\d+) bytes", p.stderr)
    s = re.search(r"training arena at its peak: activations (\d+), gradients (\d+), "
                  r"weight copies (\d+), workspace (\d+) bytes", p.stderr)
    if not m or not s:
        raise RuntimeError(f"no arena line in amp-run's output:\n{p.stderr[-2000:]}")
    return {"arena": int(m.group(1)),
            "split": dict(zip(("activations", "gradients", "weight copies", "workspace"),
                              map(int, s.groups())))}


def mib(n: int) -> str:
    return f"{n / 2 ** 20:.2f}" if n >= 2 ** 20 else f"{n / 2 ** 10:.1f} KiB"


def run(args) -> int:
    names = args.models.split(",")
    models = [(n, FIXTURES / n, (8, 16), None) for n in ("mlp", "cnn", "transformer")
              if n in names]
    if args.gpt2:
        models.append(("gpt2-small", Path(args.gpt2), (2, 8), None))
    rows, failed = [], []
    for name, d, (b1, b2), dims in models:
        for mode in args.modes.split(","):
            r = {(b, amp): lower(args.amp_run, d, b, amp, dims)
                 for b in (b1, b2) for amp in (None, mode)}
            for b in (b1, b2):
                f32, amp = r[(b, None)]["arena"], r[(b, mode)]["arena"]
                split = r[(b, mode)]["split"]
                rows.append((name, mode, b, f32, amp, amp / f32, split))
                print(f"{name:12} {mode} batch {b:3}: fp32 {f32:>11} AMP {amp:>11} bytes = "
                      f"{amp / f32:.3f}x; AMP peak: "
                      + ", ".join(f"{k} {v}" for k, v in split.items()))
                if amp > f32:
                    failed.append(f"{name} {mode} batch {b}: AMP arena {amp} > fp32 {f32}")
            g32 = (r[(b2, None)]["arena"] - r[(b1, None)]["arena"]) / (b2 - b1)
            g16 = (r[(b2, mode)]["arena"] - r[(b1, mode)]["arena"]) / (b2 - b1)
            ratio = g16 / g32 if g32 else float("nan")
            print(f"{name:12} {mode} growth per sample: fp32 {g32:.0f} AMP {g16:.0f} bytes "
                  f"= {ratio:.3f}x")
            rows.append((name, mode, "per sample", g32, g16, ratio, None))
            if not ratio <= 0.6:
                failed.append(f"{name} {mode}: growth per sample {ratio:.3f}x fp32's "
                              f"(target 0.6)")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| model | AMP | batch | fp32 arena | AMP arena | AMP / fp32 | AMP peak split |\n")
            f.write("|---|---|---|---|---|---|---|\n")
            for name, mode, b, f32, amp, ratio, split in rows:
                s = ", ".join(f"{k} {v}" for k, v in split.items()) if split else ""
                f.write(f"| {name} | {mode} | {b} | {f32:.0f} | {amp:.0f} | {ratio:.3f} | {s} |\n")
    for f in failed:
        print(f"MISSED {f}")
    print(f"amp-memory: {len(models)} models, {len(failed)} targets missed")
    return 1 if failed else 0


def step_peak(args, model_dir: Path, batch: int, mode: str | None) -> int:
    """The device memory a one-step run of `model_dir` holds at its peak."""
    argv = [args.amp_run, str(model_dir / "training_model.onnx"),
            str(model_dir / "optimizer_model.onnx"), "--init", "1", "--batch", str(batch),
            "--steps", "1", "--device", args.device]
    if mode:
        argv.append(f"--amp={mode}")
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = re.search(r"device memory at its peak: (\d+) bytes", p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return int(m.group(1))


def max_batch(args, model_dir: Path, mode: str | None) -> int:
    argv = [args.amp_run, str(model_dir / "training_model.onnx"),
            str(model_dir / "optimizer_model.onnx"), "--init", "1", "--device", args.device,
            "--quiet", "--max-batch" + (f"={args.limit}" if args.limit else "")]
    if mode:
        argv.append(f"--amp={mode}")
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return int(p.stdout.strip())


def device(args) -> int:
    """Issue 26's memory targets on the train_step_bench models: an AMP
    step's peak device memory against fp32's at the benchmark batch, and the
    largest batch that fits, AMP against fp32."""
    import json

    inputs = Path(args.inputs)
    sizes = json.loads((inputs / "sizes.json").read_text())["models"]
    modes = args.modes.split(",")
    failed = []
    print(f"device {args.device}; peaks of one step at the preset's batch; "
          f"largest batches within {args.limit or 'the free device memory'}")
    for name in args.models.split(","):
        d, batch = inputs / name, sizes[name]["batch"]
        f32 = step_peak(args, d, batch, None)
        line = f"{name:12} batch {batch}: fp32 peak {f32} bytes"
        for mode in modes:
            amp = step_peak(args, d, batch, mode)
            line += f"; {mode} {amp} = {amp / f32:.3f}x"
            if amp / f32 > 0.55:
                failed.append(f"{name} {mode}: peak {amp / f32:.3f}x fp32's at batch {batch} "
                              f"(target 0.55)")
        print(line)
        if args.search:
            b32 = max_batch(args, d, None)
            line = f"{name:12} largest batch: fp32 {b32}"
            for mode in modes:
                b = max_batch(args, d, mode)
                line += f"; {mode} {b} = {b / b32:.2f}x"
                if b / b32 < 1.8:
                    failed.append(f"{name} {mode}: largest batch {b / b32:.2f}x fp32's "
                                  f"(target 1.8)")
            print(line)
    for f in failed:
        print(f"MISSED {f}")
    print(f"amp-device-memory: {len(failed)} targets missed")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("make", help="build GPT-2 small's training artifacts (torch)")
    p.add_argument("--out", required=True)
    p = sub.add_parser("run", help="lower each model in fp32 and AMP and compare arenas")
    p.add_argument("--amp-run", default=str(REPO / "build" / "bin" / "amp-run"))
    p.add_argument("--gpt2", help="the folder `make` wrote")
    p.add_argument("--models", default="mlp,cnn,transformer", help="fixtures to lower")
    p.add_argument("--modes", default="fp16,bf16")
    p.add_argument("--markdown")
    p = sub.add_parser("device", help="issue 26: peak device memory and largest batch, "
                       "AMP against fp32, on train_step_bench.py make's models")
    p.add_argument("--amp-run", default=str(REPO / "build" / "bin" / "amp-run"))
    p.add_argument("--inputs", required=True, help="train_step_bench.py make --out")
    p.add_argument("--models", default="mlp,cnn,transformer")
    p.add_argument("--modes", default="fp16,bf16")
    p.add_argument("--device", default="cuda")
    p.add_argument("--search", action="store_true",
                   help="also search the largest batch (amp-run --max-batch)")
    p.add_argument("--limit", help="--max-batch's memory (default: the device's free memory)")
    args = parser.parse_args()
    return {"make": make, "run": run, "device": device}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
