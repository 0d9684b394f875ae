#!/usr/bin/env python3
"""Checks a model amp-run wrote with -o against a reference, in
onnxruntime's InferenceSession (numpy, onnx and onnxruntime only):

  trained_model_check.py OUT REF [--graph G]
      OUT's initializers must equal REF's (by name, bit for bit; REF is an
      -o of the same training from an ONNX --weights model). Both run on
      the same random batch of 8: OUT alone, and G (default REF) fed REF's
      initializers as inputs where G takes them as inputs (the artifacts'
      eval model); their outputs must agree within 1e-6 relative. Prints
      where OUT keeps its tensors (inline or external data) and its inputs.
"""

import argparse
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def feeds_for(model, rng):
    feeds = {}
    for i in model.graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 8 for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.INT64:
            feeds[i.name] = rng.integers(0, 10, shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("ref")
    ap.add_argument("--graph")
    args = ap.parse_args()
    out = onnx.load(args.out)
    ref = onnx.load(args.ref)
    head = onnx.load(args.out, load_external_data=False)
    external = sum(t.data_location == onnx.TensorProto.EXTERNAL
                   for t in head.graph.initializer)
    print(f"initializers: {len(head.graph.initializer)}, external: "
          f"{external}")
    print("inputs:", ", ".join(i.name for i in out.graph.input))
    got = {t.name: numpy_helper.to_array(t) for t in out.graph.initializer}
    want = {t.name: numpy_helper.to_array(t) for t in ref.graph.initializer}
    same = sorted(got) == sorted(want) and all(
        got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k])
        for k in want)
    print("initializers equal the reference:", same)
    onnx.checker.check_model(args.out, full_check=True)

    rng = np.random.default_rng(0)
    feeds = feeds_for(out, rng)
    ours = ort.InferenceSession(args.out, providers=["CPUExecutionProvider"])
    y = ours.run(None, feeds)
    graph = args.graph or args.ref
    theirs = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    names = {i.name for i in theirs.get_inputs()}
    ref_feeds = dict(feeds)
    ref_feeds.update({k: v for k, v in want.items() if k in names})
    r = theirs.run(None, {k: v for k, v in ref_feeds.items() if k in names})
    worst = max(float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))),
                                                  1e-30))
                for a, b in zip(y, r))
    ok = same and worst <= 1e-6
    print(f"outputs: {len(y)}, max rel diff {worst:.2e}")
    print("trained-model:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
