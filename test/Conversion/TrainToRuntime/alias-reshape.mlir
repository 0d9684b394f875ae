// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// A reshape of a temporary is a second view of the same arena bytes: no
// copy, and the two views start at the same offset.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = memref.view %alloc[%c[[OFF:[0-9]+]]][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<4x6xf32>
// CHECK: %[[B:.*]] = memref.view %alloc[%c[[OFF]]_{{[0-9]+}}][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<2x12xf32>
// CHECK-NOT: amprt.call "reshape"
// CHECK: amprt.call "relu"(%arg0, %[[A]])
// CHECK: amprt.call "relu"(%[[B]], %{{.*}})
module {
  train.graph @main(%a: tensor<4x6xf32> {train.name = "a"}) -> (tensor<2x12xf32> {train.name = "y"}) {
    %shape = initializer "shape" {value = dense<[2, 12]> : tensor<2xi64>} : tensor<2xi64>
    %r = Relu(%a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %s = Reshape(%r, %shape) {train.name = "s", train.outputs = ["s"]} : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<2x12xf32>
    %y = Relu(%s) {train.name = "y", train.outputs = ["y"]} : (tensor<2x12xf32>) -> tensor<2x12xf32>
    train.return %y : tensor<2x12xf32>
  }
}

// -----

// Still copies: a reshape of a graph input (its memory is not in the
// arena), and of a buffer that InPlaceAccumulator then updates in place
// (the reshape must keep the value from before the update).
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "reshape"(%arg0, %{{.*}})
// CHECK: amprt.call "reshape"
// CHECK: amprt.call "inplace_accumulate"
module {
  train.graph @main(%a: tensor<4x6xf32> {train.name = "a"}, %g: tensor<4x6xf32> {train.name = "g"}) -> (tensor<2x12xf32> {train.name = "y1"}, tensor<2x12xf32> {train.name = "y2"}, tensor<4x6xf32> {train.name = "acc"}) {
    %shape = initializer "shape" {value = dense<[2, 12]> : tensor<2xi64>} : tensor<2xi64>
    %y1 = Reshape(%a, %shape) {train.name = "y1", train.outputs = ["y1"]} : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<2x12xf32>
    %r = Relu(%a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %y2 = Reshape(%r, %shape) {train.name = "y2", train.outputs = ["y2"]} : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<2x12xf32>
    %acc = "train.node"(%r, %g) <{attrs = {}, domain = "com.microsoft", graph_attrs = [], op_type = "InPlaceAccumulator"}> {train.name = "acc", train.outputs = ["acc"]} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    train.return %y1, %y2, %acc : tensor<2x12xf32>, tensor<2x12xf32>, tensor<4x6xf32>
  }
}

// -----

// Identity is a copy too: of a temporary, a view (gradient graphs pass bias
// gradients through one); of a graph input, still a copy.
// CHECK-LABEL: func.func @main
// CHECK: %[[C:.*]] = memref.view %alloc[%c0][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<4x6xf32>
// CHECK: %[[A:.*]] = memref.view %alloc[%c[[OFF:[0-9]+]]][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<4x6xf32>
// CHECK: %[[B:.*]] = memref.view %alloc[%c[[OFF]]_{{[0-9]+}}][]{{( \{[^}]*\})?}} : memref<{{[0-9]+}}xi8> to memref<4x6xf32>
// CHECK: amprt.call "identity"(%arg0, %[[C]]) {{.*}}node = "copy"
// CHECK: amprt.call "relu"(%arg0, %[[A]])
// CHECK-NOT: amprt.call "identity"
// CHECK: amprt.call "relu"(%[[B]], %{{.*}})
module {
  train.graph @main(%a: tensor<4x6xf32> {train.name = "a"}) -> (tensor<4x6xf32> {train.name = "c"}, tensor<4x6xf32> {train.name = "y"}) {
    %c = Identity(%a) {train.name = "copy", train.outputs = ["c"]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %r = Relu(%a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %i = Identity(%r) {train.name = "i", train.outputs = ["i"]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %y = Relu(%i) {train.name = "y", train.outputs = ["y"]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    train.return %c, %y : tensor<4x6xf32>, tensor<4x6xf32>
  }
}
