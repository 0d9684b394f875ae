// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// Ops lowered as sequences of existing kernels (LowerComposite.cpp).
// Tile: a view as [1, 2, 1, 3], an expand to [2, 2, 3, 3], a view as
// [4, 9] (the views of temporaries are no calls).
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "reshape"(%arg0, %[[A:[^)]*]]) {{.*}}node = "tile"} : memref<2x3xf32>, memref<1x2x1x3xf32>
// CHECK-NEXT: amprt.call "expand"(%[[A]], %{{[^)]*}}) {{.*}}node = "tile"} : memref<1x2x1x3xf32>, memref<2x2x3x3xf32>
// Split into 1 + 2 along axis 1: one slice each.
// CHECK: amprt.call "slice"(%arg0, %{{[^)]*}}) {axes = array<i64: 0, 1>, counts = array<i64: 1, 1>, ends = array<i64: 2, 1>, n = 2 : i64, node = "split", starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : memref<2x3xf32>, memref<2x1xf32>
// CHECK-NEXT: amprt.call "slice"(%arg0, %{{[^)]*}}) {axes = array<i64: 0, 1>, counts = array<i64: 1, 1>, ends = array<i64: 2, 3>, n = 2 : i64, node = "split", starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : memref<2x3xf32>, memref<2x2xf32>
// ReduceL2 over axis 1: x * x, the sum (f32), its square root.
// CHECK-NEXT: amprt.call "mul"(%arg0, %arg0, %[[SQ:[^)]*]]) {{.*}}node = "l2"
// CHECK-NEXT: amprt.call "reduce_sum"(%[[SQ]], %[[S:[^)]*]]) {axes = array<i64: 1>, {{.*}}keepdims = 1 : i32{{.*}}node = "l2"
// CHECK-NEXT: amprt.call "sqrt"(%[[S]], %{{[^)]*}}) {{.*}}node = "l2"} : memref<2x1xf32>, memref<2x1xf32>
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<4x9xf32> {train.name = "t"}, tensor<2x1xf32> {train.name = "s0"}, tensor<2x2xf32> {train.name = "s1"}, tensor<2x1xf32> {train.name = "l2"}) {
    %reps = initializer "reps" {value = dense<[2, 3]> : tensor<2xi64>} : tensor<2xi64>
    %sizes = initializer "sizes" {value = dense<[1, 2]> : tensor<2xi64>} : tensor<2xi64>
    %axes = initializer "axes" {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
    %t = "train.node"(%x, %reps) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Tile"}> {train.name = "tile", train.outputs = ["t"]} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x9xf32>
    %s0, %s1 = "train.node"(%x, %sizes) <{attrs = {axis = 1 : i64}, domain = "", graph_attrs = [], op_type = "Split"}> {train.name = "split", train.outputs = ["s0", "s1"]} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
    %l = "train.node"(%x, %axes) <{attrs = {}, domain = "", graph_attrs = [], op_type = "ReduceL2"}> {train.name = "l2", train.outputs = ["l2"]} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x1xf32>
    train.return %t, %s0, %s1, %l : tensor<4x9xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>
  }
}

// -----

// LogSoftmaxGrad_13: dY - exp(Y) * sum(dY, axis), the intermediates in f32
// for an f16 graph. DivGrad with B broadcast along dim 0: dA = dY / B; dB =
// -(dY A) / (B B) summed over dim 0 and viewed as B's shape.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "exp"(%arg1, %[[E:[^)]*]]) {{.*}} : memref<2x5xf16>, memref<2x5xf32>
// CHECK-NEXT: amprt.call "reduce_sum"(%arg0, %[[S:[^)]*]]) {axes = array<i64: 1>{{.*}} : memref<2x5xf16>, memref<2x1xf32>
// CHECK-NEXT: amprt.call "mul"(%[[E]], %[[S]], %[[M:[^)]*]])
// CHECK-NEXT: amprt.call "sub"(%arg0, %[[M]], %{{[^)]*}}) {{.*}} : memref<2x5xf16>, memref<2x5xf32>, memref<2x5xf16>
// CHECK: amprt.call "div"(%arg2, %arg4, %{{[^)]*}}) {{.*}}node = "dg"} : memref<3x4xf32>, memref<4xf32>, memref<3x4xf32>
// CHECK: amprt.call "mul"(%arg2, %arg3
// CHECK-NEXT: amprt.call "mul"(%arg4, %arg4
// CHECK-NEXT: amprt.call "div"
// CHECK-NEXT: amprt.call "neg"(%[[Q:[^,]*]], %[[Q]])
// CHECK-NEXT: amprt.call "reduce_sum"(%[[Q]], %{{[^)]*}}) {axes = array<i64: 0>, {{.*}}keepdims = 1 : i32{{.*}} : memref<3x4xf32>, memref<1x4xf32>
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%dy: tensor<2x5xf16> {train.name = "dy"}, %y: tensor<2x5xf16> {train.name = "y"}, %g: tensor<3x4xf32> {train.name = "g"}, %a: tensor<3x4xf32> {train.name = "a"}, %b: tensor<4xf32> {train.name = "b"}) -> (tensor<2x5xf16> {train.name = "dx"}, tensor<3x4xf32> {train.name = "da"}, tensor<4xf32> {train.name = "db"}) {
    %dx = "train.node"(%dy, %y) <{attrs = {axis = -1 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "LogSoftmaxGrad_13"}> {train.name = "lsg", train.outputs = ["dx"]} : (tensor<2x5xf16>, tensor<2x5xf16>) -> tensor<2x5xf16>
    %da, %db = "train.node"(%g, %a, %b) <{attrs = {}, domain = "com.microsoft", graph_attrs = [], op_type = "DivGrad"}> {train.name = "dg", train.outputs = ["da", "db"]} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>)
    train.return %dx, %da, %db : tensor<2x5xf16>, tensor<3x4xf32>, tensor<4xf32>
  }
}

// -----

// BroadcastGradientArgs of [2, 3, 4] and [3, 1] is folded: A needs no
// reduction, B sums over dims 0 and 2; the ReduceSum that reads B's axes
// reduces exactly those.
// CHECK-LABEL: func.func @main
// CHECK-NOT: BroadcastGradientArgs
// CHECK: amprt.call "reduce_sum"(%arg0, %{{[^)]*}}) {axes = array<i64: 0, 2>, {{.*}}keepdims = 1 : i32{{.*}} : memref<2x3x4xf32>, memref<1x3x1xf32>
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%dy: tensor<2x3x4xf32> {train.name = "dy"}) -> (tensor<1x3x1xf32> {train.name = "db"}) {
    %sa = initializer "sa" {value = dense<[2, 3, 4]> : tensor<3xi64>} : tensor<3xi64>
    %sb = initializer "sb" {value = dense<[3, 1]> : tensor<2xi64>} : tensor<2xi64>
    %ra, %rb = "train.node"(%sa, %sb) <{attrs = {}, domain = "com.microsoft", graph_attrs = [], op_type = "BroadcastGradientArgs"}> {train.name = "bga", train.outputs = ["ra", "rb"]} : (tensor<3xi64>, tensor<2xi64>) -> (tensor<?xi64>, tensor<?xi64>)
    %r = ReduceSum(%dy, %rb) {keepdims = 1 : i64, train.name = "rs", train.outputs = ["db"]} : (tensor<2x3x4xf32>, tensor<?xi64>) -> tensor<1x3x1xf32>
    train.return %r : tensor<1x3x1xf32>
  }
}

// -----

// ReduceLogSumExp: the max over the axes (0 where it is infinite, so that a
// row of -inf gives -inf, not NaN), then log-sum-exp of the difference; the
// max viewed as the output's shape (a view, no call) is added back.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "reduce_max"(%arg0, %[[MX:[^)]*]]) {axes = array<i64: 1>, {{.*}}keepdims = 1 : i32{{.*}} : memref<2x5xf32>, memref<2x1xf32>
// CHECK-NEXT: amprt.call "isinf"(%[[MX]], %[[INF:[^)]*]])
// CHECK-NEXT: amprt.call "where"(%[[INF]], %{{[^,]*}}, %[[MX]], %[[M:[^)]*]])
// CHECK-NEXT: amprt.call "sub"(%arg0, %[[M]], %[[D:[^)]*]])
// CHECK-NEXT: amprt.call "exp"(%[[D]], %[[E:[^)]*]])
// CHECK-NEXT: amprt.call "reduce_sum"(%[[E]], %[[S:[^)]*]]) {axes = array<i64: 1>, {{.*}}keepdims = 0 : i32
// CHECK-NEXT: amprt.call "log"(%[[S]], %[[L:[^)]*]])
// CHECK-NEXT: amprt.call "add"(%[[L]], %{{[^,]*}}, %{{[^)]*}}) {{.*}} : memref<2xf32>, memref<2xf32>, memref<2xf32>
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}) -> (tensor<2xf32> {train.name = "y"}) {
    %0 = "train.node"(%x) <{attrs = {axes = [1], keepdims = 0 : i64}, domain = "", graph_attrs = [], op_type = "ReduceLogSumExp"}> {train.name = "lse", train.outputs = ["y"]} : (tensor<2x5xf32>) -> tensor<2xf32>
    train.return %0 : tensor<2xf32>
  }
}
