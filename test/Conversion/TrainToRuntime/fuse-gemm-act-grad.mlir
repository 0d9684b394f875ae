// RUN: amp-opt %s --split-input-file --amprt-fuse | FileCheck %s
// RUN: amp-opt %s --split-input-file --amprt-fuse="fuse-gemm-epilogues=0" | FileCheck %s --check-prefix=OFF

// A backward product that only an activation's gradient reads (ReluGrad,
// GeluGrad, FastGeluGrad): one gemm_act_grad, the product never stored.
// From a gemm without c, a FusedMatMul on [.., K] and a MatMul.
// CHECK-LABEL: func.func @fused
// CHECK: amprt.call "gemm_act_grad"(%arg0, %arg1, %arg2, %[[DX:[^)]*]]) {act = 0 : i32, alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1, 1>, node = "mm", trans_a = 0 : i32, trans_b = 1 : i32}
// CHECK: amprt.call "gemm_act_grad"(%arg3, %arg1, %arg4, %{{[^)]*}}) {act = 1 : i32, alpha = 5.000000e-01 : f32, counts = array<i64: 1, 1, 1, 1>, node = "fmm", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x4x8xf16>, memref<3x8xf16>, memref<2x4x3xf16>, memref<2x4x3xf16>
// CHECK: amprt.call "gemm_act_grad"(%arg3, %arg5, %arg4, %{{[^)]*}}) {act = 2 : i32, alpha = 1.000000e+00 : f32, counts = array<i64: 1, 1, 1, 1>, node = "mat", trans_a = 0 : i32, trans_b = 0 : i32}
// CHECK-NOT: _grad"(
// CHECK: return %[[DX]]
// OFF-LABEL: func.func @fused
// OFF-NOT: gemm_act_grad
// OFF: amprt.call "relu_grad"(
module {
  func.func @fused(%a: memref<4x8xf16> {amprt.name = "a"}, %w: memref<3x8xf16> {amprt.name = "w"}, %x: memref<4x3xf16> {amprt.name = "x"}, %a3: memref<2x4x8xf16> {amprt.name = "a3"}, %x3: memref<2x4x3xf16> {amprt.name = "x3"}, %w2: memref<8x3xf16> {amprt.name = "w2"}) -> (memref<4x3xf16> {amprt.name = "dx"}, memref<2x4x3xf16> {amprt.name = "dx2"}, memref<2x4x3xf16> {amprt.name = "dx3"}) attributes {amprt.unplanned} {
    %g = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %dx = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %g2 = memref.alloc() {amprt.role = "gradients"} : memref<2x4x3xf16>
    %dx2 = memref.alloc() {amprt.role = "gradients"} : memref<2x4x3xf16>
    %g3 = memref.alloc() {amprt.role = "gradients"} : memref<2x4x3xf16>
    %dx3 = memref.alloc() {amprt.role = "gradients"} : memref<2x4x3xf16>
    amprt.call "gemm"(%a, %w, %g) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "mm", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf16>, memref<3x8xf16>, memref<4x3xf16>
    amprt.call "relu_grad"(%g, %x, %dx) {counts = array<i64: 1, 1, 1>, node = "rg"} : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>
    amprt.call "fused_matmul"(%a3, %w, %g2) {alpha = 0.5 : f32, counts = array<i64: 1, 1, 1>, node = "fmm", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x4x8xf16>, memref<3x8xf16>, memref<2x4x3xf16>
    amprt.call "gelu_grad"(%g2, %x3, %dx2) {counts = array<i64: 1, 1, 1>, node = "gg"} : memref<2x4x3xf16>, memref<2x4x3xf16>, memref<2x4x3xf16>
    amprt.call "matmul"(%a3, %w2, %g3) {counts = array<i64: 1, 1, 1>, node = "mat"} : memref<2x4x8xf16>, memref<8x3xf16>, memref<2x4x3xf16>
    amprt.call "fast_gelu_grad"(%g3, %x3, %dx3) {counts = array<i64: 1, 1, 1>, node = "fg"} : memref<2x4x3xf16>, memref<2x4x3xf16>, memref<2x4x3xf16>
    return %dx, %dx2, %dx3 : memref<4x3xf16>, memref<2x4x3xf16>, memref<2x4x3xf16>
  }
}

// -----

// Not fused: the product is read again (a second reader), returned, read
// as the gradient's x rather than dy, or the gradient writes another dtype
// (f32: the product's f16 rounding would be lost); sigmoid_grad reads the
// forward's output, not its input, and is left alone.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: gemm_act_grad
// CHECK-COUNT-5: amprt.call "gemm"(
// CHECK-NOT: gemm_act_grad
module {
  func.func @kept(%a: memref<4x8xf16> {amprt.name = "a"}, %w: memref<3x8xf16> {amprt.name = "w"}, %x: memref<4x3xf16> {amprt.name = "x"}) -> (memref<4x3xf16> {amprt.name = "d1"}, memref<4x3xf16> {amprt.name = "e1"}, memref<4x3xf16> {amprt.name = "g2"}, memref<4x3xf16> {amprt.name = "d2"}, memref<4x3xf16> {amprt.name = "d3"}, memref<4x3xf32> {amprt.name = "d4"}, memref<4x3xf16> {amprt.name = "d5"}) attributes {amprt.unplanned} {
    %g1 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %d1 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %e1 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %g2 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %d2 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %g3 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %d3 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %g4 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %d4 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf32>
    %g5 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    %d5 = memref.alloc() {amprt.role = "gradients"} : memref<4x3xf16>
    amprt.call "gemm"(%a, %w, %g1) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "m1", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf16>, memref<3x8xf16>, memref<4x3xf16>
    amprt.call "relu_grad"(%g1, %x, %d1) {counts = array<i64: 1, 1, 1>, node = "r1"} : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>
    amprt.call "relu"(%g1, %e1) {counts = array<i64: 1, 1>, node = "e1"} : memref<4x3xf16>, memref<4x3xf16>
    amprt.call "gemm"(%a, %w, %g2) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "m2", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf16>, memref<3x8xf16>, memref<4x3xf16>
    amprt.call "relu_grad"(%g2, %x, %d2) {counts = array<i64: 1, 1, 1>, node = "r2"} : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>
    amprt.call "gemm"(%a, %w, %g3) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "m3", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf16>, memref<3x8xf16>, memref<4x3xf16>
    amprt.call "relu_grad"(%x, %g3, %d3) {counts = array<i64: 1, 1, 1>, node = "r3"} : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>
    amprt.call "gemm"(%a, %w, %g4) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "m4", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf16>, memref<3x8xf16>, memref<4x3xf16>
    amprt.call "relu_grad"(%g4, %x, %d4) {counts = array<i64: 1, 1, 1>, node = "r4"} : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf32>
    amprt.call "gemm"(%a, %w, %g5) {alpha = 1.0 : f32, beta = 0.0 : f32, counts = array<i64: 1, 1, 0, 1>, node = "m5", trans_a = 0 : i32, trans_b = 1 : i32} : memref<4x8xf16>, memref<3x8xf16>, memref<4x3xf16>
    amprt.call "sigmoid_grad"(%g5, %x, %d5) {counts = array<i64: 1, 1, 1>, node = "s5"} : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>
    return %d1, %e1, %g2, %d2, %d3, %d4, %d5 : memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf16>, memref<4x3xf32>, memref<4x3xf16>
  }
}
