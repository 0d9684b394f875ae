// RUN: amp-opt %s --auto-mixed-precision="mode=bf16" 2>%t.err | FileCheck %s --check-prefix=BF16
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=FP16

// Pass 4 (bf16 only): an infer op with an allow fan-in and no deny fan-in
// follows the allow op (in graph order, so chains of infer ops follow too);
// then pass 5 carries bf16 through the clear op.
// In bf16 mode ReduceSum is infer (deny in fp16 mode).

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}, %b: tensor<4x4xf32> {train.name = "b"}, %axes: tensor<1xi64> {train.name = "axes"}) -> (tensor<4x4xf32> {train.name = "out"}, tensor<4xf32> {train.name = "sum"}, tensor<4x4xf32> {train.name = "out2"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Add(%0, %b) {train.name = "add", train.outputs = ["v1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Relu(%1) {train.name = "relu", train.outputs = ["v2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.ReduceSum(%1, %axes) {keepdims = 0 : i64, train.name = "rs", train.outputs = ["v3"]} : (tensor<4x4xf32>, tensor<1xi64>) -> tensor<4xf32>
    %4 = train.Exp(%x) {train.name = "exp", train.outputs = ["v4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = train.Sub(%0, %4) {train.name = "sub", train.outputs = ["v5"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2, %3, %5 : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
  }
}

// BF16: Cast(%arg0) {to = 16 : i64, train.name = "x_CastToBf16", train.outputs = ["x_bf16"]}
// BF16: Cast(%arg1) {to = 16 : i64, train.name = "b_CastToBf16", train.outputs = ["b_bf16"]}
// BF16: MatMul({{.*}} -> tensor<4x4xbf16>
// BF16: %[[A:.*]] = Add({{.*}} : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
// BF16: %[[R:.*]] = Relu({{.*}} -> tensor<4x4xbf16>
// BF16: %[[R32:.*]] = Cast(%[[R]]) {to = 1 : i64, train.name = "relu_CastToFp32"
// BF16: %[[RS:.*]] = ReduceSum(%[[A]], %arg2) {{.*}} : (tensor<4x4xbf16>, tensor<1xi64>) -> tensor<4xbf16>
// BF16: %[[RS32:.*]] = Cast(%[[RS]]) {to = 1 : i64
// Sub has a deny fan-in (Exp): stays fp32.
// BF16: %[[SUB:.*]] = Sub({{.*}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// BF16: return %[[R32]], %[[RS32]], %[[SUB]] : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>

// SUMMARY: Total BF16 Cast ops used (excluding Const and Variable casts): 0

// FP16: MatMul({{.*}} -> tensor<4x4xf16>
// FP16: Add({{.*}} -> tensor<4x4xf32>
// FP16: Relu({{.*}} -> tensor<4x4xf32>
// FP16: ReduceSum({{.*}} -> tensor<4xf32>
