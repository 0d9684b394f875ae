// RUN: amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s

// Pass 2: deny paint flows forward through clear and infer ops only along
// paths that end at another deny/infer op. Grappler's design example
//   deny -> infer -> clear -> infer -> clear -> allow -> infer
// becomes deny, deny, deny, deny, (clear: fp16 by pass 5), allow, infer(fp32).

module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @chain
  train.graph @chain(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.Exp(%x) {train.name = "deny", train.outputs = ["v0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Sqrt(%0) {train.name = "inf1", train.outputs = ["v1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Relu(%1) {train.name = "clr1", train.outputs = ["v2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Sigmoid(%2) {train.name = "inf2", train.outputs = ["v3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.Relu(%3) {train.name = "clr2", train.outputs = ["v4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = train.MatMul(%4, %4) {train.name = "mm", train.outputs = ["v5"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = train.Tanh(%5) {train.name = "inf3", train.outputs = ["v6"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %6 : tensor<4x4xf32>
  }
  // CHECK: Sqrt({{.*}}"inf1"{{.*}} -> tensor<4x4xf32>
  // CHECK: Relu({{.*}}"clr1"{{.*}} -> tensor<4x4xf32>
  // CHECK: Sigmoid({{.*}}"inf2"{{.*}} -> tensor<4x4xf32>
  // CHECK: Cast({{.*}}) {to = 10 : i64, train.name = "inf2_CastToFp16"
  // CHECK: Relu({{.*}}"clr2"{{.*}} -> tensor<4x4xf16>
  // CHECK: MatMul({{.*}}"mm"{{.*}} -> tensor<4x4xf16>
  // CHECK: Cast({{.*}}) {to = 1 : i64, train.name = "mm_CastToFp32"
  // CHECK: Tanh({{.*}}"inf3"{{.*}} -> tensor<4x4xf32>

  // A clear op after a deny op that leads only to an allow op is not
  // denied: it becomes fp16.
  // CHECK-LABEL: train.graph @dead_end
  train.graph @dead_end(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.Exp(%x) {train.name = "deny", train.outputs = ["v0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "clr", train.outputs = ["v1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %1) {train.name = "mm", train.outputs = ["v2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
  // CHECK: Exp({{.*}} -> tensor<4x4xf32>
  // CHECK: Cast({{.*}}) {to = 10 : i64, train.name = "deny_CastToFp16"
  // CHECK: Relu({{.*}}"clr"{{.*}} -> tensor<4x4xf16>
  // CHECK: MatMul({{.*}} -> tensor<4x4xf16>
  // CHECK: Cast({{.*}}) {to = 1 : i64

  // Deny does not flow backwards: the clear op before the deny op follows
  // the allow op that feeds it.
  // CHECK-LABEL: train.graph @no_backward
  train.graph @no_backward(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "clr", train.outputs = ["v1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Exp(%1) {train.name = "deny", train.outputs = ["v2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
  // CHECK: MatMul({{.*}} -> tensor<4x4xf16>
  // CHECK: Relu({{.*}}"clr"{{.*}} -> tensor<4x4xf16>
  // CHECK: Cast({{.*}}) {to = 1 : i64, train.name = "clr_CastToFp32"
  // CHECK: Exp({{.*}} -> tensor<4x4xf32>
}
