// RUN: amp-opt %s --auto-mixed-precision="report=%t.json" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

// Nodes with subgraphs (If/Loop/Scan) and the nodes inside them are left
// fp32: an fp16 value captured by a subgraph gets a cast to f32 in the outer
// graph, and the If result is cast to fp16 for the next allow op.

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}, %c: tensor<i1> {train.name = "c"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = "train.If"(%c) ({
      %e = train.Relu(%0) {train.name = "else_relu", train.outputs = ["e0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
      train.return %e : tensor<4x4xf32>
    }, {
      %t = train.MatMul(%0, %0) {train.name = "then_mm", train.outputs = ["t0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      train.return %t : tensor<4x4xf32>
    }) {train.name = "if", train.outputs = ["v1"]} : (tensor<i1>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %1) {train.name = "mm2", train.outputs = ["v2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}

// CHECK: %[[MM:.*]] = MatMul({{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[UP:.*]] = Cast(%[[MM]]) {to = 1 : i64, train.name = "mm_CastToFp32", train.outputs = ["v0_fp32"]}
// CHECK-NEXT: %[[IF:.*]] = "train.If"
// CHECK-NEXT: train.Relu(%[[UP]]) {{.*}} -> tensor<4x4xf32>
// CHECK: train.MatMul(%[[UP]], %[[UP]]) {{.*}} -> tensor<4x4xf32>
// CHECK: }) {train.name = "if", train.outputs = ["v1"]} : (tensor<i1>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[DOWN:.*]] = Cast(%[[IF]]) {to = 10 : i64
// CHECK-NEXT: MatMul(%[[DOWN]], %[[DOWN]]) {{.*}} -> tensor<4x4xf16>

// REPORT: "name": "if",
// REPORT: "reason": "has subgraphs: treated as fp32"
// REPORT: "name": "else_relu",
// REPORT: "reason": "inside a subgraph: treated as fp32"
