// RUN: amp-opt %s --auto-mixed-precision="report=%t.json" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: amp-opt %s --auto-mixed-precision="deny-add=linalg:matmul allow-remove=linalg:matmul" 2>&1 | FileCheck %s --check-prefix=DENIED

// The AMP pass on linalg named ops through AMPOpInterface: matmul (allow)
// runs in fp16 with its fill (clear) and the fill's scalar; the bias add
// (infer) after it is not between two allow ops and stays f32, the exp
// (deny) too. A linalg op's scalar body is retyped with the op. One cast
// per (value, type); function arguments and results keep their types.

func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%init : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %add = linalg.add ins(%mm, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e3 = tensor.empty() : tensor<4x16xf32>
  %exp = linalg.exp ins(%add : tensor<4x16xf32>) outs(%e3 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %exp : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @mlp
// CHECK-DAG: %[[X:.*]] = arith.truncf %arg0 : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK-DAG: %[[W:.*]] = arith.truncf %arg1 : tensor<8x16xf32> to tensor<8x16xf16>
// CHECK-DAG: %[[Z:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[E:.*]] = arith.truncf %{{.*}} : tensor<4x16xf32> to tensor<4x16xf16>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%[[Z]] : f16) outs(%[[E]] : tensor<4x16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT: %[[MM:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xf16>, tensor<8x16xf16>) outs(%[[F]] : tensor<4x16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT: %[[UP:.*]] = arith.extf %[[MM]] : tensor<4x16xf16> to tensor<4x16xf32>
// CHECK: linalg.add ins(%[[UP]], %arg2 : tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK: linalg.exp ins(%{{.*}} : tensor<4x16xf32>)
// CHECK-NEXT: return %{{.*}} : tensor<4x16xf32>

// SUMMARY: Automatic Mixed Precision Pass Summary:
// SUMMARY-NEXT: Total processable nodes: 4
// SUMMARY-NEXT: Recognized nodes available for conversion: 4
// SUMMARY-NEXT: Total nodes converted: 2
// SUMMARY-NEXT: Total FP16 Cast ops used (excluding Const and Variable casts): 1
// SUMMARY-NEXT: Allowlisted nodes converted: 1
// SUMMARY-NEXT: Denylisted nodes blocking conversion: 1
// SUMMARY-NEXT: Nodes blocked from conversion by denylisted nodes: 0

// REPORT: "domain": "linalg",
// REPORT-NEXT: "list": "clear",
// REPORT-NEXT: "name": "{{.*}}amp-linalg.mlir:15:11",
// REPORT-NEXT: "op_type": "fill",
// REPORT-NEXT: "precision": "fp16",
// REPORT: "op_type": "matmul",
// REPORT-NEXT: "precision": "fp16",
// REPORT-NEXT: "reason": "allow: linalg:matmul"
// REPORT: "op_type": "add",
// REPORT-NEXT: "precision": "fp32",
// REPORT-NEXT: "reason": "stays fp32: not between allow nodes"

// With matmul on the deny list nothing is on the allow list: nothing to do.
// DENIED: auto-mixed-precision: no allowlist ops found, nothing to do
// DENIED-NOT: truncf
