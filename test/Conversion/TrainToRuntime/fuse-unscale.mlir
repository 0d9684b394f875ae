// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// The loss-scaling pass's unscale, check and gate (LossScaling.cpp) with no
// unscaled copy: the check reads the f16 gradient itself (its cast to f32
// is folded) and the f32 one, with the factor; the gate read only by the
// accumulator becomes the accumulation; the other gate, a graph output,
// is an unscale_gate.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:[^:]*]]: memref<4x3xf16> {{.*}}, %[[B:[^:]*]]: memref<5xf32> {{.*}}, %[[S:[^:]*]]: memref<f32> {{.*}}, %[[BUF:[^:]*]]: memref<4x3xf32> {{.*}}, %[[RESET:[^:]*]]: memref<1xi1>
// CHECK-NOT: "cast"
// CHECK-NOT: "mul"
// CHECK: amprt.call "relu"(%[[A]], %[[GA:[^)]*]])
// CHECK: amprt.call "relu"(%[[B]], %[[GB:[^)]*]])
// CHECK: amprt.call "reciprocal"(%[[S]], %[[INV:[^)]*]])
// CHECK: amprt.call "multi_tensor_unscale_check"(%[[GA]], %[[GB]], %[[INV]], %[[F:[^)]*]]) {counts = array<i64: 2, 1, 1>, n = 2 : i64, node = "found_inf", reset = 1 : i32} : memref<4x3xf16>, memref<5xf32>, memref<f32>, memref<i1>
// CHECK: amprt.call "logical_not"(%[[F]], %[[NAN:[^)]*]])
// CHECK: amprt.call "logical_not"(%[[NAN]], %[[OK:[^)]*]])
// CHECK-NOT: "where"
// CHECK: amprt.call "unscale_gate"(%[[GB]], %[[INV]], %[[OK]], %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1>, node = "gate_b"} : memref<5xf32>, memref<f32>, memref<i1>, memref<5xf32>
// CHECK-NOT: "inplace_accumulate"
// CHECK: amprt.call "unscale_gate_accumulate"(%[[BUF]], %[[GA]], %[[INV]], %[[OK]], %[[RESET]], %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "acc"} : memref<4x3xf32>, memref<4x3xf16>, memref<f32>, memref<i1>, memref<1xi1>, memref<1xi1>
// CHECK: return
module {
  train.graph @main(%a: tensor<4x3xf16> {train.name = "a"}, %b: tensor<5xf32> {train.name = "b"}, %scale: tensor<f32> {train.name = "scale"}, %buf: tensor<4x3xf32> {train.name = "buf"}, %reset: tensor<1xi1> {train.name = "reset"}) -> (tensor<1xi1> {train.name = "acc_out"}, tensor<5xf32> {train.name = "b_grad"}, tensor<i1> {train.name = "ok"}) {
    %z = initializer "zero" {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %n = none
    %ga = Relu(%a) {train.name = "ga", train.outputs = ["ga"]} : (tensor<4x3xf16>) -> tensor<4x3xf16>
    %gb = Relu(%b) {train.name = "gb", train.outputs = ["gb"]} : (tensor<5xf32>) -> tensor<5xf32>
    %inv = Reciprocal(%scale) {train.name = "inv", train.outputs = ["inv"]} : (tensor<f32>) -> tensor<f32>
    %ca = Cast(%ga) {to = 1 : i64, train.name = "ca", train.outputs = ["ca"]} : (tensor<4x3xf16>) -> tensor<4x3xf32>
    %ua = Mul(%ca, %inv) {train.name = "ua", train.outputs = ["ua"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %ub = Mul(%inv, %gb) {train.name = "ub", train.outputs = ["ub"]} : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
    %ma = Mul(%ua, %z) {train.name = "ma", train.outputs = ["ma"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %mb = Mul(%ub, %z) {train.name = "mb", train.outputs = ["mb"]} : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
    %sa = ReduceSum(%ma, %n) {keepdims = 0 : i64, train.name = "sa", train.outputs = ["sa"]} : (tensor<4x3xf32>, none) -> tensor<f32>
    %sb = ReduceSum(%mb, %n) {keepdims = 0 : i64, train.name = "sb", train.outputs = ["sb"]} : (tensor<5xf32>, none) -> tensor<f32>
    %s = Sum(%sa, %sb) {train.name = "total", train.outputs = ["total"]} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %nan = IsNaN(%s) {train.name = "found_inf", train.outputs = ["nan"]} : (tensor<f32>) -> tensor<i1>
    %ok = Not(%nan) {train.name = "all_finite", train.outputs = ["ok"]} : (tensor<i1>) -> tensor<i1>
    %wa = Where(%ok, %ua, %z) {train.name = "gate_a", train.outputs = ["wa"]} : (tensor<i1>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %wb = Where(%ok, %ub, %z) {train.name = "gate_b", train.outputs = ["wb"]} : (tensor<i1>, tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
    %f, %none = train.ms.InPlaceAccumulatorV2(%buf, %wa, %reset) {train.name = "acc", train.outputs = ["acc_out"]} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
    train.return %f, %wb, %ok : tensor<1xi1>, tensor<5xf32>, tensor<i1>
  }
}

// -----

// Left as written: an unscaled value that is also a graph output (its
// multiply stays, and so do its check and gate), and one gated with a "zero"
// of -0 (Where gives -0 where the fused gate would give +0). The third
// gradient is fused; the checks share the flag (reset, then AND).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:[^:]*]]: memref<4x3xf32> {{.*}}, %[[B:[^:]*]]: memref<5xf32> {{.*}}, %[[C:[^:]*]]: memref<6xf32> {{.*}}, %[[INV:[^:]*]]: memref<f32>
// CHECK: amprt.call "mul"(%[[A]], %[[INV]], %[[UA:[^)]*]]) {{.*}}node = "ua"
// CHECK: amprt.call "mul"(%[[B]], %[[INV]], %[[UB:[^)]*]]) {{.*}}node = "ub"
// CHECK-NOT: "mul"
// CHECK: amprt.call "multi_tensor_all_finite"(%[[UA]], %[[UB]], %[[F:[^)]*]]) {counts = array<i64: 2, 1>, n = 2 : i64, node = "found_inf", reset = 1 : i32}
// CHECK-NEXT: amprt.call "multi_tensor_unscale_check"(%[[C]], %[[INV]], %[[F]]) {counts = array<i64: 1, 1, 1>, n = 1 : i64, node = "found_inf", reset = 0 : i32}
// CHECK: amprt.call "where"(%{{[^,]*}}, %[[UA]], {{.*}}node = "gate_a"
// CHECK: amprt.call "where"(%{{[^,]*}}, %[[UB]], {{.*}}node = "gate_b"
// CHECK: amprt.call "unscale_gate"(%[[C]], %[[INV]], {{.*}}node = "gate_c"
// CHECK: return
module {
  train.graph @main(%a: tensor<4x3xf32> {train.name = "a"}, %b: tensor<5xf32> {train.name = "b"}, %c: tensor<6xf32> {train.name = "c"}, %inv: tensor<f32> {train.name = "inv"}) -> (tensor<4x3xf32> {train.name = "ua"}, tensor<4x3xf32> {train.name = "wa"}, tensor<5xf32> {train.name = "wb"}, tensor<6xf32> {train.name = "wc"}) {
    %z = initializer "zero" {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %mz = initializer "minus_zero" {value = dense<-0.000000e+00> : tensor<f32>} : tensor<f32>
    %n = none
    %ua = Mul(%a, %inv) {train.name = "ua", train.outputs = ["ua"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %ub = Mul(%b, %inv) {train.name = "ub", train.outputs = ["ub"]} : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
    %uc = Mul(%c, %inv) {train.name = "uc", train.outputs = ["uc"]} : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    %ma = Mul(%ua, %z) {train.name = "ma", train.outputs = ["ma"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %mb = Mul(%ub, %z) {train.name = "mb", train.outputs = ["mb"]} : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
    %mc = Mul(%uc, %z) {train.name = "mc", train.outputs = ["mc"]} : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    %sa = ReduceSum(%ma, %n) {keepdims = 0 : i64, train.name = "sa", train.outputs = ["sa"]} : (tensor<4x3xf32>, none) -> tensor<f32>
    %sb = ReduceSum(%mb, %n) {keepdims = 0 : i64, train.name = "sb", train.outputs = ["sb"]} : (tensor<5xf32>, none) -> tensor<f32>
    %sc = ReduceSum(%mc, %n) {keepdims = 0 : i64, train.name = "sc", train.outputs = ["sc"]} : (tensor<6xf32>, none) -> tensor<f32>
    %s = Sum(%sa, %sb, %sc) {train.name = "total", train.outputs = ["total"]} : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<f32>
    %nan = IsNaN(%s) {train.name = "found_inf", train.outputs = ["nan"]} : (tensor<f32>) -> tensor<i1>
    %ok = Not(%nan) {train.name = "all_finite", train.outputs = ["ok"]} : (tensor<i1>) -> tensor<i1>
    %wa = Where(%ok, %ua, %z) {train.name = "gate_a", train.outputs = ["wa"]} : (tensor<i1>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %wb = Where(%ok, %ub, %mz) {train.name = "gate_b", train.outputs = ["wb"]} : (tensor<i1>, tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
    %wc = Where(%ok, %uc, %z) {train.name = "gate_c", train.outputs = ["wc"]} : (tensor<i1>, tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
    train.return %ua, %wa, %wb, %wc : tensor<4x3xf32>, tensor<4x3xf32>, tensor<5xf32>, tensor<6xf32>
  }
}
