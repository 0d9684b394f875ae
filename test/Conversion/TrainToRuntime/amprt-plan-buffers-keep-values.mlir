// RUN: amp-opt %s --amprt-plan-buffers="schedule=false keep-values=true" 2>/dev/null | FileCheck %s
// RUN: amp-opt %s --amprt-plan-buffers=schedule=false 2>/dev/null | FileCheck %s --check-prefix=SHARED

// keep-values (amp-run --compare-precision's fp32 run): every temporary
// that holds an ONNX value (amprt.value) keeps its own place to the end, so
// that it can be read after the run; a lowering's own intermediate (%w, no
// value) keeps its liveness. %a and %c (256 B each) no longer share an
// offset; %d, made after %w's last read, takes %w's place and keeps it.
// CHECK-LABEL: func.func @main
// CHECK-SAME: amprt.arena_bytes = 768 : i64
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: memref.view %{{.*}}[%[[C0]]][] {amprt.value = "a"} : memref<768xi8> to memref<64xf32>
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: memref.view %{{.*}}[%[[C256]]][] : memref<768xi8> to memref<64xf32>
// CHECK: %[[C512:.*]] = arith.constant 512 : index
// CHECK: memref.view %{{.*}}[%[[C512]]][] {amprt.value = "c"} : memref<768xi8> to memref<64xf32>
// CHECK: %[[C256B:.*]] = arith.constant 256 : index
// CHECK: memref.view %{{.*}}[%[[C256B]]][] {amprt.value = "d"} : memref<768xi8> to memref<64xf32>
// Without keep-values each elementwise output is written over its dying
// input: one place for all four, 256 B.
// SHARED-LABEL: func.func @main
// SHARED-SAME: amprt.arena_bytes = 256 : i64
module {
  func.func @main(%x: memref<64xf32> {amprt.name = "x"}) -> (memref<64xf32> {amprt.name = "d"}) attributes {amprt.unplanned} {
    %a = memref.alloc() {amprt.role = "activations", amprt.value = "a"} : memref<64xf32>
    %w = memref.alloc() {amprt.role = "workspace"} : memref<64xf32>
    %c = memref.alloc() {amprt.role = "activations", amprt.value = "c"} : memref<64xf32>
    %d = memref.alloc() {amprt.role = "activations", amprt.value = "d"} : memref<64xf32>
    amprt.call "neg"(%x, %a) {counts = array<i64: 1, 1>, node = "n"} : memref<64xf32>, memref<64xf32>
    amprt.call "neg"(%a, %w) {counts = array<i64: 1, 1>, node = "w"} : memref<64xf32>, memref<64xf32>
    amprt.call "neg"(%w, %c) {counts = array<i64: 1, 1>, node = "c"} : memref<64xf32>, memref<64xf32>
    amprt.call "add"(%c, %x, %d) {counts = array<i64: 1, 1, 1>, node = "d"} : memref<64xf32>, memref<64xf32>, memref<64xf32>
    return %d : memref<64xf32>
  }
}
