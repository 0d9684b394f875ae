// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s
// RUN: amp-opt %s --split-input-file --convert-train-to-runtime="fuse-gemm-epilogues=0" | FileCheck %s --check-prefix=OFF

// A linear layer on [batch, seq, features] as PyTorch exports it: MatMul
// with a 2-D weight, then the Add of the bias. One gemm on the 3-D operand
// (its leading dims are rows) with the bias as c; the product before the
// bias is never made. A Relu after it then joins as gemm_relu.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "gemm"(%arg0, %arg1, %arg2, %{{[^)]*}}) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1, 1>, node = "mm", trans_a = 0 : i32, trans_b = 0 : i32} : memref<2x4x8xf32>, memref<8x3xf32>, memref<3xf32>, memref<2x4x3xf32>
// CHECK-NOT: amprt.call "add"(
// CHECK-NOT: amprt.call "matmul"(
// CHECK: amprt.call "gemm_relu"(%arg0, %arg3, %arg2, %{{[^)]*}}) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1, 1>, node = "mm2", trans_a = 0 : i32, trans_b = 0 : i32}
// CHECK-NOT: amprt.call "relu"(
// OFF-LABEL: func.func @main
// OFF: amprt.call "matmul"(
// OFF: amprt.call "add"(
// OFF-NOT: gemm
module {
  train.graph @main(%x: tensor<2x4x8xf32> {train.name = "x"}, %w: tensor<8x3xf32> {train.name = "w"}, %b: tensor<3xf32> {train.name = "b"}, %w2: tensor<8x3xf32> {train.name = "w2"}) -> (tensor<2x4x3xf32> {train.name = "z"}, tensor<2x4x3xf32> {train.name = "r"}) {
    %y = MatMul(%x, %w) {train.name = "mm", train.outputs = ["y"]} : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %z = Add(%y, %b) {train.name = "bias", train.outputs = ["z"]} : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
    %y2 = MatMul(%x, %w2) {train.name = "mm2", train.outputs = ["y2"]} : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %z2 = Add(%b, %y2) {train.name = "bias2", train.outputs = ["z2"]} : (tensor<3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %r = Relu(%z2) {train.name = "relu", train.outputs = ["r"]} : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    train.return %z, %r : tensor<2x4x3xf32>, tensor<2x4x3xf32>
  }
}

// -----

// Not fused: the product is a graph output; another op reads it; the added
// operand is no vector of the last dim (a residual, a [4, 3] bias); a
// batched weight.
// CHECK-LABEL: func.func @main
// CHECK-NOT: amprt.call "gemm"
// CHECK-COUNT-4: amprt.call "matmul"(
// CHECK-NOT: amprt.call "gemm"
module {
  train.graph @main(%x: tensor<2x4x8xf32> {train.name = "x"}, %w: tensor<8x3xf32> {train.name = "w"}, %b: tensor<3xf32> {train.name = "b"}, %r: tensor<2x4x3xf32> {train.name = "r"}, %b2: tensor<4x3xf32> {train.name = "b2"}, %wb: tensor<2x8x3xf32> {train.name = "wb"}) -> (tensor<2x4x3xf32> {train.name = "y1"}, tensor<2x4x3xf32> {train.name = "z1"}, tensor<2x4x3xf32> {train.name = "z2"}, tensor<2x4x3xf32> {train.name = "m2"}, tensor<2x4x3xf32> {train.name = "z3"}, tensor<2x4x3xf32> {train.name = "z4"}) {
    %y1 = MatMul(%x, %w) {train.name = "mm1", train.outputs = ["y1"]} : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %z1 = Add(%y1, %b) {train.name = "add1", train.outputs = ["z1"]} : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
    %y2 = MatMul(%x, %w) {train.name = "mm2", train.outputs = ["y2"]} : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %z2 = Add(%y2, %b) {train.name = "add2", train.outputs = ["z2"]} : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
    %m2 = Mul(%y2, %r) {train.name = "mul2", train.outputs = ["m2"]} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %y3 = MatMul(%x, %w) {train.name = "mm3", train.outputs = ["y3"]} : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %z3 = Add(%y3, %b2) {train.name = "add3", train.outputs = ["z3"]} : (tensor<2x4x3xf32>, tensor<4x3xf32>) -> tensor<2x4x3xf32>
    %y4 = MatMul(%x, %wb) {train.name = "mm4", train.outputs = ["y4"]} : (tensor<2x4x8xf32>, tensor<2x8x3xf32>) -> tensor<2x4x3xf32>
    %z4 = Add(%y4, %b) {train.name = "add4", train.outputs = ["z4"]} : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
    train.return %y1, %z1, %z2, %m2, %z3, %z4 : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>
  }
}
