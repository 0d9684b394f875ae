#!/usr/bin/env python3
"""Runs one of Deeploy's on-device training cases (testdata/deeploy/Training/
<Model>/<model>_train: network.onnx, inputs.npz, outputs.npz; the SGD
optimizer graph beside it) through amp-run and compares with Deeploy's own
results.

inputs.npz holds arr_<i> for every graph input in order (the data inputs of
the first minibatch, the parameters, lazy_reset_grad) and mb<k>_arr_<i> for
the data inputs of minibatch k; outputs.npz the loss of every step and the
final parameters.

  make CASE DIR              DIR/weights.onnx, DIR/data/<input>.npy
  check CASE DIR LOG FINAL   compares amp-run's --log and -o with outputs.npz
"""
import csv
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

TOLERANCE = 1e-5  # relative: the same fp32 arithmetic, other summation orders


def load(case):
    graph = onnx.load(os.path.join(case, "network.onnx")).graph
    names = [i.name for i in graph.input]
    inputs = np.load(os.path.join(case, "inputs.npz"))
    params = [n for n in names if n + "_grad.accumulation.buffer" in names]
    data = [n for k, n in enumerate(names) if f"mb1_arr_{k:04d}" in inputs]
    return names, inputs, params, data


def make(case, out):
    names, inputs, params, data = load(case)
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    inits = [numpy_helper.from_array(inputs[f"arr_{names.index(p):04d}"], p)
             for p in params]
    graph = onnx.helper.make_graph([], "weights", [], [], inits)
    onnx.save(onnx.helper.make_model(graph), os.path.join(out, "weights.onnx"))
    batches = int(inputs["meta_data_size"][0])
    for name in data:
        k = names.index(name)
        parts = [inputs[f"arr_{k:04d}"]] + [inputs[f"mb{b}_arr_{k:04d}"]
                                            for b in range(1, batches)]
        np.save(os.path.join(out, "data", name + ".npy"), np.concatenate(parts))
    print(f"{len(params)} parameters, {batches} minibatches of {data}")


def check(case, out, log, final):
    names, inputs, params, data = load(case)
    expected = np.load(os.path.join(case, "outputs.npz"))
    got = np.array([float(r["loss"]) for r in csv.DictReader(open(log))])
    want = expected["loss"][:len(got)]
    loss_rel = float(np.max(np.abs(got - want) / np.abs(want)))
    weights = {i.name: numpy_helper.to_array(i)
               for i in onnx.load(final).graph.initializer}
    weight_rel = max(float(np.max(np.abs(weights[p] - expected[p])) /
                           max(np.max(np.abs(expected[p])), 1e-30))
                     for p in params)
    ok = loss_rel < TOLERANCE and weight_rel < TOLERANCE
    print(f"steps {len(got)}: loss {got[0]:.6f} -> {got[-1]:.6f}, "
          f"max relative difference to Deeploy: loss {loss_rel:.1e}, "
          f"weights {weight_rel:.1e}: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    else:
        sys.exit(check(*sys.argv[2:6]))
