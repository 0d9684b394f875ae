// RUN: amp-opt %s --split-input-file --verify-diagnostics --convert-train-to-runtime=dims=batch=2

// A symbolic dim with no value names the input and the option to give.
module {
  // expected-error @+1 {{graph input 'x' dim 0 is the symbolic dim 'seq': bind it with dims=seq=<size>}}
  train.graph @main(%x: tensor<?x4xf32> {train.name = "x", train.dims = ["seq", ""]}) -> (tensor<?x4xf32> {train.name = "y"}) {
    %0 = train.Relu(%x) {train.name = "r", train.outputs = ["y"]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    train.return %0 : tensor<?x4xf32>
  }
}

// -----

// An op with no runtime kernel: the error names the node and its op type.
module attributes {train.opset_import = [["", 17 : i64], ["my.domain", 1 : i64]]} {
  train.graph @main(%x: tensor<?x4xf32> {train.name = "x", train.dims = ["batch", ""]}) -> (tensor<?x4xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'custom' (my.domain:Frobnicate): no runtime implementation}}
    %0 = "train.node"(%x) <{attrs = {}, domain = "my.domain", graph_attrs = [], op_type = "Frobnicate"}> {train.name = "custom", train.outputs = ["y"]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    train.return %0 : tensor<?x4xf32>
  }
}

// -----

// A shape the graph states that the lowering cannot agree with.
module {
  train.graph @main(%a: tensor<2x3xf32> {train.name = "a"}, %b: tensor<3x5xf32> {train.name = "b"}) -> (tensor<2x4xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'mm' (MatMul): computed shape [2, 5] of output 0 disagrees with its type 'tensor<2x4xf32>'}}
    %0 = train.MatMul(%a, %b) {train.name = "mm", train.outputs = ["y"]} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x4xf32>
    train.return %0 : tensor<2x4xf32>
  }
}

// -----

// An unranked graph input.
module {
  // expected-error @+1 {{graph input 'x' has no rank}}
  train.graph @main(%x: tensor<*xf32> {train.name = "x"}) -> (tensor<*xf32> {train.name = "y"}) {
    %0 = train.Relu(%x) {train.name = "r", train.outputs = ["y"]} : (tensor<*xf32>) -> tensor<*xf32>
    train.return %0 : tensor<*xf32>
  }
}

// -----

// The amprt.call verifier checks calls against Ops.def.
func.func @bad(%x: memref<4xf32>) {
  // expected-error @+1 {{'amprt.call' op kernel 'relu' takes 2 tensor parameters, counts has 1}}
  amprt.call "relu"(%x) {counts = array<i64: 1>} : memref<4xf32>
  return
}

// -----

func.func @bad(%x: memref<4xf32>) {
  // expected-error @+1 {{unknown runtime kernel 'frobnicate'}}
  amprt.call "frobnicate"(%x) {counts = array<i64: 1>} : memref<4xf32>
  return
}

// -----

func.func @bad(%x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @+1 {{missing attribute 'axis' (parameter of amprt_softmax)}}
  amprt.call "softmax"(%x, %y) {counts = array<i64: 1, 1>} : memref<4xf32>, memref<4xf32>
  return
}

// -----

// 4-D convolution: the runtime has 1-D, 2-D and 3-D windows.
module {
  train.graph @main(%x: tensor<1x1x4x4x4x4xf32> {train.name = "x"}, %w: tensor<1x1x2x2x2x2xf32> {train.name = "w"}) -> (tensor<1x1x3x3x3x3xf32> {train.name = "y"}) {
    %n = train.none
    // expected-error @+1 {{node 'c4' (Conv): input of rank 6: the runtime has 1-D, 2-D and 3-D windows}}
    %0 = train.Conv(%x, %w, %n) {train.name = "c4", train.outputs = ["y"]} : (tensor<1x1x4x4x4x4xf32>, tensor<1x1x2x2x2x2xf32>, none) -> tensor<1x1x3x3x3x3xf32>
    train.return %0 : tensor<1x1x3x3x3x3xf32>
  }
}

// -----

// kernel_shape that contradicts the weight.
module {
  train.graph @main(%x: tensor<1x1x4x4xf32> {train.name = "x"}, %w: tensor<1x1x2x2xf32> {train.name = "w"}) -> (tensor<*xf32> {train.name = "y"}) {
    %n = train.none
    // expected-error @+1 {{node 'c' (Conv): kernel_shape disagrees with the weight}}
    %0 = train.Conv(%x, %w, %n) {kernel_shape = array<i64: 3, 3>, train.name = "c", train.outputs = ["y"]} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>, none) -> tensor<*xf32>
    train.return %0 : tensor<*xf32>
  }
}

// -----

// MaxPoolGrad whose indices do not come from a MaxPool of the graph.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%dy: tensor<1x1x2x2xf32> {train.name = "dy"}, %i: tensor<1x1x2x2xi64> {train.name = "i"}) -> (tensor<*xf32> {train.name = "dx"}) {
    // expected-error @+1 {{node 'mpg' (com.microsoft:MaxPoolGrad): input 1 must be the indices output of a MaxPool of this graph}}
    %0 = "train.node"(%dy, %i) <{attrs = {kernel_shape = array<i64: 2, 2>}, domain = "com.microsoft", graph_attrs = [], op_type = "MaxPoolGrad"}> {train.name = "mpg", train.outputs = ["dx"]} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) -> tensor<*xf32>
    train.return %0 : tensor<*xf32>
  }
}

// -----

// Slice bounds computed at run time (a graph input) cannot be lowered.
module {
  train.graph @main(%x: tensor<4xf32> {train.name = "x"}, %s: tensor<1xi64> {train.name = "s"}, %e: tensor<1xi64> {train.name = "e"}) -> (tensor<*xf32> {train.name = "y"}) {
    %n = train.none
    // expected-error @+1 {{node 'sl' (Slice): input 1 must be known when lowering (an initializer, a constant or a shape computation)}}
    %0 = train.Slice(%x, %s, %e, %n, %n) {train.name = "sl", train.outputs = ["y"]} : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<*xf32>
    train.return %0 : tensor<*xf32>
  }
}

// -----

// A folded integer division by zero is reported, not computed.
module {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<*xi64> {train.name = "y"}) {
    %s = train.Size(%x) {train.name = "size", train.outputs = ["n"]} : (tensor<2x3xf32>) -> tensor<i64>
    %z = train.Sub(%s, %s) {train.name = "zero", train.outputs = ["z"]} : (tensor<i64>, tensor<i64>) -> tensor<i64>
    // expected-error @+1 {{node 'div' (Div): integer division by zero}}
    %d = train.Div(%s, %z) {train.name = "div", train.outputs = ["y"]} : (tensor<i64>, tensor<i64>) -> tensor<*xi64>
    train.return %d : tensor<*xi64>
  }
}

// -----

// AveragePoolGrad has only dY: without a forward AveragePool of that window
// giving dY's shape, dX's shape is unknown, and the error says so.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%dy: tensor<2x3x2x2xf32> {train.name = "dy"}) -> (tensor<2x3x4x4xf32> {train.name = "dx"}) {
    // expected-error @+1 {{node 'apg' (AveragePoolGrad): no AveragePool of this graph with this window has dY's shape (dX's shape comes from its input)}}
    %0 = "train.node"(%dy) <{attrs = {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}, domain = "", graph_attrs = [], op_type = "AveragePoolGrad"}> {train.name = "apg", train.outputs = ["dx"]} : (tensor<2x3x2x2xf32>) -> tensor<2x3x4x4xf32>
    train.return %0 : tensor<2x3x4x4xf32>
  }
}

// -----

// SliceGrad's dY must have the shape the slice of dX has.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%dy: tensor<3x4xf32> {train.name = "dy"}) -> (tensor<6x4xf32> {train.name = "dx"}) {
    %shape = initializer "shape" {value = dense<[6, 4]> : tensor<2xi64>} : tensor<2xi64>
    %st = initializer "st" {value = dense<0> : tensor<1xi64>} : tensor<1xi64>
    %en = initializer "en" {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
    // expected-error @+1 {{node 'sg' (com.microsoft:SliceGrad): dY has shape [3, 4], but the slice of [6, 4] it is the gradient of has shape [2, 4]}}
    %0 = "train.node"(%dy, %shape, %st, %en) <{attrs = {}, domain = "com.microsoft", graph_attrs = [], op_type = "SliceGrad"}> {train.name = "sg", train.outputs = ["dx"]} : (tensor<3x4xf32>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x4xf32>
    train.return %0 : tensor<6x4xf32>
  }
}

// -----

// Huge shapes are an error, not an overflowed arena: an output (here a
// Tile of 3e9 x 3e9 repeats) ...
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<?x?xf32> {train.name = "t"}) {
    %reps = initializer "reps" {value = dense<[3000000000, 3000000000]> : tensor<2xi64>} : tensor<2xi64>
    // expected-error @+1 {{node 'tile' (Tile): output 0 would have shape [6000000000, 9000000000]: more than 256 TiB, no buffer can hold it}}
    %t = "train.node"(%x, %reps) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Tile"}> {train.name = "tile", train.outputs = ["t"]} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    train.return %t : tensor<?x?xf32>
  }
}

// -----

// ... and a graph input of a huge static shape.
module {
  // expected-error @+1 {{graph input 'x' would have shape [2, 4611686018427387904]: more than 256 TiB, no buffer can hold it}}
  train.graph @main(%x: tensor<2x4611686018427387904xf32> {train.name = "x"}) -> (tensor<2x4611686018427387904xf32> {train.name = "y"}) {
    %0 = train.Relu(%x) {train.name = "r", train.outputs = ["y"]} : (tensor<2x4611686018427387904xf32>) -> tensor<2x4611686018427387904xf32>
    train.return %0 : tensor<2x4611686018427387904xf32>
  }
}

// -----

// A Tile whose repeat overflows the size: an error, not a wrapped shape.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4xf32> {train.name = "x"}) -> (tensor<?xf32> {train.name = "t"}) {
    %reps = initializer "reps" {value = dense<[4611686018427387904]> : tensor<1xi64>} : tensor<1xi64>
    // expected-error @+1 {{node 'tile' (Tile): repeat 4611686018427387904 of dim 0 (4) overflows}}
    %t = "train.node"(%x, %reps) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Tile"}> {train.name = "tile", train.outputs = ["t"]} : (tensor<4xf32>, tensor<1xi64>) -> tensor<?xf32>
    train.return %t : tensor<?xf32>
  }
}

// -----

// A Split without outputs.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<2x3xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'split' (Split): Split has no outputs}}
    "train.node"(%x) <{attrs = {axis = 1 : i64}, domain = "", graph_attrs = [], op_type = "Split"}> {train.name = "split", train.outputs = []} : (tensor<2x3xf32>) -> ()
    train.return %x : tensor<2x3xf32>
  }
}

// -----

// ConvTranspose's output_padding must be below the stride (ONNX allows
// below the dilation too; the convolution it lowers to cannot say that).
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x4x3x4xf32> {train.name = "x"}, %w: tensor<4x3x3x2xf32> {train.name = "w"}) -> (tensor<?x?x?x?xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'ct' (ConvTranspose): output_padding 1 at spatial dim 0 must be below the stride (1)}}
    %y = "train.node"(%x, %w) <{attrs = {strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, output_padding = array<i64: 1, 1>}, domain = "", graph_attrs = [], op_type = "ConvTranspose"}> {train.name = "ct", train.outputs = ["y"]} : (tensor<2x4x3x4xf32>, tensor<4x3x3x2xf32>) -> tensor<?x?x?x?xf32>
    train.return %y : tensor<?x?x?x?xf32>
  }
}

// -----

// A Conv whose declared output shape disagrees: one error, not a second
// "no runtime implementation".
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<1x2x4x4xf32> {train.name = "x"}, %w: tensor<3x2x2x2xf32> {train.name = "w"}) -> (tensor<1x3x9x9xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'c' (Conv): computed shape [1, 3, 3, 3] of output 0 disagrees with its type 'tensor<1x3x9x9xf32>'}}
    %y = "train.node"(%x, %w) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Conv"}> {train.name = "c", train.outputs = ["y"]} : (tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>) -> tensor<1x3x9x9xf32>
    train.return %y : tensor<1x3x9x9xf32>
  }
}

// -----

// A kernel_shape of the wrong length.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<1x1x4x4xf32> {train.name = "x"}, %dy: tensor<1x1x2x2xf32> {train.name = "dy"}) -> (tensor<1x1x2x2xf32> {train.name = "y"}, tensor<?x?x?x?xf32> {train.name = "dx"}) {
    %y = "train.node"(%x) <{attrs = {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}, domain = "", graph_attrs = [], op_type = "AveragePool"}> {train.name = "ap", train.outputs = ["y"]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
    // expected-error @+1 {{node 'apg' (com.microsoft:AveragePoolGrad): the kernel has 1 spatial dims, the input 2}}
    %dx = "train.node"(%dy) <{attrs = {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>}, domain = "com.microsoft", graph_attrs = [], op_type = "AveragePoolGrad"}> {train.name = "apg", train.outputs = ["dx"]} : (tensor<1x1x2x2xf32>) -> tensor<?x?x?x?xf32>
    train.return %y, %dx : tensor<1x1x2x2xf32>, tensor<?x?x?x?xf32>
  }
}

// -----

// Pad: pads computed on the device ...
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}, %dp: tensor<4xi64> {train.name = "dp"}) -> (tensor<?x?xf32> {train.name = "a"}) {
    // expected-error @+1 {{node 'a' (Pad): input 1 must be known when lowering}}
    %a = "train.node"(%x, %dp) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "a", train.outputs = ["a"]} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
    train.return %a : tensor<?x?xf32>
  }
}

// -----

// ... a mode ONNX does not have ...
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<?x?xf32> {train.name = "b"}) {
    %pads = initializer "pads" {value = dense<[0, 1, 0, 1]> : tensor<4xi64>} : tensor<4xi64>
    // expected-error @+1 {{node 'b' (Pad): unknown mode 'mirror'}}
    %b = "train.node"(%x, %pads) <{attrs = {mode = "mirror"}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "b", train.outputs = ["b"]} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
    train.return %b : tensor<?x?xf32>
  }
}

// -----

// ... and a crop past the dim.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<?x?xf32> {train.name = "c"}) {
    %crop = initializer "crop" {value = dense<[0, -2, 0, -2]> : tensor<4xi64>} : tensor<4xi64>
    // expected-error @+1 {{node 'c' (Pad): pads -2, -2 of dim 1 (3) give a negative or overflowing size}}
    %c = "train.node"(%x, %crop) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Pad"}> {train.name = "c", train.outputs = ["c"]} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<?x?xf32>
    train.return %c : tensor<?x?xf32>
  }
}

// -----

// LSTM: sequence_lens is refused, naming the node.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<3x2x4xf32> {train.name = "x"}, %w: tensor<1x8x4xf32> {train.name = "w"}, %r: tensor<1x8x2xf32> {train.name = "r"}, %sl: tensor<2xi32> {train.name = "sl"}) -> (tensor<3x1x2x2xf32> {train.name = "y"}) {
    %n = none
    // expected-error @+1 {{node 'lstm' (LSTM): sequence_lens is not supported}}
    %y = "train.node"(%x, %w, %r, %n, %sl) <{attrs = {hidden_size = 2 : i64}, domain = "", graph_attrs = [], op_type = "LSTM"}> {train.name = "lstm", train.outputs = ["y"]} : (tensor<3x2x4xf32>, tensor<1x8x4xf32>, tensor<1x8x2xf32>, none, tensor<2xi32>) -> tensor<3x1x2x2xf32>
    train.return %y : tensor<3x1x2x2xf32>
  }
}

// -----

// GRU: batch-first layout is refused.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3x4xf32> {train.name = "x"}, %w: tensor<1x6x4xf32> {train.name = "w"}, %r: tensor<1x6x2xf32> {train.name = "r"}) -> (tensor<2x3x1x2xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'gru' (GRU): layout 1 (batch first) is not supported}}
    %y = "train.node"(%x, %w, %r) <{attrs = {hidden_size = 2 : i64, layout = 1 : i64}, domain = "", graph_attrs = [], op_type = "GRU"}> {train.name = "gru", train.outputs = ["y"]} : (tensor<2x3x4xf32>, tensor<1x6x4xf32>, tensor<1x6x2xf32>) -> tensor<2x3x1x2xf32>
    train.return %y : tensor<2x3x1x2xf32>
  }
}

// -----

// Resize: an unknown interpolation mode is refused.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<1x1x2x2xf32> {train.name = "x"}) -> (tensor<?x?x?x?xf32> {train.name = "y"}) {
    %n = none
    %s = initializer "s" {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : tensor<4xf32>
    // expected-error @+1 {{node 'up' (Resize): mode 'lanczos' is not supported (nearest, linear and cubic are)}}
    %y = "train.node"(%x, %n, %s) <{attrs = {mode = "lanczos"}, domain = "", graph_attrs = [], op_type = "Resize"}> {train.name = "up", train.outputs = ["y"]} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>) -> tensor<?x?x?x?xf32>
    train.return %y : tensor<?x?x?x?xf32>
  }
}

// -----

// Resize: a scale that is not positive.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<1x1x2x2xf32> {train.name = "x"}) -> (tensor<?x?x?x?xf32> {train.name = "y"}) {
    %n = none
    %s = initializer "s" {value = dense<[1.0, 1.0, 0.0, 2.0]> : tensor<4xf32>} : tensor<4xf32>
    // expected-error @+1 {{node 'up' (Resize): scale 0.000000e+00 of dim 2 is not positive and finite}}
    %y = "train.node"(%x, %n, %s) <{attrs = {}, domain = "", graph_attrs = [], op_type = "Resize"}> {train.name = "up", train.outputs = ["y"]} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>) -> tensor<?x?x?x?xf32>
    train.return %y : tensor<?x?x?x?xf32>
  }
}

// -----

// TopK: k computed on the device.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}, %k: tensor<1xi64> {train.name = "k"}) -> (tensor<?x?xf32> {train.name = "v"}) {
    // expected-error @+1 {{node 'top' (TopK): input 1 must be known when lowering}}
    %v, %i = "train.node"(%x, %k) <{attrs = {axis = 1 : i64}, domain = "", graph_attrs = [], op_type = "TopK"}> {train.name = "top", train.outputs = ["v", "i"]} : (tensor<2x5xf32>, tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
    train.return %v : tensor<?x?xf32>
  }
}

// -----

// ScatterElements: an unknown reduction.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}, %i: tensor<2x2xi64> {train.name = "i"}, %u: tensor<2x2xf32> {train.name = "u"}) -> (tensor<2x5xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'sc' (ScatterElements): unknown reduction 'avg'}}
    %y = "train.node"(%x, %i, %u) <{attrs = {axis = 1 : i64, reduction = "avg"}, domain = "", graph_attrs = [], op_type = "ScatterElements"}> {train.name = "sc", train.outputs = ["y"]} : (tensor<2x5xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x5xf32>
    train.return %y : tensor<2x5xf32>
  }
}

// -----

// ScatterElements: a reduction on integers (the runtime reduces floats).
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x5xi64> {train.name = "x"}, %i: tensor<2x2xi64> {train.name = "i"}, %u: tensor<2x2xi64> {train.name = "u"}) -> (tensor<2x5xi64> {train.name = "y"}) {
    // expected-error @+1 {{node 'sc' (ScatterElements): reduction 'add' on element type 'i64'; the runtime's ScatterElements reduces f32, f16, bf16}}
    %y = "train.node"(%x, %i, %u) <{attrs = {axis = 1 : i64, reduction = "add"}, domain = "", graph_attrs = [], op_type = "ScatterElements"}> {train.name = "sc", train.outputs = ["y"]} : (tensor<2x5xi64>, tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x5xi64>
    train.return %y : tensor<2x5xi64>
  }
}

// -----

// ScatterND: an index tuple longer than the data's rank.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}, %i: tensor<4x3xi64> {train.name = "i"}, %u: tensor<4xf32> {train.name = "u"}) -> (tensor<2x5xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'snd' (ScatterND): indices of rank 2 with last dim 3 do not fit data of rank 2 (need 1 <= last dim <= data rank)}}
    %y = "train.node"(%x, %i, %u) <{attrs = {}, domain = "", graph_attrs = [], op_type = "ScatterND"}> {train.name = "snd", train.outputs = ["y"]} : (tensor<2x5xf32>, tensor<4x3xi64>, tensor<4xf32>) -> tensor<2x5xf32>
    train.return %y : tensor<2x5xf32>
  }
}

// -----

// ScatterND: updates of the wrong shape.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}, %i: tensor<3x1xi64> {train.name = "i"}, %u: tensor<3x4xf32> {train.name = "u"}) -> (tensor<2x5xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'snd' (ScatterND): updates have shape [3, 4], expected [3, 5] (the indices' leading dims, then the data's after the indexed ones)}}
    %y = "train.node"(%x, %i, %u) <{attrs = {}, domain = "", graph_attrs = [], op_type = "ScatterND"}> {train.name = "snd", train.outputs = ["y"]} : (tensor<2x5xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<2x5xf32>
    train.return %y : tensor<2x5xf32>
  }
}

// -----

// ScatterND: a reduction on bool data, and an unknown reduction.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x5xi1> {train.name = "x"}, %i: tensor<3x1xi64> {train.name = "i"}, %u: tensor<3x5xi1> {train.name = "u"}) -> (tensor<2x5xi1> {train.name = "y"}) {
    // expected-error @+1 {{node 'snd' (ScatterND): reduction 'mul' on element type 'i1'; the runtime's ScatterND reduces f32, f16, bf16, i64 or i32}}
    %y = "train.node"(%x, %i, %u) <{attrs = {reduction = "mul"}, domain = "", graph_attrs = [], op_type = "ScatterND"}> {train.name = "snd", train.outputs = ["y"]} : (tensor<2x5xi1>, tensor<3x1xi64>, tensor<3x5xi1>) -> tensor<2x5xi1>
    train.return %y : tensor<2x5xi1>
  }
}

// -----

module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}, %i: tensor<3x1xi64> {train.name = "i"}, %u: tensor<3x5xf32> {train.name = "u"}) -> (tensor<2x5xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'snd' (ScatterND): unknown reduction 'sum'}}
    %y = "train.node"(%x, %i, %u) <{attrs = {reduction = "sum"}, domain = "", graph_attrs = [], op_type = "ScatterND"}> {train.name = "snd", train.outputs = ["y"]} : (tensor<2x5xf32>, tensor<3x1xi64>, tensor<3x5xf32>) -> tensor<2x5xf32>
    train.return %y : tensor<2x5xf32>
  }
}

// -----

// GatherElements: indices longer than the data on a dim but the axis.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}, %i: tensor<5x3xi64> {train.name = "i"}) -> (tensor<5x3xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'ge' (GatherElements): indices exceed the data at dim 0 (5 > 2)}}
    %y = "train.node"(%x, %i) <{attrs = {axis = 1 : i64}, domain = "", graph_attrs = [], op_type = "GatherElements"}> {train.name = "ge", train.outputs = ["y"]} : (tensor<2x3xf32>, tensor<5x3xi64>) -> tensor<5x3xf32>
    train.return %y : tensor<5x3xf32>
  }
}

// -----

// ReduceMean of integers, ReduceMax of i8: the runtime's reductions take
// floats (and i64/i32 for sum, max and min).
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xi64> {train.name = "x"}) -> (tensor<1x1xi64> {train.name = "y"}) {
    // expected-error @+1 {{node 'rm' (ReduceMean): input 0 has element type 'i64'; the runtime's ReduceMean takes f32, f16, bf16}}
    %y = "train.node"(%x) <{attrs = {keepdims = 1 : i64}, domain = "", graph_attrs = [], op_type = "ReduceMean"}> {train.name = "rm", train.outputs = ["y"]} : (tensor<2x3xi64>) -> tensor<1x1xi64>
    train.return %y : tensor<1x1xi64>
  }
}

// -----

module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<2x3xi8> {train.name = "x"}) -> (tensor<1x1xi8> {train.name = "y"}) {
    // expected-error @+1 {{node 'rm' (ReduceMax): input 0 has element type 'i8'; the runtime's ReduceMax takes f32, f16, bf16, i64 or i32}}
    %y = "train.node"(%x) <{attrs = {keepdims = 1 : i64}, domain = "", graph_attrs = [], op_type = "ReduceMax"}> {train.name = "rm", train.outputs = ["y"]} : (tensor<2x3xi8>) -> tensor<1x1xi8>
    train.return %y : tensor<1x1xi8>
  }
}

// -----

// CumSum: the axis computed on the device.
module attributes {train.opset_import = [["", 14 : i64]]} {
  train.graph @main(%x: tensor<2x5xf32> {train.name = "x"}, %a: tensor<i64> {train.name = "a"}) -> (tensor<2x5xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'cs' (CumSum): input 1 must be known when lowering}}
    %y = "train.node"(%x, %a) <{attrs = {}, domain = "", graph_attrs = [], op_type = "CumSum"}> {train.name = "cs", train.outputs = ["y"]} : (tensor<2x5xf32>, tensor<i64>) -> tensor<2x5xf32>
    train.return %y : tensor<2x5xf32>
  }
}

// -----

// ArgMax of f64: the runtime compares f32, f16, bf16, integers and bool.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3xf64> {train.name = "x"}) -> (tensor<2xi64> {train.name = "y"}) {
    // expected-error @+1 {{node 'am' (ArgMax): input 0 has element type 'f64'; the runtime's ArgMax takes f32, f16, bf16, integers or bool}}
    %y = "train.node"(%x) <{attrs = {axis = 1 : i64, keepdims = 0 : i64}, domain = "", graph_attrs = [], op_type = "ArgMax"}> {train.name = "am", train.outputs = ["y"]} : (tensor<2x3xf64>) -> tensor<2xi64>
    train.return %y : tensor<2xi64>
  }
}

// -----

// Bernoulli of f64 probabilities.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%p: tensor<3xf64> {train.name = "p"}) -> (tensor<3xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'b' (Bernoulli): input 0 has element type 'f64'; the runtime's Bernoulli takes f32, f16 or bf16}}
    %y = "train.node"(%p) <{attrs = {dtype = 1 : i64}, domain = "", graph_attrs = [], op_type = "Bernoulli"}> {train.name = "b", train.outputs = ["y"]} : (tensor<3xf64>) -> tensor<3xf32>
    train.return %y : tensor<3xf32>
  }
}

// -----

// GatherND: a tuple longer than the data's dims after the batch dims.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%d: tensor<4x3xf32> {train.name = "d"}, %i: tensor<4x2xi64> {train.name = "i"}) -> (tensor<4xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'g' (GatherND): indices of rank 2 with last dim 2, data of rank 2 and batch_dims 1 do not fit}}
    %y = "train.node"(%d, %i) <{attrs = {batch_dims = 1 : i64}, domain = "", graph_attrs = [], op_type = "GatherND"}> {train.name = "g", train.outputs = ["y"]} : (tensor<4x3xf32>, tensor<4x2xi64>) -> tensor<4xf32>
    train.return %y : tensor<4xf32>
  }
}

// -----

// Split: num_outputs (opset 18) disagrees with the node's outputs.
module attributes {train.opset_import = [["", 18 : i64]]} {
  train.graph @main(%x: tensor<6xf32> {train.name = "x"}) -> (tensor<3xf32> {train.name = "a"}) {
    // expected-error @+1 {{node 's' (Split): num_outputs is 3 but the node has 2 outputs}}
    %a, %b = "train.node"(%x) <{attrs = {num_outputs = 3 : i64}, domain = "", graph_attrs = [], op_type = "Split"}> {train.name = "s", train.outputs = ["a", "b"]} : (tensor<6xf32>) -> (tensor<3xf32>, tensor<3xf32>)
    train.return %a : tensor<3xf32>
  }
}

// -----

// Transpose of a host tensor with a perm that is not a permutation.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}) -> (tensor<3x2xi64> {train.name = "y"}) {
    %table = initializer "table" {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>} : tensor<2x3xi64>
    // expected-error @+1 {{node 't' (Transpose): perm is not a permutation of 2 dims}}
    %y = "train.node"(%table) <{attrs = {perm = [0, 0]}, domain = "", graph_attrs = [], op_type = "Transpose"}> {train.name = "t", train.outputs = ["y"]} : (tensor<2x3xi64>) -> tensor<3x2xi64>
    train.return %y : tensor<3x2xi64>
  }
}

// -----

// InstanceNormalization needs [N, C, D...] and per-channel scale and bias.
module {
  train.graph @main(%x: tensor<2x3xf32> {train.name = "x"}, %s: tensor<3xf32> {train.name = "s"}, %b: tensor<3xf32> {train.name = "b"}) -> (tensor<2x3xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'in' (InstanceNormalization): input of rank 2: InstanceNormalization needs [N, C, D1, ...]}}
    %0 = train.InstanceNormalization(%x, %s, %b) {train.name = "in", train.outputs = ["y"]} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    train.return %0 : tensor<2x3xf32>
  }
}

// -----

module {
  train.graph @main(%x: tensor<2x3x4xf32> {train.name = "x"}, %s: tensor<4xf32> {train.name = "s"}, %b: tensor<3xf32> {train.name = "b"}) -> (tensor<2x3x4xf32> {train.name = "y"}) {
    // expected-error @+1 {{node 'in' (InstanceNormalization): scale and bias must be [3] (the channels)}}
    %0 = train.InstanceNormalization(%x, %s, %b) {train.name = "in", train.outputs = ["y"]} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
    train.return %0 : tensor<2x3x4xf32>
  }
}
