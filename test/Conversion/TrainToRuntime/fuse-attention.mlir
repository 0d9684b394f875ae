// RUN: amp-opt %s --split-input-file --amprt-fuse | FileCheck %s
// RUN: amp-opt %s --split-input-file --amprt-fuse=fuse-attention=0 | FileCheck %s --check-prefix=OFF

// OFF-NOT: amprt.call "attention

// Attention in f16 with its gradient, as ONNX Runtime writes it: scores
// q k^T (k untransposed, trans_b), scaled by a constant, plus a mask
// broadcast over the heads, softmax, p v; dp = dy v^T, dv = p^T dy,
// softmax_grad, the mask Add's gradient (an identity), the same scaling,
// dq = ds k, dk = ds^T q. One attention
// writes y and the scores' log-sum-exp (a new f32 buffer), one
// attention_grad in the place of the first backward product writes dq, dk
// and dv; the scale is alpha times the constant.
// CHECK-LABEL: func.func @train
// CHECK: %[[LSE:.*]] = memref.alloc() {amprt.role = "activations"} : memref<2x3x5xf32>
// CHECK-NOT: amprt.call "fused_matmul"
// CHECK-NOT: amprt.call "softmax
// CHECK: amprt.call "attention"(%arg0, %arg1, %arg2, %arg3, %[[Y:.*]], %[[LSE]]) {counts = array<i64: 1, 1, 1, 1, 1, 1>, k_trans = 0 : i32, node = "sm", nviews = 0 : i64, scale = 2.500000e-01 : f32, views = array<i64>}
// CHECK-NEXT: amprt.call "relu"(%[[Y]]
// CHECK-NEXT: amprt.call "attention_grad"(%arg0, %arg1, %arg2, %arg3, %[[Y]], %[[LSE]], %arg4, %[[DQ:[^,]*]], %[[DK:[^,]*]], %[[DV:[^)]*]]) {counts = array<i64: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1>, k_trans = 0 : i32, node = "smg", nviews = 0 : i64, scale = 2.500000e-01 : f32, views = array<i64>}
// CHECK-NOT: amprt.call "fused_matmul"
// CHECK-NOT: amprt.call "softmax
// CHECK-NOT: amprt.call "mul"
// CHECK-NOT: amprt.call "identity"
// CHECK: return %[[Y]], %[[DQ]], %[[DK]], %[[DV]]
module {
  memref.global "private" constant @half : memref<f16> = dense<5.000000e-01>
  func.func @train(%q: memref<2x3x5x8xf16>, %k: memref<2x3x7x8xf16>, %v: memref<2x3x7x4xf16>, %mask: memref<2x1x5x7xf16>, %dy: memref<2x3x5x4xf16>) -> (memref<2x3x5x4xf16>, memref<2x3x5x8xf16>, memref<2x3x7x8xf16>, memref<2x3x7x4xf16>) attributes {amprt.unplanned} {
    %c = memref.get_global @half : memref<f16>
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x3x5x7xf16>
    %s1 = memref.alloc() {amprt.role = "activations"} : memref<2x3x5x7xf16>
    %s2 = memref.alloc() {amprt.role = "activations"} : memref<2x3x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x3x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x3x5x4xf16>
    %r = memref.alloc() {amprt.role = "activations"} : memref<2x3x5x4xf16>
    %dp = memref.alloc() {amprt.role = "gradients"} : memref<2x3x5x7xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x3x7x4xf16>
    %ds2 = memref.alloc() {amprt.role = "gradients"} : memref<2x3x5x7xf16>
    %ds1 = memref.alloc() {amprt.role = "gradients"} : memref<2x3x5x7xf16>
    %ds = memref.alloc() {amprt.role = "gradients"} : memref<2x3x5x7xf16>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x3x5x8xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x3x7x8xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 0.5 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x3x5x8xf16>, memref<2x3x7x8xf16>, memref<2x3x5x7xf16>
    amprt.call "mul"(%s, %c, %s1) {counts = array<i64: 1, 1, 1>, node = "scale"} : memref<2x3x5x7xf16>, memref<f16>, memref<2x3x5x7xf16>
    amprt.call "add"(%s1, %mask, %s2) {counts = array<i64: 1, 1, 1>, node = "mask"} : memref<2x3x5x7xf16>, memref<2x1x5x7xf16>, memref<2x3x5x7xf16>
    amprt.call "softmax"(%s2, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x3x5x7xf16>, memref<2x3x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x3x5x7xf16>, memref<2x3x7x4xf16>, memref<2x3x5x4xf16>
    amprt.call "relu"(%y, %r) {counts = array<i64: 1, 1>, node = "after"} : memref<2x3x5x4xf16>, memref<2x3x5x4xf16>
    amprt.call "fused_matmul"(%dy, %v, %dp) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dp", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x3x5x4xf16>, memref<2x3x7x4xf16>, memref<2x3x5x7xf16>
    amprt.call "fused_matmul"(%p, %dy, %dv) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dv", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x3x5x7xf16>, memref<2x3x5x4xf16>, memref<2x3x7x4xf16>
    amprt.call "softmax_grad"(%dp, %p, %ds2) {axis = 3 : i64, counts = array<i64: 1, 1, 1>, node = "smg"} : memref<2x3x5x7xf16>, memref<2x3x5x7xf16>, memref<2x3x5x7xf16>
    amprt.call "identity"(%ds2, %ds1) {counts = array<i64: 1, 1>, node = "mask_grad"} : memref<2x3x5x7xf16>, memref<2x3x5x7xf16>
    amprt.call "mul"(%ds1, %c, %ds) {counts = array<i64: 1, 1, 1>, node = "dscale"} : memref<2x3x5x7xf16>, memref<f16>, memref<2x3x5x7xf16>
    amprt.call "fused_matmul"(%ds, %k, %dq) {alpha = 0.5 : f32, counts = array<i64: 1, 1, 1>, node = "dq", trans_a = 0 : i32, trans_b = 0 : i32} : memref<2x3x5x7xf16>, memref<2x3x7x8xf16>, memref<2x3x5x8xf16>
    amprt.call "fused_matmul"(%ds, %q, %dk) {alpha = 0.5 : f32, counts = array<i64: 1, 1, 1>, node = "dk", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x3x5x7xf16>, memref<2x3x5x8xf16>, memref<2x3x7x8xf16>
    return %y, %dq, %dk, %dv : memref<2x3x5x4xf16>, memref<2x3x5x8xf16>, memref<2x3x7x8xf16>, memref<2x3x7x4xf16>
  }
}

// -----

// The forward alone (no gradient reads p), in bf16, with a stored k^T
// (k_trans) and the scores divided by a constant: attention without lse.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: memref<4x6xf32>
// CHECK: amprt.call "attention"(%arg0, %arg1, %arg2, %[[Y:[^)]*]]) {counts = array<i64: 1, 1, 1, 0, 1, 0>, k_trans = 1 : i32, node = "sm", nviews = 0 : i64, scale = 1.250000e-01 : f32, views = array<i64>}
// CHECK-NOT: amprt.call "softmax
// CHECK: return %[[Y]]
module {
  memref.global "private" constant @eight : memref<1xbf16> = dense<8.000000e+00>
  func.func @forward(%q: memref<4x6x8xbf16>, %kt: memref<4x8x6xbf16>, %v: memref<4x6x8xbf16>) -> memref<4x6x8xbf16> attributes {amprt.unplanned} {
    %c = memref.get_global @eight : memref<1xbf16>
    %s = memref.alloc() {amprt.role = "activations"} : memref<4x6x6xbf16>
    %s1 = memref.alloc() {amprt.role = "activations"} : memref<4x6x6xbf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<4x6x6xbf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<4x6x8xbf16>
    amprt.call "matmul"(%q, %kt, %s) {counts = array<i64: 1, 1, 1>, node = "qk"} : memref<4x6x8xbf16>, memref<4x8x6xbf16>, memref<4x6x6xbf16>
    amprt.call "div"(%s, %c, %s1) {counts = array<i64: 1, 1, 1>, node = "scale"} : memref<4x6x6xbf16>, memref<1xbf16>, memref<4x6x6xbf16>
    amprt.call "softmax"(%s1, %p) {axis = 2 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<4x6x6xbf16>, memref<4x6x6xbf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<4x6x6xbf16>, memref<4x6x8xbf16>, memref<4x6x8xbf16>
    return %y : memref<4x6x8xbf16>
  }
}

// -----

// Not fused: attention in f32 (the unfused calls' bits are kept); a softmax
// along another axis; probabilities that something else reads too (dropout
// on p); scores that are a graph output; a batch broadcast in the scores'
// product; q written in place between the scores' product and the output
// product (the fused call would read it after the write); a backward scaled
// by another constant than the forward.
// CHECK-LABEL: func.func @f32
// CHECK: amprt.call "softmax"
// CHECK-LABEL: func.func @axis
// CHECK: amprt.call "softmax"
// CHECK-LABEL: func.func @dropout
// CHECK: amprt.call "softmax"
// CHECK-LABEL: func.func @scores_out
// CHECK: amprt.call "softmax"
// CHECK-LABEL: func.func @broadcast
// CHECK: amprt.call "softmax"
// CHECK-LABEL: func.func @inplace
// CHECK: amprt.call "softmax"
// CHECK-LABEL: func.func @other_scale
// CHECK: amprt.call "softmax"
// CHECK: amprt.call "softmax_grad"
// CHECK-NOT: amprt.call "attention
module {
  func.func @f32(%q: memref<2x5x8xf32>, %k: memref<2x7x8xf32>, %v: memref<2x7x4xf32>) -> memref<2x5x4xf32> attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf32>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf32>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf32>, memref<2x7x8xf32>, memref<2x5x7xf32>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf32>, memref<2x5x7xf32>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf32>, memref<2x7x4xf32>, memref<2x5x4xf32>
    return %y : memref<2x5x4xf32>
  }
  func.func @axis(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>) -> memref<2x5x4xf16> attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s, %p) {axis = 1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    return %y : memref<2x5x4xf16>
  }
  func.func @dropout(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>, %m: memref<2x5x7xf16>) -> memref<2x5x4xf16> attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %pd = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    amprt.call "mul"(%p, %m, %pd) {counts = array<i64: 1, 1, 1>, node = "drop"} : memref<2x5x7xf16>, memref<2x5x7xf16>, memref<2x5x7xf16>
    return %y : memref<2x5x4xf16>
  }
  func.func @scores_out(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>) -> (memref<2x5x4xf16>, memref<2x5x7xf16>) attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    return %y, %s : memref<2x5x4xf16>, memref<2x5x7xf16>
  }
  func.func @broadcast(%q: memref<2x5x8xf16>, %k: memref<1x7x8xf16>, %v: memref<2x7x4xf16>) -> memref<2x5x4xf16> attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<1x7x8xf16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    return %y : memref<2x5x4xf16>
  }
  func.func @inplace(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>, %g: memref<2x5x8xf16>) -> memref<2x5x4xf16> attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "inplace_accumulate"(%q, %g) {counts = array<i64: 1, 1, 0, 0>, node = "acc"} : memref<2x5x8xf16>, memref<2x5x8xf16>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    return %y : memref<2x5x4xf16>
  }
  memref.global "private" constant @two : memref<f16> = dense<2.000000e+00>
  memref.global "private" constant @three : memref<f16> = dense<3.000000e+00>
  func.func @other_scale(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>, %dy: memref<2x5x4xf16>) -> (memref<2x5x4xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x7x4xf16>) attributes {amprt.unplanned} {
    %c2 = memref.get_global @two : memref<f16>
    %c3 = memref.get_global @three : memref<f16>
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %s1 = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    %dp = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x7x4xf16>
    %ds2 = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %ds = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x5x8xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x7x8xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "mul"(%s, %c2, %s1) {counts = array<i64: 1, 1, 1>, node = "scale"} : memref<2x5x7xf16>, memref<f16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s1, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    amprt.call "fused_matmul"(%dy, %v, %dp) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dp", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x4xf16>, memref<2x7x4xf16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%p, %dy, %dv) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dv", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x4xf16>, memref<2x7x4xf16>
    amprt.call "softmax_grad"(%dp, %p, %ds2) {axis = -1 : i64, counts = array<i64: 1, 1, 1>, node = "smg"} : memref<2x5x7xf16>, memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "mul"(%ds2, %c3, %ds) {counts = array<i64: 1, 1, 1>, node = "dscale"} : memref<2x5x7xf16>, memref<f16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%ds, %k, %dq) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dq", trans_a = 0 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x7x8xf16>, memref<2x5x8xf16>
    amprt.call "fused_matmul"(%ds, %q, %dk) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dk", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>
    return %y, %dq, %dk, %dv : memref<2x5x4xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x7x4xf16>
  }
}

// -----

// PyTorch's multi-head attention scales q (and k^T) by a constant before
// the scores' product; ONNX Runtime's gradient scales dq again (here after
// the AMP pass's widening cast, by the f32 original of the f16 constant:
// the two agree to f16's rounding). The scaling folds into the fused
// calls' scale (0.5 x 0.5 = 0.25), attention_grad's dq is then q's
// gradient, and the cast widens it straight into the scaling's result.
// CHECK-LABEL: func.func @scaled_q
// CHECK-NOT: amprt.call "mul"
// CHECK: amprt.call "attention"(%arg0, %arg1, %arg2, %[[Y:[^,]*]], %[[LSE:[^)]*]]) {{{.*}}scale = 2.500000e-01 : f32
// CHECK: amprt.call "attention_grad"(%arg0, %arg1, %arg2, %[[Y]], %[[LSE]], %arg3, %[[DQ:[^,]*]], %{{[^,]*}}, %{{[^)]*}}) {{{.*}}scale = 2.500000e-01 : f32
// CHECK-NOT: amprt.call "mul"
// CHECK: amprt.call "cast"(%[[DQ]], %[[DQ32:[^)]*]])
// CHECK-NOT: amprt.call "mul"
// CHECK: return %[[Y]], %[[DQ32]]
module {
  memref.global "private" constant @half16 : memref<f16> = dense<5.000000e-01>
  memref.global "private" constant @half32 : memref<f32> = dense<5.000000e-01>
  func.func @scaled_q(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>, %dy: memref<2x5x4xf16>) -> (memref<2x5x4xf16>, memref<2x5x8xf32>, memref<2x7x8xf16>, memref<2x7x4xf16>) attributes {amprt.unplanned} {
    %c16 = memref.get_global @half16 : memref<f16>
    %c32 = memref.get_global @half32 : memref<f32>
    %qs = memref.alloc() {amprt.role = "activations"} : memref<2x5x8xf16>
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %s1 = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    %dp = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x7x4xf16>
    %ds2 = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %ds = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dqs = memref.alloc() {amprt.role = "gradients"} : memref<2x5x8xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x7x8xf16>
    %dqw = memref.alloc() {amprt.role = "gradients"} : memref<2x5x8xf32>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x5x8xf32>
    amprt.call "mul"(%q, %c16, %qs) {counts = array<i64: 1, 1, 1>, node = "qscale"} : memref<2x5x8xf16>, memref<f16>, memref<2x5x8xf16>
    amprt.call "fused_matmul"(%qs, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "mul"(%s, %c16, %s1) {counts = array<i64: 1, 1, 1>, node = "sscale"} : memref<2x5x7xf16>, memref<f16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s1, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    amprt.call "fused_matmul"(%dy, %v, %dp) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dp", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x4xf16>, memref<2x7x4xf16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%p, %dy, %dv) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dv", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x4xf16>, memref<2x7x4xf16>
    amprt.call "softmax_grad"(%dp, %p, %ds2) {axis = -1 : i64, counts = array<i64: 1, 1, 1>, node = "smg"} : memref<2x5x7xf16>, memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "mul"(%ds2, %c16, %ds) {counts = array<i64: 1, 1, 1>, node = "dsscale"} : memref<2x5x7xf16>, memref<f16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%ds, %k, %dqs) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dq", trans_a = 0 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x7x8xf16>, memref<2x5x8xf16>
    amprt.call "fused_matmul"(%ds, %qs, %dk) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dk", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>
    amprt.call "cast"(%dqs, %dqw) {counts = array<i64: 1, 1>, node = "widen"} : memref<2x5x8xf16>, memref<2x5x8xf32>
    amprt.call "mul"(%dqw, %c32, %dq) {counts = array<i64: 1, 1, 1>, node = "qscale_grad"} : memref<2x5x8xf32>, memref<f32>, memref<2x5x8xf32>
    return %y, %dq, %dk, %dv : memref<2x5x4xf16>, memref<2x5x8xf32>, memref<2x7x8xf16>, memref<2x7x4xf16>
  }
}

// -----

// Not fused: dy written in place between the products that read it (the
// fused call would read it before the write), and a dy that broadcasts
// against y (the fused call takes dy of y's shape).
// CHECK-LABEL: func.func @dy_inplace
// CHECK: amprt.call "softmax_grad"
// CHECK-LABEL: func.func @dy_broadcast
// CHECK: amprt.call "softmax_grad"
// CHECK-NOT: amprt.call "attention_grad"
module {
  func.func @dy_inplace(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>, %dy: memref<2x5x4xf16>, %g: memref<2x5x4xf16>) -> (memref<2x5x4xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x7x4xf16>) attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    %dp = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x7x4xf16>
    %ds = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x5x8xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x7x8xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    amprt.call "fused_matmul"(%dy, %v, %dp) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dp", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x4xf16>, memref<2x7x4xf16>, memref<2x5x7xf16>
    amprt.call "inplace_accumulate"(%dy, %g) {counts = array<i64: 1, 1, 0, 0>, node = "acc"} : memref<2x5x4xf16>, memref<2x5x4xf16>
    amprt.call "fused_matmul"(%p, %dy, %dv) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dv", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x4xf16>, memref<2x7x4xf16>
    amprt.call "softmax_grad"(%dp, %p, %ds) {axis = -1 : i64, counts = array<i64: 1, 1, 1>, node = "smg"} : memref<2x5x7xf16>, memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%ds, %k, %dq) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dq", trans_a = 0 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x7x8xf16>, memref<2x5x8xf16>
    amprt.call "fused_matmul"(%ds, %q, %dk) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dk", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>
    return %y, %dq, %dk, %dv : memref<2x5x4xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x7x4xf16>
  }
}

// -----

module {
  func.func @dy_broadcast(%q: memref<2x5x8xf16>, %k: memref<2x7x8xf16>, %v: memref<2x7x4xf16>, %dy: memref<1x5x4xf16>) -> (memref<2x5x4xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x7x4xf16>) attributes {amprt.unplanned} {
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<2x5x7xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4xf16>
    %dp = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x7x4xf16>
    %ds = memref.alloc() {amprt.role = "gradients"} : memref<2x5x7xf16>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x5x8xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x7x8xf16>
    amprt.call "fused_matmul"(%q, %k, %s) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "qk", trans_a = 0 : i32, trans_b = 1 : i32} : memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x5x7xf16>
    amprt.call "softmax"(%s, %p) {axis = -1 : i64, counts = array<i64: 1, 1>, node = "sm"} : memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "matmul"(%p, %v, %y) {counts = array<i64: 1, 1, 1>, node = "pv"} : memref<2x5x7xf16>, memref<2x7x4xf16>, memref<2x5x4xf16>
    amprt.call "fused_matmul"(%dy, %v, %dp) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dp", trans_a = 0 : i32, trans_b = 1 : i32} : memref<1x5x4xf16>, memref<2x7x4xf16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%p, %dy, %dv) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dv", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<1x5x4xf16>, memref<2x7x4xf16>
    amprt.call "softmax_grad"(%dp, %p, %ds) {axis = -1 : i64, counts = array<i64: 1, 1, 1>, node = "smg"} : memref<2x5x7xf16>, memref<2x5x7xf16>, memref<2x5x7xf16>
    amprt.call "fused_matmul"(%ds, %k, %dq) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dq", trans_a = 0 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x7x8xf16>, memref<2x5x8xf16>
    amprt.call "fused_matmul"(%ds, %q, %dk) {alpha = 1.0 : f32, counts = array<i64: 1, 1, 1>, node = "dk", trans_a = 1 : i32, trans_b = 0 : i32} : memref<2x5x7xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>
    return %y, %dq, %dk, %dv : memref<2x5x4xf16>, memref<2x5x8xf16>, memref<2x7x8xf16>, memref<2x7x4xf16>
  }
}
