#!/usr/bin/env python3
"""Writes an optimizer model of one ai.onnx.preview.training node (Adam,
Adagrad or Momentum) for the trainable parameters of an onnxruntime-training
training model, with the input names amp-run's training loop binds:
learning_rate, step, the parameters by name, their gradients
<p>_grad.accumulation.buffer, and the optimizer state <p>.v / <p>.h (which
starts at zero). Outputs <name>.new are left untyped, as a hand-written
graph without value_info has them.

  preview_optimizer_model.py TRAINING_MODEL OP OUT [--attr NAME=VALUE]...
"""

import argparse
import sys

import onnx
from onnx import helper, TensorProto


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("training_model")
    ap.add_argument("op", choices=("Adam", "Adagrad", "Momentum"))
    ap.add_argument("out")
    ap.add_argument("--attr", action="append", default=[], metavar="N=V")
    a = ap.parse_args()
    tm = onnx.load(a.training_model)
    names = {i.name for i in tm.graph.input}
    params = [i for i in tm.graph.input
              if i.name + "_grad.accumulation.buffer" in names]

    def vi(name, like):
        dims = [d.dim_value for d in like.type.tensor_type.shape.dim]
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)

    states = {"Adam": ["v", "h"], "Adagrad": ["h"], "Momentum": ["v"]}[a.op]
    ins = [helper.make_tensor_value_info("learning_rate", TensorProto.FLOAT,
                                         []),
           helper.make_tensor_value_info("step", TensorProto.INT64, [])]
    ins += [vi(p.name, p) for p in params]
    ins += [vi(p.name + "_grad.accumulation.buffer", p) for p in params]
    for s in states:
        ins += [vi(p.name + "." + s, p) for p in params]
    outs = [p.name + ".new" for p in params]
    for s in states:
        outs += [p.name + "." + s + ".new" for p in params]
    attrs = {}
    for kv in a.attr:
        k, v = kv.split("=", 1)
        try:
            attrs[k] = float(v)
        except ValueError:
            attrs[k] = v
    node = helper.make_node(a.op, [i.name for i in ins], outs,
                            name=a.op.lower(),
                            domain="ai.onnx.preview.training", **attrs)
    graph = helper.make_graph(
        [node], "optimizer", ins,
        [onnx.ValueInfoProto(name=o) for o in outs])
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17),
        helper.make_opsetid("ai.onnx.preview.training", 1)])
    onnx.save(model, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
