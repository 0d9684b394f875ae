// RUN: amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s

// Regression (found by test/python/amp_property.py): a port whose element
// type the importer could not tell (here a Constant without value_info,
// imported as !train.unknown) was ignored when deciding whether a vertex is
// f32, so Sub became fp16 with an f32 operand and no cast (onnx.checker:
// "B has inconsistent type tensor(float)"; onnxruntime: "Type parameter (T)
// bound to different types"). A vertex with a port of unknown type is not a
// candidate: Sub stays f32 and its fp16 input is cast back.

module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @main
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %w = train.initializer "w" {value = dense<0.5> : tensor<4x4xf32>} : tensor<4x4xf32>
    // CHECK: %[[M1:.*]] = MatMul({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[M1C:.*]] = Cast(%[[M1]]) {to = 1 : i64
    %0 = train.MatMul(%x, %w) {train.name = "mm1", train.outputs = ["a"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: %[[C:.*]] = Constant() {{.*}} -> !train.unknown
    %c = train.Constant() {value = dense<1.0> : tensor<4x4xf32>, train.name = "c", train.outputs = ["c"]} : () -> !train.unknown
    // CHECK-NEXT: %[[S:.*]] = Sub(%[[M1C]], %[[C]]) {{.*}} : (tensor<4x4xf32>, !train.unknown) -> tensor<4x4xf32>
    %1 = train.Sub(%0, %c) {train.name = "sub", train.outputs = ["b"]} : (tensor<4x4xf32>, !train.unknown) -> tensor<4x4xf32>
    // CHECK: %[[SC:.*]] = Cast(%[[S]]) {to = 10 : i64
    // CHECK: MatMul(%[[SC]], {{.*}}) {{.*}} -> tensor<4x4xf16>
    %2 = train.MatMul(%1, %w) {train.name = "mm2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
