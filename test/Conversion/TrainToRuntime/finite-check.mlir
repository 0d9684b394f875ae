// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s

// IsNaN(Sum(ReduceSum(u * 0))) over two tensors (0 on either side of the
// Mul), the loss-scaling pass's
// finite check, is one amprt_multi_tensor_all_finite; IsNaN's output is the
// flag's negation. The multiplies, reductions and the sum are gone.
// CHECK-LABEL: func.func @main
// CHECK-NOT: "reduce_sum"
// CHECK-NOT: "sum"
// CHECK: amprt.call "multi_tensor_all_finite"(%[[A:[^,]*]], %[[B:[^,]*]], %[[F:[^)]*]]) {counts = array<i64: 2, 1>, n = 2 : i64, node = "nan", reset = 1 : i32} : memref<4x3xf32>, memref<5xf32>, memref<i1>
// CHECK-NEXT: amprt.call "logical_not"(%[[F]], %{{.*}}) {{.*}}node = "nan"
// CHECK-NOT: "isnan"
// CHECK: return
module {
  train.graph @main(%a: tensor<4x3xf32> {train.name = "a"}, %b: tensor<5xf32> {train.name = "b"}) -> (tensor<i1> {train.name = "y"}) {
    %z = initializer "zero" {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %n = none
    %ra = Relu(%a) {train.name = "ra", train.outputs = ["ra"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %rb = Relu(%b) {train.name = "rb", train.outputs = ["rb"]} : (tensor<5xf32>) -> tensor<5xf32>
    %ma = Mul(%ra, %z) {train.name = "ma", train.outputs = ["ma"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %mb = Mul(%z, %rb) {train.name = "mb", train.outputs = ["mb"]} : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
    %sa = ReduceSum(%ma, %n) {keepdims = 0 : i64, train.name = "sa", train.outputs = ["sa"]} : (tensor<4x3xf32>, none) -> tensor<f32>
    %sb = ReduceSum(%mb, %n) {keepdims = 0 : i64, train.name = "sb", train.outputs = ["sb"]} : (tensor<5xf32>, none) -> tensor<f32>
    %s = Sum(%sa, %sb) {train.name = "total", train.outputs = ["total"]} : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %y = IsNaN(%s) {train.name = "nan", train.outputs = ["y"]} : (tensor<f32>) -> tensor<i1>
    train.return %y : tensor<i1>
  }
}

// -----

// Not a finite check, so lowered as written: a factor that is not 0, and a
// reduction whose result has a second use.
// CHECK-LABEL: func.func @main
// CHECK-NOT: multi_tensor_all_finite
// CHECK: amprt.call "mul"
// CHECK: amprt.call "reduce_sum"
// CHECK: amprt.call "isnan"
// CHECK: amprt.call "mul"
// CHECK: amprt.call "reduce_sum"
// CHECK: amprt.call "isnan"
// CHECK-NOT: multi_tensor_all_finite
// CHECK: return
module {
  train.graph @main(%a: tensor<4x3xf32> {train.name = "a"}) -> (tensor<i1> {train.name = "y1"}, tensor<i1> {train.name = "y2"}, tensor<f32> {train.name = "s2"}) {
    %one = initializer "one" {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
    %z = initializer "zero" {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %n = none
    %m1 = Mul(%a, %one) {train.name = "m1", train.outputs = ["m1"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %s1 = ReduceSum(%m1, %n) {keepdims = 0 : i64, train.name = "s1", train.outputs = ["s1"]} : (tensor<4x3xf32>, none) -> tensor<f32>
    %y1 = IsNaN(%s1) {train.name = "nan1", train.outputs = ["y1"]} : (tensor<f32>) -> tensor<i1>
    %m2 = Mul(%z, %a) {train.name = "m2", train.outputs = ["m2"]} : (tensor<f32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %s2 = ReduceSum(%m2, %n) {keepdims = 0 : i64, train.name = "s2", train.outputs = ["s2"]} : (tensor<4x3xf32>, none) -> tensor<f32>
    %y2 = IsNaN(%s2) {train.name = "nan2", train.outputs = ["y2"]} : (tensor<f32>) -> tensor<i1>
    train.return %y1, %y2, %s2 : tensor<i1>, tensor<i1>, tensor<f32>
  }
}

// -----

// keepdims 1 (ONNX's default) keeps a [1, 1] result, which IsNaN keeps too:
// not the scalar flag of the fused call, so lowered as written.
// CHECK-LABEL: func.func @main
// CHECK-NOT: multi_tensor_all_finite
// CHECK: amprt.call "reduce_sum"({{.*}}keepdims = 1
// CHECK: amprt.call "isnan"({{.*}}) {{.*}} : memref<1x1xf32>, memref<1x1xi1>
module {
  train.graph @main(%a: tensor<4x3xf32> {train.name = "a"}) -> (tensor<1x1xi1> {train.name = "y"}) {
    %z = initializer "zero" {value = dense<0.000000e+00> : tensor<f32>} : tensor<f32>
    %n = none
    %r = Relu(%a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %m = Mul(%r, %z) {train.name = "m", train.outputs = ["m"]} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %s = ReduceSum(%m, %n) {train.name = "s", train.outputs = ["s"]} : (tensor<4x3xf32>, none) -> tensor<1x1xf32>
    %y = IsNaN(%s) {train.name = "nan", train.outputs = ["y"]} : (tensor<1x1xf32>) -> tensor<1x1xi1>
    train.return %y : tensor<1x1xi1>
  }
}
