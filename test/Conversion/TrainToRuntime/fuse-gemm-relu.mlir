// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s

// A Gemm whose result only a Relu and the backward's ReluGrad read: one
// gemm_relu writes the Relu's output, which the ReluGrad reads instead
// (z > 0 exactly where y > 0); the Gemm's own output is never made.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "gemm_relu"(%arg0, %arg1, %arg2, %[[Z:[^)]*]]) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1, 1>, node = "fc", trans_a = 0 : i32, trans_b = 1 : i32}
// CHECK-NOT: amprt.call "relu"(
// CHECK: amprt.call "relu_grad"(%arg3, %[[Z]], %{{.*}})
module {
  train.graph @main(%x: tensor<4x8xf32> {train.name = "x"}, %w: tensor<3x8xf32> {train.name = "w"}, %b: tensor<3xf32> {train.name = "b"}, %dz: tensor<4x3xf32> {train.name = "dz"}) -> (tensor<4x3xf32> {train.name = "z"}, tensor<4x3xf32> {train.name = "dy"}) {
    %y = Gemm(%x, %w, %b) {transB = 1 : i64, train.name = "fc", train.outputs = ["y"]} : (tensor<4x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %z = Relu(%y) {train.name = "relu", train.outputs = ["z"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %dy = "train.node"(%dz, %y) <{attrs = {}, domain = "com.microsoft", graph_attrs = [], op_type = "ReluGrad"}> {train.name = "relu_grad", train.outputs = ["dy"]} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    train.return %z, %dy : tensor<4x3xf32>, tensor<4x3xf32>
  }
}

// -----

// Not fused: a Gemm whose result another op reads too (an Add), and one
// whose result is a graph output.
// CHECK-LABEL: func.func @main
// CHECK-NOT: gemm_relu
// CHECK-COUNT-2: amprt.call "relu"(
// CHECK-NOT: gemm_relu
module {
  train.graph @main(%x: tensor<4x8xf32> {train.name = "x"}, %w: tensor<3x8xf32> {train.name = "w"}) -> (tensor<4x3xf32> {train.name = "z1"}, tensor<4x3xf32> {train.name = "s"}, tensor<4x3xf32> {train.name = "y2"}, tensor<4x3xf32> {train.name = "z2"}) {
    %n = none
    %y1 = Gemm(%x, %w, %n) {transB = 1 : i64, train.name = "fc1", train.outputs = ["y1"]} : (tensor<4x8xf32>, tensor<3x8xf32>, none) -> tensor<4x3xf32>
    %z1 = Relu(%y1) {train.name = "relu1", train.outputs = ["z1"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %s = Add(%y1, %z1) {train.name = "add", train.outputs = ["s"]} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %y2 = Gemm(%x, %w, %n) {transB = 1 : i64, train.name = "fc2", train.outputs = ["y2"]} : (tensor<4x8xf32>, tensor<3x8xf32>, none) -> tensor<4x3xf32>
    %z2 = Relu(%y2) {train.name = "relu2", train.outputs = ["z2"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    train.return %z1, %s, %y2, %z2 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
}

// -----

// On the unplanned form (amprt-fuse alone): not fused where the Relu writes
// another dtype (rounding twice is not rounding once: a tiny y > 0 can
// become z = 0) or where a ReluGrad reads y before the Relu has run.
// RUN: amp-opt %s --split-input-file --amprt-fuse | FileCheck %s --check-prefix=UNPLANNED
// UNPLANNED-LABEL: func.func @dtypes
// UNPLANNED: amprt.call "gemm"(
// UNPLANNED: amprt.call "relu"(
// UNPLANNED-LABEL: func.func @order
// UNPLANNED: amprt.call "gemm"(
// UNPLANNED: amprt.call "relu_grad"(
// UNPLANNED: amprt.call "relu"(
// UNPLANNED-NOT: gemm_relu
module {
  func.func @dtypes(%x: memref<4x8xf32> {amprt.name = "x"}, %w: memref<3x8xf32> {amprt.name = "w"}) -> (memref<4x3xf16> {amprt.name = "z"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %z = memref.alloc() {amprt.role = "activations"} : memref<4x3xf16>
    amprt.call "gemm"(%x, %w, %y) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "fc", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf32>, memref<3x8xf32>, memref<4x3xf32>
    amprt.call "relu"(%y, %z) {counts = array<i64: 1, 1>, node = "relu"} : memref<4x3xf32>, memref<4x3xf16>
    return %z : memref<4x3xf16>
  }
  func.func @order(%x: memref<4x8xf32> {amprt.name = "x"}, %w: memref<3x8xf32> {amprt.name = "w"}, %dz: memref<4x3xf32> {amprt.name = "dz"}) -> (memref<4x3xf32> {amprt.name = "z"}, memref<4x3xf32> {amprt.name = "dy"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %dy = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf32>
    %z = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    amprt.call "gemm"(%x, %w, %y) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "fc", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf32>, memref<3x8xf32>, memref<4x3xf32>
    amprt.call "relu_grad"(%dz, %y, %dy) {counts = array<i64: 1, 1, 1>, node = "relu_grad"} : memref<4x3xf32>, memref<4x3xf32>, memref<4x3xf32>
    amprt.call "relu"(%y, %z) {counts = array<i64: 1, 1>, node = "relu"} : memref<4x3xf32>, memref<4x3xf32>
    return %z, %dy : memref<4x3xf32>, memref<4x3xf32>
  }
}
