// RUN: amp-opt %s --auto-mixed-precision="allow-add=arith:mulf infer-remove=arith:mulf" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err

// The AMP pass on arith/math elementwise ops (scalars and tensors) through
// AMPOpInterface. No arith/math op is on the default allow list (no Tensor
// Core work), so the test puts arith.mulf there: the two mulf run in fp16,
// the addf between them (infer) too, math.tanh (infer) after the last one
// stays f32 (not between allow ops), math.exp (deny) blocks the addf that
// leads to another deny op; one cast per (value, type).

func.func @elementwise(%a: tensor<8xf32>, %b: tensor<8xf32>, %s: f32) -> (tensor<8xf32>, f32) {
  %m = arith.mulf %a, %b : tensor<8xf32>
  %n = arith.addf %m, %a : tensor<8xf32>
  %p = arith.mulf %n, %n : tensor<8xf32>
  %t = math.tanh %p : tensor<8xf32>
  %e = math.exp %s : f32
  %f = arith.addf %e, %s : f32
  %g = math.log %f : f32
  return %t, %g : tensor<8xf32>, f32
}

// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[A:.*]] = arith.truncf %arg0 : tensor<8xf32> to tensor<8xf16>
// CHECK-DAG: %[[B:.*]] = arith.truncf %arg1 : tensor<8xf32> to tensor<8xf16>
// CHECK: %[[M:.*]] = arith.mulf %[[A]], %[[B]] : tensor<8xf16>
// CHECK-NEXT: %[[N:.*]] = arith.addf %[[M]], %[[A]] : tensor<8xf16>
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[N]], %[[N]] : tensor<8xf16>
// CHECK-NEXT: %[[UP:.*]] = arith.extf %[[P]] : tensor<8xf16> to tensor<8xf32>
// CHECK-NEXT: math.tanh %[[UP]] : tensor<8xf32>
// CHECK-NEXT: math.exp %arg2 : f32
// CHECK-NEXT: arith.addf %{{.*}}, %arg2 : f32
// CHECK-NEXT: math.log %{{.*}} : f32

// SUMMARY: Total processable nodes: 7
// SUMMARY: Total nodes converted: 3
// SUMMARY: Allowlisted nodes converted: 2
// SUMMARY: Denylisted nodes blocking conversion: 2
// SUMMARY: Nodes blocked from conversion by denylisted nodes: 1
