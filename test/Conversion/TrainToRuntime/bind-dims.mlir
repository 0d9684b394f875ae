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

// BAD: error: train-bind-dims: bad dims entry 'batch' (expected name=size)
