// RUN: amp-opt %s --auto-mixed-precision="summary=false" 2>&1 | FileCheck %s

// A function no node calls, and one whose calls disagree, are left fp32
// with a warning.
// CHECK-DAG: warning: auto-mixed-precision: function 'Unused' left fp32: no node calls it
// CHECK-DAG: warning: auto-mixed-precision: function 'Mixed' left fp32: its calls pass input 0 in two element types

// A model-local function is typed from its calls (FunctionTypes.h): the
// first call passes f32, the second reads the first's result, untyped until
// the function is; then it is painted as a graph: the Gemm in fp16 with
// casts at its edges, the function's inputs and outputs kept f32.
// CHECK-LABEL: train.function @local.LinearRelu
// CHECK-SAME: (%{{.*}}: tensor<*xf32> {train.name = "x"}
// CHECK: Cast(%{{.*}}) {to = 10 : i64{{.*}}} : (tensor<*xf32>) -> tensor<*xf16>
// CHECK: Gemm({{.*}}) {{.*}} : (tensor<*xf16>, tensor<*xf16>, tensor<*xf16>) -> tensor<*xf16>
// CHECK: Cast(%{{.*}}) {to = 1 : i64{{.*}}} : (tensor<*xf16>) -> tensor<*xf32>
// CHECK: train.graph @main
// CHECK: "train.node"{{.*}}op_type = "LinearRelu"{{.*}} -> tensor<*xf32>
// CHECK: "train.node"{{.*}}op_type = "LinearRelu"{{.*}} : (tensor<*xf32>, {{.*}}) -> tensor<4x8xf32>

module attributes {train.opset_import = [["", 17], ["local", 1]]} {
  train.function @local.LinearRelu(%x: !train.unknown {train.name = "x"}, %w: !train.unknown {train.name = "w"}, %b: !train.unknown {train.name = "b"}) -> (!train.unknown {train.name = "y"}) attributes {domain = "local", onnx_name = "LinearRelu", train.attribute = [], train.opset_import = [["", 17]]} {
    %h = train.Gemm(%x, %w, %b) {train.name = "gemm", train.outputs = ["h"], transB = 1 : i64} : (!train.unknown, !train.unknown, !train.unknown) -> !train.unknown
    %y = train.Relu(%h) {train.name = "relu", train.outputs = ["y"]} : (!train.unknown) -> !train.unknown
    train.return %y : !train.unknown
  }
  train.function @local.Unused(%x: !train.unknown {train.name = "x"}) -> (!train.unknown {train.name = "y"}) attributes {domain = "local", onnx_name = "Unused", train.attribute = [], train.opset_import = [["", 17]]} {
    %y = train.Relu(%x) {train.name = "relu", train.outputs = ["y"]} : (!train.unknown) -> !train.unknown
    train.return %y : !train.unknown
  }
  train.function @local.Mixed(%x: !train.unknown {train.name = "x"}) -> (!train.unknown {train.name = "y"}) attributes {domain = "local", onnx_name = "Mixed", train.attribute = [], train.opset_import = [["", 17]]} {
    %y = train.Relu(%x) {train.name = "relu", train.outputs = ["y"]} : (!train.unknown) -> !train.unknown
    train.return %y : !train.unknown
  }
  train.graph @main(%in: tensor<4x16xf32> {train.name = "input"}, %i: tensor<4xi64> {train.name = "ids"}) -> (tensor<4x8xf32> {train.name = "out"}, !train.unknown {train.name = "m1"}, !train.unknown {train.name = "m2"}) {
    %w1 = train.initializer "w1" {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
    %b1 = train.initializer "b1" {value = dense<0.0> : tensor<32xf32>} : tensor<32xf32>
    %w2 = train.initializer "w2" {value = dense<0.5> : tensor<8x32xf32>} : tensor<8x32xf32>
    %b2 = train.initializer "b2" {value = dense<0.0> : tensor<8xf32>} : tensor<8xf32>
    %h1 = "train.node"(%in, %w1, %b1) <{attrs = {}, domain = "local", graph_attrs = [], op_type = "LinearRelu"}> {train.name = "layer1", train.outputs = ["h1"]} : (tensor<4x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> !train.unknown
    %out = "train.node"(%h1, %w2, %b2) <{attrs = {}, domain = "local", graph_attrs = [], op_type = "LinearRelu"}> {train.name = "layer2", train.outputs = ["out"]} : (!train.unknown, tensor<8x32xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %m1 = "train.node"(%in) <{attrs = {}, domain = "local", graph_attrs = [], op_type = "Mixed"}> {train.name = "mixed1", train.outputs = ["m1"]} : (tensor<4x16xf32>) -> !train.unknown
    %m2 = "train.node"(%i) <{attrs = {}, domain = "local", graph_attrs = [], op_type = "Mixed"}> {train.name = "mixed2", train.outputs = ["m2"]} : (tensor<4xi64>) -> !train.unknown
    train.return %out, %m1, %m2 : tensor<4x8xf32>, !train.unknown, !train.unknown
  }
}
