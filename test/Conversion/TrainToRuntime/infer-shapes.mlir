// RUN: amp-opt %s --split-input-file --train-infer-shapes=dims=batch=8 | FileCheck %s
// RUN: not amp-opt %s --split-input-file --train-infer-shapes 2>&1 | FileCheck %s --check-prefix=UNBOUND
// RUN: amp-opt %s --split-input-file --train-infer-shapes=dims=batch=8 --convert-train-to-runtime=dims=batch=8 -o %t.inferred.mlir
// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=dims=batch=8 -o %t.direct.mlir
// RUN: cmp %t.inferred.mlir %t.direct.mlir

// train-infer-shapes writes back what the lowering computes: every node
// result gets its buffer's static type (the element type the graph gave
// it), the shape computations on activations (which the dialect's
// canonicalization cannot fold: it does not trust an activation's declared
// type) become Constant nodes with their names, and the graph's result types
// follow. Lowering the result gives the program the graph gives.
// CHECK-LABEL: train.graph @main
// CHECK-SAME: -> (tensor<8x3xf32> {train.name = "y"}, tensor<24xf32> {train.name = "flat"}, tensor<2xi64> {train.name = "s"})
// CHECK: Gemm(%{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (tensor<?x4xf32>, tensor<3x4xf32>, none) -> tensor<8x3xf32>
// CHECK: Relu(%{{.*}}) {{.*}} : (tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK: Constant() {train.name = "shape", train.outputs = ["s"], value = dense<[8, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
// CHECK: Constant() {train.name = "size", train.outputs = ["n"], value = dense<24> : tensor<1xi64>} : () -> tensor<1xi64>
// CHECK: Reshape(%{{.*}}, %{{.*}}) {{.*}} : (tensor<8x3xf32>, tensor<1xi64>) -> tensor<24xf32>
// CHECK-NOT: Shape(
// CHECK-NOT: Size(
// CHECK-NOT: Unsqueeze(

// UNBOUND: error: graph input 'x' dim 0 is the symbolic dim 'batch': bind it with dims=batch=<size>
// UNBOUND: error: train-infer-shapes: the graph cannot be lowered (above), so the lowering computed no shapes for it
module {
  train.graph @main(%x: tensor<?x4xf32> {train.name = "x", train.dims = ["batch", ""]}, %w: tensor<3x4xf32> {train.name = "w"}) -> (tensor<?x?xf32> {train.name = "y"}, tensor<?xf32> {train.name = "flat"}, tensor<?xi64> {train.name = "s"}) {
    %none = none
    %y = Gemm(%x, %w, %none) {transB = 1 : i64, train.name = "gemm", train.outputs = ["g"]} : (tensor<?x4xf32>, tensor<3x4xf32>, none) -> tensor<?x?xf32>
    %r = Relu(%y) {train.name = "relu", train.outputs = ["y"]} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    %s = Shape(%r) {train.name = "shape", train.outputs = ["s"]} : (tensor<?x?xf32>) -> tensor<?xi64>
    %n = Size(%r) {train.name = "size0", train.outputs = ["n0"]} : (tensor<?x?xf32>) -> tensor<i64>
    %a = Constant() {train.name = "axes", train.outputs = ["axes"], value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %u = Unsqueeze(%n, %a) {train.name = "size", train.outputs = ["n"]} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %f = Reshape(%r, %u) {train.name = "flatten", train.outputs = ["flat"]} : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?xf32>
    train.return %r, %f, %s : tensor<?x?xf32>, tensor<?xf32>, tensor<?xi64>
  }
}
