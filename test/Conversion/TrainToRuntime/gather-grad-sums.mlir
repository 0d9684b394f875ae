// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s

// nn.MultiheadAttention's packed q/k/v gradient: three GatherGrads at the
// scalar indices 0, 1, 2 of a [3, 4, 8] tensor, summed. One buffer, filled
// with zeros, gets each dY added into its slice in place (scatter_nd, add).
// CHECK-LABEL: func.func @main
// CHECK-SAME: amprt.arena_bytes = 384 : i64
// CHECK-NOT: amprt.call "gather_grad"
// CHECK: amprt.call "fill"(%[[Y:[^)]*]]) {{.*}}value = 0.000000e+00 : f64}
// CHECK: amprt.call "scatter_nd"(%[[Y]], %{{.*}}, %arg0, %[[Y]]) {{.*}}reduction = 1 : i32} : memref<3x4x8xf32>, memref<1xi64>, memref<4x8xf32>, memref<3x4x8xf32>
// CHECK: amprt.call "scatter_nd"(%[[Y]], %{{.*}}, %arg1, %[[Y]])
// CHECK: amprt.call "scatter_nd"(%[[Y]], %{{.*}}, %arg2, %[[Y]])
// CHECK-NOT: amprt.call "sum"
module {
  train.graph @main(%q: tensor<4x8xf32> {train.name = "dq"}, %k: tensor<4x8xf32> {train.name = "dk"}, %v: tensor<4x8xf32> {train.name = "dv"}) -> (tensor<3x4x8xf32> {train.name = "d"}) {
    %shape = initializer "shape" {value = dense<[3, 4, 8]> : tensor<3xi64>} : tensor<3xi64>
    %i0 = initializer "i0" {value = dense<0> : tensor<i64>} : tensor<i64>
    %i1 = initializer "i1" {value = dense<1> : tensor<i64>} : tensor<i64>
    %i2 = initializer "i2" {value = dense<2> : tensor<i64>} : tensor<i64>
    %g0 = "train.node"(%shape, %i0, %q) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g0", train.outputs = ["g0"]} : (tensor<3xi64>, tensor<i64>, tensor<4x8xf32>) -> tensor<3x4x8xf32>
    %g1 = "train.node"(%shape, %i1, %k) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g1", train.outputs = ["g1"]} : (tensor<3xi64>, tensor<i64>, tensor<4x8xf32>) -> tensor<3x4x8xf32>
    %g2 = "train.node"(%shape, %i2, %v) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g2", train.outputs = ["g2"]} : (tensor<3xi64>, tensor<i64>, tensor<4x8xf32>) -> tensor<3x4x8xf32>
    %d = Sum(%g0, %g1, %g2) {train.name = "sum", train.outputs = ["d"]} : (tensor<3x4x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
    train.return %d : tensor<3x4x8xf32>
  }
}

// -----

// Not rewritten: two gathers at the same index (their order would matter),
// and a gather of a list of indices.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-2: amprt.call "gather_grad"
// CHECK: amprt.call "sum"
// CHECK-COUNT-2: amprt.call "gather_grad"
// CHECK: amprt.call "sum"
module {
  train.graph @main(%q: tensor<4x8xf32> {train.name = "dq"}, %k: tensor<4x8xf32> {train.name = "dk"}, %p: tensor<2x4x8xf32> {train.name = "dp"}) -> (tensor<3x4x8xf32> {train.name = "d"}, tensor<3x4x8xf32> {train.name = "e"}) {
    %shape = initializer "shape" {value = dense<[3, 4, 8]> : tensor<3xi64>} : tensor<3xi64>
    %i0 = initializer "i0" {value = dense<0> : tensor<i64>} : tensor<i64>
    %ij = initializer "ij" {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
    %g0 = "train.node"(%shape, %i0, %q) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g0", train.outputs = ["g0"]} : (tensor<3xi64>, tensor<i64>, tensor<4x8xf32>) -> tensor<3x4x8xf32>
    %g1 = "train.node"(%shape, %i0, %k) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g1", train.outputs = ["g1"]} : (tensor<3xi64>, tensor<i64>, tensor<4x8xf32>) -> tensor<3x4x8xf32>
    %d = Sum(%g0, %g1) {train.name = "sum", train.outputs = ["d"]} : (tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
    %g2 = "train.node"(%shape, %i0, %k) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g2", train.outputs = ["g2"]} : (tensor<3xi64>, tensor<i64>, tensor<4x8xf32>) -> tensor<3x4x8xf32>
    %g3 = "train.node"(%shape, %ij, %p) <{attrs = {axis = 0 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherGrad"}> {train.name = "g3", train.outputs = ["g3"]} : (tensor<3xi64>, tensor<2xi64>, tensor<2x4x8xf32>) -> tensor<3x4x8xf32>
    %e = Sum(%g2, %g3) {train.name = "sum2", train.outputs = ["e"]} : (tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32>
    train.return %d, %e : tensor<3x4x8xf32>, tensor<3x4x8xf32>
  }
}
