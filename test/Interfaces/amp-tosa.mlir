// RUN: amp-opt %s --auto-mixed-precision 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: amp-opt %s --auto-mixed-precision="mode=bf16 summary=false" | FileCheck %s --check-prefix=BF16
// RUN: amp-opt %s --auto-mixed-precision=summary=false | grep -c tosa.cast | FileCheck %s --check-prefix=COUNT

// The AMP pass on tosa through AMPOpInterface's external models: the same
// painting as on ONNX graphs (allow matmul, infer add, clear clamp between
// them, deny exp), one tosa.cast per (value, type) — %w feeds both matmuls
// through one cast, the zero points likewise — and function arguments and
// results keep their types. tosa.clamp's bounds follow its element type,
// saturated at the largest finite fp16.

func.func @tosa_mlp(%x: tensor<1x4x8xf32>, %w: tensor<1x8x16xf32>, %b: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %add = tosa.add %mm, %b : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %r = tosa.clamp %add {min_val = 0.0 : f32, max_val = 3.4028235e38 : f32} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %mm2 = tosa.matmul %r, %w, %zp, %zp : (tensor<1x4x16xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %e = tosa.exp %mm2 : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %e : tensor<1x4x16xf32>
}

// CHECK-LABEL: func.func @tosa_mlp
// CHECK-DAG: %[[X:.*]] = tosa.cast %arg0 : (tensor<1x4x8xf32>) -> tensor<1x4x8xf16>
// CHECK-DAG: %[[W:.*]] = tosa.cast %arg1 : (tensor<1x8x16xf32>) -> tensor<1x8x16xf16>
// CHECK-DAG: %[[B:.*]] = tosa.cast %arg2 : (tensor<1x4x16xf32>) -> tensor<1x4x16xf16>
// CHECK-DAG: %[[ZP:.*]] = tosa.cast %{{.*}} : (tensor<1xf32>) -> tensor<1xf16>
// CHECK: %[[MM:.*]] = tosa.matmul %[[X]], %[[W]], %[[ZP]], %[[ZP]] : {{.*}} -> tensor<1x4x16xf16>
// CHECK-NEXT: %[[ADD:.*]] = tosa.add %[[MM]], %[[B]] : {{.*}} -> tensor<1x4x16xf16>
// CHECK-NEXT: %[[R:.*]] = tosa.clamp %[[ADD]] {max_val = 6.550400e+04 : f16, min_val = 0.000000e+00 : f16}
// CHECK-NEXT: %[[MM2:.*]] = tosa.matmul %[[R]], %[[W]], %[[ZP]], %[[ZP]] : {{.*}} -> tensor<1x4x16xf16>
// CHECK-NEXT: %[[UP:.*]] = tosa.cast %[[MM2]] : (tensor<1x4x16xf16>) -> tensor<1x4x16xf32>
// CHECK-NEXT: %[[E:.*]] = tosa.exp %[[UP]] : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT: return %[[E]] : tensor<1x4x16xf32>

// Five casts in all: x, w, b and the zero point down, the matmul back up.
// COUNT: 5

// SUMMARY: Automatic Mixed Precision Pass Summary:
// SUMMARY-NEXT: Total processable nodes: 5
// SUMMARY-NEXT: Recognized nodes available for conversion: 5
// SUMMARY-NEXT: Total nodes converted: 4
// SUMMARY-NEXT: Total FP16 Cast ops used (excluding Const and Variable casts): 0
// SUMMARY-NEXT: Allowlisted nodes converted: 2
// SUMMARY-NEXT: Denylisted nodes blocking conversion: 1
// SUMMARY-NEXT: Nodes blocked from conversion by denylisted nodes: 0

// BF16: tosa.matmul {{.*}} -> tensor<1x4x16xbf16>
// BF16: tosa.clamp {{.*}} {max_val = 3.389530e+38 : bf16, min_val = 0.000000e+00 : bf16}
