"""Writes a model with two nodes of an operator the default domain lacks."""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
nodes = [
    helper.make_node("Relu", ["x"], ["r"], name="Relu_1"),
    helper.make_node("NoSuchOp", ["r"], ["m"], name="Mystery_5", alpha=0.25),
    helper.make_node("NoSuchOp", ["m"], ["m2"], name="Mystery_6"),
    # Arity that Relu-14 does not allow: kept generic, with a warning.
    helper.make_node("Relu", ["m2", "x"], ["y"], name="Relu_2"),
]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, sys.argv[1])
