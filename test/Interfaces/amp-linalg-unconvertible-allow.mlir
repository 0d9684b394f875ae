// RUN: amp-opt %s --auto-mixed-precision 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err

// An allow-list op that cannot be converted (here a matmul that already
// takes f16 and accumulates into f32: not f32 on every port) paints
// nothing: the copy after it stays f32 with no casts. (Grappler paints the
// allow op first and drops it at the end, after its paint has spread to
// the clear ops around it.)

func.func @mixed(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf16>, tensor<8x16xf16>) outs(%acc : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %c = linalg.copy ins(%mm : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @mixed
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: linalg.copy ins(%{{.*}} : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xf32>)

// SUMMARY: Total nodes converted: 0
// SUMMARY: Total FP16 Cast ops used (excluding Const and Variable casts): 0
