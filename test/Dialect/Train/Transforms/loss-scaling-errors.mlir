// RUN: amp-opt %s -split-input-file -verify-diagnostics --loss-scaling="summary=false"
// RUN: not amp-opt %s -split-input-file --loss-scaling="mode=adaptive" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not amp-opt %s -split-input-file --loss-scaling="growth-factor=0.5" 2>&1 | FileCheck %s --check-prefix=GROWTH
// RUN: not amp-opt %s -split-input-file --loss-scaling="backoff-factor=1" 2>&1 | FileCheck %s --check-prefix=BACKOFF
// RUN: not amp-opt %s -split-input-file --loss-scaling="init-scale=1e9" 2>&1 | FileCheck %s --check-prefix=BOUNDS
// RUN: not amp-opt %s -split-input-file --loss-scaling="seed=nope" 2>&1 | FileCheck %s --check-prefix=SEED

// MODE: error: loss-scaling: unknown mode 'adaptive' (expected dynamic or static)
// GROWTH: error: loss-scaling: growth-factor must be a finite number > 1
// BACKOFF: error: loss-scaling: backoff-factor must be in (0, 1)
// BOUNDS: error: loss-scaling: init-scale must lie in [min-scale, max-scale]
// SEED: error: loss-scaling: seed 'nope' names no value of the graph

// A seed but nothing that looks like a gradient.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // expected-error @below {{loss-scaling: found the loss-gradient seed 'loss_grad' but no gradients}}
  train.graph @main(%x: tensor<2xf32> {train.name = "x"}) -> (tensor<2xf32> {train.name = "loss"}) {
    %seed = initializer "loss_grad" {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %y = train.Mul(%x, %seed) {train.name = "m", train.outputs = ["y"]} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    train.return %y : tensor<2xf32>
  }
}

// -----

// Gradients but no seed.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  // expected-error @below {{loss-scaling: the graph computes gradients ('w_grad', ...) but no loss-gradient seed was found; name it with seed=}}
  train.graph @main(%x: tensor<2xf32> {train.name = "x"}, %w: tensor<2xf32> {train.name = "w"}, %buf: tensor<2xf32> {train.name = "buf"}) -> (tensor<1xi1> {train.name = "out"}) {
    %g = train.Mul(%x, %w) {train.name = "m", train.outputs = ["w_grad"]} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %n = none
    %f, %o = train.ms.InPlaceAccumulatorV2(%buf, %g, %n) {train.name = "acc", train.outputs = ["out"]} : (tensor<2xf32>, tensor<2xf32>, none) -> (tensor<1xi1>, none)
    train.return %f : tensor<1xi1>
  }
}

// -----

// An inference graph: nothing to do, a warning, unchanged.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // expected-warning @below {{loss-scaling: no loss gradient, gradients or optimizer found in graph 'main': left unchanged}}
  train.graph @main(%x: tensor<2xf32> {train.name = "x"}) -> (tensor<2xf32> {train.name = "y"}) {
    %y = train.Relu(%x) {train.name = "r", train.outputs = ["y"]} : (tensor<2xf32>) -> tensor<2xf32>
    train.return %y : tensor<2xf32>
  }
}

// -----

// Run twice: the second run sees the state and leaves the graph alone.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // expected-warning @below {{loss-scaling: the graph already has 'amp.all_finite' or 'amp.loss_scale': left unchanged}}
  train.graph @main(%x: tensor<2xf32> {train.name = "x"}, %s: tensor<f32> {train.name = "amp.loss_scale"}) -> (tensor<2xf32> {train.name = "y"}) {
    %y = train.Relu(%x) {train.name = "r", train.outputs = ["y"]} : (tensor<2xf32>) -> tensor<2xf32>
    train.return %y : tensor<2xf32>
  }
}

// -----

// Opset 8 has no IsNaN/Where.
module attributes {train.opset_import = [["", 8 : i64]]} {
  // expected-error @below {{loss-scaling: needs ONNX opset 9 or later (the graph imports opset 8)}}
  train.graph @main(%x: tensor<2xf32> {train.name = "x"}, %w: tensor<2xf32> {train.name = "w"}) -> (tensor<2xf32> {train.name = "loss"}, tensor<2xf32> {train.name = "w_grad"}) {
    %seed = initializer "loss_grad" {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
    %g = train.Mul(%x, %seed) {train.name = "m", train.outputs = ["w_grad"]} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    train.return %x, %g : tensor<2xf32>, tensor<2xf32>
  }
}
