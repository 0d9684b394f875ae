// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// Generators. A node's seed is its `seed` attribute (Dropout: an int; the
// Random* ops and Bernoulli: a float, by its bits), else the FNV-1a hash of
// its name, so that two unseeded nodes draw different streams (the runtime
// then moves every stream by the step index: amprt_set_random_offset).
// Stochastic depth (HF's drop_path) is RandomUniformLike, Add, Floor.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "random_uniform"(%{{[^)]*}}) {{{.*}}high = 1.000000e+00 : f64, low = 0.000000e+00 : f64, node = "rul", seed = -8524568516730988828 : i64} : memref<4x1x1xf32>
// CHECK: amprt.call "random_normal"(%{{[^)]*}}) {{{.*}}mean = 1.000000e+00 : f64, node = "rn", scale = 2.000000e+00 : f64, seed = 4611686018427387904 : i64} : memref<2x3xf16>
// CHECK: amprt.call "bernoulli"(%arg1, %{{[^)]*}}) {{{.*}}node = "b", seed = {{-?[0-9]+}} : i64} : memref<2x3xf32>, memref<2x3xi1>
// CHECK: amprt.call "dropout"(%arg0, {{.*}}node = "d1", seed = 5 : i64}
// CHECK: amprt.call "dropout"(%arg0, {{.*}}node = "d2", seed = 617413195496944499 : i64}
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x1x1xf32> {train.name = "x"}, %p: tensor<2x3xf32> {train.name = "p"}) -> (tensor<4x1x1xf32> {train.name = "u"}, tensor<2x3xf16> {train.name = "n"}, tensor<2x3xi1> {train.name = "bb"}, tensor<4x1x1xf32> {train.name = "y1"}, tensor<4x1x1xf32> {train.name = "y2"}) {
    %r = initializer "r" {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %t = initializer "t" {value = dense<true> : tensor<i1>} : tensor<i1>
    %u = "train.node"(%x) <{attrs = {}, domain = "", graph_attrs = [], op_type = "RandomUniformLike"}> {train.name = "rul", train.outputs = ["u"]} : (tensor<4x1x1xf32>) -> tensor<4x1x1xf32>
    %n = "train.node"() <{attrs = {shape = [2, 3], dtype = 10 : i64, mean = 1.0 : f32, scale = 2.0 : f32, seed = 2.0 : f32}, domain = "", graph_attrs = [], op_type = "RandomNormal"}> {train.name = "rn", train.outputs = ["n"]} : () -> tensor<2x3xf16>
    %b = "train.node"(%p) <{attrs = {dtype = 9 : i64}, domain = "", graph_attrs = [], op_type = "Bernoulli"}> {train.name = "b", train.outputs = ["bb"]} : (tensor<2x3xf32>) -> tensor<2x3xi1>
    %y1, %m1 = "train.node"(%x, %r, %t) <{attrs = {seed = 5 : i64}, domain = "", graph_attrs = [], op_type = "Dropout"}> {train.name = "d1", train.outputs = ["y1", "m1"]} : (tensor<4x1x1xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x1x1xf32>, tensor<4x1x1xi1>)
    %y2, %m2 = "train.node"(%x, %r, %t) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Dropout"}> {train.name = "d2", train.outputs = ["y2", "m2"]} : (tensor<4x1x1xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x1x1xf32>, tensor<4x1x1xi1>)
    train.return %u, %n, %b, %y1, %y2 : tensor<4x1x1xf32>, tensor<2x3xf16>, tensor<2x3xi1>, tensor<4x1x1xf32>, tensor<4x1x1xf32>
  }
}

// -----

// Unnamed nodes (ONNX names are optional) hash their first output's name:
// two unseeded, unnamed Dropouts still draw different streams.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "dropout"(%arg0, {{.*}}seed = 643314390917601951 : i64}
// CHECK: amprt.call "dropout"(%arg0, {{.*}}seed = 643315490429230162 : i64}
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4xf32> {train.name = "x"}) -> (tensor<4xf32> {train.name = "y1"}, tensor<4xf32> {train.name = "y2"}) {
    %r = initializer "r" {value = dense<0.5> : tensor<f32>} : tensor<f32>
    %t = initializer "t" {value = dense<true> : tensor<i1>} : tensor<i1>
    %y1, %m1 = "train.node"(%x, %r, %t) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Dropout"}> {train.outputs = ["y1", "m1"]} : (tensor<4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xi1>)
    %y2, %m2 = "train.node"(%x, %r, %t) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Dropout"}> {train.outputs = ["y2", "m2"]} : (tensor<4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xi1>)
    train.return %y1, %y2 : tensor<4xf32>, tensor<4xf32>
  }
}
