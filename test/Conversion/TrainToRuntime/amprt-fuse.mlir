// RUN: amp-opt %s --split-input-file --amprt-fuse | FileCheck %s
// RUN: amp-opt %s --split-input-file --amprt-fuse --amprt-plan-buffers | FileCheck %s --check-prefix=PLANNED

// amprt-fuse on a hand-written unplanned function: the transposes of GEMM
// operands become trans flags (the forward product reads W with trans_b,
// the weight gradient is one product with the operands swapped written
// straight into the transposed result), and their buffers go.
// CHECK-LABEL: func.func @main
// CHECK-SAME: attributes {amprt.unplanned}
// CHECK-COUNT-2: memref.alloc() {amprt.role = "activations"} : memref<8x3xf32>
// CHECK-NEXT: %[[DW:.*]] = memref.alloc() {amprt.role = "gradients"} : memref<3x4xf32>
// CHECK-NOT: memref.alloc
// CHECK: amprt.call "fused_matmul"(%arg0, %arg1, %{{.*}}) {alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1>, node = "fwd", trans_a = 0 : i32, trans_b = 1 : i32}
// CHECK: amprt.call "relu"
// CHECK: amprt.call "fused_matmul"(%arg2, %arg0, %[[DW]]) {alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1>, node = "wgrad", trans_a = 1 : i32, trans_b = 0 : i32}
// CHECK-NOT: "transpose"
// CHECK: return

// The same after amprt-plan-buffers: views of one arena, relu written over
// the product it reads (a dying input), the gradient beside them.
// PLANNED-LABEL: func.func @main
// PLANNED-SAME: amprt.arena_bytes = 192 : i64
// PLANNED-SAME: amprt.arena_split = {activations = 96 : i64, gradients = 48 : i64, weight_copies = 0 : i64, workspace = 0 : i64}
// PLANNED-NOT: amprt.unplanned
// PLANNED: %[[A:.*]] = memref.alloc() {alignment = 64 : i64} : memref<192xi8>
// PLANNED: %[[Y:.*]] = memref.view %[[A]][%c0][] : memref<192xi8> to memref<8x3xf32>
// PLANNED: %[[R:.*]] = memref.view %[[A]][%c0{{.*}}][] : memref<192xi8> to memref<8x3xf32>
// PLANNED: %[[DW:.*]] = memref.view %[[A]][%c128][] : memref<192xi8> to memref<3x4xf32>
// PLANNED: amprt.call "relu"(%[[Y]], %[[R]])
// PLANNED: return %[[R]], %[[DW]]
module {
  func.func @main(%x: memref<8x4xf32> {amprt.name = "x"}, %w: memref<3x4xf32> {amprt.name = "w"}, %dy: memref<8x3xf32> {amprt.name = "dy"}) -> (memref<8x3xf32> {amprt.name = "y"}, memref<3x4xf32> {amprt.name = "w_grad"}) attributes {amprt.unplanned} {
    %wt = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<8x3xf32>
    %r = memref.alloc() {amprt.role = "activations"} : memref<8x3xf32>
    %xt = memref.alloc() {amprt.role = "activations"} : memref<4x8xf32>
    %dwt = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %dw = memref.alloc() {amprt.role = "gradients"} : memref<3x4xf32>
    amprt.call "transpose"(%w, %wt) {counts = array<i64: 1, 1>, node = "wt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<3x4xf32>, memref<4x3xf32>
    amprt.call "matmul"(%x, %wt, %y) {counts = array<i64: 1, 1, 1>, node = "fwd"} : memref<8x4xf32>, memref<4x3xf32>, memref<8x3xf32>
    amprt.call "relu"(%y, %r) {counts = array<i64: 1, 1>, node = "relu"} : memref<8x3xf32>, memref<8x3xf32>
    amprt.call "transpose"(%x, %xt) {counts = array<i64: 1, 1>, node = "xt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<8x4xf32>, memref<4x8xf32>
    amprt.call "matmul"(%xt, %dy, %dwt) {counts = array<i64: 1, 1, 1>, node = "wgrad"} : memref<4x8xf32>, memref<8x3xf32>, memref<4x3xf32>
    amprt.call "transpose"(%dwt, %dw) {counts = array<i64: 1, 1>, node = "dw", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<4x3xf32>, memref<3x4xf32>
    return %r, %dw : memref<8x3xf32>, memref<3x4xf32>
  }
}

// -----

// A widening cast read only by an elementwise call is folded into it (the
// add reads the f16 buffer itself); a planned function (no
// amprt.unplanned) is left alone.
// CHECK-LABEL: func.func @widen
// CHECK-NOT: "cast"
// CHECK: amprt.call "add"(%arg0, %arg1, %{{.*}}) {{.*}} : memref<4xf16>, memref<4xf32>, memref<4xf32>
// CHECK-LABEL: func.func @planned
// CHECK: amprt.call "cast"
module {
  func.func @widen(%h: memref<4xf16> {amprt.name = "h"}, %b: memref<4xf32> {amprt.name = "b"}) -> (memref<4xf32> {amprt.name = "y"}) attributes {amprt.unplanned} {
    %f = memref.alloc() {amprt.role = "activations"} : memref<4xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<4xf32>
    amprt.call "cast"(%h, %f) {counts = array<i64: 1, 1>, node = "c"} : memref<4xf16>, memref<4xf32>
    amprt.call "add"(%f, %b, %y) {counts = array<i64: 1, 1, 1>, node = "a"} : memref<4xf32>, memref<4xf32>, memref<4xf32>
    return %y : memref<4xf32>
  }
  func.func @planned(%h: memref<4xf16> {amprt.name = "h"}, %f: memref<4xf32> {amprt.name = "f"}) {
    amprt.call "cast"(%h, %f) {counts = array<i64: 1, 1>, node = "c"} : memref<4xf16>, memref<4xf32>
    return
  }
}

// -----

// A product rewritten twice by the transposes' patterns: its operand W^T
// becomes trans_b, then its result, read only by a transpose, becomes the
// product with the operands swapped from those flags ((x W^T)^T = W x^T),
// written straight into the transposed buffer.
// CHECK-LABEL: func.func @twice
// CHECK-NOT: "transpose"
// CHECK: amprt.call "fused_matmul"(%arg1, %arg0, %{{.*}}) {alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1>, node = "fwd", trans_a = 0 : i32, trans_b = 1 : i32} : memref<3x4xf32>, memref<8x4xf32>, memref<3x8xf32>
// CHECK-NOT: "transpose"
// CHECK: return
module {
  func.func @twice(%x: memref<8x4xf32> {amprt.name = "x"}, %w: memref<3x4xf32> {amprt.name = "w"}) -> (memref<3x8xf32> {amprt.name = "yt"}) attributes {amprt.unplanned} {
    %wt = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<8x3xf32>
    %yt = memref.alloc() {amprt.role = "activations"} : memref<3x8xf32>
    amprt.call "transpose"(%w, %wt) {counts = array<i64: 1, 1>, node = "wt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<3x4xf32>, memref<4x3xf32>
    amprt.call "matmul"(%x, %wt, %y) {counts = array<i64: 1, 1, 1>, node = "fwd"} : memref<8x4xf32>, memref<4x3xf32>, memref<8x3xf32>
    amprt.call "transpose"(%y, %yt) {counts = array<i64: 1, 1>, node = "yt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<8x3xf32>, memref<3x8xf32>
    return %yt : memref<3x8xf32>
  }
}

// -----

// The transposes are decided on the buffers written in place before the
// fusion: x^T x becomes fused_matmul(x, x), which names x twice (a write
// by the rule of amprt.call), and the second transpose of x still folds.
// CHECK-LABEL: func.func @gram
// CHECK-NOT: "transpose"
// CHECK: amprt.call "fused_matmul"(%arg0, %arg0, %{{.*}}) {{{.*}}node = "gram", trans_a = 1 : i32, trans_b = 0 : i32}
// CHECK: amprt.call "fused_matmul"(%arg0, %arg1, %{{.*}}) {{{.*}}node = "h", trans_a = 1 : i32, trans_b = 0 : i32}
// CHECK-NOT: "transpose"
// CHECK: return
module {
  func.func @gram(%x: memref<8x4xf32> {amprt.name = "x"}, %b: memref<8x5xf32> {amprt.name = "b"}) -> (memref<4x4xf32> {amprt.name = "g"}, memref<4x5xf32> {amprt.name = "h"}) attributes {amprt.unplanned} {
    %xt = memref.alloc() {amprt.role = "activations"} : memref<4x8xf32>
    %g = memref.alloc() {amprt.role = "activations"} : memref<4x4xf32>
    %xt2 = memref.alloc() {amprt.role = "activations"} : memref<4x8xf32>
    %h = memref.alloc() {amprt.role = "activations"} : memref<4x5xf32>
    amprt.call "transpose"(%x, %xt) {counts = array<i64: 1, 1>, node = "xt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<8x4xf32>, memref<4x8xf32>
    amprt.call "matmul"(%xt, %x, %g) {counts = array<i64: 1, 1, 1>, node = "gram"} : memref<4x8xf32>, memref<8x4xf32>, memref<4x4xf32>
    amprt.call "transpose"(%x, %xt2) {counts = array<i64: 1, 1>, node = "xt2", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<8x4xf32>, memref<4x8xf32>
    amprt.call "matmul"(%xt2, %b, %h) {counts = array<i64: 1, 1, 1>, node = "h"} : memref<4x8xf32>, memref<8x5xf32>, memref<4x5xf32>
    return %g, %h : memref<4x4xf32>, memref<4x5xf32>
  }
}

// -----

// Transposes kept: W^T is also read by a relu (not only as a product's
// operand, and W is no product's result), the product's result y is a
// graph output as well as the transpose's input, and a gemm with a bias c
// cannot write its transposed result.
// CHECK-LABEL: func.func @kept
// CHECK: amprt.call "transpose"({{.*}}node = "wt"
// CHECK: amprt.call "relu"
// CHECK: amprt.call "matmul"({{.*}}node = "fwd"
// CHECK: amprt.call "transpose"({{.*}}node = "yt"
// CHECK: amprt.call "gemm"({{.*}}node = "g"
// CHECK: amprt.call "transpose"({{.*}}node = "zt"
// CHECK: return
module {
  func.func @kept(%x: memref<8x4xf32> {amprt.name = "x"}, %w: memref<3x4xf32> {amprt.name = "w"}, %c: memref<3xf32> {amprt.name = "c"}) -> (memref<4x3xf32> {amprt.name = "r"}, memref<8x3xf32> {amprt.name = "y"}, memref<3x8xf32> {amprt.name = "yt"}, memref<3x8xf32> {amprt.name = "zt"}) attributes {amprt.unplanned} {
    %wt = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %r = memref.alloc() {amprt.role = "activations"} : memref<4x3xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<8x3xf32>
    %yt = memref.alloc() {amprt.role = "activations"} : memref<3x8xf32>
    %z = memref.alloc() {amprt.role = "activations"} : memref<8x3xf32>
    %zt = memref.alloc() {amprt.role = "activations"} : memref<3x8xf32>
    amprt.call "transpose"(%w, %wt) {counts = array<i64: 1, 1>, node = "wt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<3x4xf32>, memref<4x3xf32>
    amprt.call "relu"(%wt, %r) {counts = array<i64: 1, 1>, node = "r"} : memref<4x3xf32>, memref<4x3xf32>
    amprt.call "matmul"(%x, %wt, %y) {counts = array<i64: 1, 1, 1>, node = "fwd"} : memref<8x4xf32>, memref<4x3xf32>, memref<8x3xf32>
    amprt.call "transpose"(%y, %yt) {counts = array<i64: 1, 1>, node = "yt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<8x3xf32>, memref<3x8xf32>
    amprt.call "gemm"(%x, %w, %c, %z) {alpha = 1.0 : f32, beta = 1.0 : f32, counts = array<i64: 1, 1, 1, 1>, node = "g", trans_a = 0 : i32, trans_b = 1 : i32} : memref<8x4xf32>, memref<3x4xf32>, memref<3xf32>, memref<8x3xf32>
    amprt.call "transpose"(%z, %zt) {counts = array<i64: 1, 1>, node = "zt", nperm = 2 : i64, perm = array<i64: 1, 0>} : memref<8x3xf32>, memref<3x8xf32>
    return %r, %y, %yt, %zt : memref<4x3xf32>, memref<8x3xf32>, memref<3x8xf32>, memref<3x8xf32>
  }
}
