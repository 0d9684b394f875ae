// RUN: amp-opt %s -split-input-file --loss-scaling="summary=false" | FileCheck %s
// RUN: amp-opt %s -split-input-file --loss-scaling="mode=static init-scale=1024 summary=false" | FileCheck %s --check-prefix=STATIC
// RUN: amp-opt %s -split-input-file --loss-scaling 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY

// A training graph in ONNX Runtime's artifact form: seed `loss_grad` (named
// after the loss output), an fp16 gradient GEMM whose result the AMP pass
// cast back to fp32, and an accumulator.

module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%x: tensor<2x4xf16> {train.name = "x"}, %dy: tensor<2x3xf32> {train.name = "dy"}, %w: tensor<3x4xf32> {train.name = "w"}, %buf: tensor<3x4xf32> {train.name = "w_grad.accumulation.buffer"}, %reset: tensor<1xi1> {train.name = "lazy_reset_grad"}) -> (tensor<f32> {train.name = "loss"}, tensor<1xi1> {train.name = "w_grad.accumulation.out"}) {
    %seed = initializer "loss_grad" {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %n = none
    %loss = train.ReduceMean(%dy, %n) {keepdims = 0 : i64, train.name = "loss_node", train.outputs = ["loss"]} : (tensor<2x3xf32>, none) -> tensor<f32>
    %g = train.Mul(%dy, %seed) {train.name = "loss_grad_node", train.outputs = ["dy_grad"]} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %g16 = train.Cast(%g) {to = 10 : i64, train.name = "c16", train.outputs = ["dy_grad_fp16"]} : (tensor<2x3xf32>) -> tensor<2x3xf16>
    %wg = train.Gemm(%g16, %x, %n) {transA = 1 : i64, train.name = "wgrad", train.outputs = ["w_grad"]} : (tensor<2x3xf16>, tensor<2x4xf16>, none) -> tensor<3x4xf16>
    %wg32 = train.Cast(%wg) {to = 1 : i64, train.name = "c32", train.outputs = ["w_grad_fp32"]} : (tensor<3x4xf16>) -> tensor<3x4xf32>
    %flag, %none = train.ms.InPlaceAccumulatorV2(%buf, %wg32, %reset) {train.name = "acc", train.outputs = ["w_grad.accumulation.out"]} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
    train.return %loss, %flag : tensor<f32>, tensor<1xi1>
  }
}

// The scale and its growth counter are new graph inputs; their updates and
// the flag are new outputs.
// CHECK-LABEL: train.graph @main
// CHECK-SAME: %[[SCALE:[^:]*]]: tensor<f32> {train.name = "amp.loss_scale"}, %[[TRACKER:[^:]*]]: tensor<i64> {train.name = "amp.growth_tracker"}
// CHECK-SAME: -> (tensor<f32> {train.name = "loss"}, tensor<1xi1> {train.name = "w_grad.accumulation.out"}, tensor<f32> {train.name = "amp.loss_scale.out"}, tensor<i64> {train.name = "amp.growth_tracker.out"}, tensor<i1> {train.name = "amp.all_finite"})
// The seed is scaled in fp32 and every use reads the scaled seed.
// CHECK: %[[SEED:.*]] = initializer "loss_grad"
// CHECK: %[[INV:.*]] = Reciprocal(%[[SCALE]])
// CHECK: %[[SCALED:.*]] = Mul(%[[SEED]], %[[SCALE]]) {train.name = "amp.loss_scaling/scale_loss_gradient"
// CHECK: Mul(%{{.*}}, %[[SCALED]]) {train.name = "loss_grad_node"
// The gradient is unscaled once, in fp32, after the AMP pass's cast (the
// unscaled value takes over the name); `dy_grad` is not a gradient to unscale
// (names `<input>_grad` but `w_grad` is computed from it).
// CHECK-NOT: unscale/dy_grad
// CHECK: %[[C32:.*]] = Cast(%{{.*}}) {to = 1 : i64, train.name = "c32", train.outputs = ["w_grad_fp32.scaled"]}
// CHECK: %[[UNSCALED:.*]] = Mul(%[[C32]], %[[INV]]) {train.name = "amp.loss_scaling/unscale/w_grad_fp32", train.outputs = ["w_grad_fp32"]}
// One finite check: x * 0 is NaN exactly when x is not finite.
// CHECK: %[[Z:.*]] = Mul(%[[UNSCALED]], %[[ZERO:.*]]) {train.name = "amp.loss_scaling/check/w_grad_fp32/zero"
// CHECK: %[[SUM:.*]] = ReduceSum(%[[Z]], %{{.*}}) {keepdims = 0 : i64
// CHECK: %[[NAN:.*]] = IsNaN(%[[SUM]])
// CHECK: %[[OK:.*]] = Not(%[[NAN]]) {train.name = "amp.loss_scaling/all_finite", train.outputs = ["amp.all_finite"]}
// The accumulator adds zeros on overflow.
// CHECK: %[[GATED:.*]] = Where(%[[OK]], %[[UNSCALED]], %[[ZERO]])
// GradScaler's update: backoff on overflow, growth after the interval (the
// steps themselves are checked numerically by loss-scaling-ort.test).
// CHECK: %[[NEWSCALE:.*]] = Where(%[[OK]], %{{.*}}, %{{.*}}) {train.name = "amp.loss_scaling/update/scale", train.outputs = ["amp.loss_scale.out"]}
// CHECK: %[[NEWTRACKER:.*]] = Where(%[[OK]], %{{.*}}, %{{.*}}) {train.name = "amp.loss_scaling/update/tracker", train.outputs = ["amp.growth_tracker.out"]}
// CHECK: train.ms.InPlaceAccumulatorV2(%{{.*}}, %[[GATED]], %{{.*}})
// CHECK: return %{{.*}}, %{{.*}}, %[[NEWSCALE]], %[[NEWTRACKER]], %[[OK]]

// Static: the scale and its inverse are constants; no state.
// STATIC-LABEL: train.graph @main
// STATIC-NOT: amp.loss_scale"
// STATIC-SAME: -> (tensor<f32> {train.name = "loss"}, tensor<1xi1> {train.name = "w_grad.accumulation.out"}, tensor<i1> {train.name = "amp.all_finite"})
// STATIC-DAG: initializer "amp.loss_scaling/scale" {value = dense<1.024000e+03> : tensor<f32>}
// STATIC-DAG: initializer "amp.loss_scaling/inverse_scale" {value = dense<9.765625E-4> : tensor<f32>}
// STATIC-NOT: Reciprocal

// SUMMARY: Loss Scaling Pass Summary:
// SUMMARY-NEXT: Mode: dynamic (init scale 65536, x2 after 2000 finite steps, x0.5 on overflow, bounds [1, 16777216])
// SUMMARY-NEXT: Graph @main: loss gradient loss_grad scaled; 1 gradient(s) unscaled and checked; output amp.all_finite gates 1 accumulator(s), 0 optimizer(s), 0 other update(s); 0 gradient output(s) unscaled

// -----

// ONNX Runtime's optimizer graph: the flag comes in and becomes the update
// signal of AdamWOptimizer.
module attributes {train.opset_import = [["com.microsoft", 1 : i64], ["", 17 : i64]]} {
  train.graph @main(%lr: tensor<1xf32> {train.name = "learning_rate"}, %step: tensor<1xi64> {train.name = "step"}, %p: !train.seq<tensor<*xf32>> {train.name = "params"}, %g: !train.seq<tensor<*xf32>> {train.name = "gradients"}, %m1: !train.seq<tensor<*xf32>> {train.name = "first_order_moments"}, %m2: !train.seq<tensor<*xf32>> {train.name = "second_order_moments"}) -> (tensor<1xi1> {train.name = "updated_flag"}) {
    %none = none
    %f, %w, %a, %b = train.ms.AdamWOptimizer(%lr, %step, %p, %g, %m1, %m2, %none) {train.name = "adamw", train.outputs = ["updated_flag"]} : (tensor<1xf32>, tensor<1xi64>, !train.seq<tensor<*xf32>>, !train.seq<tensor<*xf32>>, !train.seq<tensor<*xf32>>, !train.seq<tensor<*xf32>>, none) -> (tensor<1xi1>, none, none, none)
    train.return %f : tensor<1xi1>
  }
}

// CHECK-LABEL: train.graph @main
// CHECK-SAME: %[[FLAG:[^:]*]]: tensor<i1> {train.name = "amp.all_finite"})
// CHECK: train.ms.AdamWOptimizer(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FLAG]])
// SUMMARY: Graph @main: optimizer graph: 1 optimizer(s) and 0 inline update(s) gated by input amp.all_finite

// -----

// ai.onnx.preview.training optimizers have no update signal: on overflow
// the outputs keep the old values.
module attributes {train.opset_import = [["", 17 : i64], ["ai.onnx.preview.training", 1 : i64]]} {
  train.graph @main(%r: tensor<f32> {train.name = "R"}, %t: tensor<i64> {train.name = "T"}, %x: tensor<2xf32> {train.name = "X"}, %g: tensor<2xf32> {train.name = "G"}, %h: tensor<2xf32> {train.name = "H"}) -> (tensor<2xf32> {train.name = "X_new"}, tensor<2xf32> {train.name = "H_new"}) {
    %0:2 = train.preview.Adagrad(%r, %t, %x, %g, %h) {train.name = "adagrad", train.outputs = ["X_new", "H_new"]} : (tensor<f32>, tensor<i64>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    train.return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
  }
}

// CHECK-LABEL: train.graph @main
// CHECK-SAME: %[[X:[^:]*]]: tensor<2xf32> {train.name = "X"}, %{{.*}}: tensor<2xf32> {train.name = "G"}, %[[H:[^:]*]]: tensor<2xf32> {train.name = "H"}, %[[FLAG:[^:]*]]: tensor<i1> {train.name = "amp.all_finite"})
// CHECK: %[[NEW:.*]]:2 = train.preview.Adagrad({{.*}}train.outputs = ["X_new.unchecked", "H_new.unchecked"]
// CHECK-DAG: %[[KX:.*]] = Where(%[[FLAG]], %[[NEW]]#0, %[[X]]) {{.*}}train.outputs = ["X_new"]
// CHECK-DAG: %[[KH:.*]] = Where(%[[FLAG]], %[[NEW]]#1, %[[H]]) {{.*}}train.outputs = ["H_new"]
// CHECK: return %[[KX]], %[[KH]]

// -----

// The same with outputs the graph left untyped (no value_info: unranked):
// gated all the same, the gate typed as the output.
module attributes {train.opset_import = [["", 17 : i64], ["ai.onnx.preview.training", 1 : i64]]} {
  train.graph @main(%r: tensor<f32> {train.name = "R"}, %t: tensor<i64> {train.name = "T"}, %x: tensor<2xf32> {train.name = "X"}, %g: tensor<2xf32> {train.name = "G"}, %v: tensor<2xf32> {train.name = "V"}) -> (tensor<*xf32> {train.name = "X_new"}, tensor<*xf32> {train.name = "V_new"}) {
    %0:2 = train.preview.Momentum(%r, %t, %x, %g, %v) {alpha = 0.9 : f32, beta = 1.0 : f32, mode = "standard", norm_coefficient = 0.0 : f32, train.name = "momentum", train.outputs = ["X_new", "V_new"]} : (tensor<f32>, tensor<i64>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<*xf32>, tensor<*xf32>)
    train.return %0#0, %0#1 : tensor<*xf32>, tensor<*xf32>
  }
}

// CHECK-LABEL: train.graph @main
// CHECK-SAME: %[[X:[^:]*]]: tensor<2xf32> {train.name = "X"}, %{{.*}}: tensor<2xf32> {train.name = "G"}, %[[V:[^:]*]]: tensor<2xf32> {train.name = "V"}, %[[FLAG:[^:]*]]: tensor<i1> {train.name = "amp.all_finite"})
// CHECK: %[[NEW:.*]]:2 = train.preview.Momentum({{.*}}train.outputs = ["X_new.unchecked", "V_new.unchecked"]
// CHECK-DAG: %[[KX:.*]] = Where(%[[FLAG]], %[[NEW]]#0, %[[X]]) {{.*}}train.outputs = ["X_new"]{{.*}} -> tensor<*xf32>
// CHECK-DAG: %[[KV:.*]] = Where(%[[FLAG]], %[[NEW]]#1, %[[V]]) {{.*}}train.outputs = ["V_new"]{{.*}} -> tensor<*xf32>
// CHECK: return %[[KX]], %[[KV]]

// -----

// Gradients as graph outputs (`<param>_grad`, no accumulator): unscaled
// under their own names; the user gets the flag.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<2x4xf32> {train.name = "x"}, %w: tensor<4x3xf32> {train.name = "w"}) -> (tensor<f32> {train.name = "loss"}, tensor<4x3xf32> {train.name = "w_grad"}) {
    %seed = initializer "loss_grad" {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %y = train.MatMul(%x, %w) {train.name = "mm", train.outputs = ["y"]} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %n = none
    %loss = train.ReduceSum(%y, %n) {keepdims = 0 : i64, train.name = "sum", train.outputs = ["loss"]} : (tensor<2x3xf32>, none) -> tensor<f32>
    %shape = initializer "shape" {value = dense<[2, 3]> : tensor<2xi64>} : tensor<2xi64>
    %dy = train.Expand(%seed, %shape) {train.name = "expand", train.outputs = ["y_grad"]} : (tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
    %xt = train.Transpose(%x) {perm = array<i64: 1, 0>, train.name = "xt", train.outputs = ["xt"]} : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %wg = train.MatMul(%xt, %dy) {train.name = "wgrad", train.outputs = ["w_grad"]} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    train.return %loss, %wg : tensor<f32>, tensor<4x3xf32>
  }
}

// CHECK-LABEL: train.graph @main
// CHECK: MatMul({{.*}}) {train.name = "wgrad", train.outputs = ["w_grad.scaled"]}
// CHECK: %[[U:.*]] = Mul({{.*}}) {train.name = "amp.loss_scaling/unscale/w_grad", train.outputs = ["w_grad"]}
// CHECK: return %{{.*}}, %[[U]], %{{.*}}, %{{.*}}, %{{.*}} :
// SUMMARY: Graph @main: loss gradient loss_grad scaled; 1 gradient(s) unscaled and checked; output amp.all_finite gates 0 accumulator(s), 0 optimizer(s), 0 other update(s); 1 gradient output(s) unscaled
