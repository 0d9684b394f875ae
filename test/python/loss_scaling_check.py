#!/usr/bin/env python3
"""Runs training graphs before and after `--auto-mixed-precision --loss-scaling`
in ONNX Runtime's training build and checks the loss-scaling semantics.

For each training graph (ONNX Runtime artifacts: InPlaceAccumulatorV2 per
parameter) a variant is built in memory that also outputs each accumulation
buffer. Then, with the same random parameters and batch:

* clean step (scale 65536, tracker 0): the accumulated gradients of the
  rewritten graph match the fp32 graph's within fp16 tolerance (max abs
  error <= RTOL * max |reference| per gradient), the loss matches, the flag is
  true, the scale stays, the tracker becomes 1;
* growth step (tracker = growth-interval - 1): the scale doubles, the tracker
  resets;
* overflow step (scale 3e38: the fp16 gradients overflow): the flag is false,
  the buffers receive zeros, the scale backs off x0.5, the tracker resets;
* static mode (init-scale 1024): gradients match, the flag is true.

For each optimizer graph (AdamWOptimizer over sequences) the updated weights
are exposed: with amp.all_finite = true they equal the original graph's, with
false the weights are unchanged.

Prints one line per graph and "loss-scaling: N/N graphs passed".
Run with the Python of .venv-ort-training (utils/setup.sh).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

# Tolerances, relative to max |reference| of each tensor:
RTOL = 5e-2        # AMP + loss scaling vs the fp32 graph (fp16 arithmetic)
LS_RTOL = 1e-3     # AMP + loss scaling vs AMP alone (power-of-two scaling
                   # is exact in fp16 unless values were subnormal)
LOSS_RTOL = 1e-2
BATCH = 4


def run_amp_opt(amp_opt, src, dst, options):
    cmd = [amp_opt, src] + options + ["-o", dst]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")


def expose_buffers(model):
    """Adds each InPlaceAccumulatorV2's accumulation_buffer_out as an output."""
    g = model.graph
    types = {vi.name: vi.type for vi in list(g.input)}
    names = []
    for n in g.node:
        if n.op_type != "InPlaceAccumulatorV2" or len(n.output) != 1:
            continue
        out = n.output[0] + ".buffer"
        n.output.append(out)
        vi = g.output.add()
        vi.name = out
        vi.type.CopyFrom(types[n.input[0]])
        names.append(out)
    return names


def feed_for(model, rng, shapes):
    feeds = {}
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        shape = shapes.get(vi.name) or [
            d.dim_value if d.HasField("dim_value") else BATCH
            for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if vi.name.endswith(".accumulation.buffer"):
            feeds[vi.name] = np.zeros(shape, dtype)
        elif dtype == np.bool_:
            feeds[vi.name] = np.ones(shape, dtype)
        elif np.issubdtype(dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            feeds[vi.name] = (rng.standard_normal(shape) * 0.5).astype(dtype)
    return feeds


def session(path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def run(sess, feeds):
    names = [o.name for o in sess.get_outputs()]
    want = {i.name for i in sess.get_inputs()}
    # In-place accumulators write into their inputs: pass copies.
    copy = lambda v: [np.copy(t) for t in v] if isinstance(v, list) \
        else np.copy(v)
    vals = sess.run(None, {k: copy(v) for k, v in feeds.items() if k in want})
    return dict(zip(names, vals))


def close(a, b, rtol, floor=1e-6):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    scale = max(float(np.max(np.abs(b))), floor)
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    return err <= rtol * scale, err / scale


def check_training(amp_opt, path, tmp, shapes, amp_extra):
    model = onnx.load(path)
    buffers = expose_buffers(model)
    if not buffers:
        return None
    base = os.path.join(tmp, "fp32.onnx")
    onnx.save(model, base)
    dyn = os.path.join(tmp, "amp.onnx")
    amp = "--auto-mixed-precision=summary=false " + amp_extra
    run_amp_opt(amp_opt, base, dyn,
                [amp,
                 "--loss-scaling=summary=false"])
    amp_only = os.path.join(tmp, "amp_only.onnx")
    run_amp_opt(amp_opt, base, amp_only, [amp])
    static = os.path.join(tmp, "static.onnx")
    run_amp_opt(amp_opt, base, static,
                [amp,
                 "--loss-scaling=mode=static init-scale=1024 summary=false"])
    rng = np.random.default_rng(0)
    feeds = feed_for(model, rng, shapes)
    try:
        ref = run(session(base), feeds)
    except Exception as e:
        return "skip", f"ONNX Runtime cannot run the fp32 graph: {e}"
    low = run(session(amp_only), feeds)
    loss_name = model.graph.output[0].name
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)

    sess = session(dyn)
    f32 = lambda v: np.array(v, np.float32)
    i64 = lambda v: np.array(v, np.int64)

    # A gradient far below the step's largest is compared at 1e-5 of that:
    # a convolution's bias before a BatchNormalization has the gradient 0
    # (the normalization subtracts each channel's mean), and its fp32 value
    # (1e-7 on the CNN fixture, against 3.6 for the batch norm's) is
    # rounding noise, which fp16 kernels (ONNX Runtime's native ones on a
    # CPU with AVX512-FP16) round otherwise.
    floor = 1e-5 * max((float(np.max(np.abs(ref[b]))) for b in buffers),
                       default=0.0)

    # Clean step.
    out = run(sess, {**feeds, "amp.loss_scale": f32(65536.0),
                     "amp.growth_tracker": i64(0)})
    worst = worst_ls = 0.0
    for b in buffers:
        expect(np.any(ref[b] != 0), f"reference gradient {b} is all zero")
        ok, rel = close(out[b], ref[b], RTOL, floor)
        worst = max(worst, rel)
        expect(ok, f"clean step: gradient {b} off by {rel:.3g} (> {RTOL})")
        ok, rel = close(out[b], low[b], LS_RTOL)
        worst_ls = max(worst_ls, rel)
        expect(ok, f"clean step: gradient {b} differs from AMP without "
                   f"loss scaling by {rel:.3g} (> {LS_RTOL})")
    ok, rel = close(out[loss_name], ref[loss_name], LOSS_RTOL)
    expect(ok, f"loss off by {rel:.3g}")
    expect(bool(out["amp.all_finite"]), "clean step: flag false")
    expect(out["amp.loss_scale.out"] == 65536.0, "clean step: scale changed")
    expect(out["amp.growth_tracker.out"] == 1, "clean step: tracker != 1")

    # Growth step.
    out = run(sess, {**feeds, "amp.loss_scale": f32(65536.0),
                     "amp.growth_tracker": i64(1999)})
    expect(out["amp.loss_scale.out"] == 131072.0,
           f"growth step: scale {out['amp.loss_scale.out']} != 131072")
    expect(out["amp.growth_tracker.out"] == 0, "growth step: tracker != 0")

    # Overflow step.
    out = run(sess, {**feeds, "amp.loss_scale": f32(3e38),
                     "amp.growth_tracker": i64(7)})
    expect(not bool(out["amp.all_finite"]), "overflow step: flag true")
    for b in buffers:
        expect(np.all(out[b] == 0), f"overflow step: buffer {b} not zero")
    expect(np.isclose(out["amp.loss_scale.out"], 1.5e38, rtol=1e-6),
           f"overflow step: scale {out['amp.loss_scale.out']} != 1.5e38")
    expect(out["amp.growth_tracker.out"] == 0, "overflow step: tracker != 0")

    # Static scale.
    out = run(session(static), feeds)
    for b in buffers:
        ok, rel = close(out[b], ref[b], RTOL, floor)
        expect(ok, f"static: gradient {b} off by {rel:.3g}")
    expect(bool(out["amp.all_finite"]), "static: flag false")

    return problems, (f"{len(buffers)} gradients, worst rel err vs fp32 "
                      f"{worst:.2e}, vs AMP alone {worst_ls:.2e}")


def check_optimizer(amp_opt, path, tmp):
    model = onnx.load(path)
    opt = [n for n in model.graph.node if n.op_type == "AdamWOptimizer"]
    if not opt:
        return None
    node = opt[0]
    # Expose updated_weights (output 1).
    while len(node.output) < 2:
        node.output.append("")
    node.output[1] = "updated_weights"
    params = next(i for i in model.graph.input if i.name == node.input[2])
    vi = model.graph.output.add()
    vi.name = "updated_weights"
    vi.type.CopyFrom(params.type)
    base = os.path.join(tmp, "opt.onnx")
    onnx.save(model, base)
    amp = os.path.join(tmp, "opt.amp.onnx")
    run_amp_opt(amp_opt, base, amp, ["--loss-scaling=summary=false"])

    rng = np.random.default_rng(1)
    shapes = [[8, 4], [4]]
    seq = lambda: [(rng.standard_normal(s)).astype(np.float32) for s in shapes]
    feeds = {"learning_rate": np.array([1e-2], np.float32),
             "step": np.array([1], np.int64),
             node.input[2]: seq(), node.input[3]: seq(),
             node.input[4]: [np.zeros(s, np.float32) for s in shapes],
             node.input[5]: [np.zeros(s, np.float32) for s in shapes]}
    problems = []
    ref = run(session(base), feeds)
    sess = session(amp)
    out = run(sess, {**feeds, "amp.all_finite": np.array(True)})
    for a, b in zip(out["updated_weights"], ref["updated_weights"]):
        if not np.array_equal(a, b):
            problems.append("finite step: weights differ from fp32 graph")
    out = run(sess, {**feeds, "amp.all_finite": np.array(False)})
    for a, b in zip(out["updated_weights"], feeds[node.input[2]]):
        if not np.array_equal(a, b):
            problems.append("skipped step: weights changed")
    moved = any(not np.array_equal(a, b) for a, b in
                zip(ref["updated_weights"], feeds[node.input[2]]))
    if not moved:
        problems.append("reference step did not move the weights")
    return problems, "AdamWOptimizer gated"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--amp-opt", required=True)
    ap.add_argument("--shape", action="append", default=[],
                    metavar="INPUT=D0,D1,...",
                    help="shape of an input whose dims are symbolic")
    ap.add_argument("--amp-extra", default="",
                    help="more auto-mixed-precision options")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    shapes = {}
    for s in args.shape:
        name, dims = s.split("=")
        shapes[name] = [int(d) for d in dims.split(",")]
    passed = total = 0
    for path in args.models:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                res = check_training(args.amp_opt, path, tmp, shapes,
                                     args.amp_extra)
                if res is None:
                    res = check_optimizer(args.amp_opt, path, tmp)
            except Exception as e:  # report and go on
                res = ([f"{type(e).__name__}: {e}"], "error")
        if res is None:
            print(f"SKIP {path}: neither accumulators nor AdamWOptimizer")
            continue
        problems, what = res
        if problems == "skip":
            print(f"SKIP {path}: {what.splitlines()[0]}")
            continue
        total += 1
        if problems:
            print(f"FAIL {path} ({what})")
            for p in problems:
                print(f"  {p}")
        else:
            passed += 1
            print(f"PASS {path} ({what})")
    print(f"loss-scaling: {passed}/{total} graphs passed")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
