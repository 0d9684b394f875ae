// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// A Linear layer as exported (MatMul by a transposed weight) and its weight
// gradient transposed back: neither transpose is a copy. The forward
// product reads W with trans_b; the gradient is one product with the
// operands swapped, written straight into the transposed result; a Gemm
// reading a transposed operand flips its flag.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:[^:]*]]: memref<8x4xf32> {{.*}}, %[[W:[^:]*]]: memref<3x4xf32> {{.*}}, %[[DY:[^:]*]]: memref<8x3xf32>
// CHECK-NOT: "transpose"
// CHECK: amprt.call "fused_matmul"(%[[X]], %[[W]], %{{[^)]*}}) {alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1>, node = "fwd", trans_a = 0 : i32, trans_b = 1 : i32} : memref<8x4xf32>, memref<3x4xf32>, memref<8x3xf32>
// CHECK: amprt.call "fused_matmul"(%[[DY]], %[[X]], %{{[^)]*}}) {alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1>, node = "wgrad", trans_a = 1 : i32, trans_b = 0 : i32} : memref<8x3xf32>, memref<8x4xf32>, memref<3x4xf32>
// CHECK: amprt.call "gemm"(%[[X]], %[[W]], %{{[^)]*}}) {alpha = 2.000000e+00 : f32, beta = 1.000000e+00 : f32, counts = array<i64: 1, 1, 0, 1>, node = "g", trans_a = 0 : i32, trans_b = 1 : i32}
// CHECK-NOT: "transpose"
// CHECK: return
module {
  train.graph @main(%x: tensor<8x4xf32> {train.name = "x"}, %w: tensor<3x4xf32> {train.name = "w"}, %dy: tensor<8x3xf32> {train.name = "dy"}) -> (tensor<8x3xf32> {train.name = "y"}, tensor<3x4xf32> {train.name = "dw"}, tensor<8x3xf32> {train.name = "g"}) {
    %n = none
    %wt = Transpose(%w) {perm = array<i64: 1, 0>, train.name = "wt", train.outputs = ["wt"]} : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %y = MatMul(%x, %wt) {train.name = "fwd", train.outputs = ["y"]} : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %xt = Transpose(%x) {perm = array<i64: 1, 0>, train.name = "xt", train.outputs = ["xt"]} : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %dwt = MatMul(%xt, %dy) {train.name = "wgrad", train.outputs = ["dwt"]} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %dw = Transpose(%dwt) {perm = array<i64: 1, 0>, train.name = "dw", train.outputs = ["dw"]} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %g = Gemm(%x, %wt, %n) {alpha = 2.0 : f32, train.name = "g", train.outputs = ["g"]} : (tensor<8x4xf32>, tensor<4x3xf32>, none) -> tensor<8x3xf32>
    train.return %y, %dw, %g : tensor<8x3xf32>, tensor<3x4xf32>, tensor<8x3xf32>
  }
}

// -----

// Kept: a transpose of other dims than the last two, one with a reader
// that is not a product, and a product whose result is also read elsewhere.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "transpose"({{.*}}node = "t3"
// CHECK: amprt.call "matmul"({{.*}}node = "m3"
// CHECK: amprt.call "transpose"({{.*}}node = "t2"
// CHECK: amprt.call "relu"({{.*}}node = "r"
// CHECK: amprt.call "matmul"({{.*}}node = "m2"
// CHECK: amprt.call "transpose"({{.*}}node = "t4"
// CHECK: return
module {
  train.graph @main(%a: tensor<2x3x4xf32> {train.name = "a"}, %b: tensor<3x2x5xf32> {train.name = "b"}, %w: tensor<5x4xf32> {train.name = "w"}, %x: tensor<6x5xf32> {train.name = "x"}) -> (tensor<3x4x5xf32> {train.name = "m3"}, tensor<4x5xf32> {train.name = "r"}, tensor<6x4xf32> {train.name = "m2"}, tensor<4x6xf32> {train.name = "t4"}) {
    %t3 = Transpose(%a) {perm = array<i64: 1, 2, 0>, train.name = "t3", train.outputs = ["t3"]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
    %m3 = MatMul(%t3, %b) {train.name = "m3", train.outputs = ["m3"]} : (tensor<3x4x2xf32>, tensor<3x2x5xf32>) -> tensor<3x4x5xf32>
    %t2 = Transpose(%w) {perm = array<i64: 1, 0>, train.name = "t2", train.outputs = ["t2"]} : (tensor<5x4xf32>) -> tensor<4x5xf32>
    %r = Relu(%t2) {train.name = "r", train.outputs = ["r"]} : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %m2 = MatMul(%x, %w) {train.name = "m2", train.outputs = ["m2"]} : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
    %t4 = Transpose(%m2) {perm = array<i64: 1, 0>, train.name = "t4", train.outputs = ["t4"]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
    train.return %m3, %r, %m2, %t4 : tensor<3x4x5xf32>, tensor<4x5xf32>, tensor<6x4xf32>, tensor<4x6xf32>
  }
}

// -----

// Batched: a transpose of the last two dims of a rank-4 tensor (attention's
// K^T) folds into the batched product.
// CHECK-LABEL: func.func @main
// CHECK-NOT: "transpose"
// CHECK: amprt.call "fused_matmul"(%{{[^,]*}}, %{{[^,]*}}, %{{[^)]*}}) {alpha = 1.000000e+00 : f32, {{.*}}trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x3x4x8xf32>, memref<2x3x5x8xf32>, memref<2x3x4x5xf32>
module {
  train.graph @main(%q: tensor<2x3x4x8xf32> {train.name = "q"}, %k: tensor<2x3x5x8xf32> {train.name = "k"}) -> (tensor<2x3x4x5xf32> {train.name = "s"}) {
    %kt = Transpose(%k) {perm = array<i64: 0, 1, 3, 2>, train.name = "kt", train.outputs = ["kt"]} : (tensor<2x3x5x8xf32>) -> tensor<2x3x8x5xf32>
    %s = MatMul(%q, %kt) {train.name = "qk", train.outputs = ["s"]} : (tensor<2x3x4x8xf32>, tensor<2x3x8x5xf32>) -> tensor<2x3x4x5xf32>
    train.return %s : tensor<2x3x4x5xf32>
  }
}
