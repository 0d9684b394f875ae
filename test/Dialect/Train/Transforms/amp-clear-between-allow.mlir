// RUN: amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s

// Pass 3: clear and infer ops on a path allow -> ... -> allow become fp16.
// An infer op next to a single allow op stays fp32 (fp16 mode).

module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @between
  train.graph @between(%x: tensor<4x4xf32> {train.name = "x"}, %y: tensor<4x4xf32> {train.name = "y"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm1", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "clr", train.outputs = ["v1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Add(%1, %y) {train.name = "add", train.outputs = ["v2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.MatMul(%2, %2) {train.name = "mm2", train.outputs = ["v3"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.Sigmoid(%3) {train.name = "after", train.outputs = ["v4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %4 : tensor<4x4xf32>
  }
  // CHECK: MatMul({{.*}}"mm1"{{.*}} -> tensor<4x4xf16>
  // CHECK: Relu({{.*}}"clr"{{.*}} -> tensor<4x4xf16>
  // CHECK: Add({{.*}}"add"{{.*}} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  // CHECK: MatMul({{.*}}"mm2"{{.*}} -> tensor<4x4xf16>
  // CHECK: Cast({{.*}}) {to = 1 : i64, train.name = "mm2_CastToFp32"
  // CHECK: Sigmoid({{.*}}"after"{{.*}} -> tensor<4x4xf32>

  // An infer op between two allow ops that is fed by a deny op is painted
  // deny by pass 2 (deny flows into infer ops), so pass 3 skips it.
  // CHECK-LABEL: train.graph @deny_fanin
  train.graph @deny_fanin(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm1", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Exp(%x) {train.name = "exp", train.outputs = ["v1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Mul(%0, %1) {train.name = "mul", train.outputs = ["v2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.MatMul(%2, %2) {train.name = "mm2", train.outputs = ["v3"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %3 : tensor<4x4xf32>
  }
  // CHECK: MatMul({{.*}}"mm1"{{.*}} -> tensor<4x4xf16>
  // CHECK: Cast({{.*}}) {to = 1 : i64, train.name = "mm1_CastToFp32"
  // CHECK: Exp({{.*}} -> tensor<4x4xf32>
  // CHECK: Mul({{.*}}"mul"{{.*}} -> tensor<4x4xf32>
  // CHECK: Cast({{.*}}) {to = 10 : i64, train.name = "mul_CastToFp16"
  // CHECK: MatMul({{.*}}"mm2"{{.*}} -> tensor<4x4xf16>
}
