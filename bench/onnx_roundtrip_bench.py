#!/usr/bin/env python3
"""Import+export benchmark: amp-opt (ONNX -> train dialect -> ONNX) against
the Python onnx package's onnx.load + onnx.save, in the same run, on a
generated model (default: ~500 MB of fp32 weights, 20k nodes).

Prints wall time and peak RSS of each, their ratios, and peak RSS relative to
the model size. `--markdown FILE` appends a result table.

  python3 bench/onnx_roundtrip_bench.py --tools build/bin
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(path, nodes, weight_mb, dim):
    """A chain of blocks: MatMul(W) -> Add(b) -> Relu -> Mul/Add/Sub... with
    `nodes` nodes in all and weights summing to about `weight_mb` MB."""
    per_block = 8
    blocks = nodes // per_block
    weight_bytes = dim * dim * 4
    n_weights = max(1, min(blocks, int(weight_mb * 1e6) // weight_bytes))
    rng = np.random.default_rng(0)
    inits, node_list = [], []
    x = "x"
    one = numpy_helper.from_array(np.ones([dim], np.float32), "one")
    inits.append(one)
    for b in range(blocks):
        w = f"w{b % n_weights}"
        if b < n_weights:
            inits.append(numpy_helper.from_array(
                rng.standard_normal((dim, dim), dtype=np.float32), w))
        p = f"b{b}_"
        node_list += [
            helper.make_node("MatMul", [x, w], [p + "mm"], name=p + "MatMul"),
            helper.make_node("Add", [p + "mm", "one"], [p + "add"], name=p + "Add"),
            helper.make_node("Relu", [p + "add"], [p + "relu"], name=p + "Relu"),
            helper.make_node("Mul", [p + "relu", "one"], [p + "mul"], name=p + "Mul"),
            helper.make_node("Sub", [p + "mul", "one"], [p + "sub"], name=p + "Sub"),
            helper.make_node("Sigmoid", [p + "sub"], [p + "sig"], name=p + "Sigmoid"),
            helper.make_node("Add", [p + "sig", p + "mm"], [p + "res"], name=p + "Res"),
            helper.make_node("Tanh", [p + "res"], [p + "out"], name=p + "Tanh"),
        ]
        x = p + "out"
    graph = helper.make_graph(
        node_list, "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", dim])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", dim])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return len(node_list), len(inits)


PEER = """
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.save(m, sys.argv[2])
"""


def run(cmd):
    """Wall seconds and peak RSS (bytes) of a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"command failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default="build/bin")
    ap.add_argument("--nodes", type=int, default=20000)
    ap.add_argument("--weight-mb", type=float, default=500)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--generate", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.generate:
        n_nodes, n_inits = make_model(args.generate, args.nodes, args.weight_mb, args.dim)
        print(n_nodes, n_inits)
        return 0

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        src = os.path.join(tmp, "model.onnx")
        # Generate in a child process: a child forked from a parent that held
        # the model would report the parent's RSS as its own peak.
        out = subprocess.run([sys.executable, __file__, "--generate", src,
                              "--nodes", str(args.nodes), "--weight-mb", str(args.weight_mb),
                              "--dim", str(args.dim)], check=True, capture_output=True,
                             text=True).stdout.split()
        n_nodes, n_inits = int(out[0]), int(out[1])
        size = os.path.getsize(src)
        ours_out = os.path.join(tmp, "ours.onnx")
        peer_out = os.path.join(tmp, "peer.onnx")
        peer_py = os.path.join(tmp, "peer.py")
        with open(peer_py, "w") as f:
            f.write(PEER)
        ours, peer = [], []
        for _ in range(args.repeat):
            ours.append(run([os.path.join(args.tools, "amp-opt"), src, "-o", ours_out]))
            peer.append(run([sys.executable, peer_py, src, peer_out]))
        # The two outputs must hold the same model.
        a, b = onnx.load(ours_out), onnx.load(peer_out)
        same = (len(a.graph.node) == len(b.graph.node) and
                all(numpy_helper.to_array(x).tobytes() == numpy_helper.to_array(y).tobytes()
                    for x, y in zip(a.graph.initializer, b.graph.initializer)))
        o_wall = min(w for w, _ in ours)
        p_wall = min(w for w, _ in peer)
        o_rss = max(r for _, r in ours)
        p_rss = max(r for _, r in peer)
        mb = 1 << 20
        print(f"model: {n_nodes} nodes, {n_inits} initializers, {size / mb:.1f} MiB")
        print(f"amp-opt import+export : {o_wall:7.3f} s  peak RSS {o_rss / mb:8.1f} MiB "
              f"({o_rss / size:.2f}x model)")
        print(f"onnx.load+onnx.save   : {p_wall:7.3f} s  peak RSS {p_rss / mb:8.1f} MiB "
              f"({p_rss / size:.2f}x model)")
        print(f"speedup (peer/ours)   : {p_wall / o_wall:.2f}x   memory ratio (ours/peer): "
              f"{o_rss / p_rss:.2f}")
        print(f"outputs equal         : {same}")
        if args.markdown:
            with open(args.markdown, "a") as f:
                f.write(
                    f"| {datetime.date.today()} | {platform.node()} ({os.cpu_count()} cores) | "
                    f"{n_nodes} | {size / mb:.0f} MiB | {o_wall:.2f} s | {p_wall:.2f} s | "
                    f"{p_wall / o_wall:.2f}x | {o_rss / mb:.0f} MiB ({o_rss / size:.2f}x) | "
                    f"{p_rss / mb:.0f} MiB ({p_rss / size:.2f}x) | {same} |\n")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
