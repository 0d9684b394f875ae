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
