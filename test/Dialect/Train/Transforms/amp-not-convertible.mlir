// RUN: amp-opt %s --auto-mixed-precision="allow-add=my.domain:Custom report=%t.json" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err

// Allow-list nodes that cannot take fp16 stay as they are: an integer
// MatMul (pass 6 drops it) and a generic node without an ONNX schema.

module attributes {train.opset_import = [["", 17 : i64], ["my.domain", 1 : i64]]} {
  train.graph @main(%x: tensor<4x4xi32> {train.name = "x"}, %y: tensor<4x4xf32> {train.name = "y"}) -> (tensor<4x4xi32> {train.name = "a"}, tensor<4x4xf32> {train.name = "b"}) {
    // CHECK: MatMul({{.*}} : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
    %0 = train.MatMul(%x, %x) {train.name = "imm", train.outputs = ["a0"]} : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
    // CHECK: "train.node"{{.*}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = "train.node"(%y) <{attrs = {}, domain = "my.domain", graph_attrs = [], op_type = "Custom"}> {train.name = "custom", train.outputs = ["b0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NOT: Cast
    train.return %0, %1 : tensor<4x4xi32>, tensor<4x4xf32>
  }
}

// REPORT: "name": "imm",
// REPORT: "reason": "allow: MatMul, but no f32 port can take fp16"
// REPORT: "name": "custom",
// REPORT: "reason": "allow: my.domain:Custom, but no ONNX schema: fp32"

// SUMMARY: Recognized nodes available for conversion: 2
// SUMMARY: Total nodes converted: 0
