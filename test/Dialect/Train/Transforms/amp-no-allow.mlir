// RUN: amp-opt %s --auto-mixed-precision="report=%t.json" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: amp-opt %s --auto-mixed-precision="allow-add=Relu clear-remove=Relu" 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY

// No allow-list node: as in Grappler ("No allowlist ops found, nothing to
// do"), the graph is left unchanged and no summary is printed. The report
// is still written when asked for.

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    // CHECK: Exp(%arg0) {{.*}} -> tensor<4x4xf32>
    %0 = train.Exp(%x) {train.name = "exp", train.outputs = ["e"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: Relu({{.*}} -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "relu", train.outputs = ["r"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: Add({{.*}} -> tensor<4x4xf32>
    %2 = train.Add(%1, %x) {train.name = "add", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: return
    train.return %2 : tensor<4x4xf32>
  }
}

// ERR: auto-mixed-precision: no allowlist ops found, nothing to do
// ERR-NOT: Summary

// REPORT: "name": "exp",
// REPORT: "reason": "deny: Exp"
// REPORT: "name": "relu",
// REPORT: "reason": "stays fp32: no allow-list node in the graph, nothing to do"
// REPORT: "nodes_converted": 0,

// With an allow-list op (here Relu, moved from clear to allow) the summary is back.
// SUMMARY: Automatic Mixed Precision Pass Summary:
// SUMMARY: Allowlisted nodes converted: 1
