#!/usr/bin/env python3
# ===- train_step_bench.py - Training-step time: amp-run against PyTorch -=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Training-step benchmark: amp-run against PyTorch, fp32 and mixed precision.

The MLP, CNN and transformer of the test fixtures (examples/fixtures/
gen_fixtures.py), scaled to GPU sizes, are timed in one run:

  ours  : amp-run on the ONNX Runtime training artifacts (training +
          AdamW optimizer model), fp32 and --amp (auto-mixed-precision +
          dynamic loss scaling), parameters from --init;
  torch : the same torch module, eager fp32, and torch.autocast + GradScaler
          (fp16 on CUDA; bf16 autocast without a scaler on the CPU), AdamW.

`run --cudnn-benchmark` lets both sides measure convolution algorithms
(amp-run: AMPRT_CUDNN_FIND=1; PyTorch: cudnn.benchmark), `--models` picks
models.

`run --precision bf16` times bf16 instead on both sides: amp-run --amp=bf16
(no loss scaling) against bf16 autocast without a GradScaler. The fixtures
are opset 17, where Conv takes no bfloat16 (and ONNX Runtime's ConvGrad
schema never does), so the CNN's convolutions stay fp32 in ours.

Per step time of amp-run is (t(N2 steps) - t(N1 steps)) / (N2 - N1), t being
the time of its training loop (from the `steps/s` it prints at the end), so
the import, the passes, the lowering, the context creation and the first
step's one-time work are not counted. amp-run reads the loss back to the
host after every step (its progress line); that sync is counted.
PyTorch's is the mean over timed steps after warm-up steps, with the device
synchronized around them. Printed per model: both step times, each side's
AMP speedup over its own fp32, and our AMP step over PyTorch's AMP step; the
issue's targets (our speedup >= PyTorch's; our AMP step <= PyTorch's) are
checked on the last lines.

Two stages, because the artifacts need onnxruntime-training (which the GPU
image lacks) and the timings need the GPU:

  # here, in a venv with torch and onnxruntime-training-cpu==1.19.2:
  python bench/train_step_bench.py make --out /tmp/tsb [--preset gpu|smoke]
  # where the GPU is (torch is in its image), carrying /tmp/tsb:
  python3 bench/train_step_bench.py run --artifacts /tmp/tsb \\
      --amp-run build/bin/amp-run --device cuda [--markdown out.md]

--preset smoke makes small models for checking the script on the CPU
(`run --device cpu`). The artifacts hold no weights (generate_artifacts puts
them in the checkpoint, which `make` drops): amp-run initializes them from
a seed, PyTorch from its own initializers; neither changes a step's time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples" / "fixtures"))

MODELS = ("mlp", "cnn", "transformer")
# Model sizes (the keys of gen_fixtures.FIXTURE_SIZES) and the batch.
PRESETS = {
    "gpu": {
        "mlp": dict(features=1024, hidden=4096, layers=3, classes=1000, batch=512),
        "cnn": dict(channels=3, conv_channels=64, image=64, classes=1000, batch=128),
        "transformer": dict(vocab=8192, d_model=512, heads=8, ff=2048, seq=128,
                            layers=2, classes=1000, batch=64),
    },
    "smoke": {
        "mlp": dict(features=64, hidden=128, layers=2, classes=10, batch=32),
        "cnn": dict(channels=1, conv_channels=8, image=16, classes=10, batch=16),
        "transformer": dict(vocab=100, d_model=32, heads=2, ff=64, seq=16,
                            layers=1, classes=10, batch=8),
    },
}


def make(args) -> int:
    import gen_fixtures  # needs torch and onnxruntime.training

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    preset = PRESETS[args.preset]
    for name in args.models:
        sizes = dict(preset[name])
        sizes.pop("batch")
        gen_fixtures.generate(name, out, sizes)
        # Only the training and optimizer models are used; the others hold
        # the weights (hundreds of MB at GPU sizes).
        for f in ("checkpoint", "forward.onnx", "eval_model.onnx"):
            if (out / name / f).exists():
                (out / name / f).unlink()
    (out / "sizes.json").write_text(json.dumps(
        {"preset": args.preset, "models": {m: preset[m] for m in args.models}},
        indent=1))
    print(f"wrote {out}")
    return 0


def amp_run_loop_seconds(amp_run: str, model_dir: Path, batch: int,
                         steps: int, device: str, amp: str | None,
                         env: dict | None = None) -> float:
    """Seconds amp-run spent in its training loop (its closing `steps/s`)."""
    cmd = [amp_run, str(model_dir / "training_model.onnx"),
           str(model_dir / "optimizer_model.onnx"), "--init", "1",
           "--batch", str(batch), "--steps", str(steps), "--data", "synthetic:1",
           "--device", device]
    if amp:
        cmd.append("--amp=" + amp)
    res = subprocess.run(cmd, capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-4000:]}")
    m = re.findall(r"([0-9.]+) steps/s", res.stdout + res.stderr)
    if not m:
        raise RuntimeError(f"{' '.join(cmd)}: no steps/s in its output")
    return steps / float(m[-1])


def ours_step(args, model_dir: Path, batch: int, amp: str | None) -> float:
    # The difference of two loop times leaves out the first step's one-time
    # work (workspace allocation, library handles).
    lo, hi = args.steps_lo, args.steps_hi
    env = {"AMPRT_CUDNN_FIND": "1"} if args.cudnn_benchmark else None
    best = float("inf")
    for _ in range(args.repeat):
        t_lo = amp_run_loop_seconds(args.amp_run, model_dir, batch, lo, args.device, amp, env)
        t_hi = amp_run_loop_seconds(args.amp_run, model_dir, batch, hi, args.device, amp, env)
        best = min(best, (t_hi - t_lo) / (hi - lo))
    return best


def torch_step(name: str, sizes: dict, batch: int, device: str, amp: bool,
               warmup: int, steps: int, precision: str = "fp16",
               cudnn_benchmark: bool = False) -> float:
    import torch
    import gen_fixtures

    torch.backends.cudnn.benchmark = cudnn_benchmark
    model_sizes = dict(sizes)
    model_sizes.pop("batch")
    model, example, _ = gen_fixtures.build_model(name, model_sizes)
    model = model.to(device)
    x = example[0]
    shape = (batch,) + tuple(x.shape[1:])
    g = torch.Generator().manual_seed(1)
    if x.dtype == torch.int64:
        x = torch.randint(0, model_sizes["classes"], shape, generator=g)
    else:
        x = torch.rand(shape, generator=g) * 2 - 1
    y = torch.randint(0, model_sizes["classes"], (batch,), generator=g)
    x, y = x.to(device), y.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    cuda = device.startswith("cuda")
    low = torch.float16 if cuda and precision == "fp16" else torch.bfloat16
    scaler = (torch.amp.GradScaler("cuda")
              if (amp and cuda and low == torch.float16) else None)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=low,
                            enabled=amp):
            loss = loss_fn(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - t0) / steps


def run(args) -> int:
    root = Path(args.artifacts)
    meta = json.loads((root / "sizes.json").read_text())
    rows, failed = [], []
    for name, sizes in meta["models"].items():
        if args.models and name not in args.models:
            continue
        batch = sizes["batch"]
        d = root / name
        try:
            o32 = ours_step(args, d, batch, amp=None)
            oamp = ours_step(args, d, batch, amp=args.precision)
        except RuntimeError as e:
            # Go on with the other models; the run fails at the end.
            print(f"[{name}] {e}", flush=True)
            failed.append(name)
            continue
        t32 = torch_step(name, sizes, batch, args.device, False, args.warmup,
                         args.torch_steps, cudnn_benchmark=args.cudnn_benchmark)
        tamp = torch_step(name, sizes, batch, args.device, True, args.warmup,
                          args.torch_steps, args.precision, args.cudnn_benchmark)
        rows.append((name, batch, o32, oamp, t32, tamp))
        print(f"[{name}] ours fp32 {o32 * 1e3:.3f} ms, AMP {oamp * 1e3:.3f} ms; "
              f"torch fp32 {t32 * 1e3:.3f} ms, AMP {tamp * 1e3:.3f} ms", flush=True)

    header = ("| model | batch | ours fp32 ms | ours AMP ms | ours AMP speedup | "
              "torch fp32 ms | torch AMP ms | torch AMP speedup | ours AMP / torch AMP |")
    lines = [header, "|" + "---|" * 9]
    ok_speedup = ok_step = True
    for name, batch, o32, oamp, t32, tamp in rows:
        so, st = o32 / oamp, t32 / tamp
        ok_speedup &= so >= st
        ok_step &= oamp <= tamp
        lines.append(f"| {name} | {batch} | {o32 * 1e3:.3f} | {oamp * 1e3:.3f} | "
                     f"{so:.2f}x | {t32 * 1e3:.3f} | {tamp * 1e3:.3f} | {st:.2f}x | "
                     f"{oamp / tamp:.2f} |")
    print()
    if args.cudnn_benchmark:
        print("convolution algorithms measured: AMPRT_CUDNN_FIND=1 and "
              "torch.backends.cudnn.benchmark = True")
    print(f"device {args.device}, preset {meta['preset']}, AMP {args.precision}, amp-run steps "
          f"{args.steps_lo}->{args.steps_hi} (best of {args.repeat}), torch "
          f"{args.torch_steps} steps after {args.warmup}")
    print("\n".join(lines))
    print(f"our AMP speedup >= PyTorch's on every model: {'met' if ok_speedup else 'NOT met'}")
    print(f"our AMP step <= PyTorch's AMP step on every model: {'met' if ok_step else 'NOT met'}")
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")
    if failed:
        print(f"amp-run failed on: {', '.join(failed)}")
        return 1
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="generate the artifacts (torch + onnxruntime-training)")
    m.add_argument("--out", required=True)
    m.add_argument("--preset", choices=sorted(PRESETS), default="gpu")
    m.add_argument("--models", nargs="*", choices=MODELS, default=list(MODELS))
    r = sub.add_parser("run", help="time amp-run and PyTorch on the artifacts")
    r.add_argument("--artifacts", required=True)
    r.add_argument("--amp-run", default=str(REPO / "build" / "bin" / "amp-run"))
    r.add_argument("--device", default="cuda")
    r.add_argument("--steps-lo", type=int, default=10)
    r.add_argument("--steps-hi", type=int, default=60)
    r.add_argument("--repeat", type=int, default=3)
    r.add_argument("--warmup", type=int, default=5)
    r.add_argument("--torch-steps", type=int, default=20)
    r.add_argument("--precision", choices=("fp16", "bf16"), default="fp16",
                   help="the low type of both AMP columns")
    r.add_argument("--markdown")
    r.add_argument("--models", nargs="*", choices=MODELS,
                   help="only these models of the artifacts")
    r.add_argument("--cudnn-benchmark", action="store_true",
                   help="both sides measure convolution algorithms: amp-run "
                        "with AMPRT_CUDNN_FIND=1, PyTorch with "
                        "torch.backends.cudnn.benchmark")
    args = ap.parse_args()
    return make(args) if args.cmd == "make" else run(args)


if __name__ == "__main__":
    sys.exit(main())
