#!/usr/bin/env python3
# ===- torch_peer_bench.py - PyTorch at its best against amp-run --------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""The GPU peer at its best (issue 26, item 1), in the same run as amp-run.

train_step_bench.py compares amp-run with eager PyTorch (AdamW's default
foreach implementation, autocast + GradScaler). A performance-minded user
takes more: AdamW(fused=True), and torch.compile, whose max-autotune mode
also captures the step's forward and backward in CUDA graphs. This script
times, on the benchmark models of `train_step_bench.py make --preset gpu`
(the same folder as its `run`), one AMP training step of:

  ours          amp-run --amp (fp16 with loss scaling, or bf16), steps
                10..59 of one process, median of 3 processes
  eager         PyTorch eager, AdamW (foreach)
  fused         PyTorch eager, AdamW(fused=True)
  compile       torch.compile(model) (default mode), AdamW(fused=True)
  max-autotune  torch.compile(model, mode="max-autotune") (Triton GEMM
                autotuning, CUDA graphs), AdamW(fused=True)

Every mode but eager puts the CNN and its batch in torch.channels_last
memory format (--torch-channels-last, default on: PyTorch's advice for
Tensor Core convolutions, as amp-run's convolutions are NHWC on a device).
fp16 runs use a GradScaler, bf16 none (as PyTorch's recipes do). PyTorch:
20 steps after warm-up (compiling included in the warm-up), median of 3
windows. Each row says which steps its loss scaler skipped in the window.

    torch_peer_bench.py --artifacts .gpu/artifacts --amp-run BIN \
        [--precision fp16 bf16] [--modes eager fused compile max-autotune]
        [--deadline SECONDS] [--markdown out.md]

--deadline stops starting new measurements after that many seconds, and
says which were left out, so one device call ends in time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "examples" / "fixtures"))
import train_step_bench  # noqa: E402

MODES = ("eager", "fused", "compile", "max-autotune")


def torch_amp_step(name: str, sizes: dict, batch: int, mode: str,
                   precision: str, warmup: int, steps: int,
                   repeat: int, channels_last: bool) -> tuple[float, int]:
    """Median step time of `repeat` windows and the steps skipped in them."""
    t, skipped, _ = train_step_bench.torch_step(
        name, sizes, batch, "cuda", True, warmup, steps, precision,
        repeat=repeat, fused=mode != "eager",
        compile_mode={"compile": "default",
                      "max-autotune": "max-autotune"}.get(mode),
        channels_last=channels_last and mode != "eager")
    return t, skipped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--precision", nargs="+", default=["fp16", "bf16"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--deadline", type=float, default=1e9)
    ap.add_argument("--markdown")
    ap.add_argument("--torch-channels-last", choices=("on", "off"), default="on",
                    help="the CNN and its batch in channels_last memory format in "
                         "every mode but eager (the peer at its best; amp-run's "
                         "convolutions are NHWC on a device too)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    meta = json.loads((Path(args.artifacts) / "sizes.json").read_text())
    ours_args = SimpleNamespace(amp_run=args.amp_run, device="cuda", steps_lo=10,
                                steps_hi=60, repeat=3, cudnn_benchmark=False)
    lines = ["| model | batch | AMP | ours ms | " +
             " | ".join(f"torch {m} ms" for m in args.modes) +
             " | ours / best torch | skipped (ours; torch) |",
             "|" + "---|" * (6 + len(args.modes))]
    left_out = []
    for precision in args.precision:
        for name, sizes in meta["models"].items():
            if args.models and name not in args.models:
                continue
            batch = sizes["batch"]
            if time.perf_counter() - t_start > args.deadline:
                left_out.append(f"{name} {precision}")
                continue
            ours = train_step_bench.ours_step(ours_args, Path(args.artifacts) / name,
                                              batch, amp=precision)
            peers = {}
            for mode in args.modes:
                if time.perf_counter() - t_start > args.deadline:
                    left_out.append(f"{name} {precision} {mode}")
                    continue
                t0 = time.perf_counter()
                warmup = 5 if mode in ("eager", "fused") else 10
                peers[mode] = torch_amp_step(name, sizes, batch, mode, precision,
                                             warmup, 20, 3,
                                             args.torch_channels_last == "on")
                print(f"[{name} {precision}] torch {mode}: {peers[mode][0] * 1e3:.3f} ms "
                      f"({peers[mode][1]} skipped; {time.perf_counter() - t0:.0f} s with "
                      f"warm-up)", flush=True)
            best = min((p[0] for p in peers.values()), default=float("nan"))
            print(f"[{name} {precision}] ours {ours[0] * 1e3:.3f} ms ({ours[1]} skipped); "
                  f"ours / best torch {ours[0] / best:.2f}", flush=True)
            lines.append(f"| {name} | {batch} | {precision} | {ours[0] * 1e3:.3f} | " +
                         " | ".join(f"{peers[m][0] * 1e3:.3f}" if m in peers else "-"
                                    for m in args.modes) +
                         f" | {ours[0] / best:.2f} | {ours[1]}; " +
                         ", ".join(str(peers[m][1]) for m in args.modes if m in peers) +
                         " |")
    import torch
    print(f"\ndevice {torch.cuda.get_device_name(0)}, torch {torch.__version__}; "
          f"amp-run steps 10..59 of one process, median of 3 processes; torch 20 steps "
          f"after warm-up, median of 3 windows; torch channels_last "
          f"{args.torch_channels_last} (but eager)")
    print("\n".join(lines))
    if left_out:
        print("left out (deadline): " + ", ".join(left_out))
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
