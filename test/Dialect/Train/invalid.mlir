// RUN: amp-opt %s -split-input-file -verify-diagnostics

// The verifiers check typed ops against their ONNX schema (at the opset the
// module imports): attribute types, type constraints, required attributes,
// output counts.

module attributes {train.opset_import = [["", 17 : i64]]} {
train.graph @main(%a: tensor<2xf32>, %b: tensor<2xf16>) -> () {
  // expected-error @+1 {{input #1 has type tensor(float16) but input #0 has tensor(float) and both are bound to type constraint T}}
  %0 = train.Add(%a, %b) : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  train.return
}
}

// -----

module attributes {train.opset_import = [["", 17 : i64]]} {
train.graph @main(%a: tensor<2xi1>) -> () {
  // expected-error @+1 {{input #0 ('X') has type tensor(bool), which type constraint T does not allow}}
  %0 = train.Relu(%a) : (tensor<2xi1>) -> tensor<2xi1>
  train.return
}
}

// -----

module attributes {train.opset_import = [["", 17 : i64]]} {
train.graph @main(%a: tensor<2xf32>) -> () {
  // expected-error @+1 {{attribute 'to' failed to satisfy constraint}}
  %0 = train.Cast(%a) {to = "float16"} : (tensor<2xf32>) -> tensor<2xf16>
  train.return
}
}

// -----

module attributes {train.opset_import = [["", 17 : i64]]} {
train.graph @main(%a: tensor<2xf32>) -> () {
  // expected-error @+1 {{is missing required attribute 'to'}}
  %0 = train.Cast(%a) : (tensor<2xf32>) -> tensor<2xf16>
  train.return
}
}

// -----

module attributes {train.opset_import = [["", 17 : i64]]} {
train.graph @main(%a: tensor<2xf32>) -> () {
  // expected-error @+1 {{'train.outputs' names 2 outputs but the op has 1}}
  %0 = train.Relu(%a) {train.outputs = ["y", "z"]} : (tensor<2xf32>) -> tensor<2xf32>
  train.return
}
}

// -----

module attributes {train.opset_import = [["", 17 : i64]]} {
train.graph @main(%a: tensor<2xi64>) -> () {
  // Shape's output constraint T1 allows tensor(int64) only.
  // expected-error @+1 {{output #0 ('shape') has type tensor(int32), which type constraint T1 does not allow}}
  %0 = train.Shape(%a) : (tensor<2xi64>) -> tensor<1xi32>
  train.return
}
}

// -----

train.graph @main() -> () {
  // expected-error @+1 {{value type 'tensor<2xf32>' does not match the result type 'tensor<3xf32>'}}
  %w = train.initializer "w" {value = dense<1.0> : tensor<2xf32>} : tensor<3xf32>
  train.return
}

// -----

train.graph @main(%a: tensor<2xf32>) -> () {
  // expected-error @+1 {{has 1 regions but names 0 graph attributes}}
  %0 = "train.node"(%a) <{attrs = {}, domain = "x", graph_attrs = [], op_type = "Y"}> ({
    train.return
  }) : (tensor<2xf32>) -> tensor<2xf32>
  train.return
}
