// RUN: amp-opt %s --auto-mixed-precision="dot=%t.dot summary=false" -o /dev/null
// RUN: FileCheck %s < %t.dot

// dot= writes the rewritten graph for Graphviz: fp16 nodes green, deny-list
// nodes red, other fp32 nodes grey, inserted casts orange diamonds, edges
// labelled with the element type they carry.

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["a"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Exp(%0) {train.name = "ex", train.outputs = ["out"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %1 : tensor<4x4xf32>
  }
}

// CHECK: digraph amp {
// CHECK-DAG: [[IN:in0]] [shape=ellipse, label="x"];
// CHECK-DAG: [[TOLOW:n[0-9]+]] [shape=diamond, style=filled, fillcolor="#f6b26b", label="x_CastToFp16\nCast"];
// CHECK-DAG: [[MM:n[0-9]+]] [shape=box, style=filled, fillcolor="#93c47d", label="mm\nMatMul", tooltip="allow: MatMul"];
// CHECK-DAG: [[TOF32:n[0-9]+]] [shape=diamond, style=filled, fillcolor="#f6b26b", label="mm_CastToFp32\nCast"];
// CHECK-DAG: [[EX:n[0-9]+]] [shape=box, style=filled, fillcolor="#e06666", label="ex\nExp", tooltip="deny: Exp"];
// CHECK-DAG: [[IN]] -> [[TOLOW]] [label="f32"];
// CHECK-DAG: [[TOLOW]] -> [[MM]] [label="f16"];
// CHECK-DAG: [[MM]] -> [[TOF32]] [label="f16"];
// CHECK-DAG: [[TOF32]] -> [[EX]] [label="f32"];
// CHECK: }
