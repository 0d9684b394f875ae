// RUN: amp-opt %s --split-input-file --canonicalize | FileCheck %s

// The train dialect's canonicalization (TrainFolders.cpp) folds the shape
// computations that the graph makes known (HostEvaluation.h): Shape of a
// graph input of static type, then Gather, Unsqueeze and Concat of the
// constants it gives, become Constant nodes with the node's and the
// output's names; the Reshape that reads them is a computation on an
// activation and stays, now with a constant target.
// CHECK-LABEL: train.graph @chain
// CHECK-DAG: Constant() {train.name = "shape", train.outputs = ["s"], value = dense<[8, 16, 4]> : tensor<3xi64>} : () -> tensor<3xi64>
// CHECK-DAG: Constant() {train.name = "gather", train.outputs = ["b"], value = dense<8> : tensor<i64>} : () -> tensor<i64>
// CHECK-DAG: Constant() {train.name = "unsq", train.outputs = ["u"], value = dense<8> : tensor<1xi64>} : () -> tensor<1xi64>
// CHECK: %[[T:.*]] = Constant() {train.name = "cat", train.outputs = ["t"], value = dense<[8, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
// CHECK: %[[R:.*]] = Relu
// CHECK: Reshape(%[[R]], %[[T]])
// Both results of ORT's BroadcastGradientArgs: one Constant each, the
// second named after the node with its result's index.
// CHECK: Constant() {train.name = "bga", train.outputs = ["ra"], value = dense<> : tensor<0xi64>}
// CHECK: Constant() {train.name = "bga_1", train.outputs = ["rb"], value = dense<[0, 2]> : tensor<2xi64>}
// A Constant node's cast to f16 is a constant, rounded; a cast whose
// result the graph left untyped takes the type `to` names.
// CHECK: Constant() {train.name = "half", train.outputs = ["h"], value = dense<[5.000000e-01, 3.000000e+00, 1.000000e+00]> : tensor<3xf16>}
// CHECK: Constant() {train.name = "div", train.outputs = ["q"], value = dense<[1.500000e+00, 2.000000e+00]> : tensor<2xf32>}
// CHECK-NOT: Shape
// CHECK-NOT: Gather
// CHECK-NOT: Concat
// CHECK-NOT: BroadcastGradientArgs
// CHECK-NOT: Cast
module {
  train.graph @chain(%x: tensor<8x16x4xf32> {train.name = "x"}) -> (tensor<?x?xf32> {train.name = "y"}, tensor<?xi64> {train.name = "ra"}, tensor<?xi64> {train.name = "rb"}, tensor<3xf16> {train.name = "h"}, !train.unknown {train.name = "q"}) {
    %i0 = Constant() {train.name = "i0", train.outputs = ["i0"], value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %s = Shape(%x) {train.name = "shape", train.outputs = ["s"]} : (tensor<8x16x4xf32>) -> tensor<3xi64>
    %b = Gather(%s, %i0) {axis = 0 : i64, train.name = "gather", train.outputs = ["b"]} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %a = Constant() {train.name = "ax", train.outputs = ["ax"], value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
    %u = Unsqueeze(%b, %a) {train.name = "unsq", train.outputs = ["u"]} : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %m = Constant() {train.name = "minus1", train.outputs = ["m"], value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
    %t = Concat(%u, %m) {axis = 0 : i64, train.name = "cat", train.outputs = ["t"]} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    %r = Relu(%x) {train.name = "relu", train.outputs = ["r"]} : (tensor<8x16x4xf32>) -> tensor<8x16x4xf32>
    %y = Reshape(%r, %t) {train.name = "reshape", train.outputs = ["y"]} : (tensor<8x16x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    %c = Constant() {train.name = "c", train.outputs = ["c"], value = dense<[16, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %ra, %rb = "train.ms.BroadcastGradientArgs"(%s, %c) {train.name = "bga", train.outputs = ["ra", "rb"]} : (tensor<3xi64>, tensor<2xi64>) -> (tensor<?xi64>, tensor<?xi64>)
    %k = Constant() {train.name = "scale", train.outputs = ["scale"], value = dense<[0.5, 3.0, 1.0001]> : tensor<3xf32>} : () -> tensor<3xf32>
    %h = Cast(%k) {to = 10 : i64, train.name = "half", train.outputs = ["h"]} : (tensor<3xf32>) -> tensor<3xf16>
    %ints = Constant() {train.name = "ints", train.outputs = ["ints"], value = dense<[3, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
    %f = Cast(%ints) {to = 1 : i64, train.name = "tofloat", train.outputs = ["f"]} : (tensor<2xi64>) -> !train.unknown
    %two = Constant() {train.name = "two", train.outputs = ["two"], value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %q = Div(%f, %two) {train.name = "div", train.outputs = ["q"]} : (!train.unknown, tensor<f32>) -> !train.unknown
    train.return %y, %ra, %rb, %h, %q : tensor<?x?xf32>, tensor<?xi64>, tensor<?xi64>, tensor<3xf16>, !train.unknown
  }
}

// -----

// What stays: Shape of an activation (its declared type is not trusted);
// Shape of an input whose dims are not static; a Gather whose index is out
// of range (the lowering reports it, not the canonicalizer); a result whose
// declared element type is not the value's; ConstantOfShape beyond the
// 65536 elements evaluated on the host; an initializer with external data.
// CHECK-LABEL: train.graph @stays
// CHECK: Shape(%{{.*}}) {train.name = "activation"
// CHECK: Shape(%{{.*}}) {train.name = "dynamic"
// CHECK: Gather({{.*}}) {axis = 0 : i64, train.name = "out_of_range"
// CHECK: Shape(%{{.*}}) {train.name = "declared_3"
// CHECK: ConstantOfShape({{.*}}) {train.name = "big"
// CHECK: Less({{.*}}) {train.name = "broadcast"
// CHECK: "train.node"({{.*}}) <{attrs = {ends = [1], starts = [0]}, {{.*}}op_type = "Slice"}> {train.name = "slice1"
// CHECK: Cast(%{{.*}}) {to = 10 : i64, train.name = "weight"
module {
  train.graph @stays(%x: tensor<8x4xf32> {train.name = "x"}, %d: tensor<?x4xf32> {train.name = "d"}) -> (tensor<2xi64> {train.name = "s"}, tensor<2xi64> {train.name = "sd"}, tensor<i64> {train.name = "g"}, tensor<3xi64> {train.name = "n"}, tensor<300x300xf32> {train.name = "big"}, tensor<300x300xi1> {train.name = "lt"}, tensor<1xi64> {train.name = "sl"}, tensor<4xf16> {train.name = "e"}) {
    %r = Relu(%x) {train.name = "relu", train.outputs = ["r"]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %s = Shape(%r) {train.name = "activation", train.outputs = ["s"]} : (tensor<8x4xf32>) -> tensor<2xi64>
    %sd = Shape(%d) {train.name = "dynamic", train.outputs = ["sd"]} : (tensor<?x4xf32>) -> tensor<2xi64>
    %sx = Shape(%x) {train.name = "sx", train.outputs = ["sx"]} : (tensor<8x4xf32>) -> tensor<2xi64>
    %i = Constant() {train.name = "i", train.outputs = ["i"], value = dense<5> : tensor<i64>} : () -> tensor<i64>
    %g = Gather(%sx, %i) {axis = 0 : i64, train.name = "out_of_range", train.outputs = ["g"]} : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
    %n = Shape(%x) {train.name = "declared_3", train.outputs = ["n"]} : (tensor<8x4xf32>) -> tensor<3xi64>
    %shape = Constant() {train.name = "dims", train.outputs = ["dims"], value = dense<[300, 300]> : tensor<2xi64>} : () -> tensor<2xi64>
    %big = ConstantOfShape(%shape) {train.name = "big", train.outputs = ["big"]} : (tensor<2xi64>) -> tensor<300x300xf32>
    %row = Constant() {train.name = "row", train.outputs = ["row"], value = dense<1> : tensor<1x300xi64>} : () -> tensor<1x300xi64>
    %col = Constant() {train.name = "col", train.outputs = ["col"], value = dense<2> : tensor<300x1xi64>} : () -> tensor<300x1xi64>
    %lt = Less(%row, %col) {train.name = "broadcast", train.outputs = ["lt"]} : (tensor<1x300xi64>, tensor<300x1xi64>) -> tensor<300x300xi1>
    %sl = "train.node"(%sx) <{attrs = {starts = [0], ends = [1]}, domain = "", graph_attrs = [], op_type = "Slice"}> {train.name = "slice1", train.outputs = ["sl"]} : (tensor<2xi64>) -> tensor<1xi64>
    %w = initializer "w" {value = dense<1.000000e+00> : tensor<4xf32>} : tensor<4xf32>
    %e = Cast(%w) {to = 10 : i64, train.name = "weight", train.outputs = ["e"]} : (tensor<4xf32>) -> tensor<4xf16>
    train.return %s, %sd, %g, %n, %big, %lt, %sl, %e : tensor<2xi64>, tensor<2xi64>, tensor<i64>, tensor<3xi64>, tensor<300x300xf32>, tensor<300x300xi1>, tensor<1xi64>, tensor<4xf16>
  }
}
