// RUN: amp-opt %s --split-input-file --auto-mixed-precision="mode=bf16 report=%t.json" -o %t.mlir 2>%t.err
// RUN: FileCheck %s --check-prefix=WARN < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="mode=fp16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FP16
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="mode=bf16 keep-fp32=conv1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEEP

// An operator version whose type constraint has no bfloat16 keeps its
// allow-list nodes fp32 (at opset 11: Conv-11, Gemm-11). The pass says so
// once per graph, with the opset that would take them, and each node's
// report reason names its operator version. (The report is the last
// split's.)

// FP16-NOT: warning
// Kept nodes are not counted: conv1 is keep-fp32 in the KEEP run.
// KEEP: warning: auto-mixed-precision: 1 allow-list node stays fp32 because the model's operator versions take no bf16: Conv-11 (1; from opset 22)
// KEEP: warning: auto-mixed-precision: 1 allow-list node stays fp32 because the model's operator versions take no bf16: Conv-11 (1; from opset 22)
// KEEP: warning: auto-mixed-precision: 2 allow-list nodes stay fp32 because the model's operator versions take no bf16: Conv-11 (1; from opset 22), Gemm-11 (1; from opset 13)

// At opset 22 Conv takes bfloat16: no warning.
module attributes {train.opset_import = [["", 22 : i64]]} {
  train.graph @main(%x: tensor<1x2x4x4xf32> {train.name = "x"}, %w: tensor<2x2x1x1xf32> {train.name = "w"}) -> (tensor<1x2x4x4xf32> {train.name = "y"}) {
    %none = train.none
    %0 = train.Conv(%x, %w, %none) {train.name = "conv", train.outputs = ["y"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    train.return %0 : tensor<1x2x4x4xf32>
  }
}

// IR-LABEL: train.graph @main
// IR: Conv({{.*}}) -> tensor<1x2x4x4xbf16>

// -----

// At opset 13 Gemm takes bfloat16 and converts; Conv still cannot.

// WARN-NOT: warning
// WARN: amp-opset-limits.mlir:[[@LINE+2]]:3: warning: auto-mixed-precision: 2 allow-list nodes stay fp32 because the model's operator versions take no bf16: Conv-11 (2; from opset 22)
module attributes {train.opset_import = [["", 13 : i64]]} {
  train.graph @main(%x: tensor<1x2x4x4xf32> {train.name = "x"}, %w: tensor<2x2x1x1xf32> {train.name = "w"}, %g: tensor<32x3xf32> {train.name = "g"}) -> (tensor<1x3xf32> {train.name = "y"}) {
    %none = train.none
    %0 = train.Conv(%x, %w, %none) {train.name = "conv1", train.outputs = ["c1"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    %1 = train.Relu(%0) {train.name = "relu", train.outputs = ["r"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %2 = train.Conv(%1, %w, %none) {train.name = "conv2", train.outputs = ["c2"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    %3 = train.Flatten(%2) {train.name = "flat", train.outputs = ["f"]} : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
    %4 = train.Gemm(%3, %g, %none) {train.name = "fc", train.outputs = ["y"]} : (tensor<1x32xf32>, tensor<32x3xf32>, none) -> tensor<1x3xf32>
    train.return %4 : tensor<1x3xf32>
  }
}

// The Convs seed nothing: Relu-13 could take bf16, but between two f32
// Convs it would only add casts (Grappler paints it and then drops the
// Convs). Flatten follows the bf16 Gemm.
// IR-LABEL: train.graph @main
// IR: Relu({{.*}}) -> tensor<1x2x4x4xf32>
// IR: Conv({{.*}}) -> tensor<1x2x4x4xf32>
// IR: Cast(
// IR: Flatten({{.*}}) -> tensor<1x32xbf16>
// IR: Gemm({{.*}}) -> tensor<1x3xbf16>

// -----

// Pass 4 (bf16: an infer node with an allow fan-in follows it) is not
// started by a Conv that cannot take bf16: Add stays f32, no casts.

// WARN: amp-opset-limits.mlir:[[@LINE+2]]:3: warning: auto-mixed-precision: 1 allow-list node stays fp32 because the model's operator versions take no bf16: Conv-11 (1; from opset 22)
module attributes {train.opset_import = [["", 13 : i64]]} {
  train.graph @main(%x: tensor<1x2x4x4xf32> {train.name = "x"}, %w: tensor<2x2x1x1xf32> {train.name = "w"}) -> (tensor<1x2x4x4xf32> {train.name = "y"}) {
    %none = train.none
    %0 = train.Conv(%x, %w, %none) {train.name = "conv", train.outputs = ["c"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    %1 = train.Add(%0, %x) {train.name = "add", train.outputs = ["y"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    train.return %1 : tensor<1x2x4x4xf32>
  }
}

// IR-LABEL: train.graph @main
// IR-NOT: Cast
// IR: Add({{.*}}) -> tensor<1x2x4x4xf32>

// -----

// WARN: amp-opset-limits.mlir:[[@LINE+2]]:3: warning: auto-mixed-precision: 3 allow-list nodes stay fp32 because the model's operator versions take no bf16: Conv-11 (2; from opset 22), Gemm-11 (1; from opset 13); convert the model to a newer opset first (e.g. with onnx.version_converter)
module attributes {train.opset_import = [["", 11 : i64]]} {
  train.graph @main(%x: tensor<1x2x4x4xf32> {train.name = "x"}, %w: tensor<2x2x1x1xf32> {train.name = "w"}, %g: tensor<32x3xf32> {train.name = "g"}) -> (tensor<1x3xf32> {train.name = "y"}) {
    %none = train.none
    %0 = train.Conv(%x, %w, %none) {train.name = "conv1", train.outputs = ["c1"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    %1 = train.Relu(%0) {train.name = "relu", train.outputs = ["r"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %2 = train.Conv(%1, %w, %none) {train.name = "conv2", train.outputs = ["c2"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    %3 = train.Flatten(%2) {train.name = "flat", train.outputs = ["f"]} : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
    %4 = train.Gemm(%3, %g, %none) {train.name = "fc", train.outputs = ["y"]} : (tensor<1x32xf32>, tensor<32x3xf32>, none) -> tensor<1x3xf32>
    train.return %4 : tensor<1x3xf32>
  }
}

// REPORT: "name": "conv1",
// REPORT: "reason": "allow: Conv, but no f32 port can take bf16 (Conv-11 takes none; opset 22 does)"
// REPORT: "name": "relu",
// REPORT: "reason": "stays fp32: its allow-list neighbour conv1 stays fp32"
// REPORT: "name": "fc",
// REPORT: "reason": "allow: Gemm, but no f32 port can take bf16 (Gemm-11 takes none; opset 13 does)"

// IR-LABEL: train.graph @main
// IR-NOT: Cast
// IR: return
// WARN-NOT: warning
