#!/usr/bin/env python3
"""Scaling benchmark of the AMP pass: `amp-opt --auto-mixed-precision` on
generated training-like graphs of 1k, 10k, 100k and 1M nodes, against
onnxconverter-common's `convert_float_to_float16(keep_io_types=True)` on the
same files, in the same run.

Measured per size:
  (a) amp-opt end to end: import + pass + export, wall time of the process;
  (b) the pass alone: the `AutoMixedPrecision` line of amp-opt's
      `--mlir-timing` report, from runs with `--verify-each=false` (MLIR's
      pass manager verifies the module after each pass and counts that in
      the pass's time; the runs of (a) keep the default and so verify);
  (c) onnxconverter-common: onnx.load + convert_float_to_float16 + onnx.save,
      wall time of the process, capped at --peer-timeout seconds;
and each process's peak RSS (ru_maxrss). Times are the best of --repeat runs
(the peer runs --peer-repeat times below 100k nodes, once from 100k on). A table with per-node
times and the ratios vs onnxconverter-common is printed; `--markdown FILE`
appends its rows.

  python3 bench/amp_scaling_bench.py --tools build-bench/bin
  python3 bench/amp_scaling_bench.py --tools build-bench/bin --sizes 10000 \
      --keep-dir /tmp/amp10k      # keep model.onnx and amp.onnx
"""
import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time

DIM = 16    # hidden size: small tensors keep the 1M-node file small
HEADS = 4
BATCH = 4
OPSET = 17  # LayerNormalization


def make_model(path, nodes, seed=0):
    """A training-like graph with exactly `nodes` nodes: forward blocks, a
    loss, then a backward pass over the blocks in reverse order that reads
    the forward activations (long-range fan-out) and sums the squared
    weight gradients into a gradient norm.

    Forward block (x: [BATCH, DIM] f32):
      MatMul(x, W1) -> Add(b1) -> Relu -> Gemm(W2, b2, transB) ->
      LayerNormalization -> Reshape([B, H, D/H]) -> Transpose -> Softmax ->
      Transpose -> Reshape([B, D]) -> then either
        Exp -> ReduceSum(axes) -> Add -> Cast(to=FLOAT)          (deny path)
      or
        Sigmoid -> Mul                                            (gate)
      -> Add(residual x)
      and with probability 1/4 one more Add with the output of a random block
      among the last 64 (fan-out across blocks).
    Backward block (g: gradient of the block's output):
      gm = Mul(g, merged) ; gx = MatMul(gm, Transpose(W1)) ;
      gW = Gemm(x, gm, transA) ; norm += ReduceSum(Mul(gW, gW)) ;
      g = Add(gx, g)
    Each block has its own f32 weights (W1, W2 16x16, b1, b2, LN scale and
    bias); the int64 shape/axes initializers are shared.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(np.array([BATCH, HEADS, DIM // HEADS], np.int64), "shape_bhd"),
        numpy_helper.from_array(np.array([BATCH, DIM], np.int64), "shape_bd"),
        numpy_helper.from_array(np.array([-1], np.int64), "axes_last"),
        numpy_helper.from_array(np.zeros([], np.float32), "norm0"),
    ]
    out = []
    mk = helper.make_node

    def weight(name, shape):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.1).astype(np.float32), name))
        return name

    x = "x"
    recent = []
    saved = []  # (prefix, block input, merged activation, W1)
    b = 0
    # A block has at most 17 forward and 8 backward nodes; 4 more close.
    while len(out) + 17 + 8 * (b + 1) + 4 <= nodes:
        p = f"blk{b}/"
        w1 = weight(p + "W1", (DIM, DIM))
        b1 = weight(p + "b1", (DIM,))
        w2 = weight(p + "W2", (DIM, DIM))
        b2 = weight(p + "b2", (DIM,))
        sc = weight(p + "ln_scale", (DIM,))
        bi = weight(p + "ln_bias", (DIM,))
        saved.append((p, x, p + "merged", w1))
        out += [
            mk("MatMul", [x, w1], [p + "mm"], name=p + "MatMul"),
            mk("Add", [p + "mm", b1], [p + "mm_b"], name=p + "AddBias"),
            mk("Relu", [p + "mm_b"], [p + "relu"], name=p + "Relu"),
            mk("Gemm", [p + "relu", w2, b2], [p + "gemm"], name=p + "Gemm", transB=1),
            mk("LayerNormalization", [p + "gemm", sc, bi], [p + "ln"], name=p + "LayerNorm",
               axis=-1, epsilon=1e-5),
            mk("Reshape", [p + "ln", "shape_bhd"], [p + "heads"], name=p + "SplitHeads"),
            mk("Transpose", [p + "heads"], [p + "heads_t"], name=p + "TransposeIn", perm=[1, 0, 2]),
            mk("Softmax", [p + "heads_t"], [p + "attn"], name=p + "Softmax", axis=-1),
            mk("Transpose", [p + "attn"], [p + "attn_t"], name=p + "TransposeOut", perm=[1, 0, 2]),
            mk("Reshape", [p + "attn_t", "shape_bd"], [p + "merged"], name=p + "MergeHeads"),
        ]
        if rng.random() < 0.5:
            out += [
                mk("Exp", [p + "merged"], [p + "exp"], name=p + "Exp"),
                mk("ReduceSum", [p + "exp", "axes_last"], [p + "sum"], name=p + "ReduceSum",
                   keepdims=1),
                mk("Add", [p + "merged", p + "sum"], [p + "shift"], name=p + "AddSum"),
                mk("Cast", [p + "shift"], [p + "cast"], name=p + "Cast", to=TensorProto.FLOAT),
            ]
            y = p + "cast"
        else:
            out += [
                mk("Sigmoid", [p + "merged"], [p + "gate"], name=p + "Sigmoid"),
                mk("Mul", [p + "merged", p + "gate"], [p + "gated"], name=p + "Gate"),
            ]
            y = p + "gated"
        out.append(mk("Add", [y, x], [p + "out"], name=p + "Residual"))
        x = p + "out"
        if recent and rng.random() < 0.25:
            src = recent[int(rng.integers(len(recent)))]
            out.append(mk("Add", [x, src], [p + "skip"], name=p + "Skip"))
            x = p + "skip"
        recent = (recent + [x])[-64:]
        b += 1
    # Pad with Relu so that the total is exactly `nodes`.
    n_backward = 8 * b
    k = 0
    while len(out) + n_backward + 4 < nodes:
        out.append(mk("Relu", [x], [f"pad{k}"], name=f"pad{k}/Relu"))
        x = f"pad{k}"
        k += 1
    out += [
        mk("Exp", [x], ["loss_exp"], name="loss/Exp"),
        mk("ReduceSum", ["loss_exp"], ["loss"], name="loss/ReduceSum", keepdims=0),
    ]
    g, norm = x, "norm0"
    for p, xin, merged, w1 in reversed(saved):
        q = p + "grad/"
        out += [
            mk("Mul", [g, merged], [q + "gm"], name=q + "Mul"),
            mk("Transpose", [w1], [q + "W1_t"], name=q + "TransposeW1", perm=[1, 0]),
            mk("MatMul", [q + "gm", q + "W1_t"], [q + "gx"], name=q + "MatMul"),
            mk("Gemm", [xin, q + "gm"], [q + "gW1"], name=q + "GemmW1", transA=1),
            mk("Mul", [q + "gW1", q + "gW1"], [q + "gW1_sq"], name=q + "Square"),
            mk("ReduceSum", [q + "gW1_sq"], [q + "gW1_ss"], name=q + "ReduceSum", keepdims=0),
            mk("Add", [norm, q + "gW1_ss"], [q + "norm"], name=q + "AddNorm"),
            mk("Add", [q + "gx", g], [q + "g"], name=q + "AddGrad"),
        ]
        g, norm = q + "g", q + "norm"
    out += [
        mk("Identity", [g], ["x_grad"], name="x_grad/Identity"),
        mk("Sqrt", [norm], ["grad_norm"], name="grad_norm/Sqrt"),
    ]
    assert len(out) == nodes, (len(out), nodes)
    graph = helper.make_graph(
        out, "amp_scaling",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, DIM])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [BATCH, DIM]),
         helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("x_grad", TensorProto.FLOAT, [BATCH, DIM]),
         helper.make_tensor_value_info("grad_norm", TensorProto.FLOAT, [])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.save(model, path)
    return len(out), len(inits)


PEER = """
import sys, onnx
from onnxconverter_common import float16
m = onnx.load(sys.argv[1])
m = float16.convert_float_to_float16(m, keep_io_types=True)
onnx.save(m, sys.argv[2])
"""


def run(cmd, timeout=None, stderr=None):
    """(wall seconds, peak RSS bytes, timed out) of a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)
    killed = []
    timer = None
    if timeout is not None:
        timer = threading.Timer(timeout, lambda: (killed.append(1), proc.kill()))
        timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if timer:
        timer.cancel()
    timed_out = bool(killed)
    if status != 0 and not timed_out:
        sys.exit(f"command failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_maxrss * 1024, timed_out


def pass_seconds(report, name="AutoMixedPrecision"):
    """Wall seconds of one entry of an --mlir-timing text report."""
    m = re.search(r"^\s*([0-9.]+)\s+\(\s*[0-9.]+%\)\s+" + re.escape(name) + r"\s*$",
                  report, re.M)
    if not m:
        sys.exit(f"no '{name}' line in the --mlir-timing report:\n{report}")
    return float(m.group(1))


def fmt_us(seconds, n):
    return f"{seconds / n * 1e6:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default="build/bin")
    ap.add_argument("--sizes", default="1000,10000,100000,1000000",
                    help="comma-separated node counts")
    ap.add_argument("--repeat", type=int, default=3, help="amp-opt runs per size")
    ap.add_argument("--big-repeat", type=int, default=2,
                    help="amp-opt runs per size from 1M nodes on")
    ap.add_argument("--peer-repeat", type=int, default=3,
                    help="onnxconverter-common runs per size (1 from 100k nodes on)")
    ap.add_argument("--peer-timeout", type=float, default=600,
                    help="seconds after which an onnxconverter-common run is killed")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep-dir", default=None,
                    help="keep the generated models and amp-opt outputs here")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--generate", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--nodes", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.generate:
        n_nodes, n_inits = make_model(args.generate, args.nodes)
        print(n_nodes, n_inits)
        return 0

    import onnx
    try:
        import onnxconverter_common
        peer_version = onnxconverter_common.__version__
    except ImportError:
        if not args.no_peer:
            sys.exit("onnxconverter-common is not installed: "
                     "pip install -r utils/requirements-test.txt, or pass --no-peer")
        peer_version = "not installed"

    amp_opt = os.path.join(args.tools, "amp-opt")
    version = subprocess.run([amp_opt, "--version"], capture_output=True,
                             text=True).stdout.strip().splitlines()
    sizes = [int(s) for s in args.sizes.split(",")]
    mb = 1 << 20
    rows = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        peer_py = os.path.join(tmp, "peer.py")
        with open(peer_py, "w") as f:
            f.write(PEER)
        for n in sizes:
            d = args.keep_dir or tmp
            os.makedirs(d, exist_ok=True)
            src = os.path.join(d, f"model_{n}.onnx")
            ours_out = os.path.join(d, f"amp_{n}.onnx")
            peer_out = os.path.join(tmp, f"peer_{n}.onnx")
            # Generate in a child process, so that no measured child inherits
            # the generator's memory.
            t0 = time.perf_counter()
            gen = subprocess.run([sys.executable, __file__, "--generate", src,
                                  "--nodes", str(n)], check=True, capture_output=True,
                                 text=True).stdout.split()
            n_nodes, n_inits = int(gen[0]), int(gen[1])
            size = os.path.getsize(src)
            print(f"[{n} nodes] generated {n_inits} initializers, {size / mb:.1f} MiB "
                  f"in {time.perf_counter() - t0:.1f} s", flush=True)

            ours, passes, verified = [], [], []
            log = os.path.join(tmp, "timing.txt")
            cmd = [amp_opt, src, "--auto-mixed-precision=summary=false", "--mlir-timing",
                   "-o", ours_out]
            for _ in range(args.big_repeat if n >= 1000000 else args.repeat):
                with open(log, "w") as err:
                    wall, rss, _ = run(cmd, stderr=err)
                with open(log) as f:
                    verified.append(pass_seconds(f.read()))
                ours.append((wall, rss))
                with open(log, "w") as err:
                    run(cmd + ["--verify-each=false"], stderr=err)
                with open(log) as f:
                    passes.append(pass_seconds(f.read()))
                print(f"[{n} nodes] amp-opt {wall:.3f} s, pass {passes[-1]:.4f} s "
                      f"({verified[-1]:.4f} s with the verifier), "
                      f"peak RSS {rss / mb:.0f} MiB", flush=True)

            peer = []
            if not args.no_peer:
                reps = 1 if n >= 100000 else args.peer_repeat
                for _ in range(reps):
                    wall, rss, to = run([sys.executable, peer_py, src, peer_out],
                                        timeout=args.peer_timeout,
                                        stderr=subprocess.DEVNULL)
                    peer.append((wall, rss, to))
                    print(f"[{n} nodes] onnxconverter-common "
                          f"{'> ' if to else ''}{wall:.3f} s, peak RSS {rss / mb:.0f} MiB",
                          flush=True)
                    if to:
                        break
            rows.append(dict(n=n_nodes, inits=n_inits, size=size,
                             e2e=min(w for w, _ in ours), rss=max(r for _, r in ours),
                             pas=min(passes), pas_v=min(verified),
                             peer=min((w for w, _, _ in peer), default=None),
                             peer_to=any(t for _, _, t in peer),
                             peer_rss=max((r for _, r, _ in peer), default=None)))
            if os.path.exists(peer_out):
                os.remove(peer_out)
            if not args.keep_dir:
                os.remove(src)

    hdr = ("| nodes | model | amp-opt e2e | µs/node | pass | µs/node "
           "| pass + verifier µs/node | amp-opt peak RSS "
           "| onnxconverter-common | µs/node | peak RSS | e2e speedup |")
    lines = [hdr, "|" + "---|" * (hdr.count("|") - 1)]
    for r in rows:
        n = r["n"]
        if r["peer"] is None:
            peer_s = peer_us = peer_rss = speed = "—"
        else:
            gt = "> " if r["peer_to"] else ""
            peer_s = f"{gt}{r['peer']:.2f} s"
            peer_us = f"{gt}{fmt_us(r['peer'], n)}"
            peer_rss = "—" if r["peer_to"] else f"{r['peer_rss'] / mb:.0f} MiB"
            speed = f"{gt}{r['peer'] / r['e2e']:.1f}x"
        lines.append(
            f"| {n} | {r['size'] / mb:.1f} MiB | {r['e2e']:.3f} s | {fmt_us(r['e2e'], n)} "
            f"| {r['pas'] * 1e3:.1f} ms | {fmt_us(r['pas'], n)} | {fmt_us(r['pas_v'], n)} "
            f"| {r['rss'] / mb:.0f} MiB "
            f"| {peer_s} | {peer_us} | {peer_rss} | {speed} |")
    print()
    print(f"amp-opt: {' '.join(version)}; onnxconverter-common "
          f"{peer_version}, onnx {onnx.__version__}, "
          f"Python {platform.python_version()}; {os.cpu_count()} cores")
    print("\n".join(lines))

    # Targets (issue 3).
    by_n = {r["n"]: r for r in rows}
    if 1000000 in by_n:
        us = by_n[1000000]["pas"]  # seconds / 1e6 nodes = µs per node
        print(f"pass at 1M nodes: {us:.3f} µs/node (target <= 1): "
              f"{'met' if us <= 1 else 'NOT met'}")
    flat = [r["pas"] / r["n"] for r in rows if r["n"] >= 10000]
    if len(flat) > 1:
        ratio = max(flat) / min(flat)
        print(f"pass µs/node max/min over 10k..: {ratio:.2f}x (target <= 2): "
              f"{'met' if ratio <= 2 else 'NOT met'}")
    faster = [r for r in rows if r["peer"] is not None]
    if faster:
        ok = all(r["peer"] > r["e2e"] for r in faster)
        print(f"end to end faster than onnxconverter-common at every size: "
              f"{'met' if ok else 'NOT met'}")
    if 100000 in by_n and by_n[100000]["peer"] is not None:
        s = by_n[100000]["peer"] / by_n[100000]["e2e"]
        print(f"speedup at 100k nodes: {s:.1f}x (target >= 10): "
              f"{'met' if s >= 10 else 'NOT met'}")

    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(f"\n{datetime.date.today()}, {platform.node()} ({os.cpu_count()} cores)\n\n")
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
