#!/usr/bin/env python3
"""Trains ONNX Runtime training artifacts with amp-run and with
onnxruntime-training's own training API (CheckpointState, Module, Optimizer)
on the same data, and compares them.

fp32: per-step losses and the final weights agree within --rtol relative
(max |a - b| / max |b| per tensor; a loss: |a - b| / |b|).
--amp: amp-run's AMP + loss-scaling loss curve is compared with ORT's fp32
curve within --amp-rtol per step; with --bf16-rtol, amp-run --amp=bf16's
curve too (bf16, no loss scaling).

Prints one line per check and "amp-run-vs-ort: PASS" or exits non-zero.
Run with the Python of .venv-ort-training.
"""

import argparse
import csv
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime
import types

# onnxruntime/training/__init__.py imports torch (ORTModule, optimizers); the
# on-device training API needs none of it: load the package without its
# __init__ so that only onnxruntime.training.api is imported.
_pkg = types.ModuleType("onnxruntime.training")
_pkg.__path__ = [os.path.join(os.path.dirname(onnxruntime.__file__),
                              "training")]
sys.modules["onnxruntime.training"] = _pkg
from onnxruntime.training import api as orttrain  # noqa: E402


def ort_open(art, checkpoint=None):
    """ORT's training API on the artifacts in `art`: (state, module,
    optimizer), from their checkpoint (or `checkpoint`), on the CPU."""
    state = orttrain.CheckpointState.load_checkpoint(
        checkpoint or os.path.join(art, "checkpoint"))
    model = orttrain.Module(os.path.join(art, "training_model.onnx"), state,
                            os.path.join(art, "eval_model.onnx"),
                            device="cpu")
    opt = orttrain.Optimizer(os.path.join(art, "optimizer_model.onnx"), model)
    return state, model, opt


def ort_train(art, feeds_per_step, lr):
    state, model, opt = ort_open(art)
    opt.set_learning_rate(lr)
    model.train()
    losses = []
    for feeds in feeds_per_step:
        loss = model(*feeds)
        opt.step()
        model.lazy_reset_grad()
        losses.append(float(np.asarray(loss)))
    params = {name: np.array(p.data) for name, p in state.parameters}
    return losses, params


def read_log(path):
    with open(path) as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


def skipped_steps(path):
    """The steps the loss scaler skipped (an AMP log's last `skipped`)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1].get("skipped") or 0) if rows else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--amp-rtol", type=float, default=1e-2)
    ap.add_argument("--bf16-rtol", type=float, default=None,
                    help="also run --amp=bf16 and compare its loss curve "
                         "with ORT's fp32 one within this tolerance")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--int-high", action="append", default=[],
                    metavar="NAME=N",
                    help="integer data input NAME is drawn from [0, N) "
                         "(default 10: the fixtures' class count)")
    ap.add_argument("--zero-grad-param", action="append", default=[],
                    metavar="NAME",
                    help="a parameter whose gradient is analytically zero "
                         "(a bias followed by a training-mode BatchNorm): "
                         "its gradient is rounding noise that Adam scales "
                         "to +-lr per step, so only |a - b| <= lr * steps "
                         "(the bound of that noise walk) is checked")
    args = ap.parse_args()
    int_high = dict((k, int(v)) for k, v in
                    (s.split("=") for s in args.int_high))

    model = onnx.load(os.path.join(args.artifacts, "training_model.onnx"))
    # Data inputs: everything that is not a parameter or state (the
    # checkpoint's tensors, gradient buffers, the reset flag).
    state = orttrain.CheckpointState.load_checkpoint(
        os.path.join(args.artifacts, "checkpoint"))
    state_names = {name for name, _ in state.parameters}
    init_names = {t.name for t in onnx.load(args.weights).graph.initializer}
    data_inputs = [i for i in model.graph.input
                   if i.name not in state_names | init_names
                   and not i.name.endswith(".accumulation.buffer")
                   and i.name != "lazy_reset_grad"]
    rng = np.random.default_rng(args.seed)
    n = args.steps * args.batch
    data = {}
    for vi in data_inputs:
        tt = vi.type.tensor_type
        rest = [d.dim_value for d in tt.shape.dim[1:]]
        if tt.elem_type == onnx.TensorProto.FLOAT:
            data[vi.name] = rng.standard_normal([n] + rest).astype(np.float32)
        else:
            data[vi.name] = rng.integers(0, int_high.get(vi.name, 10),
                                         [n] + rest).astype(np.int64)
    feeds = [[data[vi.name][s * args.batch:(s + 1) * args.batch]
              for vi in data_inputs] for s in range(args.steps)]

    # amp-run starts from --weights: check they are the checkpoint's.
    init = {t.name: numpy_helper.to_array(t)
            for t in onnx.load(args.weights).graph.initializer}
    for name, p in state.parameters:
        assert np.array_equal(init[name], np.array(p.data)), name

    ref_losses, ref_params = ort_train(args.artifacts, feeds, args.lr)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, arr in data.items():
            np.save(os.path.join(tmp, name + ".npy"), arr)
        modes = [("fp32", None, args.rtol), ("amp", "--amp", args.amp_rtol)]
        if args.bf16_rtol is not None:
            modes.append(("bf16", "--amp=bf16", args.bf16_rtol))
        for mode, flag, tol in modes:
            amp = flag is not None
            log = os.path.join(tmp, "loss.csv")
            out = os.path.join(tmp, "trained.onnx")
            cmd = [args.amp_run,
                   os.path.join(args.artifacts, "training_model.onnx"),
                   os.path.join(args.artifacts, "optimizer_model.onnx"),
                   "--weights", args.weights, "--data", tmp, "--no-shuffle",
                   "--batch", str(args.batch), "--steps", str(args.steps),
                   "--lr", str(args.lr), "--log", log, "-o", out, "--quiet"]
            if flag:
                cmd.append(flag)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stderr)
                return 1
            losses = read_log(log)
            worst = max(abs(a - b) / abs(b) for a, b in zip(losses,
                                                            ref_losses))
            ok = len(losses) == args.steps and worst <= tol
            failed |= not ok
            print(f"{mode}: {args.steps} losses vs ORT: max rel diff "
                  f"{worst:.2e} (tol {tol:g}) {'ok' if ok else 'FAIL'}")
            if amp:
                # A step the loss scaler skips (fp16 overflow, as
                # GradScaler) leaves the weights, so the curves part; the
                # first loss is the same weights' forward either way.
                first = abs(losses[0] - ref_losses[0]) / abs(ref_losses[0])
                print(f"{mode}: skipped {skipped_steps(log)} of {args.steps} "
                      f"steps; first loss rel diff {first:.2e}")
                continue
            trained = {t.name: numpy_helper.to_array(t)
                       for t in onnx.load(out).graph.initializer}
            for name, ref in sorted(ref_params.items()):
                got = trained[name]
                if not np.issubdtype(np.asarray(ref).dtype, np.floating):
                    # Frozen state (a bool mask, an integer table) comes
                    # back unchanged, in its own type.
                    ok = (got.dtype == np.asarray(ref).dtype and
                          np.array_equal(got, ref))
                    failed |= not ok
                    print(f"fp32: state {name} ({got.dtype}): "
                          f"{'identical ok' if ok else 'FAIL'}")
                    continue
                if name in args.zero_grad_param:
                    err = float(np.max(np.abs(got - ref)))
                    bound = args.lr * args.steps
                    ok = err <= bound
                    failed |= not ok
                    print(f"fp32: weight {name} (zero gradient): max abs "
                          f"diff {err:.2e} (bound {bound:g}) "
                          f"{'ok' if ok else 'FAIL'}")
                    continue
                err = float(np.max(np.abs(got - ref))) / max(
                    float(np.max(np.abs(ref))), 1e-12)
                ok = err <= args.rtol
                failed |= not ok
                print(f"fp32: weight {name}: max rel diff {err:.2e} "
                      f"{'ok' if ok else 'FAIL'}")
    print("amp-run-vs-ort:", "FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
