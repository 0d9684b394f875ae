#!/usr/bin/env python3
"""Peak resident memory of amp-run writing and reading checkpoints, against
the same run without them and against ONNX Runtime's training API.

  amp_run_rss.py make DIR [--width W] [--hidden H]   (ORT training venv)
      writes DIR/forward.onnx, an MLP W -> H -> H -> 10 with random weights
      (seed 0), and onnxruntime-training's artifacts for it in DIR
      (generate_artifacts: AdamW, cross-entropy)
  amp_run_rss.py measure DIR --amp-run BIN [--ort-python PY] [--max-added F]
      runs amp-run on DIR's artifacts for 1 step (batch 8) alone and with
      each of --checkpoint, --ort-checkpoint and -o (inline and with
      external data), and --resume of the checkpoint, and ORT's training API for
      the same step when --ort-python is given; prints each run's peak RSS
      (ru_maxrss of that process) and what each file adds to the plain
      run's peak, as a fraction of the state amp-run holds (parameters,
      gradient buffers, moments). Exit 1 when an addition passes F (the
      fraction, default 0.05) or a run fails.
"""

import argparse
import os
import subprocess
import sys


def make(args):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import amp_run_vs_ort  # noqa: F401 (onnxruntime.training without torch)
    from onnxruntime.training import artifacts

    rng = np.random.default_rng(0)
    dims = [args.width, args.hidden, args.hidden, 10]
    inits, nodes, x = [], [], "input"
    for i in range(3):
        w = (rng.standard_normal((dims[i + 1], dims[i])) /
             np.sqrt(dims[i])).astype(np.float32)
        b = np.zeros(dims[i + 1], np.float32)
        inits += [numpy_helper.from_array(w, f"fc{i}.weight"),
                  numpy_helper.from_array(b, f"fc{i}.bias")]
        y = f"h{i}" if i < 2 else "logits"
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight",
                                               f"fc{i}.bias"], [y + "_pre"
                                                                if i < 2 else y],
                                      transB=1))
        if i < 2:
            nodes.append(helper.make_node("Relu", [y + "_pre"], [y]))
        x = y
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                       ["batch", args.width])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("",
                                                                        17)])
    os.makedirs(args.dir, exist_ok=True)
    onnx.save(model, os.path.join(args.dir, "forward.onnx"))
    artifacts.generate_artifacts(
        model, requires_grad=[t.name for t in inits],
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.AdamW, artifact_directory=args.dir)
    params = sum(t.ByteSize() for t in inits)
    print(f"artifacts for {params / 2**20:.1f} MiB of parameters in "
          f"{args.dir}")


def peak_rss(cmd, **kw):
    """Runs `cmd`; returns its peak RSS in bytes (that process's own)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         **kw)
    _, status, usage = os.wait4(p.pid, 0)
    out, err = p.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err.decode()}")
    return usage.ru_maxrss * 1024


ORT_STEP = """
import sys
sys.path.insert(0, sys.argv[2])
import numpy as np
from amp_run_vs_ort import ort_open
state, model, opt = ort_open(sys.argv[1])
model.train()
rng = np.random.default_rng(1)
model(rng.standard_normal((8, int(sys.argv[3]))).astype(np.float32),
      rng.integers(0, 10, 8).astype(np.int64))
opt.step()
"""


def measure(args):
    import onnx
    d = args.dir
    width = onnx.load(os.path.join(d, "forward.onnx")).graph.input[0] \
        .type.tensor_type.shape.dim[1].dim_value
    params = sum(t.ByteSize() for t in onnx.load(
        os.path.join(d, "forward.onnx")).graph.initializer)
    # Parameters, their gradient accumulators and Adam's two moments.
    state = 4 * params
    base = [args.amp_run, os.path.join(d, "training_model.onnx"),
            os.path.join(d, "optimizer_model.onnx"), "--batch", "8",
            "--data", "synthetic:1", "--quiet"]
    runs = [
        ("plain", ["--steps", "1"]),
        ("--checkpoint", ["--steps", "1", "--checkpoint",
                          os.path.join(d, "amp.ckpt")]),
        ("--ort-checkpoint (inline)", ["--steps", "1", "--ort-checkpoint",
                                       os.path.join(d, "ort.ckpt"),
                                       "--external-data=never"]),
        ("--ort-checkpoint (external data)",
         ["--steps", "1", "--ort-checkpoint", os.path.join(d, "ortx.ckpt"),
          "--external-data=always"]),
        ("-o", ["--steps", "1", "-o", os.path.join(d, "trained.onnx")]),
        ("-o (external data)", ["--steps", "1", "-o",
                                os.path.join(d, "trainedx.onnx"),
                                "--external-data=always"]),
        ("--resume (+1 step)", ["--steps", "2", "--resume",
                                os.path.join(d, "amp.ckpt")]),
    ]
    print(f"state: {state / 2**20:.1f} MiB ({params / 2**20:.1f} MiB of "
          f"parameters)")
    peaks = {}
    for name, extra in runs:
        peaks[name] = peak_rss(base + extra)
    ok = True
    plain = peaks["plain"]
    print(f"{'run':34} {'peak RSS MiB':>12} {'added MiB':>10} "
          f"{'of state':>9}")
    for name, _ in runs:
        added = peaks[name] - plain
        frac = added / state
        bad = name != "plain" and frac > args.max_added
        ok &= not bad
        print(f"{name:34} {peaks[name] / 2**20:12.1f} {added / 2**20:10.1f} "
              f"{100 * frac:8.1f}%" + ("  FAIL" if bad else ""))
    if args.ort_python:
        ort = peak_rss([args.ort_python, "-c", ORT_STEP, d,
                        os.path.dirname(os.path.abspath(__file__)),
                        str(width)])
        print(f"{'ORT training API (1 step)':34} {ort / 2**20:12.1f}")
        print(f"amp-run / ORT peak: {plain / ort:.2f}")
    print("checkpoint-rss:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--width", type=int, default=1024)
    m.add_argument("--hidden", type=int, default=4096)
    r = sub.add_parser("measure")
    r.add_argument("dir")
    r.add_argument("--amp-run", required=True)
    r.add_argument("--ort-python")
    r.add_argument("--max-added", type=float, default=0.05)
    args = ap.parse_args()
    return make(args) if args.cmd == "make" else measure(args)


if __name__ == "__main__":
    sys.exit(main())
