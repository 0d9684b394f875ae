// RUN: amp-opt %s --auto-mixed-precision 2>/dev/null | FileCheck %s

// ScatterND and ScatterElements are on the infer list: a scatter between
// Tensor Core ops follows them into fp16, data, updates and result together
// (one type constraint T), the i64 indices untouched; a scatter whose data
// comes from a deny op (Exp) stays fp32.

module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}, %y: tensor<2x4xf32> {train.name = "y"}, %i: tensor<2x1xi64> {train.name = "i"}, %j: tensor<2x4xi64> {train.name = "j"}) -> (tensor<4x4xf32> {train.name = "out"}, tensor<4x4xf32> {train.name = "out2"}, tensor<4x4xf32> {train.name = "out3"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm1", train.outputs = ["m1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %u = train.MatMul(%y, %x) {train.name = "mm2", train.outputs = ["u"]} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %1 = train.ScatterND(%0, %i, %u) {reduction = "add", train.name = "snd", train.outputs = ["s1"]} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %x) {train.name = "mm3", train.outputs = ["m3"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %e = train.Exp(%x) {train.name = "ex", train.outputs = ["e"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.ScatterND(%e, %i, %u) {train.name = "snd2", train.outputs = ["s2"]} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %4 = train.ScatterElements(%0, %j, %u) {axis = 1 : i64, train.name = "se", train.outputs = ["s3"]} : (tensor<4x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %5 = train.MatMul(%4, %x) {train.name = "mm4", train.outputs = ["m4"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2, %3, %5 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// CHECK: %[[M1:.*]] = MatMul({{.*}}) {train.name = "mm1"{{.*}} -> tensor<4x4xf16>
// CHECK: %[[U:.*]] = MatMul({{.*}}) {train.name = "mm2"{{.*}} -> tensor<2x4xf16>
// CHECK: %[[U32:.*]] = Cast(%[[U]]) {to = 1 : i64
// CHECK: %[[S:.*]] = ScatterND(%[[M1]], %arg2, %[[U]]) {reduction = "add", train.name = "snd"{{.*}} : (tensor<4x4xf16>, tensor<2x1xi64>, tensor<2x4xf16>) -> tensor<4x4xf16>
// CHECK: MatMul(%[[S]], {{.*}}) {train.name = "mm3"
// CHECK: %[[E:.*]] = Exp(%arg0)
// CHECK: ScatterND(%[[E]], %arg2, %[[U32]]) {train.name = "snd2"{{.*}} : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[SE:.*]] = ScatterElements(%[[M1]], %arg3, %[[U]]) {axis = 1 : i64, train.name = "se"{{.*}} : (tensor<4x4xf16>, tensor<2x4xi64>, tensor<2x4xf16>) -> tensor<4x4xf16>
// CHECK: MatMul(%[[SE]], {{.*}}) {train.name = "mm4"{{.*}} -> tensor<4x4xf16>
