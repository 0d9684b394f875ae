// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s

// A widening cast read only by elementwise kernels folds into them: they
// read the f16 value in its dtype (exact), no f32 copy is made.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "matmul"({{.*}}, %[[P:[^)]*]])
// CHECK-NOT: amprt.call "cast"
// CHECK: amprt.call "add"(%[[P]], %arg1,
// CHECK: amprt.call "relu"(%[[P]],
module {
  train.graph @main(%x: tensor<4x4xf16> {train.name = "x"}, %r: tensor<4x4xf32> {train.name = "r"}) -> (tensor<4x4xf32> {train.name = "s"}, tensor<4x4xf32> {train.name = "q"}) {
    %p = MatMul(%x, %x) {train.name = "mm", train.outputs = ["p"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    %c = Cast(%p) {to = 1 : i64, train.name = "widen", train.outputs = ["c"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %s = Add(%c, %r) {train.name = "residual", train.outputs = ["s"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %q = Relu(%c) {train.name = "q", train.outputs = ["q"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %s, %q : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A Gemm's bias gradient in AMP: ReduceSum of the f32 copy of an f16
// activation gradient. The reductions read x in its dtype and sum in f64:
// the cast folds, the reduction reads the f16 value.
// CHECK-LABEL: func.func @main
// CHECK-NOT: amprt.call "cast"
// CHECK: amprt.call "relu_grad"({{.*}}, %[[G:[^)]*]])
// CHECK-NOT: amprt.call "cast"
// CHECK: amprt.call "reduce_sum"(%[[G]], {{.*}} : memref<8x4xf16>, memref<4xf32>
// CHECK: amprt.call "reduce_max"(%[[G]], {{.*}} : memref<8x4xf16>, memref<1x4xf32>
module {
  train.graph @main(%dy: tensor<8x4xf16> {train.name = "dy"}, %y: tensor<8x4xf16> {train.name = "y"}) -> (tensor<4xf32> {train.name = "db"}, tensor<1x4xf32> {train.name = "m"}) {
    %g = train.ms.ReluGrad(%dy, %y) {train.name = "rg", train.outputs = ["g"]} : (tensor<8x4xf16>, tensor<8x4xf16>) -> tensor<8x4xf16>
    %c = Cast(%g) {to = 1 : i64, train.name = "widen", train.outputs = ["c"]} : (tensor<8x4xf16>) -> tensor<8x4xf32>
    %axes = Constant() {train.name = "axes", train.outputs = ["axes"], value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %db = ReduceSum(%c, %axes) {keepdims = 0 : i64, train.name = "bias_grad", train.outputs = ["db"]} : (tensor<8x4xf32>, tensor<1xi64>) -> tensor<4xf32>
    %m = ReduceMax(%c, %axes) {train.name = "mx", train.outputs = ["m"]} : (tensor<8x4xf32>, tensor<1xi64>) -> tensor<1x4xf32>
    train.return %db, %m : tensor<4xf32>, tensor<1x4xf32>
  }
}

// -----

// A transformer's f32 LayerNorm of an f16 residual sum: layer_norm reads x
// in its dtype (statistics in f64), so the widening cast folds into it.
// CHECK-LABEL: func.func @main
// CHECK-NOT: amprt.call "cast"
// CHECK: amprt.call "layer_norm"(%arg0, {{.*}} : memref<4x8xf16>, memref<8xf32>, memref<8xf32>, memref<4x8xf32>
module {
  train.graph @main(%x: tensor<4x8xf16> {train.name = "x"}, %g: tensor<8xf32> {train.name = "g"}, %b: tensor<8xf32> {train.name = "b"}) -> (tensor<4x8xf32> {train.name = "y"}) {
    %c = Cast(%x) {to = 1 : i64, train.name = "widen", train.outputs = ["c"]} : (tensor<4x8xf16>) -> tensor<4x8xf32>
    %y, %m, %s = LayerNormalization(%c, %g, %b) {axis = -1 : i64, epsilon = 9.99999974E-6 : f32, train.name = "ln", train.outputs = ["y", "m", "s"]} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
    train.return %y : tensor<4x8xf32>
  }
}

// -----

// bf16 AMP has no loss scaler to accumulate a weight gradient: its widening
// cast for the f32 gradient buffer folds into the accumulator, which adds
// the bf16 value in f32 (exact), so no f32 copy of the gradient is made.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "gemm"({{.*}}, %[[W:[^)]*]]) {{.*}} : memref<8x4xbf16>, memref<8x3xbf16>, memref<4x3xbf16>
// CHECK-NOT: amprt.call "cast"
// CHECK: amprt.call "inplace_accumulate"(%arg2, %[[W]], %arg3, {{.*}} : memref<4x3xf32>, memref<4x3xbf16>, memref<1xi1>, memref<1xi1>
module {
  train.graph @main(%a: tensor<8x4xbf16> {train.name = "a"}, %dy: tensor<8x3xbf16> {train.name = "dy"}, %buf: tensor<4x3xf32> {train.name = "w_grad.accumulation.buffer"}, %reset: tensor<1xi1> {train.name = "lazy_reset_grad"}) -> (tensor<1xi1> {train.name = "w_grad.accumulation.out"}) {
    %n = none
    %g = Gemm(%a, %dy, %n) {transA = 1 : i64, train.name = "wgrad", train.outputs = ["g"]} : (tensor<8x4xbf16>, tensor<8x3xbf16>, none) -> tensor<4x3xbf16>
    %c = Cast(%g) {to = 1 : i64, train.name = "widen", train.outputs = ["c"]} : (tensor<4x3xbf16>) -> tensor<4x3xf32>
    %f, %none = train.ms.InPlaceAccumulatorV2(%buf, %c, %reset) {train.name = "acc", train.outputs = ["acc_out"]} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
    train.return %f : tensor<1xi1>
  }
}

// -----

// Not folded: a widening cast that a GEMM reads (it needs one dtype), and a
// cast whose output is a graph output.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-2: amprt.call "cast"
module {
  train.graph @main(%x: tensor<4x4xf16> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "m"}, tensor<4x4xf32> {train.name = "c2"}) {
    %c = Cast(%x) {to = 1 : i64, train.name = "widen", train.outputs = ["c"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %m = MatMul(%c, %c) {train.name = "mm", train.outputs = ["m"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %c2 = Cast(%x) {to = 1 : i64, train.name = "out", train.outputs = ["c2"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    train.return %m, %c2 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A narrowing cast of an f32 value that only the cast reads: its producer
// writes the f16 value directly (one rounding from the same f32 value).
// CHECK-LABEL: func.func @main
// CHECK-NOT: amprt.call "cast"
// CHECK: amprt.call "mul"(%arg0, %arg0, %[[Y:[^)]*]]) {{.*}} : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf16>
// CHECK: amprt.call "matmul"(%[[Y]], %arg1,
module {
  train.graph @main(%a: tensor<4x4xf32> {train.name = "a"}, %w: tensor<4x4xf16> {train.name = "w"}) -> (tensor<4x4xf16> {train.name = "m"}) {
    %p = Mul(%a, %a) {train.name = "sq", train.outputs = ["p"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %h = Cast(%p) {to = 10 : i64, train.name = "narrow", train.outputs = ["h"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %m = MatMul(%h, %w) {train.name = "mm", train.outputs = ["m"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    train.return %m : tensor<4x4xf16>
  }
}

// -----

// Not folded: the f32 value has another reader, or its producer is a GEMM.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-2: amprt.call "cast"
module {
  train.graph @main(%a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<4x4xf16> {train.name = "h"}, tensor<4x4xf32> {train.name = "r"}, tensor<4x4xf16> {train.name = "g"}) {
    %p = Mul(%a, %a) {train.name = "sq", train.outputs = ["p"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %h = Cast(%p) {to = 10 : i64, train.name = "narrow", train.outputs = ["h"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %r = Relu(%p) {train.name = "r", train.outputs = ["r"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = MatMul(%a, %a) {train.name = "mm", train.outputs = ["m"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %g = Cast(%m) {to = 10 : i64, train.name = "narrow2", train.outputs = ["g"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    train.return %h, %r, %g : tensor<4x4xf16>, tensor<4x4xf32>, tensor<4x4xf16>
  }
}
