// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s
// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=keep-values=true | FileCheck %s --check-prefix=KEEP

// An elementwise output written over an input read for the last time:
// the two share their arena offset.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = memref.view %alloc[%c[[OFF:[0-9]+]]][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<4x4xf32>
// CHECK: %[[B:.*]] = memref.view %alloc[%c[[OFF]]_{{[0-9]+}}][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<4x4xf32>
// CHECK: amprt.call "relu"(%arg0, %[[A]])
// CHECK: amprt.call "add"(%[[A]], %arg0, %[[B]])
// With keep-values the relu's output stays: the add writes a place of its
// own (two 64-byte buffers).
// KEEP-LABEL: func.func @main
// KEEP-SAME: amprt.arena_bytes = 128 : i64
module {
  train.graph @main(%a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %r = Relu(%a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %y = Add(%r, %a) {train.name = "y", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %y : tensor<4x4xf32>
  }
}

// -----

// Not reused: an input read again later (relu's output, by the add): the
// sigmoid's output gets memory of its own, and the add then writes over
// one of its two dying inputs: two 64-byte buffers in all (three with
// keep-values).
// CHECK-LABEL: func.func @main
// CHECK-SAME: amprt.arena_bytes = 128 : i64
// KEEP-LABEL: func.func @main
// KEEP-SAME: amprt.arena_bytes = 192 : i64
module {
  train.graph @main(%a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<4x4xf32> {train.name = "z"}) {
    %r = Relu(%a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %y = Sigmoid(%r) {train.name = "y", train.outputs = ["y"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %z = Add(%r, %y) {train.name = "z", train.outputs = ["z"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %z : tensor<4x4xf32>
  }
}
