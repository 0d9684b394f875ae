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

Both sides are timed in steady state, inside one process: amp-run writes
each step's end time to its --log (--log-time: `seconds`, taken after the step's
results were read back, so the device is done with it), and its step time
is (seconds[N2] - seconds[N1]) / (N2 - N1): the import, the passes, the
lowering, the context creation and the first steps' one-time work are not
counted, nor is the noise between two processes' start-up. amp-run reads
the loss back to the host after every step; that sync is counted (as
GradScaler's own per-step read of its inf flag is on PyTorch's side).
PyTorch's is the mean over timed steps after warm-up steps, with the device
synchronized around them. Each side reports the median of --repeat such
windows (amp-run: one process each; PyTorch: consecutive windows of one
process), and the steps its loss scaler skipped inside the timed window
(a skipped step does no optimizer update, so a window with skips is not a
full step's time: the targets are then marked not comparable). Printed per
model: both step times, each side's AMP speedup over its own fp32, and our
AMP step over PyTorch's AMP step; the issue's targets (our speedup >=
PyTorch's; our AMP step <= PyTorch's) are checked on the last lines.

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
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
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


def amp_run_window(amp_run: str, model_dir: Path, batch: int, lo: int,
                   hi: int, device: str, amp: str | None,
                   env: dict | None = None,
                   flags: list | None = None) -> tuple[float, int, float]:
    """One amp-run process of `hi` steps: the mean seconds of steps lo..hi-1
    (from its --log), the steps its loss scaler skipped among them, and the
    last loss. `flags`: more amp-run options (--cuda-graph=off)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "steps.csv")
        cmd = [amp_run, str(model_dir / "training_model.onnx"),
               str(model_dir / "optimizer_model.onnx"), "--init", "1",
               "--batch", str(batch), "--steps", str(hi), "--data", "synthetic:1",
               "--device", device, "--log", log, "--log-time", "--quiet"]
        if amp:
            cmd.append("--amp=" + amp)
        cmd += flags or []
        res = subprocess.run(cmd, capture_output=True, text=True,
                             env={**os.environ, **(env or {})})
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-4000:]}")
        with open(log) as f:
            rows = list(csv.DictReader(f))
    if len(rows) != hi or "seconds" not in rows[0]:
        raise RuntimeError(f"{' '.join(cmd)}: {len(rows)} log rows with "
                           f"columns {list(rows[0]) if rows else []}")
    # rows[i] ends step i: the window is steps lo..hi-1.
    a, b = rows[lo - 1], rows[hi - 1]
    secs = (float(b["seconds"]) - float(a["seconds"])) / (hi - lo)
    return secs, int(b["skipped"]) - int(a["skipped"]), float(b["loss"])


def ours_step(args, model_dir: Path, batch: int,
              amp: str | None) -> tuple[float, int, float]:
    """Median over --repeat processes of the steady-state step time, the
    most skipped steps of any of their windows, and the median's loss."""
    env = {"AMPRT_CUDNN_FIND": "1"} if args.cudnn_benchmark else None
    runs = [amp_run_window(args.amp_run, model_dir, batch, args.steps_lo,
                           args.steps_hi, args.device, amp, env,
                           args.amp_run_flag)
            for _ in range(args.repeat)]
    runs.sort(key=lambda r: r[0])
    mid = runs[len(runs) // 2]
    return mid[0], max(r[1] for r in runs), mid[2]


def torch_model_and_batch(name: str, sizes: dict, batch: int, device: str):
    """The benchmark model `name` at `sizes` (gen_fixtures.build_model) on
    `device`, and one batch of `batch` samples (inputs uniform in [-1, 1)
    or token ids, labels below the class count), fixed by seed 1."""
    import torch
    import gen_fixtures

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
    return model, x.to(device), y.to(device)


def torch_step(name: str, sizes: dict, batch: int, device: str, amp: bool,
               warmup: int, steps: int, precision: str = "fp16",
               cudnn_benchmark: bool = False,
               repeat: int = 1, fused: bool = False,
               compile_mode: str | None = None,
               channels_last: bool = False) -> tuple[float, int, float]:
    """Median over `repeat` consecutive windows of `steps` steps (after
    `warmup`) of the mean step time, the steps GradScaler skipped in them,
    and the last loss. `fused`: AdamW(fused=True) instead of its foreach
    default; `compile_mode`: the model through torch.compile in that mode
    ("default", "max-autotune", ...); `channels_last`: an image model and
    its batch in torch.channels_last memory format (PyTorch's advice for
    Tensor Core convolutions)."""
    import torch

    torch.backends.cudnn.benchmark = cudnn_benchmark
    model, x, y = torch_model_and_batch(name, sizes, batch, device)
    if channels_last and x.dim() == 4:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=fused)
    if compile_mode:
        model = torch.compile(model, mode=compile_mode)
    loss_fn = torch.nn.CrossEntropyLoss()
    cuda = device.startswith("cuda")
    low = torch.float16 if cuda and precision == "fp16" else torch.bfloat16
    scaler = (torch.amp.GradScaler("cuda")
              if (amp and cuda and low == torch.float16) else None)

    last = [None]

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=low,
                            enabled=amp):
            loss = loss_fn(model(x), y)
        last[0] = loss.detach()
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
    # A skipped step halves GradScaler's scale; it grows only after 2000
    # clean steps, so the halvings over the windows count the skips.
    scale0 = scaler.get_scale() if scaler else 1.0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        times.append((time.perf_counter() - t0) / steps)
    skipped = (round(math.log2(scale0 / scaler.get_scale())) if scaler else 0)
    return sorted(times)[len(times) // 2], skipped, float(last[0])


def mlp_step_flops(sizes: dict, batch: int) -> float:
    """The GEMM work of one MLP training step: forward (2 B W per layer),
    weight gradients (2 B W) and input gradients (2 B W, not for the first
    layer, whose input needs none): biases and element-wise ops left out."""
    w = ([sizes["features"] * sizes["hidden"]] +
         [sizes["hidden"] ** 2] * (sizes["layers"] - 1) +
         [sizes["hidden"] * sizes["classes"]])
    return 2.0 * batch * (3 * sum(w) - w[0])


def matmul_peak(device: str, precision: str, m: int, n: int, k: int) -> float:
    """FLOP/s of torch.matmul (cuBLAS) on an m x k by k x n product of the
    AMP type, in this run: the best of five timings of 20 products."""
    import torch
    dt = torch.float16 if precision == "fp16" else torch.bfloat16
    a = torch.randn(m, k, device=device, dtype=dt)
    b = torch.randn(k, n, device=device, dtype=dt)
    for _ in range(3):
        torch.matmul(a, b)
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            torch.matmul(a, b)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / 20)
    return 2.0 * m * n * k / best


def gemm_bound(args, meta: dict, rows: list) -> None:
    """--gemm-peak: the MLP's AMP step as GEMM throughput against cuBLAS's
    peak on its largest product (batch x hidden x hidden), measured here.
    Target (issue 4): above 60% for a GEMM-bound step."""
    for name, batch, _, oamp, _, tamp in rows:
        if name != "mlp":
            continue
        z = meta["models"]["mlp"]
        flops = mlp_step_flops(z, batch)
        peak = matmul_peak(args.device, args.precision, batch, z["hidden"], z["hidden"])
        print(f"GEMM-bound step: mlp batch {batch}, {flops / 1e9:.1f} GFLOP of GEMMs "
              f"per step; cuBLAS peak (torch.matmul {batch}x{z['hidden']}x{z['hidden']} "
              f"{args.precision}) {peak / 1e12:.1f} TFLOP/s")
        for who, t in (("ours", oamp[0]), ("torch", tamp[0])):
            r = flops / t / peak
            print(f"  {who} AMP step {t * 1e3:.3f} ms = {flops / t / 1e12:.1f} TFLOP/s, "
                  f"{100 * r:.0f}% of the peak: {'met' if r > 0.6 else 'NOT met'} (> 60%)")


def run(args) -> int:
    root = Path(args.artifacts)
    meta = json.loads((root / "sizes.json").read_text())
    rows, failed = [], []
    for name, sizes in meta["models"].items():
        if args.models and name not in args.models:
            continue
        batch = args.batch or sizes["batch"]
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
                         args.torch_steps, cudnn_benchmark=args.cudnn_benchmark,
                         repeat=args.repeat)
        tamp = torch_step(name, sizes, batch, args.device, True, args.warmup,
                          args.torch_steps, args.precision, args.cudnn_benchmark,
                          repeat=args.repeat)
        rows.append((name, batch, o32, oamp, t32, tamp))
        print(f"[{name}] ours fp32 {o32[0] * 1e3:.3f} ms (loss {o32[2]:.4f}), "
              f"AMP {oamp[0] * 1e3:.3f} ms (loss {oamp[2]:.4f}, {oamp[1]} skipped); "
              f"torch fp32 {t32[0] * 1e3:.3f} ms (loss {t32[2]:.4f}), "
              f"AMP {tamp[0] * 1e3:.3f} ms (loss {tamp[2]:.4f}, {tamp[1]} skipped)",
              flush=True)

    header = ("| model | batch | ours fp32 ms | ours AMP ms | ours AMP speedup | "
              "torch fp32 ms | torch AMP ms | torch AMP speedup | ours AMP / torch AMP "
              "| skipped in window (ours / torch) |")
    lines = [header, "|" + "---|" * 10]
    ok_speedup = ok_step = True
    comparable = True
    for name, batch, o32, oamp, t32, tamp in rows:
        so, st = o32[0] / oamp[0], t32[0] / tamp[0]
        ok_speedup &= so >= st
        ok_step &= oamp[0] <= tamp[0]
        comparable &= oamp[1] == 0 and tamp[1] == 0
        lines.append(f"| {name} | {batch} | {o32[0] * 1e3:.3f} | {oamp[0] * 1e3:.3f} | "
                     f"{so:.2f}x | {t32[0] * 1e3:.3f} | {tamp[0] * 1e3:.3f} | {st:.2f}x | "
                     f"{oamp[0] / tamp[0]:.2f} | {oamp[1]} / {tamp[1]} |")
    print()
    if args.cudnn_benchmark:
        print("convolution algorithms measured: AMPRT_CUDNN_FIND=1 and "
              "torch.backends.cudnn.benchmark = True")
    print(f"device {args.device}, preset {meta['preset']}, AMP {args.precision}; "
          f"amp-run: steps {args.steps_lo}..{args.steps_hi - 1} of one process, "
          f"median of {args.repeat} processes; torch: {args.torch_steps} steps "
          f"after {args.warmup}, median of {args.repeat} windows")
    print("\n".join(lines))
    if args.gemm_peak:
        gemm_bound(args, meta, rows)
    verdict = (lambda ok: "met" if ok else "NOT met") if comparable else \
        (lambda ok: "not comparable (a loss scaler skipped steps in the window)")
    print(f"our AMP speedup >= PyTorch's on every model: {verdict(ok_speedup)}")
    print(f"our AMP step <= PyTorch's AMP step on every model: {verdict(ok_step)}")
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
    r.add_argument("--batch", type=int,
                   help="every model's batch instead of the preset's")
    r.add_argument("--gemm-peak", action="store_true",
                   help="also the MLP's AMP step as GEMM throughput against "
                        "torch.matmul's on its largest product (GPU only)")
    r.add_argument("--markdown")
    r.add_argument("--models", nargs="*", choices=MODELS,
                   help="only these models of the artifacts")
    r.add_argument("--amp-run-flag", action="append", default=[],
                   help="one more amp-run option for our runs (repeatable), "
                        "e.g. --amp-run-flag=--cuda-graph=off")
    r.add_argument("--cudnn-benchmark", action="store_true",
                   help="both sides measure convolution algorithms: amp-run "
                        "with AMPRT_CUDNN_FIND=1, PyTorch with "
                        "torch.backends.cudnn.benchmark")
    args = ap.parse_args()
    return make(args) if args.cmd == "make" else run(args)


if __name__ == "__main__":
    sys.exit(main())
