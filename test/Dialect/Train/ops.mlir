// RUN: amp-opt %s | amp-opt | FileCheck %s
// RUN: amp-opt %s --mlir-print-op-generic | amp-opt | FileCheck %s

// Typed ONNX ops, absent optional inputs, the generic node, initializers
// and the graph's ONNX names all survive printing and parsing.

module attributes {train.ir_version = 8 : i64, train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  // CHECK-LABEL: train.graph @main
  // CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32> {train.dims = ["batch", ""], train.name = "x"})
  train.graph @main(%x: tensor<?x4xf32> {train.dims = ["batch", ""], train.name = "x"}) -> (tensor<?x3xf32> {train.name = "y"}) {
    // CHECK: %[[W:.*]] = initializer "w" {value = dense<1.000000e+00> : tensor<3x4xf32>} : tensor<3x4xf32>
    %w = train.initializer "w" {value = dense<1.0> : tensor<3x4xf32>} : tensor<3x4xf32>
    // CHECK: %[[NONE:.*]] = none
    %none = train.none
    // CHECK: Gemm(%[[X]], %[[W]], %[[NONE]]) {train.name = "fc", train.outputs = ["h"], transB = 1 : i64}
    %h = train.Gemm(%x, %w, %none) {transB = 1 : i64, train.name = "fc", train.outputs = ["h"]} : (tensor<?x4xf32>, tensor<3x4xf32>, none) -> tensor<?x3xf32>
    // CHECK: train.ms.ReluGrad
    %g = train.ms.ReluGrad(%h, %h) {train.name = "rg", train.outputs = ["g"]} : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
    // CHECK: "train.node"(%{{.*}}) <{attrs = {lr = 1.000000e-01 : f32}, domain = "my.domain", graph_attrs = [], op_type = "Custom"}>
    %c = "train.node"(%g) <{attrs = {lr = 0.1 : f32}, domain = "my.domain", graph_attrs = [], op_type = "Custom"}> {train.name = "c", train.outputs = ["y"]} : (tensor<?x3xf32>) -> tensor<?x3xf32>
    // CHECK: return %{{.*}} : tensor<?x3xf32>
    train.return %c : tensor<?x3xf32>
  }
}
