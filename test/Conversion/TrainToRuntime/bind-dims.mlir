// RUN: amp-opt %s --split-input-file --train-bind-dims=dims=batch=8,seq=16 | FileCheck %s
// RUN: not amp-opt %s --split-input-file --train-bind-dims=dims=batch 2>&1 | FileCheck %s --check-prefix=BAD

// The dims `dims` names become static in the inputs' types and the graph's
// function type, and those inputs are marked train.bound_dims (data, not
// weights); an unnamed dim and a name `dims` leaves out stay dynamic, and a
// static input is untouched.
// CHECK-LABEL: train.graph @main
// CHECK-SAME: tensor<8x16xf32> {train.bound_dims, train.dims = ["batch", "seq"], train.name = "x"}
// CHECK-SAME: tensor<8x?xf32> {train.bound_dims, train.dims = ["batch", ""], train.name = "m"}
// CHECK-SAME: tensor<?x4xf32> {train.dims = ["other", ""], train.name = "o"}
// CHECK-SAME: tensor<3x4xf32> {train.name = "w"}
// CHECK: Relu(%{{.*}}) {{.*}} : (tensor<8x16xf32>)
module {
  train.graph @main(%x: tensor<?x?xf32> {train.name = "x", train.dims = ["batch", "seq"]}, %m: tensor<?x?xf32> {train.name = "m", train.dims = ["batch", ""]}, %o: tensor<?x4xf32> {train.name = "o", train.dims = ["other", ""]}, %w: tensor<3x4xf32> {train.name = "w"}) -> (tensor<?x?xf32> {train.name = "y"}) {
    %y = Relu(%x) {train.name = "r", train.outputs = ["y"]} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    train.return %y : tensor<?x?xf32>
  }
}

// -----

// The canonicalization patterns that follow (TrainFolders.cpp): Shape
// (start/end clamped as ONNX says) and Size of a now static graph input
// become Constant nodes in their place, keeping their names; a shape query
// of anything else (an activation, whatever its declared type) stays.
// CHECK-LABEL: train.graph @folds
// CHECK-NEXT: Constant() {train.name = "all", train.outputs = ["s"], value = dense<[8, 16, 4]> : tensor<3xi64>} : () -> tensor<3xi64>
// CHECK-NEXT: Constant() {train.name = "tail", train.outputs = ["t"], value = dense<[16, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
// CHECK-NEXT: Constant() {train.name = "size", train.outputs = ["n"], value = dense<512> : tensor<i64>} : () -> tensor<i64>
// CHECK-NEXT: Relu
// CHECK-NEXT: Shape(%{{.*}}) {train.name = "dyn"
// CHECK-NEXT: Relu
// CHECK-NEXT: Shape(%{{.*}}) {train.name = "declared"
module {
  train.graph @folds(%x: tensor<?x16x4xf32> {train.name = "x", train.dims = ["batch", "", ""]}) -> (tensor<3xi64> {train.name = "s"}, tensor<2xi64> {train.name = "t"}, tensor<i64> {train.name = "n"}, tensor<?xi64> {train.name = "d"}, tensor<3xi64> {train.name = "e"}) {
    %s = Shape(%x) {train.name = "all", train.outputs = ["s"]} : (tensor<?x16x4xf32>) -> tensor<3xi64>
    %t = Shape(%x) {start = -2 : i64, end = 99 : i64, train.name = "tail", train.outputs = ["t"]} : (tensor<?x16x4xf32>) -> tensor<2xi64>
    %n = Size(%x) {train.name = "size", train.outputs = ["n"]} : (tensor<?x16x4xf32>) -> tensor<i64>
    %r = Relu(%x) {train.name = "r", train.outputs = ["r"]} : (tensor<?x16x4xf32>) -> tensor<?x?x?xf32>
    %d = Shape(%r) {train.name = "dyn", train.outputs = ["d"]} : (tensor<?x?x?xf32>) -> tensor<?xi64>
    %r2 = Relu(%x) {train.name = "r2", train.outputs = ["r2"]} : (tensor<?x16x4xf32>) -> tensor<8x16x4xf32>
    %e = Shape(%r2) {train.name = "declared", train.outputs = ["e"]} : (tensor<8x16x4xf32>) -> tensor<3xi64>
    train.return %s, %t, %n, %d, %e : tensor<3xi64>, tensor<2xi64>, tensor<i64>, tensor<?xi64>, tensor<3xi64>
  }
}

// BAD: error: train-bind-dims: bad dims entry 'batch' (expected name=size)
