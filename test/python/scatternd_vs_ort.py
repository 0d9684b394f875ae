#!/usr/bin/env python3
"""ScatterND through amp-run --run against onnxruntime on random inputs.

  scatternd_vs_ort.py --amp-run BIN --out DIR [--seed S]

Builds one single-node model per case at test time (opsets 11, 13, 16 and
18; reductions none, add, mul, max, min; index tuples of 1 to all dims of
the data; negative indices; repeated tuples for every reduction, and for
none too, where the spec leaves the order open and both run the tuples in
order; f32, f16, bf16, f64, i64, i32 and bool data; the data or the
indices as initializers, as in an exported causal mask), writes random
inputs and onnxruntime's outputs (one thread, so that its loop over the
tuples runs in order; for the f16 reductions, which ORT's CPU provider
refuses, the ONNX reference evaluator's) as DIR/<case>/test_data_set_0,
and runs
`amp-run DIR/<case>/model.onnx --run DIR/<case>/test_data_set_0 --rtol 0
--atol 0`: none, max and min move values, and add and mul apply the same
roundings in the same order, so every output must be bit-identical (NaN
matching NaN).

Prints one line per case and "scatternd-vs-ort: P of N cases match"; exits
1 when one does not.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
import onnxruntime

ELEM = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16,
        "bf16": TensorProto.BFLOAT16, "f64": TensorProto.DOUBLE,
        "i64": TensorProto.INT64, "i32": TensorProto.INT32,
        "bool": TensorProto.BOOL}
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
      "i64": np.int64, "i32": np.int32, "bool": np.bool_}

# (name, opset, reduction, dtype, data shape, index tuples' shape, k,
#  repeats, which inputs are initializers)
CASES = [
    ("none_k1", 11, "none", "f32", (6, 4, 5), (4,), 1, False, ()),
    ("none_k2_neg", 11, "none", "f32", (6, 4, 5), (3, 2), 2, False, ()),
    ("none_k3_elements", 13, "none", "f16", (6, 4, 5), (10,), 3, False, ()),
    ("none_bf16", 13, "none", "bf16", (3, 8), (2, 2), 2, False,
     ("data", "updates")),
    ("none_f64", 16, "none", "f64", (3, 8), (2,), 1, False, ()),
    ("none_repeats", 16, "none", "f32", (5, 6), (12,), 1, True, ()),
    ("none_i64_shift", 13, "none", "i64", (2, 7), (2, 6), 2, False, ()),
    ("none_bool", 18, "none", "bool", (4, 6), (3,), 1, False, ()),
    ("none_const_data", 13, "none", "f32", (8, 8), (20,), 2, False,
     ("data",)),
    ("none_const_indices", 16, "none", "f32", (8, 8), (8,), 1, False,
     ("indices",)),
    ("add_repeats", 16, "add", "f32", (5, 4, 3), (9,), 1, True, ()),
    ("add_k2_repeats", 18, "add", "f32", (5, 4, 3), (4, 5), 2, True, ()),
    ("add_f16_repeats", 16, "add", "f16", (5, 4), (11,), 1, True, ()),
    ("add_i64", 16, "add", "i64", (4, 5), (7,), 1, True, ()),
    ("mul_repeats", 16, "mul", "f32", (5, 4, 3), (8,), 1, True, ()),
    ("mul_k3_repeats", 18, "mul", "f32", (3, 4, 3), (30,), 3, True, ()),
    ("mul_i32", 18, "mul", "i32", (4, 5), (6,), 1, True, ()),
    ("max_repeats", 18, "max", "f32", (5, 4, 3), (9,), 1, True, ()),
    ("max_k2_repeats", 18, "max", "f32", (5, 4, 3), (6, 3), 2, True, ()),
    ("max_i64", 18, "max", "i64", (6, 3), (10,), 1, True, ()),
    ("min_repeats", 18, "min", "f32", (5, 4, 3), (9,), 1, True, ()),
    ("min_k3_repeats", 18, "min", "f32", (3, 4, 3), (25,), 3, True, ()),
    ("min_f16", 18, "min", "f16", (5, 4), (7,), 1, True, ()),
]


def values(rng, dt, shape):
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dt in ("i64", "i32"):
        return rng.integers(-9, 10, shape).astype(NP[dt])
    v = rng.standard_normal(shape)
    if dt == "bf16":
        return v.astype(np.float32)  # rounded by the tensor maker
    return v.astype(NP[dt])


def tensor(name, dt, v):
    if dt == "bf16":
        return helper.make_tensor(name, TensorProto.BFLOAT16, v.shape,
                                  v.reshape(-1).tolist())
    return numpy_helper.from_array(v, name)


def indices(rng, dshape, tuples, k, repeats):
    """Index tuples in [-d, d) of each indexed dim (negative ones count from
    the end); distinct places unless `repeats` (then at least one place is
    hit more than once)."""
    dims = np.array(dshape[:k])
    n = int(np.prod(tuples))
    if repeats:
        flat = rng.integers(0, np.prod(dims), n)
        flat[-1] = flat[0]
    else:
        flat = rng.permutation(int(np.prod(dims)))[:n]
    idx = np.stack(np.unravel_index(flat, tuple(dims)), -1)
    idx = idx - np.where(rng.integers(0, 2, idx.shape), dims, 0)
    return idx.reshape(tuple(tuples) + (k,)).astype(np.int64)


def build(case, rng, d):
    name, opset, red, dt, dshape, tuples, k, repeats, consts = case
    data = values(rng, dt, dshape)
    idx = indices(rng, dshape, tuples, k, repeats)
    upd = values(rng, dt, tuple(tuples) + tuple(dshape[k:]))
    feeds = {"data": data, "indices": idx, "updates": upd}
    attrs = {} if red == "none" else {"reduction": red}
    # numpy has no bf16 for ORT to return: a bf16 scatter's result leaves
    # the graph through an (exact) Cast to f32.
    nodes = [helper.make_node("ScatterND", ["data", "indices", "updates"],
                              ["s" if dt == "bf16" else "y"], name="scatter",
                              **attrs)]
    if dt == "bf16":
        nodes.append(helper.make_node("Cast", ["s"], ["y"], name="to_f32",
                                      to=TensorProto.FLOAT))
    inputs, inits = [], []
    for n, v, e in (("data", data, dt), ("indices", idx, "i64"),
                    ("updates", upd, dt)):
        t = tensor(n, e, v)
        if n in consts:
            inits.append(t)
        else:
            inputs.append((n, e, v, t))
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, ELEM[e], v.shape)
         for n, e, v, _ in inputs],
        [helper.make_tensor_value_info(
            "y", ELEM["f32" if dt == "bf16" else dt], dshape)], inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = 1  # ORT's tuples in order, as the spec's loop
    so.log_severity_level = 4  # the refusal below is expected
    # (bf16 tensors are initializers: numpy has no bf16 to feed.)
    feeds = {n: v for n, e, v, t in inputs}
    try:
        sess = onnxruntime.InferenceSession(
            path, so, providers=["CPUExecutionProvider"])
        (y,) = sess.run(None, feeds)
        ref = "onnxruntime"
    except onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException as e:
        # ORT's CPU ScatterND reduces no f16: the ONNX reference evaluator
        # (numpy, each step rounded to f16 as the runtime does) stands in.
        if "MLFloat16 data type is not supported" not in str(e):
            raise
        (y,) = ReferenceEvaluator(model).run(None, feeds)
        ref = "onnx.reference"
    for i, (n, e, v, t) in enumerate(inputs):
        onnx.save_tensor(t, os.path.join(d, "test_data_set_0",
                                         "input_%d.pb" % i))
    onnx.save_tensor(numpy_helper.from_array(np.asarray(y), "y"),
                     os.path.join(d, "test_data_set_0", "output_0.pb"))
    return path, ref


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--amp-run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    ok = 0
    for case in CASES:
        d = os.path.join(a.out, case[0])
        try:
            path, ref = build(case, rng, d)
        except Exception as e:  # ORT refused the case: reported, counted
            print("%s: onnxruntime: %s" % (case[0], str(e).splitlines()[0]))
            continue
        r = subprocess.run([a.amp_run, path, "--run",
                            os.path.join(d, "test_data_set_0"), "--rtol",
                            "0", "--atol", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        last = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        good = r.returncode == 0 and last.endswith("PASS")
        ok += good
        print("%s (opset %d, %s, %s; against %s): %s"
              % (case[0], case[1], case[2], case[3], ref,
                 last if good else r.stdout))
    print("scatternd-vs-ort: %d of %d cases match" % (ok, len(CASES)))
    return 0 if ok == len(CASES) else 1


if __name__ == "__main__":
    sys.exit(main())
