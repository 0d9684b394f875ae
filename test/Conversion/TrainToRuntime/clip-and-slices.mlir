// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// Clip is max then min, in place on the output (opset 11+ inputs, either
// absent; opset 6 attributes); with neither bound it is a copy.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "max"(%arg0, %arg1, %[[Y:[^)]*]]) {{.*}}node = "both"
// CHECK-NEXT: amprt.call "min"(%[[Y]], %arg2, %[[Y]]) {{.*}}node = "both"
// CHECK-NEXT: amprt.call "min"(%arg0, %arg2, %{{[^)]*}}) {{.*}}node = "hi"
// CHECK-NEXT: amprt.call "identity"(%arg0, %{{[^)]*}}) {{.*}}node = "none"
// CHECK-NEXT: amprt.call "max"(%arg0, %[[LO:[^,]*]], %[[Z:[^)]*]]) {{.*}}node = "attrs"
// CHECK-NEXT: amprt.call "min"(%[[Z]], %[[HI:[^,]*]], %[[Z]]) {{.*}}node = "attrs"
module {
  train.graph @main(%x: tensor<4x3xf32> {train.name = "x"}, %lo: tensor<f32> {train.name = "lo"}, %hi: tensor<f32> {train.name = "hi"}) -> (tensor<4x3xf32> {train.name = "a"}, tensor<4x3xf32> {train.name = "b"}, tensor<4x3xf32> {train.name = "c"}, tensor<4x3xf32> {train.name = "d"}) {
    %n = none
    %a = Clip(%x, %lo, %hi) {train.name = "both", train.outputs = ["a"]} : (tensor<4x3xf32>, tensor<f32>, tensor<f32>) -> tensor<4x3xf32>
    %b = Clip(%x, %n, %hi) {train.name = "hi", train.outputs = ["b"]} : (tensor<4x3xf32>, none, tensor<f32>) -> tensor<4x3xf32>
    %c = Clip(%x, %n, %n) {train.name = "none", train.outputs = ["c"]} : (tensor<4x3xf32>, none, none) -> tensor<4x3xf32>
    %d = "train.node"(%x) <{attrs = {min = 0.0 : f32, max = 6.0 : f32}, domain = "", graph_attrs = [], op_type = "Clip"}> {train.name = "attrs", train.outputs = ["d"]} : (tensor<4x3xf32>) -> tensor<4x3xf32>
    train.return %a, %b, %c, %d : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
}

// -----

// SliceGrad: dX of the given shape, zero but for the slice; the geometry
// is Slice's, normalized (every dim, explicit steps).
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "slice_grad"(%arg0, %{{[^)]*}}) {axes = array<i64: 0, 1>, counts = array<i64: 1, 1>, ends = array<i64: 7, 4>, n = 2 : i64, node = "sg", starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : memref<3x4xf32>, memref<6x4xf32>
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%dy: tensor<3x4xf32> {train.name = "dy"}) -> (tensor<6x4xf32> {train.name = "dx"}) {
    %shape = initializer "shape" {value = dense<[6, 4]> : tensor<2xi64>} : tensor<2xi64>
    %st = initializer "st" {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
    %en = initializer "en" {value = dense<100> : tensor<1xi64>} : tensor<1xi64>
    %ax = initializer "ax" {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %sp = initializer "sp" {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
    %0 = "train.node"(%dy, %shape, %st, %en, %ax, %sp) <{attrs = {}, domain = "com.microsoft", graph_attrs = [], op_type = "SliceGrad"}> {train.name = "sg", train.outputs = ["dx"]} : (tensor<3x4xf32>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x4xf32>
    train.return %0 : tensor<6x4xf32>
  }
}

// -----

// SimplifiedLayerNormalization whose inv_std_var output the graph left
// untyped (as ORT's fusion does): an f32 statistic per row.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "rms_norm"(%arg0, %arg1, %{{[^,]*}}, %{{[^)]*}}) {axis = 1 : i64, counts = array<i64: 1, 1, 1, 1>, epsilon = 9.99999974E-6 : f32, node = "rms"} : memref<4x8xf16>, memref<8xf16>, memref<4x8xf16>, memref<4x1xf32>
// CHECK: amprt.call "rms_norm_grad"(%arg2, %arg0, %arg1, %{{[^,]*}}, %{{[^,]*}}, %{{[^)]*}}) {axis = 1 : i64, counts = array<i64: 1, 1, 1, 1, 1, 1>, node = "rms_grad"}
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%x: tensor<4x8xf16> {train.name = "x"}, %s: tensor<8xf16> {train.name = "s"}, %dy: tensor<4x8xf16> {train.name = "dy"}) -> (tensor<4x8xf16> {train.name = "y"}, tensor<4x8xf16> {train.name = "dx"}, tensor<8xf16> {train.name = "ds"}) {
    %y, %inv = "train.node"(%x, %s) <{attrs = {axis = -1 : i64, epsilon = 1.0e-5 : f32}, domain = "", graph_attrs = [], op_type = "SimplifiedLayerNormalization"}> {train.name = "rms", train.outputs = ["y", "inv"]} : (tensor<4x8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, !train.unknown)
    %dx, %ds = "train.node"(%dy, %x, %s, %inv) <{attrs = {axis = -1 : i64}, domain = "com.microsoft", graph_attrs = [], op_type = "SimplifiedLayerNormalizationGrad"}> {train.name = "rms_grad", train.outputs = ["dx", "ds"]} : (tensor<4x8xf16>, tensor<4x8xf16>, tensor<8xf16>, !train.unknown) -> (tensor<4x8xf16>, tensor<8xf16>)
    train.return %y, %dx, %ds : tensor<4x8xf16>, tensor<4x8xf16>, tensor<8xf16>
  }
}

// -----

// Pad: the pads of every dim (opset 18's axes spread them), the constant
// value from its input, the mode by number; ORT's gradient, a Pad by the
// negated pads, crops.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "pad"(%arg0, %[[P:[^)]*]]) {counts = array<i64: 1, 1>, mode = 0 : i32, node = "pad", npads = 4 : i64, pads = array<i64: 0, 2, 0, 1>, value = -5.000000e-01 : f64} : memref<2x3xf32>, memref<2x6xf32>
// CHECK: amprt.call "pad"(%[[P]], %{{[^)]*}}) {counts = array<i64: 1, 1>, mode = 1 : i32, node = "crop", npads = 4 : i64, pads = array<i64: 0, -2, 0, -1>, value = 0.000000e+00 : f64} : memref<2x6xf32>, memref<2x3xf32>
// CHECK: amprt.call "pad"(%arg0, %{{[^)]*}}) {counts = array<i64: 1, 1>, mode = 2 : i32, node = "attrs", npads = 4 : i64, pads = array<i64: 1, 0, 1, 0>, value = 0.000000e+00 : f64} : memref<2x3xf32>, memref<4x3xf32>
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<2x3xf32> {train.name = "c"}, tensor<4x3xf32> {train.name = "e"}) {
    %n = none
    %pads = initializer "pads" {value = dense<[2, 1]> : tensor<2xi64>} : tensor<2xi64>
    %neg = initializer "neg" {value = dense<[0, -2, 0, -1]> : tensor<4xi64>} : tensor<4xi64>
    %v = initializer "v" {value = dense<-0.5> : tensor<f32>} : tensor<f32>
    %ax = initializer "ax" {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
    %p = "train.node"(%x, %pads, %v, %ax) <{attrs = {mode = "constant"}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "pad", train.outputs = ["p"]} : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>, tensor<1xi64>) -> tensor<?x?xf32>
    %c = "train.node"(%p, %neg) <{attrs = {mode = "reflect"}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "crop", train.outputs = ["c"]} : (tensor<?x?xf32>, tensor<4xi64>) -> tensor<2x3xf32>
    %e = "train.node"(%x) <{attrs = {mode = "edge", pads = [1, 0, 1, 0]}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "attrs", train.outputs = ["e"]} : (tensor<2x3xf32>) -> tensor<4x3xf32>
    train.return %c, %e : tensor<2x3xf32>, tensor<4x3xf32>
  }
}

// -----

// Slice to the end: torch writes INT64_MAX as the end, which the lowering
// holds as a double (2^63) and takes back saturated, not overflowed.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "slice"(%arg0, %{{[^)]*}}) {axes = array<i64: 0, 1>, counts = array<i64: 1, 1>, ends = array<i64: 3, 7>, n = 2 : i64, node = "tail", starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : memref<3x7xf32>, memref<3x3xf32>
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<3x7xf32> {train.name = "x"}) -> (tensor<?x?xf32> {train.name = "y"}) {
    %st = initializer "st" {value = dense<4> : tensor<1xi64>} : tensor<1xi64>
    %en = initializer "en" {value = dense<9223372036854775807> : tensor<1xi64>} : tensor<1xi64>
    %ax = initializer "ax" {value = dense<1> : tensor<1xi64>} : tensor<1xi64>
    %0 = "train.node"(%x, %st, %en, %ax) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Slice"}> {train.name = "tail", train.outputs = ["y"]} : (tensor<3x7xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xf32>
    train.return %0 : tensor<?x?xf32>
  }
}

// -----

// Pads computed on the host as timm's Swin writes them: a [dims, 2] table
// of (begin, end) pairs, reversed by a negative-step Slice, transposed and
// flattened into ONNX's begins-then-ends order.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "pad"(%arg0, %{{[^)]*}}) {{{.*}}pads = array<i64: 0, 1, 3, 0, 2, 4>, {{.*}}} : memref<2x3x4xf32>, memref<2x6x11xf32>
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3x4xf32> {train.name = "x"}) -> (tensor<2x6x11xf32> {train.name = "y"}) {
    %table = initializer "table" {value = dense<[[3, 4], [1, 2], [0, 0]]> : tensor<3x2xi64>} : tensor<3x2xi64>
    %st = initializer "st" {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
    %en = initializer "en" {value = dense<-9223372036854775807> : tensor<1xi64>} : tensor<1xi64>
    %ax = initializer "ax" {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %flat = initializer "flat" {value = dense<-1> : tensor<1xi64>} : tensor<1xi64>
    %rev = "train.node"(%table, %st, %en, %ax, %st) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Slice"}> {train.name = "rev", train.outputs = ["rev"]} : (tensor<3x2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x2xi64>
    %t = "train.node"(%rev) <{attrs = {perm = [1, 0]}, domain = "", graph_attrs = [], op_type = "Transpose"}> {train.name = "t", train.outputs = ["t"]} : (tensor<3x2xi64>) -> tensor<2x3xi64>
    %pads = "train.node"(%t, %flat) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Reshape"}> {train.name = "r", train.outputs = ["pads"]} : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<6xi64>
    %y = "train.node"(%x, %pads) <{attrs = {mode = "constant"}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "pad", train.outputs = ["y"]} : (tensor<2x3x4xf32>, tensor<6xi64>) -> tensor<2x6x11xf32>
    train.return %y : tensor<2x6x11xf32>
  }
}
