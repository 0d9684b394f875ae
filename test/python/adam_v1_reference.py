#!/usr/bin/env python3
"""Float64 reference for ONNX Runtime's 2022 training_api artifacts trained
with their per-tensor optimizer graph (gradient_graph.onnx +
optimizer_graph.onnx, com.microsoft AdamOptimizer version 1).

ONNX Runtime 1.19 refuses that optimizer graph, so the reference is written
out here: the 784-500-10 MLP of gradient_graph.onnx (Gemm transB=1, Relu,
Gemm, SoftmaxCrossEntropyLoss mean) and AdamOptimizer as its attributes say
(alpha, beta, epsilon, lambda, do_bias_correction, weight_decay_mode 1 =
HuggingFace: lr * sqrt(1 - beta^t) / (1 - alpha^t) * m / (sqrt(v) + eps),
then decay), with the step amp-run feeds (1, 2, ...).

  make DIR        writes DIR/data/{input1,target}.npy (one batch) and
                  DIR/weights.onnx (the initial parameters)
  check DIR CSV   trains the reference for as many steps as CSV (amp-run's
                  --log) has and compares the losses
"""
import csv
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

BATCH, IN, HID, OUT = 16, 784, 500, 10
TOLERANCE = 1e-4  # relative, per step: fp32 arithmetic vs float64


def optimizer_attrs(path):
    g = onnx.load(path).graph
    attrs = {a.name: onnx.helper.get_attribute_value(a)
             for a in g.node[0].attribute}
    assert all(n.op_type == "AdamOptimizer" for n in g.node)
    return attrs


def make(d):
    r = np.random.default_rng(11)
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    x = r.standard_normal([BATCH, IN]).astype(np.float32)
    t = r.integers(0, OUT, [BATCH]).astype(np.int32)
    np.save(os.path.join(d, "data", "input1.npy"), x)
    np.save(os.path.join(d, "data", "target.npy"), t)
    w = {"fc1.weight": r.uniform(-1, 1, [HID, IN]) / np.sqrt(IN),
         "fc1.bias": r.uniform(-0.1, 0.1, [HID]),
         "fc2.weight": r.uniform(-1, 1, [OUT, HID]) / np.sqrt(HID),
         "fc2.bias": r.uniform(-0.1, 0.1, [OUT])}
    inits = [numpy_helper.from_array(v.astype(np.float32), k)
             for k, v in w.items()]
    graph = onnx.helper.make_graph([], "weights", [], [], inits)
    onnx.save(onnx.helper.make_model(graph), os.path.join(d, "weights.onnx"))


def loss_and_grads(w, x, t):
    h_pre = x @ w["fc1.weight"].T + w["fc1.bias"]
    h = np.maximum(h_pre, 0)
    z = h @ w["fc2.weight"].T + w["fc2.bias"]
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = -logp[np.arange(len(t)), t].mean()
    dz = np.exp(logp)
    dz[np.arange(len(t)), t] -= 1
    dz /= len(t)
    dh = (dz @ w["fc2.weight"]) * (h_pre > 0)
    return loss, {"fc2.weight": dz.T @ h, "fc2.bias": dz.sum(0),
                  "fc1.weight": dh.T @ x, "fc1.bias": dh.sum(0)}


def check(d, log, optimizer, lr):
    a = optimizer_attrs(optimizer)
    assert a.get("weight_decay_mode", 0) == 1, "the reference is mode 1"
    alpha, beta, eps = a["alpha"], a["beta"], a["epsilon"]
    lam, correct = a.get("lambda", 0.0), a.get("do_bias_correction", 1)
    x = np.load(os.path.join(d, "data", "input1.npy")).astype(np.float64)
    t = np.load(os.path.join(d, "data", "target.npy"))
    w = {i.name: numpy_helper.to_array(i).astype(np.float64)
         for i in onnx.load(os.path.join(d, "weights.onnx")).graph.initializer}
    m1 = {k: np.zeros_like(v) for k, v in w.items()}
    m2 = {k: np.zeros_like(v) for k, v in w.items()}
    got = [float(r["loss"]) for r in csv.DictReader(open(log))]
    worst = 0.0
    for step, loss_run in enumerate(got, start=1):
        loss, g = loss_and_grads(w, x, t)
        rel = abs(loss_run - loss) / abs(loss)
        worst = max(worst, rel)
        print(f"step {step}: amp-run {loss_run:.9g} reference {loss:.9g} "
              f"rel {rel:.2e}")
        for k in w:
            m1[k] = alpha * m1[k] + (1 - alpha) * g[k]
            m2[k] = beta * m2[k] + (1 - beta) * g[k] ** 2
            bc1 = 1 - alpha ** step if correct else 1.0
            bc2 = 1 - beta ** step if correct else 1.0
            w[k] -= lr * np.sqrt(bc2) / bc1 * m1[k] / (np.sqrt(m2[k]) + eps)
            w[k] -= lr * lam * w[k]
    falls = got[-1] < 0.5 * got[0]
    print(f"steps {len(got)}, loss {got[0]:.4f} -> {got[-1]:.4f}, falls {falls}")
    print(f"max relative loss difference {worst:.2e}: "
          f"{'ok' if worst < TOLERANCE else 'FAIL'}")
    return 0 if worst < TOLERANCE and falls else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4],
                       float(sys.argv[5])))
