// RUN: amp-opt %s --split-input-file --convert-train-to-runtime | FileCheck %s

// CumSum: the axis input is read when lowering (negative counts from the
// end); exclusive and reverse pass through. Integer inputs stay integers
// (RoBERTa's position ids are a CumSum of its i32 non-pad mask).
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "cumsum"(%arg0, %{{[^)]*}}) {axis = 1 : i64, counts = array<i64: 1, 1>, exclusive = 0 : i32, node = "fwd", reverse = 0 : i32} : memref<2x5xi32>, memref<2x5xi32>
// CHECK: amprt.call "cumsum"(%arg1, %{{[^)]*}}) {axis = 0 : i64, counts = array<i64: 1, 1>, exclusive = 1 : i32, node = "back", reverse = 1 : i32} : memref<2x5xf32>, memref<2x5xf32>
module attributes {train.opset_import = [["", 14 : i64]]} {
  train.graph @main(%m: tensor<2x5xi32> {train.name = "m"}, %x: tensor<2x5xf32> {train.name = "x"}) -> (tensor<2x5xi32> {train.name = "p"}, tensor<2x5xf32> {train.name = "q"}) {
    %a1 = initializer "a1" {value = dense<-1> : tensor<i64>} : tensor<i64>
    %a0 = initializer "a0" {value = dense<0> : tensor<i32>} : tensor<i32>
    %p = "train.node"(%m, %a1) <{attrs = {}, domain = "", graph_attrs = [], op_type = "CumSum"}> {train.name = "fwd", train.outputs = ["p"]} : (tensor<2x5xi32>, tensor<i64>) -> tensor<2x5xi32>
    %q = "train.node"(%x, %a0) <{attrs = {exclusive = 1 : i64, reverse = 1 : i64}, domain = "", graph_attrs = [], op_type = "CumSum"}> {train.name = "back", train.outputs = ["q"]} : (tensor<2x5xf32>, tensor<i32>) -> tensor<2x5xf32>
    train.return %p, %q : tensor<2x5xi32>, tensor<2x5xf32>
  }
}

// -----

// ArgMax of an i32 tensor (HF's GPT-2 finds each row's last non-pad token
// so): the runtime compares integers exactly.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "arg_max"(%arg0, %{{[^)]*}}) {axis = 1 : i64, counts = array<i64: 1, 1>, keepdims = 0 : i32, node = "am", select_last_index = 0 : i32} : memref<2x5xi32>, memref<2xi64>
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%m: tensor<2x5xi32> {train.name = "m"}) -> (tensor<2xi64> {train.name = "y"}) {
    %y = "train.node"(%m) <{attrs = {axis = -1 : i64, keepdims = 0 : i64}, domain = "", graph_attrs = [], op_type = "ArgMax"}> {train.name = "am", train.outputs = ["y"]} : (tensor<2x5xi32>) -> tensor<2xi64>
    train.return %y : tensor<2xi64>
  }
}

// -----

// GatherND with batch_dims (the dynamo exporter's x[arange(b), idx]) and
// ORT's GatherNDGrad (shape, indices, dY): y is the indices' leading dims
// plus the data's dims after the tuple.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "gather_nd"(%arg0, %arg1, %{{[^)]*}}) {batch_dims = 1 : i64, {{.*}}node = "g"} : memref<4x3x8xf32>, memref<4x1xi64>, memref<4x8xf32>
// CHECK: amprt.call "gather_nd_grad"(%arg2, %arg1, %{{[^)]*}}) {batch_dims = 1 : i64, {{.*}}node = "gg"} : memref<4x8xf32>, memref<4x1xi64>, memref<4x3x8xf32>
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%d: tensor<4x3x8xf32> {train.name = "d"}, %i: tensor<4x1xi64> {train.name = "i"}, %dy: tensor<4x8xf32> {train.name = "dy"}) -> (tensor<4x8xf32> {train.name = "y"}, tensor<4x3x8xf32> {train.name = "dx"}) {
    %shape = initializer "shape" {value = dense<[4, 3, 8]> : tensor<3xi64>} : tensor<3xi64>
    %y = "train.node"(%d, %i) <{attrs = {batch_dims = 1 : i64}, domain = "", graph_attrs = [], op_type = "GatherND"}> {train.name = "g", train.outputs = ["y"]} : (tensor<4x3x8xf32>, tensor<4x1xi64>) -> tensor<4x8xf32>
    %dx = "train.node"(%shape, %i, %dy) <{attrs = {batch_dims = 1 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "GatherNDGrad"}> {train.name = "gg", train.outputs = ["dx"]} : (tensor<3xi64>, tensor<4x1xi64>, tensor<4x8xf32>) -> tensor<4x3x8xf32>
    train.return %y, %dx : tensor<4x8xf32>, tensor<4x3x8xf32>
  }
}

// -----

// ScatterND: the encoder-decoder decoder's shifted input ids (i64 data, no
// reduction) and a float reduction (opset 18's max); updates have the
// indices' leading dims then the data's after the indexed ones.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "scatter_nd"(%arg0, %arg1, %arg2, %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1>, node = "shift", reduction = 0 : i32} : memref<2x5xi64>, memref<2x4x2xi64>, memref<2x4xi64>, memref<2x5xi64>
// CHECK: amprt.call "scatter_nd"(%arg3, %arg4, %arg5, %{{[^)]*}}) {counts = array<i64: 1, 1, 1, 1>, node = "mx", reduction = 3 : i32} : memref<4x3x2xf16>, memref<5x1xi32>, memref<5x3x2xf16>, memref<4x3x2xf16>
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%d: tensor<2x5xi64> {train.name = "d"}, %i: tensor<2x4x2xi64> {train.name = "i"}, %u: tensor<2x4xi64> {train.name = "u"}, %x: tensor<4x3x2xf16> {train.name = "x"}, %j: tensor<5x1xi32> {train.name = "j"}, %v: tensor<5x3x2xf16> {train.name = "v"}) -> (tensor<2x5xi64> {train.name = "y"}, tensor<4x3x2xf16> {train.name = "z"}) {
    %y = "train.node"(%d, %i, %u) <{attrs = {}, domain = "", graph_attrs = [], op_type = "ScatterND"}> {train.name = "shift", train.outputs = ["y"]} : (tensor<2x5xi64>, tensor<2x4x2xi64>, tensor<2x4xi64>) -> tensor<2x5xi64>
    %z = "train.node"(%x, %j, %v) <{attrs = {reduction = "max"}, domain = "", graph_attrs = [], op_type = "ScatterND"}> {train.name = "mx", train.outputs = ["z"]} : (tensor<4x3x2xf16>, tensor<5x1xi32>, tensor<5x3x2xf16>) -> tensor<4x3x2xf16>
    train.return %y, %z : tensor<2x5xi64>, tensor<4x3x2xf16>
  }
}

// -----

// ReduceSum of an i64 mask (mBART counts each row's non-pad tokens so):
// the runtime sums integers exactly.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "reduce_sum"(%arg0, %{{[^)]*}}) {axes = array<i64: 1>, {{.*}}keepdims = 0 : i32, {{.*}}node = "count"{{.*}} : memref<2x5xi64>, memref<2xi64>
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%m: tensor<2x5xi64> {train.name = "m"}) -> (tensor<2xi64> {train.name = "n"}) {
    %a = initializer "a" {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
    %n = "train.node"(%m, %a) <{attrs = {keepdims = 0 : i64}, domain = "", graph_attrs = [], op_type = "ReduceSum"}> {train.name = "count", train.outputs = ["n"]} : (tensor<2x5xi64>, tensor<1xi64>) -> tensor<2xi64>
    train.return %n : tensor<2xi64>
  }
}
