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
