// RUN: amp-opt %s --split-input-file --amprt-plan-buffers=schedule=false 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.err
// RUN: amp-opt %s --split-input-file --amprt-fuse --amprt-plan-buffers 2>/dev/null | FileCheck %s --check-prefix=SHARED

// Liveness over the call order and first fit in one 64-byte aligned arena:
// %a (256 B) dies at the cast, so %c (256 B), made at the next call, takes
// its offset; %b (128 B) lives on through %br, the reshape's output, which
// is a view of it (the reshape call goes). The split is the peak's bytes
// by role (at the matmul: %b and %m, activations; %c, a gradient).
// REMARK: remark: graph @main: arena (peak activation memory) 512 bytes
// CHECK-LABEL: func.func @main
// CHECK-SAME: amprt.arena_bytes = 512 : i64, amprt.arena_split = {activations = 256 : i64, gradients = 256 : i64, weight_copies = 0 : i64, workspace = 0 : i64}
// CHECK-NOT: amprt.unplanned
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<512xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][]{{( \{[^}]*\})?}} : memref<512xi8> to memref<64xf32>
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[C256]]][]{{( \{[^}]*\})?}} : memref<512xi8> to memref<64xf16>
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[C0B]]][]{{( \{[^}]*\})?}} : memref<512xi8> to memref<64xf32>
// CHECK: %[[C256B:.*]] = arith.constant 256 : index
// CHECK: %[[BR:.*]] = memref.view %[[ARENA]][%[[C256B]]][]{{( \{[^}]*\})?}} : memref<512xi8> to memref<8x8xf16>
// CHECK: %[[C384:.*]] = arith.constant 384 : index
// CHECK: %[[M:.*]] = memref.view %[[ARENA]][%[[C384]]][]{{( \{[^}]*\})?}} : memref<512xi8> to memref<8x8xf16>
// CHECK: amprt.call "neg"(%arg0, %[[A]])
// CHECK: amprt.call "cast"(%[[A]], %[[B]])
// CHECK: amprt.call "sum"(%arg0, %arg0, %[[C]])
// CHECK-NOT: "reshape"
// CHECK: amprt.call "matmul"(%[[BR]], %arg1, %[[M]])
// CHECK: return %[[C]], %[[M]]
module {
  func.func @main(%x: memref<64xf32> {amprt.name = "x"}, %s: memref<8x8xf16> {amprt.name = "s"}) -> (memref<64xf32> {amprt.name = "c"}, memref<8x8xf16> {amprt.name = "m"}) attributes {amprt.unplanned} {
    %a = memref.alloc() {amprt.role = "activations"} : memref<64xf32>
    %b = memref.alloc() {amprt.role = "activations"} : memref<64xf16>
    %c = memref.alloc() {amprt.role = "gradients"} : memref<64xf32>
    %br = memref.alloc() {amprt.role = "activations"} : memref<8x8xf16>
    %m = memref.alloc() {amprt.role = "activations"} : memref<8x8xf16>
    amprt.call "neg"(%x, %a) {counts = array<i64: 1, 1>, node = "n"} : memref<64xf32>, memref<64xf32>
    amprt.call "cast"(%a, %b) {counts = array<i64: 1, 1>, node = "h"} : memref<64xf32>, memref<64xf16>
    amprt.call "sum"(%x, %x, %c) {counts = array<i64: 2, 1>, n = 2 : i64, node = "s"} : memref<64xf32>, memref<64xf32>, memref<64xf32>
    amprt.call "reshape"(%b, %br) {counts = array<i64: 1, 1>, node = "r"} : memref<64xf16>, memref<8x8xf16>
    amprt.call "matmul"(%br, %s, %m) {counts = array<i64: 1, 1, 1>, node = "mm"} : memref<8x8xf16>, memref<8x8xf16>, memref<8x8xf16>
    return %c, %m : memref<64xf32>, memref<8x8xf16>
  }
}

// -----

// A constant two functions read stays while the other still names it, a
// second read of it in one function is one buffer (one global), and a call
// without a
// `node` is read as node "" (no crash in the rewrites that name calls).
// SHARED: memref.global "private" constant @one : memref<4xf32>
// SHARED-NOT: a_const1
// SHARED-LABEL: func.func @a
// SHARED: %[[C:.*]] = memref.get_global @a_const0
// SHARED: amprt.call "add"(%[[C]], %[[C]], {{.*}}node = ""
// SHARED-LABEL: func.func @b
// SHARED: memref.get_global @one
module {
  memref.global "private" constant @one : memref<4xf32> = dense<1.0>
  func.func @a(%x: memref<4xf32> {amprt.name = "x"}) -> (memref<4xf32> {amprt.name = "y"}) attributes {amprt.unplanned} {
    %c = memref.get_global @one : memref<4xf32>
    %c2 = memref.get_global @one : memref<4xf32>
    %y = memref.alloc() {amprt.role = "activations"} : memref<4xf32>
    amprt.call "add"(%c, %c2, %y) {counts = array<i64: 1, 1, 1>} : memref<4xf32>, memref<4xf32>, memref<4xf32>
    return %y : memref<4xf32>
  }
  func.func @b(%y: memref<4xf32>) {
    %c = memref.get_global @one : memref<4xf32>
    amprt.call "add"(%c, %c, %y) {counts = array<i64: 1, 1, 1>, node = "b"} : memref<4xf32>, memref<4xf32>, memref<4xf32>
    return
  }
}
