// RUN: amp-opt %s --split-input-file --amprt-fuse | FileCheck %s
// RUN: amp-opt %s --split-input-file --amprt-fuse --amprt-plan-buffers | FileCheck %s --check-prefix=PLANNED
// RUN: amp-opt %s --split-input-file --amprt-fuse=overwrite-accumulators=true | FileCheck %s --check-prefix=EARLY

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
// PLANNED: %[[Y:.*]] = memref.view %[[A]][%c0][]{{( \{[^}]*\})?}} : memref<192xi8> to memref<8x3xf32>
// PLANNED: %[[R:.*]] = memref.view %[[A]][%c0{{.*}}][]{{( \{[^}]*\})?}} : memref<192xi8> to memref<8x3xf32>
// PLANNED: %[[DW:.*]] = memref.view %[[A]][%c128][]{{( \{[^}]*\})?}} : memref<192xi8> to memref<3x4xf32>
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

// -----

// A sum of gather_grads at the distinct scalar indices 2, 0, 1 (in the
// sum's order): the sum's buffer is filled with zeros before the first
// gather_grad, each gather_grad becomes a scatter_nd adding its dY into
// that buffer in its place, reading a new [1] constant of its index (made
// in the sum's order), and the scalar constants (their globals too), the
// gather_grads' buffers and the sum go.
// CHECK-NOT: memref<i64>
// CHECK: memref.global "private" constant @[[$C2:[^ ]*]] : memref<1xi64> = dense<2>
// CHECK: memref.global "private" constant @[[$C0:[^ ]*]] : memref<1xi64> = dense<0>
// CHECK: memref.global "private" constant @[[$C1:[^ ]*]] : memref<1xi64> = dense<1>
// CHECK-NOT: memref.global
// CHECK-LABEL: func.func @qkv
// CHECK-NEXT: %[[R:.*]] = memref.alloc() {amprt.role = "gradients"} : memref<4x8xf32>
// CHECK-NEXT: %[[D:.*]] = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
// CHECK-NEXT: %[[I2:.*]] = memref.get_global @[[$C2]] : memref<1xi64>
// CHECK-NEXT: %[[I0:.*]] = memref.get_global @[[$C0]] : memref<1xi64>
// CHECK-NEXT: %[[I1:.*]] = memref.get_global @[[$C1]] : memref<1xi64>
// CHECK-NEXT: amprt.call "relu"
// CHECK-NEXT: amprt.call "fill"(%[[D]]) {counts = array<i64: 1>, node = "sum", value = 0.000000e+00 : f64} : memref<3x4x8xf32>
// CHECK-NEXT: amprt.call "scatter_nd"(%[[D]], %[[I0]], %arg0, %[[D]]) {counts = array<i64: 1, 1, 1, 1>, node = "g0", reduction = 1 : i32} : memref<3x4x8xf32>, memref<1xi64>, memref<4x8xf32>, memref<3x4x8xf32>
// CHECK-NEXT: amprt.call "scatter_nd"(%[[D]], %[[I1]], %[[R]], %[[D]]) {{{.*}}node = "g1", reduction = 1 : i32}
// CHECK-NEXT: amprt.call "scatter_nd"(%[[D]], %[[I2]], %arg2, %[[D]]) {{{.*}}node = "g2", reduction = 1 : i32}
// CHECK-NEXT: return %[[D]]
module {
  memref.global "private" constant @i0 : memref<i64> = dense<0>
  memref.global "private" constant @i1 : memref<i64> = dense<1>
  memref.global "private" constant @i2 : memref<i64> = dense<2>
  func.func @qkv(%dq: memref<4x8xf32> {amprt.name = "dq"}, %dk: memref<4x8xf32> {amprt.name = "dk"}, %dv: memref<4x8xf32> {amprt.name = "dv"}) -> (memref<3x4x8xf32> {amprt.name = "d"}) attributes {amprt.unplanned} {
    %i0 = memref.get_global @i0 : memref<i64>
    %i1 = memref.get_global @i1 : memref<i64>
    %i2 = memref.get_global @i2 : memref<i64>
    %rk = memref.alloc() {amprt.role = "gradients"} : memref<4x8xf32>
    %g0 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %g1 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %g2 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %d = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    amprt.call "relu"(%dk, %rk) {counts = array<i64: 1, 1>, node = "r"} : memref<4x8xf32>, memref<4x8xf32>
    amprt.call "gather_grad"(%dq, %i0, %g0) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g0"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "gather_grad"(%rk, %i1, %g1) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g1"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "gather_grad"(%dv, %i2, %g2) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g2"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "sum"(%g2, %g0, %g1, %d) {counts = array<i64: 3, 1>, n = 3 : i64, node = "sum"} : memref<3x4x8xf32>, memref<3x4x8xf32>, memref<3x4x8xf32>, memref<3x4x8xf32>
    return %d : memref<3x4x8xf32>
  }
}

// -----

// Kept: two gather_grads at the same index (the order of their scatters
// would matter), and a sum whose gather_grad's buffer is also read by
// another call (not made for the sum alone).
// CHECK-LABEL: func.func @same
// CHECK-COUNT-2: amprt.call "gather_grad"
// CHECK-NEXT: amprt.call "sum"
// CHECK-LABEL: func.func @shared
// CHECK-COUNT-2: amprt.call "gather_grad"
// CHECK-NEXT: amprt.call "relu"
// CHECK-NEXT: amprt.call "sum"
module {
  memref.global "private" constant @i0 : memref<i64> = dense<0>
  memref.global "private" constant @i1 : memref<i64> = dense<1>
  func.func @same(%dq: memref<4x8xf32> {amprt.name = "dq"}, %dk: memref<4x8xf32> {amprt.name = "dk"}) -> (memref<3x4x8xf32> {amprt.name = "d"}) attributes {amprt.unplanned} {
    %i0 = memref.get_global @i0 : memref<i64>
    %g0 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %g1 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %d = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    amprt.call "gather_grad"(%dq, %i0, %g0) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g0"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "gather_grad"(%dk, %i0, %g1) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g1"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "sum"(%g0, %g1, %d) {counts = array<i64: 2, 1>, n = 2 : i64, node = "sum"} : memref<3x4x8xf32>, memref<3x4x8xf32>, memref<3x4x8xf32>
    return %d : memref<3x4x8xf32>
  }
  func.func @shared(%dq: memref<4x8xf32> {amprt.name = "dq"}, %dk: memref<4x8xf32> {amprt.name = "dk"}) -> (memref<3x4x8xf32> {amprt.name = "d"}, memref<3x4x8xf32> {amprt.name = "r"}) attributes {amprt.unplanned} {
    %i0 = memref.get_global @i0 : memref<i64>
    %i1 = memref.get_global @i1 : memref<i64>
    %g0 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %g1 = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %r = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    %d = memref.alloc() {amprt.role = "gradients"} : memref<3x4x8xf32>
    amprt.call "gather_grad"(%dq, %i0, %g0) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g0"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "gather_grad"(%dk, %i1, %g1) {axis = 0 : i64, counts = array<i64: 1, 1, 1>, node = "g1"} : memref<4x8xf32>, memref<i64>, memref<3x4x8xf32>
    amprt.call "relu"(%g1, %r) {counts = array<i64: 1, 1>, node = "r"} : memref<3x4x8xf32>, memref<3x4x8xf32>
    amprt.call "sum"(%g0, %g1, %d) {counts = array<i64: 2, 1>, n = 2 : i64, node = "sum"} : memref<3x4x8xf32>, memref<3x4x8xf32>, memref<3x4x8xf32>
    return %d, %r : memref<3x4x8xf32>, memref<3x4x8xf32>
  }
}

// -----

// Loss scaling's unscale, check and gate (FuseUnscale.cpp) never store the
// unscaled gradients: the check of the unscaled ones becomes one
// multi_tensor_unscale_check per factor, of the gradients themselves (the
// f16 one read through its folded cast), in the order of its ins, after the
// multi_tensor_all_finite of the value that stays (read by relu); only the
// first call resets the flag. The gate read only by inplace_accumulate
// becomes unscale_gate_accumulate where the accumulation was, the others
// unscale_gate; the multiplies and the cast go.
// CHECK-LABEL: func.func @unscale
// CHECK-SAME: (%[[GA:[^:]*]]: memref<4x3xf16> {{.*}}, %[[GB:[^:]*]]: memref<5xf32> {{.*}}, %[[GC:[^:]*]]: memref<6xf32> {{.*}}, %[[GD:[^:]*]]: memref<2xf32> {{.*}}, %[[INV:[^:]*]]: memref<f32> {{.*}}, %[[INV2:[^:]*]]: memref<f32> {{.*}}, %[[BUF:[^:]*]]: memref<4x3xf32> {{.*}}, %[[RESET:[^:]*]]: memref<1xi1>
// CHECK-NOT: "cast"
// CHECK: amprt.call "mul"(%[[GD]], %[[INV]], %[[UD:[^)]*]]) {{.*}}node = "ud"
// CHECK-NOT: "mul"
// CHECK: amprt.call "multi_tensor_all_finite"(%[[UD]], %[[F:[^)]*]]) {counts = array<i64: 1, 1>, n = 1 : i64, node = "found_inf", reset = 1 : i32}
// CHECK-NEXT: amprt.call "multi_tensor_unscale_check"(%[[GA]], %[[GB]], %[[INV]], %[[F]]) {counts = array<i64: 2, 1, 1>, n = 2 : i64, node = "found_inf", reset = 0 : i32}
// CHECK-NEXT: amprt.call "multi_tensor_unscale_check"(%[[GC]], %[[INV2]], %[[F]]) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 0 : i32}
// CHECK-NEXT: amprt.call "logical_not"(%[[F]], %[[NAN:[^)]*]])
// CHECK-NEXT: amprt.call "logical_not"(%[[NAN]], %[[OK:[^)]*]])
// CHECK-NEXT: amprt.call "unscale_gate"(%[[GB]], %[[INV]], %[[OK]], %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1>, node = "gate_b"}
// CHECK-NEXT: amprt.call "relu"(%[[UD]]
// CHECK-NEXT: amprt.call "unscale_gate_accumulate"(%[[BUF]], %[[GA]], %[[INV]], %[[OK]], %[[RESET]], %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "acc"}
// CHECK-NEXT: amprt.call "unscale_gate"(%[[GC]], %[[INV2]], %[[OK]], %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1>, node = "gate_c"}
// CHECK-NEXT: return
module {
  memref.global "private" constant @zero : memref<f32> = dense<0.000000e+00>
  func.func @unscale(%ga: memref<4x3xf16> {amprt.name = "ga"}, %gb: memref<5xf32> {amprt.name = "gb"}, %gc: memref<6xf32> {amprt.name = "gc"}, %gd: memref<2xf32> {amprt.name = "gd"}, %inv: memref<f32> {amprt.name = "inv"}, %inv2: memref<f32> {amprt.name = "inv2"}, %buf: memref<4x3xf32> {amprt.name = "buf"}, %reset: memref<1xi1> {amprt.name = "reset"}) -> (memref<5xf32> {amprt.name = "wb"}, memref<6xf32> {amprt.name = "wc"}, memref<2xf32> {amprt.name = "rd"}, memref<1xi1> {amprt.name = "updated"}) attributes {amprt.unplanned} {
    %z = memref.get_global @zero : memref<f32>
    %ca = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf32>
    %ua = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf32>
    %ub = memref.alloc() {amprt.role = "gradients"} : memref<5xf32>
    %uc = memref.alloc() {amprt.role = "gradients"} : memref<6xf32>
    %ud = memref.alloc() {amprt.role = "gradients"} : memref<2xf32>
    %flag = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    %nan = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    %ok = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    %wa = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf32>
    %wb = memref.alloc() {amprt.role = "gradients"} : memref<5xf32>
    %wc = memref.alloc() {amprt.role = "gradients"} : memref<6xf32>
    %rd = memref.alloc() {amprt.role = "gradients"} : memref<2xf32>
    %upd = memref.alloc() {amprt.role = "workspace"} : memref<1xi1>
    amprt.call "cast"(%ga, %ca) {counts = array<i64: 1, 1>, node = "ca"} : memref<4x3xf16>, memref<4x3xf32>
    amprt.call "mul"(%ca, %inv, %ua) {counts = array<i64: 1, 1, 1>, node = "ua"} : memref<4x3xf32>, memref<f32>, memref<4x3xf32>
    amprt.call "mul"(%inv, %gb, %ub) {counts = array<i64: 1, 1, 1>, node = "ub"} : memref<f32>, memref<5xf32>, memref<5xf32>
    amprt.call "mul"(%gc, %inv2, %uc) {counts = array<i64: 1, 1, 1>, node = "uc"} : memref<6xf32>, memref<f32>, memref<6xf32>
    amprt.call "mul"(%gd, %inv, %ud) {counts = array<i64: 1, 1, 1>, node = "ud"} : memref<2xf32>, memref<f32>, memref<2xf32>
    amprt.call "multi_tensor_all_finite"(%ua, %ud, %ub, %uc, %flag) {counts = array<i64: 4, 1>, n = 4 : i64, node = "found_inf", reset = 1 : i32} : memref<4x3xf32>, memref<2xf32>, memref<5xf32>, memref<6xf32>, memref<i1>
    amprt.call "logical_not"(%flag, %nan) {counts = array<i64: 1, 1>, node = "nan"} : memref<i1>, memref<i1>
    amprt.call "logical_not"(%nan, %ok) {counts = array<i64: 1, 1>, node = "ok"} : memref<i1>, memref<i1>
    amprt.call "where"(%ok, %ua, %z, %wa) {counts = array<i64: 1, 1, 1, 1>, node = "gate_a"} : memref<i1>, memref<4x3xf32>, memref<f32>, memref<4x3xf32>
    amprt.call "where"(%ok, %ub, %z, %wb) {counts = array<i64: 1, 1, 1, 1>, node = "gate_b"} : memref<i1>, memref<5xf32>, memref<f32>, memref<5xf32>
    amprt.call "relu"(%ud, %rd) {counts = array<i64: 1, 1>, node = "rd"} : memref<2xf32>, memref<2xf32>
    amprt.call "inplace_accumulate"(%buf, %wa, %reset, %upd) {counts = array<i64: 1, 1, 1, 1>, node = "acc"} : memref<4x3xf32>, memref<4x3xf32>, memref<1xi1>, memref<1xi1>
    amprt.call "where"(%ok, %uc, %z, %wc) {counts = array<i64: 1, 1, 1, 1>, node = "gate_c"} : memref<i1>, memref<6xf32>, memref<f32>, memref<6xf32>
    return %wb, %wc, %rd, %upd : memref<5xf32>, memref<6xf32>, memref<2xf32>, memref<1xi1>
  }
}

// -----

// Left as they are: an unscaled value gated with a "zero" of -0 (Where
// gives -0 where the fused gate would give +0): its multiply, check and
// gate stay. The other is fused, but reads the f32 copy: its cast has
// another reader.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: (%[[GA:[^:]*]]: memref<4xf16> {{.*}}, %[[GB:[^:]*]]: memref<5xf32> {{.*}}, %[[INV:[^:]*]]: memref<f32> {{.*}}, %[[OK:[^:]*]]: memref<i1>
// CHECK: amprt.call "cast"(%[[GA]], %[[CA:[^)]*]])
// CHECK-NEXT: amprt.call "mul"(%[[GB]], %[[INV]], %[[UB:[^)]*]]) {{.*}}node = "ub"
// CHECK-NEXT: amprt.call "multi_tensor_all_finite"(%[[UB]], %[[F:[^)]*]]) {counts = array<i64: 1, 1>, n = 1 : i64, node = "found_inf", reset = 1 : i32}
// CHECK-NEXT: amprt.call "multi_tensor_unscale_check"(%[[CA]], %[[INV]], %[[F]]) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 0 : i32}
// CHECK-NEXT: amprt.call "unscale_gate"(%[[CA]], %[[INV]], %[[OK]]
// CHECK-NEXT: amprt.call "where"(%[[OK]], %[[UB]],
// CHECK-NEXT: amprt.call "relu"(%[[CA]]
// CHECK-NEXT: return
module {
  memref.global "private" constant @zero : memref<f32> = dense<0.000000e+00>
  memref.global "private" constant @minus_zero : memref<f32> = dense<-0.000000e+00>
  func.func @kept(%ga: memref<4xf16> {amprt.name = "ga"}, %gb: memref<5xf32> {amprt.name = "gb"}, %inv: memref<f32> {amprt.name = "inv"}, %ok: memref<i1> {amprt.name = "ok"}) -> (memref<4xf32> {amprt.name = "wa"}, memref<5xf32> {amprt.name = "wb"}, memref<4xf32> {amprt.name = "ra"}) attributes {amprt.unplanned} {
    %z = memref.get_global @zero : memref<f32>
    %mz = memref.get_global @minus_zero : memref<f32>
    %ca = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %ua = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %ub = memref.alloc() {amprt.role = "gradients"} : memref<5xf32>
    %flag = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    %wa = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %wb = memref.alloc() {amprt.role = "gradients"} : memref<5xf32>
    %ra = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    amprt.call "cast"(%ga, %ca) {counts = array<i64: 1, 1>, node = "ca"} : memref<4xf16>, memref<4xf32>
    amprt.call "mul"(%ca, %inv, %ua) {counts = array<i64: 1, 1, 1>, node = "ua"} : memref<4xf32>, memref<f32>, memref<4xf32>
    amprt.call "mul"(%gb, %inv, %ub) {counts = array<i64: 1, 1, 1>, node = "ub"} : memref<5xf32>, memref<f32>, memref<5xf32>
    amprt.call "multi_tensor_all_finite"(%ua, %ub, %flag) {counts = array<i64: 2, 1>, n = 2 : i64, node = "found_inf", reset = 1 : i32} : memref<4xf32>, memref<5xf32>, memref<i1>
    amprt.call "where"(%ok, %ua, %z, %wa) {counts = array<i64: 1, 1, 1, 1>, node = "gate_a"} : memref<i1>, memref<4xf32>, memref<f32>, memref<4xf32>
    amprt.call "where"(%ok, %ub, %mz, %wb) {counts = array<i64: 1, 1, 1, 1>, node = "gate_b"} : memref<i1>, memref<5xf32>, memref<f32>, memref<5xf32>
    amprt.call "relu"(%ca, %ra) {counts = array<i64: 1, 1>, node = "ra"} : memref<4xf32>, memref<4xf32>
    return %wa, %wb, %ra : memref<4xf32>, memref<5xf32>, memref<4xf32>
  }
}

// -----

// An unscaled value that nothing reads: its multiply and the cast it reads
// go. A product by a factor of more than one element is no unscaling: it
// stays.
// CHECK-LABEL: func.func @unread
// CHECK-NOT: "cast"
// CHECK: amprt.call "mul"(%arg1, %arg3, %{{[^)]*}}) {{.*}}node = "w"
// CHECK-NEXT: return
module {
  func.func @unread(%g: memref<4xf16> {amprt.name = "g"}, %h: memref<4xf32> {amprt.name = "h"}, %inv: memref<f32> {amprt.name = "inv"}, %v: memref<4xf32> {amprt.name = "v"}) attributes {amprt.unplanned} {
    %c = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %u = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %w = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    amprt.call "cast"(%g, %c) {counts = array<i64: 1, 1>, node = "c"} : memref<4xf16>, memref<4xf32>
    amprt.call "mul"(%c, %inv, %u) {counts = array<i64: 1, 1, 1>, node = "u"} : memref<4xf32>, memref<f32>, memref<4xf32>
    amprt.call "mul"(%h, %v, %w) {counts = array<i64: 1, 1, 1>, node = "w"} : memref<4xf32>, memref<4xf32>, memref<4xf32>
    return
  }
}

// -----

// With overwrite-accumulators (EarlyAccumulate.cpp), each gradient is
// checked (ANDed into the flag) and accumulated ungated by one
// unscale_check_accumulate right after the call that makes it, two
// gradients of one call in the order of the check's ins; the flag is filled
// true before the first producer, and one multi_tensor_zero_unless where
// the last gated accumulation was zeroes the buffers unless the step was
// finite. The function is marked. Without the option, the calls stay.
// EARLY-LABEL: func.func @early
// EARLY-SAME: (%[[X:[^:]*]]: memref<4x3xf16> {{.*}}, %[[INV:[^:]*]]: memref<f32> {{.*}}, %[[OK:[^:]*]]: memref<i1> {{.*}}, %[[BA:[^:]*]]: memref<4x3xf32> {{.*}}, %[[BS:[^:]*]]: memref<4xf32> {{.*}}, %[[BB:[^:]*]]: memref<4xf32> {{.*}}, %[[RESET:[^:]*]]: memref<1xi1>
// EARLY-SAME: attributes {amprt.overwrite_accumulators, amprt.unplanned}
// EARLY-NOT: amprt.call
// EARLY: amprt.call "fill"(%[[F:[^)]*]]) {counts = array<i64: 1>, node = "found_inf", value = 1.000000e+00 : f64} : memref<i1>
// EARLY-NEXT: amprt.call "relu"(%[[X]], %[[GA:[^)]*]])
// EARLY-NEXT: amprt.call "unscale_check_accumulate"(%[[BA]], %[[GA]], %[[INV]], %[[F]], %[[RESET]], %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "acc_a"}
// EARLY-NEXT: amprt.call "layer_norm_grad"({{.*}}, %[[DS:[^,]*]], %[[DB:[^)]*]])
// EARLY-NEXT: amprt.call "unscale_check_accumulate"(%[[BB]], %[[DB]], %[[INV]], %[[F]], {{.*}}node = "acc_b"}
// EARLY-NEXT: amprt.call "unscale_check_accumulate"(%[[BS]], %[[DS]], %[[INV]], %[[F]], {{.*}}node = "acc_s"}
// EARLY-NEXT: amprt.call "multi_tensor_zero_unless"(%[[BA]], %[[BB]], %[[BS]], %[[OK]]) {counts = array<i64: 3, 1>, n = 3 : i64, node = "acc_b"}
// EARLY-NEXT: return
// CHECK-LABEL: func.func @early
// CHECK-NOT: amprt.overwrite_accumulators
// CHECK-NOT: "fill"
// CHECK: amprt.call "multi_tensor_unscale_check"({{.*}}) {counts = array<i64: 3, 1, 1>, n = 3 : i64, node = "found_inf", reset = 1 : i32}
module {
  func.func @early(%x: memref<4x3xf16> {amprt.name = "x"}, %inv: memref<f32> {amprt.name = "inv"}, %ok: memref<i1> {amprt.name = "ok"}, %ba: memref<4x3xf32> {amprt.name = "ba"}, %bs: memref<4xf32> {amprt.name = "bs"}, %bb: memref<4xf32> {amprt.name = "bb"}, %reset: memref<1xi1> {amprt.name = "reset"}, %dy: memref<2x4xf32> {amprt.name = "dy"}, %y: memref<2x4xf32> {amprt.name = "y"}, %scale: memref<4xf32> {amprt.name = "scale"}, %mean: memref<2x1xf32> {amprt.name = "mean"}, %istd: memref<2x1xf32> {amprt.name = "istd"}) -> (memref<2x4xf32> {amprt.name = "dx"}, memref<1xi1> {amprt.name = "ua"}, memref<1xi1> {amprt.name = "us"}, memref<1xi1> {amprt.name = "ub"}) attributes {amprt.unplanned} {
    %ga = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %dx = memref.alloc() {amprt.role = "gradients"} : memref<2x4xf32>
    %ds = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %db = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %flag = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    %ua = memref.alloc() {amprt.role = "workspace"} : memref<1xi1>
    %us = memref.alloc() {amprt.role = "workspace"} : memref<1xi1>
    %ub = memref.alloc() {amprt.role = "workspace"} : memref<1xi1>
    amprt.call "relu"(%x, %ga) {counts = array<i64: 1, 1>, node = "ga"} : memref<4x3xf16>, memref<4x3xf16>
    amprt.call "layer_norm_grad"(%dy, %y, %scale, %mean, %istd, %dx, %ds, %db) {axis = 1 : i64, counts = array<i64: 1, 1, 1, 1, 1, 1, 1, 1>, node = "ln_grad"} : memref<2x4xf32>, memref<2x4xf32>, memref<4xf32>, memref<2x1xf32>, memref<2x1xf32>, memref<2x4xf32>, memref<4xf32>, memref<4xf32>
    amprt.call "multi_tensor_unscale_check"(%ga, %db, %ds, %inv, %flag) {counts = array<i64: 3, 1, 1>, n = 3 : i64, node = "found_inf", reset = 1 : i32} : memref<4x3xf16>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<i1>
    amprt.call "unscale_gate_accumulate"(%ba, %ga, %inv, %ok, %reset, %ua) {counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "acc_a"} : memref<4x3xf32>, memref<4x3xf16>, memref<f32>, memref<i1>, memref<1xi1>, memref<1xi1>
    amprt.call "unscale_gate_accumulate"(%bs, %ds, %inv, %ok, %reset, %us) {counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "acc_s"} : memref<4xf32>, memref<4xf32>, memref<f32>, memref<i1>, memref<1xi1>, memref<1xi1>
    amprt.call "unscale_gate_accumulate"(%bb, %db, %inv, %ok, %reset, %ub) {counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "acc_b"} : memref<4xf32>, memref<4xf32>, memref<f32>, memref<i1>, memref<1xi1>, memref<1xi1>
    return %dx, %ua, %us, %ub : memref<2x4xf32>, memref<1xi1>, memref<1xi1>, memref<1xi1>
  }
}

// -----

// Left as they are with overwrite-accumulators: a check whose gradient has
// another reader (the relu), and a function already marked.
// EARLY-LABEL: func.func @late
// EARLY-NOT: amprt.overwrite_accumulators
// EARLY-NOT: "fill"
// EARLY: amprt.call "multi_tensor_unscale_check"({{.*}}) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 1 : i32}
// EARLY-NEXT: amprt.call "unscale_gate_accumulate"(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %arg2)
// EARLY-LABEL: func.func @marked
// EARLY-NOT: "fill"
// EARLY: amprt.call "multi_tensor_unscale_check"({{.*}}) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 1 : i32}
// EARLY-NEXT: amprt.call "unscale_gate_accumulate"(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %arg2)
module {
  func.func @late(%x: memref<4xf32> {amprt.name = "x"}, %inv: memref<f32> {amprt.name = "inv"}, %ok: memref<i1> {amprt.name = "ok"}, %b: memref<4xf32> {amprt.name = "b"}) -> (memref<4xf32> {amprt.name = "r"}) attributes {amprt.unplanned} {
    %g = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %r = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %flag = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    amprt.call "relu"(%x, %g) {counts = array<i64: 1, 1>, node = "g"} : memref<4xf32>, memref<4xf32>
    amprt.call "multi_tensor_unscale_check"(%g, %inv, %flag) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 1 : i32} : memref<4xf32>, memref<f32>, memref<i1>
    amprt.call "unscale_gate_accumulate"(%b, %g, %inv, %ok) {counts = array<i64: 1, 1, 1, 1, 0, 0>, node = "acc"} : memref<4xf32>, memref<4xf32>, memref<f32>, memref<i1>
    amprt.call "relu"(%g, %r) {counts = array<i64: 1, 1>, node = "r"} : memref<4xf32>, memref<4xf32>
    return %r : memref<4xf32>
  }
  func.func @marked(%x: memref<4xf32> {amprt.name = "x"}, %inv: memref<f32> {amprt.name = "inv"}, %ok: memref<i1> {amprt.name = "ok"}, %b: memref<4xf32> {amprt.name = "b"}) attributes {amprt.overwrite_accumulators, amprt.unplanned} {
    %g = memref.alloc() {amprt.role = "gradients"} : memref<4xf32>
    %flag = memref.alloc() {amprt.role = "workspace"} : memref<i1>
    amprt.call "relu"(%x, %g) {counts = array<i64: 1, 1>, node = "g"} : memref<4xf32>, memref<4xf32>
    amprt.call "multi_tensor_unscale_check"(%g, %inv, %flag) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 1 : i32} : memref<4xf32>, memref<f32>, memref<i1>
    amprt.call "unscale_gate_accumulate"(%b, %g, %inv, %ok) {counts = array<i64: 1, 1, 1, 1, 0, 0>, node = "acc"} : memref<4xf32>, memref<4xf32>, memref<f32>, memref<i1>
    return
  }
}
