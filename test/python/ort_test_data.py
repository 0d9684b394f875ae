#!/usr/bin/env python3
"""Writes an ONNX test data set for a model: random inputs (input_<i>.pb)
and onnxruntime's outputs on them (output_<j>.pb), the layout of the ONNX
backend tests, for `amp-run MODEL --run DIR` to check against.

  ort_test_data.py MODEL DIR [--batch N] [--seed S] [--int-high NAME=N]...

Symbolic dims take --batch (default 4). Float inputs are standard normal;
integer inputs uniform in [0, N) (--int-high, default 10); bool inputs
random. Graph inputs that are initializers too are left to their
initializers.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("dir")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--int-high", action="append", default=[],
                    metavar="NAME=N")
    a = ap.parse_args()
    high = dict((k, int(v)) for k, v in (s.split("=") for s in a.int_high))
    model = onnx.load(a.model)
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    feeds = {}
    for i, vi in enumerate(x for x in model.graph.input
                           if x.name not in inits):
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else a.batch
                 for d in tt.shape.dim]
        dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dt, np.floating):
            x = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            x = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            x = rng.integers(0, high.get(vi.name, 10), shape).astype(dt)
        feeds[vi.name] = x
        onnx.save_tensor(numpy_helper.from_array(x, vi.name),
                         os.path.join(a.dir, "input_%d.pb" % i))
    sess = onnxruntime.InferenceSession(a.model,
                                        providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for j, (o, y) in enumerate(zip(sess.get_outputs(), outs)):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(y), o.name),
                         os.path.join(a.dir, "output_%d.pb" % j))
    print("wrote %d inputs, %d outputs to %s" % (len(feeds), len(outs), a.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
