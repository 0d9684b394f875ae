// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s
// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s --check-prefix=ORDER

// Three large temporaries, each reduced to a small one at the end of the
// graph (as ORT's gradient graphs defer weight-gradient GEMMs and bias
// ReduceSums to the end): scheduled, each reduction follows its relu and
// one 16 KiB buffer is alive at a time; in graph order, all three are.
// CHECK-LABEL: func.func @main
// CHECK-SAME: amprt.arena_bytes = 16576 : i64
// CHECK: amprt.call "relu"(%arg{{[0-2]}}, %[[A:[^)]*]])
// CHECK-NEXT: amprt.call "reduce_sum"(%[[A]],
// CHECK-NEXT: amprt.call "relu"(%arg{{[0-2]}}, %[[B:[^)]*]])
// CHECK-NEXT: amprt.call "reduce_sum"(%[[B]],
// CHECK-NEXT: amprt.call "relu"(%arg{{[0-2]}}, %[[C:[^)]*]])
// CHECK-NEXT: amprt.call "reduce_sum"(%[[C]],
// ORDER-LABEL: func.func @main
// ORDER-SAME: amprt.arena_bytes = 49216 : i64
// ORDER-COUNT-3: amprt.call "relu"
// ORDER-COUNT-3: amprt.call "reduce_sum"
module {
  train.graph @main(%x: tensor<64x64xf32> {train.name = "x"}, %y: tensor<64x64xf32> {train.name = "y"}, %z: tensor<64x64xf32> {train.name = "z"}) -> (tensor<f32> {train.name = "s0"}, tensor<f32> {train.name = "s1"}, tensor<f32> {train.name = "s2"}) {
    %none = train.none
    %a0 = Relu(%x) {train.name = "a0", train.outputs = ["a0"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %a1 = Relu(%y) {train.name = "a1", train.outputs = ["a1"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %a2 = Relu(%z) {train.name = "a2", train.outputs = ["a2"]} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    %s0 = ReduceSum(%a0, %none) {keepdims = 0 : i64, train.name = "s0", train.outputs = ["s0"]} : (tensor<64x64xf32>, none) -> tensor<f32>
    %s1 = ReduceSum(%a1, %none) {keepdims = 0 : i64, train.name = "s1", train.outputs = ["s1"]} : (tensor<64x64xf32>, none) -> tensor<f32>
    %s2 = ReduceSum(%a2, %none) {keepdims = 0 : i64, train.name = "s2", train.outputs = ["s2"]} : (tensor<64x64xf32>, none) -> tensor<f32>
    train.return %s0, %s1, %s2 : tensor<f32>, tensor<f32>, tensor<f32>
  }
}
