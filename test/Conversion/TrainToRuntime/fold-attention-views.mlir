// RUN: amp-opt %s --split-input-file --amprt-fuse | FileCheck %s
// RUN: amp-opt %s --split-input-file --amprt-fuse=fuse-attention=0 | FileCheck %s --check-prefix=OFF

// OFF-NOT: nviews = {{[1-9]}}

// The head split and merge of a transformer around a fused attention and
// its gradient: q, k and v sliced out of one packed [B, S, 3 H D]
// projection, reshaped to [B, S, H, D] and transposed to [B, H, S, D]; y
// transposed back and reshaped to [B, S, H D]; the gradient the reverse
// way (dy from [B, S, H D], dq, dk, dv back to [B, S, H D] each). Every
// move folds into the calls' views (B 2, S 3, H 2, D 4): q, k and v read
// the packed buffer at offsets 0, 8 and 16 with strides (72, 4, 24, 1); y,
// dy, dq, dk and dv are [B, H, S, D] views of [B, S, H D] buffers, strides
// (24, 4, 8, 1).
// CHECK-LABEL: func.func @heads
// CHECK-NOT: amprt.call "transpose"
// CHECK-NOT: amprt.call "reshape"
// CHECK-NOT: amprt.call "slice"
// CHECK: amprt.call "attention"(%arg0, %arg0, %arg0, %[[Y:[^,]*]], %[[LSE:[^)]*]]) {counts = array<i64: 1, 1, 1, 0, 1, 1>, k_trans = 0 : i32, node = "sm", nviews = 36 : i64, scale = 5.000000e-01 : f32, views = array<i64: 0, 2, 2, 3, 4, 72, 4, 24, 1, 8, 2, 2, 3, 4, 72, 4, 24, 1, 16, 2, 2, 3, 4, 72, 4, 24, 1, 0, 2, 2, 3, 4, 24, 4, 8, 1>}
// CHECK-NEXT: amprt.call "relu"(%[[Y]]
// CHECK-NEXT: amprt.call "attention_grad"(%arg0, %arg0, %arg0, %[[Y]], %[[LSE]], %arg1, %[[DQ:[^,]*]], %[[DK:[^,]*]], %[[DV:[^)]*]]) {counts = array<i64: 1, 1, 1, 0, 1, 1, 1, 1, 1, 1>, k_trans = 0 : i32, node = "smg", nviews = 72 : i64, scale = 5.000000e-01 : f32, views = array<i64: 0, 2, 2, 3, 4, 72, 4, 24, 1, 8, 2, 2, 3, 4, 72, 4, 24, 1, 16, 2, 2, 3, 4, 72, 4, 24, 1, 0, 2, 2, 3, 4, 24, 4, 8, 1, 0, 2, 2, 3, 4, 24, 4, 8, 1, 0, 2, 2, 3, 4, 24, 4, 8, 1, 0, 2, 2, 3, 4, 24, 4, 8, 1, 0, 2, 2, 3, 4, 24, 4, 8, 1>}
// CHECK-NOT: amprt.call "transpose"
// CHECK: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]]
module {
  func.func @heads(%qkv: memref<2x3x24xf16>, %dz: memref<2x3x8xf16>) -> (memref<2x3x8xf16>, memref<2x3x8xf16>, memref<2x3x8xf16>, memref<2x3x8xf16>) attributes {amprt.unplanned} {
    %ql = memref.alloc() {amprt.role = "activations"} : memref<2x3x8xf16>
    %kl = memref.alloc() {amprt.role = "activations"} : memref<2x3x8xf16>
    %vl = memref.alloc() {amprt.role = "activations"} : memref<2x3x8xf16>
    %qr = memref.alloc() {amprt.role = "activations"} : memref<2x3x2x4xf16>
    %kr = memref.alloc() {amprt.role = "activations"} : memref<2x3x2x4xf16>
    %vr = memref.alloc() {amprt.role = "activations"} : memref<2x3x2x4xf16>
    %q = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %k = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %v = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %lse = memref.alloc() {amprt.role = "activations"} : memref<2x2x3xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %yt = memref.alloc() {amprt.role = "activations"} : memref<2x3x2x4xf16>
    %z = memref.alloc() {amprt.role = "activations"} : memref<2x3x8xf16>
    %r = memref.alloc() {amprt.role = "activations"} : memref<2x3x8xf16>
    %dzr = memref.alloc() {amprt.role = "gradients"} : memref<2x3x2x4xf16>
    %dy = memref.alloc() {amprt.role = "gradients"} : memref<2x2x3x4xf16>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x2x3x4xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x2x3x4xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x2x3x4xf16>
    %dqt = memref.alloc() {amprt.role = "gradients"} : memref<2x3x2x4xf16>
    %dkt = memref.alloc() {amprt.role = "gradients"} : memref<2x3x2x4xf16>
    %dvt = memref.alloc() {amprt.role = "gradients"} : memref<2x3x2x4xf16>
    %dqo = memref.alloc() {amprt.role = "gradients"} : memref<2x3x8xf16>
    %dko = memref.alloc() {amprt.role = "gradients"} : memref<2x3x8xf16>
    %dvo = memref.alloc() {amprt.role = "gradients"} : memref<2x3x8xf16>
    amprt.call "slice"(%qkv, %ql) {axes = array<i64: 2>, counts = array<i64: 1, 1>, ends = array<i64: 8>, n = 1 : i64, node = "split", starts = array<i64: 0>, steps = array<i64: 1>} : memref<2x3x24xf16>, memref<2x3x8xf16>
    amprt.call "slice"(%qkv, %kl) {axes = array<i64: 2>, counts = array<i64: 1, 1>, ends = array<i64: 16>, n = 1 : i64, node = "split", starts = array<i64: 8>, steps = array<i64: 1>} : memref<2x3x24xf16>, memref<2x3x8xf16>
    amprt.call "slice"(%qkv, %vl) {axes = array<i64: 2>, counts = array<i64: 1, 1>, ends = array<i64: 24>, n = 1 : i64, node = "split", starts = array<i64: 16>, steps = array<i64: 1>} : memref<2x3x24xf16>, memref<2x3x8xf16>
    amprt.call "reshape"(%ql, %qr) {counts = array<i64: 1, 1>, node = "rq"} : memref<2x3x8xf16>, memref<2x3x2x4xf16>
    amprt.call "reshape"(%kl, %kr) {counts = array<i64: 1, 1>, node = "rk"} : memref<2x3x8xf16>, memref<2x3x2x4xf16>
    amprt.call "reshape"(%vl, %vr) {counts = array<i64: 1, 1>, node = "rv"} : memref<2x3x8xf16>, memref<2x3x2x4xf16>
    amprt.call "transpose"(%qr, %q) {counts = array<i64: 1, 1>, node = "tq", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x3x2x4xf16>, memref<2x2x3x4xf16>
    amprt.call "transpose"(%kr, %k) {counts = array<i64: 1, 1>, node = "tk", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x3x2x4xf16>, memref<2x2x3x4xf16>
    amprt.call "transpose"(%vr, %v) {counts = array<i64: 1, 1>, node = "tv", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x3x2x4xf16>, memref<2x2x3x4xf16>
    amprt.call "attention"(%q, %k, %v, %y, %lse) {counts = array<i64: 1, 1, 1, 0, 1, 1>, k_trans = 0 : i32, node = "sm", nviews = 0 : i64, scale = 5.000000e-01 : f32, views = array<i64>} : memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3xf32>
    amprt.call "transpose"(%y, %yt) {counts = array<i64: 1, 1>, node = "ty", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x2x3x4xf16>, memref<2x3x2x4xf16>
    amprt.call "reshape"(%yt, %z) {counts = array<i64: 1, 1>, node = "ry"} : memref<2x3x2x4xf16>, memref<2x3x8xf16>
    amprt.call "relu"(%z, %r) {counts = array<i64: 1, 1>, node = "after"} : memref<2x3x8xf16>, memref<2x3x8xf16>
    amprt.call "reshape"(%dz, %dzr) {counts = array<i64: 1, 1>, node = "rdy"} : memref<2x3x8xf16>, memref<2x3x2x4xf16>
    amprt.call "transpose"(%dzr, %dy) {counts = array<i64: 1, 1>, node = "tdy", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x3x2x4xf16>, memref<2x2x3x4xf16>
    amprt.call "attention_grad"(%q, %k, %v, %y, %lse, %dy, %dq, %dk, %dv) {counts = array<i64: 1, 1, 1, 0, 1, 1, 1, 1, 1, 1>, k_trans = 0 : i32, node = "smg", nviews = 0 : i64, scale = 5.000000e-01 : f32, views = array<i64>} : memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3xf32>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>, memref<2x2x3x4xf16>
    amprt.call "transpose"(%dq, %dqt) {counts = array<i64: 1, 1>, node = "tdq", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x2x3x4xf16>, memref<2x3x2x4xf16>
    amprt.call "transpose"(%dk, %dkt) {counts = array<i64: 1, 1>, node = "tdk", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x2x3x4xf16>, memref<2x3x2x4xf16>
    amprt.call "transpose"(%dv, %dvt) {counts = array<i64: 1, 1>, node = "tdv", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x2x3x4xf16>, memref<2x3x2x4xf16>
    amprt.call "reshape"(%dqt, %dqo) {counts = array<i64: 1, 1>, node = "rdq"} : memref<2x3x2x4xf16>, memref<2x3x8xf16>
    amprt.call "reshape"(%dkt, %dko) {counts = array<i64: 1, 1>, node = "rdk"} : memref<2x3x2x4xf16>, memref<2x3x8xf16>
    amprt.call "reshape"(%dvt, %dvo) {counts = array<i64: 1, 1>, node = "rdv"} : memref<2x3x2x4xf16>, memref<2x3x8xf16>
    return %r, %dqo, %dko, %dvo : memref<2x3x8xf16>, memref<2x3x8xf16>, memref<2x3x8xf16>, memref<2x3x8xf16>
  }
}

// -----

// Moves that stay: a transposed q that another call reads too (the copy is
// needed anyway), and a reshape that merges dims no view can merge (the
// heads and the batch of a [B, H, S, D] transposed from [B, S, H, D]): the
// transpose stays, the reshape after it folds.
// CHECK-LABEL: func.func @kept
// CHECK: amprt.call "transpose"({{.*}}node = "tq"
// CHECK: amprt.call "relu"
// CHECK: amprt.call "transpose"({{.*}}node = "tk"
// CHECK-NOT: amprt.call "reshape"
// CHECK: amprt.call "attention"({{.*}}views = array<i64: 0, 4, 3, 4, 12, 4, 1, 0, 4, 3, 4, 12, 4, 1, 0, 4, 3, 4, 12, 4, 1, 0, 4, 3, 4, 12, 4, 1>}
module {
  func.func @kept(%xq: memref<2x3x2x4xf16>, %xk: memref<2x3x2x4xf16>, %v: memref<4x3x4xf16>) -> (memref<4x3x4xf16>, memref<2x2x3x4xf16>) attributes {amprt.unplanned} {
    %q4 = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %r = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %q = memref.alloc() {amprt.role = "activations"} : memref<4x3x4xf16>
    %k4 = memref.alloc() {amprt.role = "activations"} : memref<2x2x3x4xf16>
    %k = memref.alloc() {amprt.role = "activations"} : memref<4x3x4xf16>
    %y = memref.alloc() {amprt.role = "activations"} : memref<4x3x4xf16>
    amprt.call "transpose"(%xq, %q4) {counts = array<i64: 1, 1>, node = "tq", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x3x2x4xf16>, memref<2x2x3x4xf16>
    amprt.call "relu"(%q4, %r) {counts = array<i64: 1, 1>, node = "other"} : memref<2x2x3x4xf16>, memref<2x2x3x4xf16>
    amprt.call "reshape"(%q4, %q) {counts = array<i64: 1, 1>, node = "rq"} : memref<2x2x3x4xf16>, memref<4x3x4xf16>
    amprt.call "transpose"(%xk, %k4) {counts = array<i64: 1, 1>, node = "tk", nperm = 4 : i64, perm = array<i64: 0, 2, 1, 3>} : memref<2x3x2x4xf16>, memref<2x2x3x4xf16>
    amprt.call "reshape"(%k4, %k) {counts = array<i64: 1, 1>, node = "rk"} : memref<2x2x3x4xf16>, memref<4x3x4xf16>
    amprt.call "attention"(%q, %k, %v, %y) {counts = array<i64: 1, 1, 1, 0, 1, 0>, k_trans = 0 : i32, node = "sm", nviews = 0 : i64, scale = 1.000000e+00 : f32, views = array<i64>} : memref<4x3x4xf16>, memref<4x3x4xf16>, memref<4x3x4xf16>, memref<4x3x4xf16>
    return %y, %r : memref<4x3x4xf16>, memref<2x2x3x4xf16>
  }
}

// -----

// y moved into dy by identities (a graph can do it): the moves fold once,
// into y's view (attention writes dy's buffer, which is y), and dy reads
// that buffer; no move is folded into two operands.
// CHECK-LABEL: func.func @ydy
// CHECK-NOT: amprt.call "identity"
// CHECK: amprt.call "attention"(%arg0, %arg1, %arg2, %[[Y:[^,]*]],
// CHECK: amprt.call "attention_grad"(%arg0, %arg1, %arg2, %[[Y]], %{{[^,]*}}, %[[Y]],
module {
  func.func @ydy(%q: memref<2x3x4xf16>, %k: memref<2x3x4xf16>, %v: memref<2x3x4xf16>) -> (memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>) attributes {amprt.unplanned} {
    %lse = memref.alloc() {amprt.role = "activations"} : memref<2x3xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x3x4xf16>
    %a = memref.alloc() {amprt.role = "activations"} : memref<2x3x4xf16>
    %dy = memref.alloc() {amprt.role = "gradients"} : memref<2x3x4xf16>
    %dq = memref.alloc() {amprt.role = "gradients"} : memref<2x3x4xf16>
    %dk = memref.alloc() {amprt.role = "gradients"} : memref<2x3x4xf16>
    %dv = memref.alloc() {amprt.role = "gradients"} : memref<2x3x4xf16>
    amprt.call "attention"(%q, %k, %v, %y, %lse) {counts = array<i64: 1, 1, 1, 0, 1, 1>, k_trans = 0 : i32, node = "sm", nviews = 0 : i64, scale = 5.000000e-01 : f32, views = array<i64>} : memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3xf32>
    amprt.call "identity"(%y, %a) {counts = array<i64: 1, 1>, node = "i1"} : memref<2x3x4xf16>, memref<2x3x4xf16>
    amprt.call "identity"(%a, %dy) {counts = array<i64: 1, 1>, node = "i2"} : memref<2x3x4xf16>, memref<2x3x4xf16>
    amprt.call "attention_grad"(%q, %k, %v, %y, %lse, %dy, %dq, %dk, %dv) {counts = array<i64: 1, 1, 1, 0, 1, 1, 1, 1, 1, 1>, k_trans = 0 : i32, node = "smg", nviews = 0 : i64, scale = 5.000000e-01 : f32, views = array<i64>} : memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3xf32>, memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>
    return %dq, %dk, %dv : memref<2x3x4xf16>, memref<2x3x4xf16>, memref<2x3x4xf16>
  }
}
