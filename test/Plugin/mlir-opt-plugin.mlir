// Debian's mlir-opt-22 loads amp-mlir as a dialect plugin and a pass plugin
// (one shared object) and runs our passes on our dialect.
// REQUIRES: mlir-opt
// UNSUPPORTED: sanitizers
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(auto-mixed-precision{report=%t.json})' %s 2>%t.err \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

// Both passes in one pipeline, with options, quiet.
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(auto-mixed-precision{mode=bf16 summary=false},loss-scaling{mode=static init-scale=1024 summary=false})' %s \
// RUN:   | FileCheck %s --check-prefix=BF16

// The dialect plugin alone: the train dialect parses and round-trips.
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin %s | %mlir_opt --load-dialect-plugin=%amp_plugin \
// RUN:   | FileCheck %s --check-prefix=ROUNDTRIP

// The pass plugin alone registers the passes, not the dialect.
// RUN: not %mlir_opt --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(auto-mixed-precision)' %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NODIALECT

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x4xf32> {train.name = "x"}, %w: tensor<3x4xf32> {train.name = "w"}, %b: tensor<3xf32> {train.name = "b"}) -> (tensor<2x3xf32> {train.name = "y"}) {
    %y = train.Gemm(%x, %w, %b) {transB = 1 : i64, train.name = "fc", train.outputs = ["fc_out"]} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %r = train.Relu(%y) {train.name = "relu", train.outputs = ["y"]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    train.return %r : tensor<2x3xf32>
  }
}

// CHECK-LABEL: train.graph @main
// CHECK-DAG: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-DAG: %[[W:.*]] = Cast(%arg1) {to = 10 : i64
// CHECK-DAG: %[[B:.*]] = Cast(%arg2) {to = 10 : i64
// CHECK: %[[Y:.*]] = Gemm(%[[X]], %[[W]], %[[B]]) {{.*}}train.name = "fc"{{.*}} -> tensor<2x3xf16>
// CHECK: %[[R:.*]] = Relu(%[[Y]]) {{.*}} -> tensor<2x3xf16>
// CHECK: %[[OUT:.*]] = Cast(%[[R]]) {to = 1 : i64
// CHECK: return %[[OUT]] : tensor<2x3xf32>

// SUMMARY:      Automatic Mixed Precision Pass Summary:
// SUMMARY-NEXT: Total processable nodes: 2
// SUMMARY-NEXT: Recognized nodes available for conversion: 2
// SUMMARY-NEXT: Total nodes converted: 2
// SUMMARY-NEXT: Total FP16 Cast ops used (excluding Const and Variable casts): 0
// SUMMARY-NEXT: Allowlisted nodes converted: 1

// REPORT: "casts_inserted": 4,
// REPORT: "name": "fc",
// REPORT: "precision": "fp16",
// REPORT-NEXT: "reason": "allow: Gemm"

// BF16: Gemm({{.*}} -> tensor<2x3xbf16>
// BF16: Relu({{.*}} -> tensor<2x3xbf16>

// ROUNDTRIP: train.graph @main
// ROUNDTRIP: Gemm(%arg0, %arg1, %arg2) {{.*}} -> tensor<2x3xf32>

// NODIALECT: Dialect `train' not found
