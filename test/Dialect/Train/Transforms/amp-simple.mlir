// RUN: amp-opt %s --auto-mixed-precision="report=%t.json" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

// Grappler's "Simple" worked example ported to ONNX ops:
//   Exp -> Relu -> Sqrt -> Relu -> MatMul -> Relu -> Log -> Relu -> unlisted -> Relu
// Pass 1 paints the MatMul; pass 2 paints Exp, clr1, infer1 deny (clr2 is not
// upstream of a deny/infer op); pass 5 paints clr2 and clr3 fp16; Log stops
// it. Two casts: infer1 -> clr2 (to fp16) and clr3 -> infer2 (to fp32).

module attributes {train.opset_import = [["", 17 : i64], ["my.domain", 1 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.Exp(%x) {train.name = "deny1", train.outputs = ["d1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Sqrt(%1) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Relu(%2) {train.name = "clr2", train.outputs = ["c2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.MatMul(%3, %3) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = train.Relu(%4) {train.name = "clr3", train.outputs = ["c3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = train.Log(%5) {train.name = "infer2", train.outputs = ["i2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %7 = train.Relu(%6) {train.name = "clr4", train.outputs = ["c4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %8 = "train.node"(%7, %7) <{attrs = {}, domain = "my.domain", graph_attrs = [], op_type = "SparseMatMul"}> {train.name = "deny2", train.outputs = ["d2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %9 = train.Relu(%8) {train.name = "clr5", train.outputs = ["c5"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %9 : tensor<4x4xf32>
  }
}

// CHECK: Exp({{.*}}) {train.name = "deny1"{{.*}} -> tensor<4x4xf32>
// CHECK: Relu({{.*}}) {train.name = "clr1"{{.*}} -> tensor<4x4xf32>
// CHECK: %[[I1:.*]] = Sqrt({{.*}}) {train.name = "infer1"{{.*}} -> tensor<4x4xf32>
// CHECK: %[[C:.*]] = Cast(%[[I1]]) {to = 10 : i64, train.name = "infer1_CastToFp16", train.outputs = ["i1_fp16"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
// CHECK: %[[C2:.*]] = Relu(%[[C]]) {train.name = "clr2"{{.*}} -> tensor<4x4xf16>
// CHECK: MatMul(%[[C2]], %[[C2]]) {train.name = "allow1"{{.*}} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK: %[[C3:.*]] = Relu({{.*}}) {train.name = "clr3"{{.*}} -> tensor<4x4xf16>
// CHECK: %[[B:.*]] = Cast(%[[C3]]) {to = 1 : i64, train.name = "clr3_CastToFp32", train.outputs = ["c3_fp32"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
// CHECK: Log(%[[B]]) {train.name = "infer2"{{.*}} -> tensor<4x4xf32>
// CHECK: Relu({{.*}}) {train.name = "clr4"{{.*}} -> tensor<4x4xf32>
// CHECK: "train.node"
// CHECK: Relu({{.*}}) {train.name = "clr5"{{.*}} -> tensor<4x4xf32>
// CHECK-NOT: Cast
// CHECK: return

// SUMMARY:      Automatic Mixed Precision Pass Summary:
// SUMMARY-NEXT: Total processable nodes: 10
// SUMMARY-NEXT: Recognized nodes available for conversion: 9
// SUMMARY-NEXT: Total nodes converted: 3
// SUMMARY-NEXT: Total FP16 Cast ops used (excluding Const and Variable casts): 1
// SUMMARY-NEXT: Allowlisted nodes converted: 1
// SUMMARY-NEXT: Denylisted nodes blocking conversion: 1
// SUMMARY-NEXT: Nodes blocked from conversion by denylisted nodes: 2

// REPORT: "casts_inserted": 2,
// REPORT: "mode": "fp16",
// REPORT: "nodes": [
// REPORT:      "list": "deny",
// REPORT-NEXT: "name": "deny1",
// REPORT-NEXT: "op_type": "Exp",
// REPORT-NEXT: "precision": "fp32",
// REPORT-NEXT: "reason": "deny: Exp"
// REPORT:      "name": "clr1",
// REPORT:      "reason": "blocked by deny node deny1"
// REPORT:      "name": "infer1",
// REPORT:      "reason": "blocked by deny node deny1 via clr1"
// REPORT:      "name": "clr2",
// REPORT-NEXT: "op_type": "Relu",
// REPORT-NEXT: "precision": "fp16",
// REPORT-NEXT: "reason": "clear: Relu, next to fp16 node allow1"
// REPORT:      "name": "allow1",
// REPORT:      "precision": "fp16",
// REPORT-NEXT: "reason": "allow: MatMul"
// REPORT:      "name": "infer2",
// REPORT:      "precision": "fp32",
// REPORT-NEXT: "reason": "stays fp32: not between allow nodes"
// REPORT:      "name": "clr4",
// REPORT:      "reason": "stays fp32: no allow neighbour"
// REPORT:      "list": "none",
// REPORT-NEXT: "name": "deny2",
// REPORT:      "reason": "not on any list (no ONNX schema)"
// REPORT:      "summary": {
// REPORT-NEXT:   "allowlisted_converted": 1,
// REPORT-NEXT:   "blocked_by_denylisted": 2,
// REPORT-NEXT:   "denylisted_blocking": 1,
// REPORT-NEXT:   "low_precision_casts": 1,
// REPORT-NEXT:   "nodes_converted": 3,
// REPORT-NEXT:   "recognized_nodes": 9,
// REPORT-NEXT:   "total_processable_nodes": 10
