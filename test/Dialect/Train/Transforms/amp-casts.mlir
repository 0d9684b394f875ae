// RUN: amp-opt %s --auto-mixed-precision 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err

// Casts: graph inputs, initializers and Constant nodes stay f32 with one
// cast each after them; one cast per (value, target type) however many
// consumers; fixed-type ports (Reshape's shape) and other constraints
// (Dropout's ratio T1) are never cast; the loss stays fp32; graph outputs
// get a cast back to f32, shared with other fp32 consumers.

module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @edges
  // CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {train.name = "x"}, %[[L:.*]]: tensor<4xi64> {train.name = "labels"})
  // CHECK-SAME: -> (tensor<f32> {train.name = "loss"}, tensor<4x4xf32> {train.name = "logits"})
  train.graph @edges(%x: tensor<4x4xf32> {train.name = "x"}, %labels: tensor<4xi64> {train.name = "labels"}) -> (tensor<f32> {train.name = "loss"}, tensor<4x4xf32> {train.name = "logits"}) {
    // CHECK: %[[XC:.*]] = Cast(%[[X]]) {to = 10 : i64, train.name = "x_CastToFp16", train.outputs = ["x_fp16"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    // CHECK-NOT: Cast(%[[X]])
    %none = train.none
    // CHECK: %[[W:.*]] = initializer "w" {{.*}} : tensor<4x4xf32>
    // CHECK-NEXT: %[[WC:.*]] = Cast(%[[W]]) {to = 10 : i64, train.name = "w_CastToFp16", train.outputs = ["w_fp16"]}
    %w = train.initializer "w" {value = dense<1.0> : tensor<4x4xf32>} : tensor<4x4xf32>
    // CHECK: %[[SHAPE:.*]] = initializer "shape"
    %shape = train.initializer "shape" {value = dense<[4, 4]> : tensor<2xi64>} : tensor<2xi64>
    // CHECK: %[[RATIO:.*]] = initializer "ratio" {{.*}} : tensor<f32>
    %ratio = train.initializer "ratio" {value = dense<0.1> : tensor<f32>} : tensor<f32>
    // CHECK: %[[C:.*]] = Constant() {{.*}} -> tensor<4x4xf32>
    // CHECK-NEXT: %[[CC:.*]] = Cast(%[[C]]) {to = 10 : i64, train.name = "const_CastToFp16", train.outputs = ["cst_fp16"]}
    %c = train.Constant() {value = dense<2.0> : tensor<4x4xf32>, train.name = "const", train.outputs = ["cst"]} : () -> tensor<4x4xf32>
    // CHECK: %[[M1:.*]] = MatMul(%[[XC]], %[[WC]]) {{.*}} -> tensor<4x4xf16>
    %0 = train.MatMul(%x, %w) {train.name = "mm1", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK: %[[M2:.*]] = MatMul(%[[XC]], %[[CC]]) {{.*}} -> tensor<4x4xf16>
    %1 = train.MatMul(%x, %c) {train.name = "mm2", train.outputs = ["v1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK: %[[R:.*]] = Reshape(%[[M1]], %[[SHAPE]]) {{.*}} : (tensor<4x4xf16>, tensor<2xi64>) -> tensor<4x4xf16>
    %2 = train.Reshape(%0, %shape) {train.name = "reshape", train.outputs = ["v2"]} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<4x4xf32>
    // CHECK: %[[D:.*]], %{{.*}} = Dropout(%[[R]], %[[RATIO]], %{{.*}}) {{.*}} : (tensor<4x4xf16>, tensor<f32>, none) -> (tensor<4x4xf16>, tensor<4x4xi1>)
    %3:2 = train.Dropout(%2, %ratio, %none) {train.name = "drop", train.outputs = ["v3", "mask"]} : (tensor<4x4xf32>, tensor<f32>, none) -> (tensor<4x4xf32>, tensor<4x4xi1>)
    // CHECK: %[[M3:.*]] = MatMul(%[[D]], %[[M2]]) {{.*}} -> tensor<4x4xf16>
    %4 = train.MatMul(%3#0, %1) {train.name = "mm3", train.outputs = ["v4"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: %[[M3C:.*]] = Cast(%[[M3]]) {to = 1 : i64, train.name = "mm3_CastToFp32", train.outputs = ["v4_fp32"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    // CHECK-NEXT: %[[LOSS:.*]], %{{.*}} = SoftmaxCrossEntropyLoss(%[[M3C]], %[[L]], %{{.*}}) {{.*}} : (tensor<4x4xf32>, tensor<4xi64>, none) -> (tensor<f32>, tensor<4x4xf32>)
    %5:2 = train.SoftmaxCrossEntropyLoss(%4, %labels, %none) {reduction = "mean", train.name = "loss", train.outputs = ["loss", "log_prob"]} : (tensor<4x4xf32>, tensor<4xi64>, none) -> (tensor<f32>, tensor<4x4xf32>)
    // CHECK-NEXT: return %[[LOSS]], %[[M3C]] : tensor<f32>, tensor<4x4xf32>
    train.return %5#0, %4 : tensor<f32>, tensor<4x4xf32>
  }

  // An existing Cast to f32 whose consumers are all fp16 is retargeted to
  // fp16 instead of getting a second cast.
  // CHECK-LABEL: train.graph @retarget
  train.graph @retarget(%x: tensor<4x4xf64> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    // CHECK: %[[C:.*]] = Cast(%{{.*}}) {to = 10 : i64, train.name = "cast", train.outputs = ["c"]} : (tensor<4x4xf64>) -> tensor<4x4xf16>
    // CHECK-NEXT: MatMul(%[[C]], %[[C]])
    %c = train.Cast(%x) {to = 1 : i64, train.name = "cast", train.outputs = ["c"]} : (tensor<4x4xf64>) -> tensor<4x4xf32>
    %0 = train.MatMul(%c, %c) {train.name = "mm", train.outputs = ["y0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0 : tensor<4x4xf32>
  }

  // Exact round trips fold: an fp16 value cast to f32 and back is the fp16
  // value itself.
  // CHECK-LABEL: train.graph @roundtrip
  // CHECK-SAME: (%[[H:.*]]: tensor<4x4xf16> {train.name = "h"}, %[[H2:.*]]: tensor<4x4xf16> {train.name = "h2"})
  train.graph @roundtrip(%h: tensor<4x4xf16> {train.name = "h"}, %h2: tensor<4x4xf16> {train.name = "h2"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}, tensor<4x4xf32> {train.name = "s"}) {
    // The cast feeding only fp16 consumers is retargeted to fp16 -> fp16 and removed.
    // CHECK-NOT: train.name = "up"
    %c = train.Cast(%h) {to = 1 : i64, train.name = "up", train.outputs = ["c"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    // CHECK: %[[M:.*]] = MatMul(%[[H]], %[[H]]) {{.*}} -> tensor<4x4xf16>
    %0 = train.MatMul(%c, %c) {train.name = "mm", train.outputs = ["y0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // A cast with an fp32 consumer stays; the fp16 consumer reads its input.
    // CHECK: %[[C2:.*]] = Cast(%[[H2]]) {to = 1 : i64, train.name = "up2"
    %c2 = train.Cast(%h2) {to = 1 : i64, train.name = "up2", train.outputs = ["c2"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    // CHECK: MatMul(%[[H2]], %[[H2]]) {{.*}} -> tensor<4x4xf16>
    %1 = train.MatMul(%c2, %c2) {train.name = "mm2", train.outputs = ["z0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK: Sigmoid(%[[C2]]) {{.*}} -> tensor<4x4xf32>
    %2 = train.Sigmoid(%c2) {train.name = "sig", train.outputs = ["s0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0, %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// Casts of graph inputs, initializers and Constant nodes do not count.
// SUMMARY: Total FP16 Cast ops used (excluding Const and Variable casts): 0
