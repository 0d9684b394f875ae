// RUN: amp-opt %s --split-input-file --auto-mixed-precision="summary=false keep-fp32=keep_.*" | FileCheck %s
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="summary=false mode=bf16 keep-fp32=keep_.*" | FileCheck %s --check-prefix=BF16

// The scenarios of Grappler's own unit tests
// (tensorflow/core/grappler/optimizers/auto_mixed_precision_test.cc), rebuilt
// as ONNX graphs: one split case per TEST_F that has an ONNX analog and is
// not already covered by another amp-*.mlir test. Each case names the test
// it mirrors and states Grappler's expected painting, adapted to our default
// lists (docs/AutoMixedPrecision.md).
//
// Translation rules:
// * node names follow Grappler's (allowN / denyN / inferN / clrN);
// * TF Const -> initializer, TF Placeholder -> graph input (both fp32
//   sources with one cast after them);
// * TF fetch Identity nodes -> graph outputs (fp32 sinks, cast back);
// * nodes Grappler must not process (preserved fetch nodes, nodes placed on
//   the CPU) are named keep_* and kept by keep-fp32=keep_.* (RUN lines);
// * Grappler's "+N nodes" is the number of casts the pass inserts.
//
// Covered elsewhere: Simple (amp-simple.mlir), NoOp (amp-no-allow.mlir),
// ExistingCast (amp-peer-failures.mlir @cast_to_float_patched,
// amp-casts.mlir @retarget). No ONNX analog: TensorList* (variant handles),
// Erfc/Log1p (no ONNX op), the Variable half of
// PreserveIdentityAfterVariable (no ref variables), CPU emulation cast
// counts and SimulateGpu (device placement).

// -----

// Grappler: AutoMixedPrecisionTest.AlreadyFp16.
// Const -> Cast(fp16) -> MatMul -> Relu -> Cast(f32) -> Relu -> fetch.
// Grappler: the graph is left as it is (no node added): the MatMul and the
// first Relu are already fp16, the casts keep their types, the last Relu
// stays fp32. Same here: the fp16 vertices are not f32 candidates, so
// nothing is painted and no cast is added.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @already_fp16() -> (tensor<4x4xf32> {train.name = "y"}) {
    %in = train.initializer "input" {value = dense<1.0> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.Cast(%in) {to = 10 : i64, train.name = "cst1", train.outputs = ["h"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %1 = train.MatMul(%0, %0) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    %2 = train.Relu(%1) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xf16>) -> tensor<4x4xf16>
    %3 = train.Cast(%2) {to = 1 : i64, train.name = "cst2", train.outputs = ["c1f"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %4 = train.Relu(%3) {train.name = "clr2", train.outputs = ["y"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %4 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @already_fp16(
// CHECK-NEXT: %[[IN:.*]] = initializer "input"
// CHECK-NEXT: %[[H:.*]] = Cast(%[[IN]]) {to = 10 : i64, train.name = "cst1"
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[H]], %[[H]]) {{.*}} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[C1:.*]] = Relu(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[F:.*]] = Cast(%[[C1]]) {to = 1 : i64, train.name = "cst2"
// CHECK-NEXT: %[[C2:.*]] = Relu(%[[F]]) {{.*}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: return %[[C2]]

// -----

// Grappler: AutoMixedPrecisionTest.BidirectionalClearChain.
// input -> clr1, clr2 (Relu); allow1 = MatMul(clr1, clr1); clr3 = ShapeN(clr1,
// clr2) (clear, non-float outputs); clr4 = Relu(clr2); fetch allow1, clr4.
// Grappler: every clear node is fp16 (the paint walks allow1 -> clr1 -> clr3
// -> clr2 -> clr4, both directions), 3 casts (input to fp16, shared by clr1
// and clr2; one back per fetch). ShapeN -> Equal: clear, both inputs share
// one type constraint, bool output.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @bidirectional_clear_chain(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y1"}, tensor<4x4xi1> {train.name = "eq"}, tensor<4x4xf32> {train.name = "y2"}) {
    %0 = train.Relu(%x) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%x) {train.name = "clr2", train.outputs = ["c2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%0, %0) {train.name = "allow1", train.outputs = ["y1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Equal(%0, %1) {train.name = "clr3", train.outputs = ["eq"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
    %4 = train.Relu(%1) {train.name = "clr4", train.outputs = ["y2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2, %3, %4 : tensor<4x4xf32>, tensor<4x4xi1>, tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @bidirectional_clear_chain(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[C1:.*]] = Relu(%[[X]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[C2:.*]] = Relu(%[[X]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[C1]], %[[C1]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y1:.*]] = Cast(%[[A1]]) {to = 1 : i64
// CHECK-NEXT: %[[EQ:.*]] = Equal(%[[C1]], %[[C2]]) {{.*}} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xi1>
// CHECK-NEXT: %[[C4:.*]] = Relu(%[[C2]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y2:.*]] = Cast(%[[C4]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y1]], %[[EQ]], %[[Y2]]

// -----

// Grappler: AutoMixedPrecisionTest.PreserveFetches.
// allow1 -> clr1 -> infer1 (Sqrt) -> deny1 (Exp) -> clr2 -> allow2 -> clr3 ->
// deny2 (Exp) -> clr4, with allow1, clr2 and clr3 fetched (preserved, not
// processed). Grappler: only allow2 is fp16, 2 casts (clr2 -> fp16,
// allow2 -> f32). The preserved nodes are keep-fp32 here (a plain graph
// output would not pin its producer: it gets a cast back instead).
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @preserve_fetches(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "f1"}, tensor<4x4xf32> {train.name = "f2"}, tensor<4x4xf32> {train.name = "f3"}, tensor<4x4xf32> {train.name = "c4"}) {
    %0 = train.MatMul(%x, %x) {train.name = "keep_allow1", train.outputs = ["f1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Sqrt(%1) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Exp(%2) {train.name = "deny1", train.outputs = ["d1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.Relu(%3) {train.name = "keep_clr2", train.outputs = ["f2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = train.MatMul(%4, %4) {train.name = "allow2", train.outputs = ["a2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = train.Relu(%5) {train.name = "keep_clr3", train.outputs = ["f3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %7 = train.Exp(%6) {train.name = "deny2", train.outputs = ["d2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %8 = train.Relu(%7) {train.name = "clr4", train.outputs = ["c4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0, %4, %6, %8 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @preserve_fetches(
// CHECK-NEXT: %[[A1:.*]] = MatMul(%arg0, %arg0) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[C1:.*]] = Relu(%[[A1]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[I1:.*]] = Sqrt(%[[C1]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[D1:.*]] = Exp(%[[I1]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[C2:.*]] = Relu(%[[D1]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[C2H:.*]] = Cast(%[[C2]]) {to = 10 : i64
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[C2H]], %[[C2H]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2F:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: %[[C3:.*]] = Relu(%[[A2F]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[D2:.*]] = Exp(%[[C3]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[C4:.*]] = Relu(%[[D2]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: return %[[A1]], %[[C2]], %[[C3]], %[[C4]]

// -----

// Grappler: AutoMixedPrecisionTest.PreserveCPUNodes.
// input -> clr1 -> allow1 -> infer1 (Tanh) -> allow2 (placed on the CPU) ->
// clr2 -> fetch. Grappler: clr1 and allow1 fp16; infer1 fp32 (allow2 is not
// processed, so infer1 is not between two allow nodes); allow2 and clr2
// fp32; 2 casts. There is no device placement here (documented deviation):
// the CPU node is modelled as keep-fp32, which the pass treats the same way
// (not processed).
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @preserve_cpu_nodes(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %0 = train.Relu(%x) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.MatMul(%0, %0) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Tanh(%1) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.MatMul(%2, %2) {train.name = "keep_allow2", train.outputs = ["a2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.Relu(%3) {train.name = "clr2", train.outputs = ["y"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %4 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @preserve_cpu_nodes(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[C1:.*]] = Relu(%[[X]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[C1]], %[[C1]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A1F:.*]] = Cast(%[[A1]]) {to = 1 : i64
// CHECK-NEXT: %[[I1:.*]] = Tanh(%[[A1F]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[I1]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[C2:.*]] = Relu(%[[A2]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: return %[[C2]]

// -----

// Grappler: AutoMixedPrecisionTest.PreserveIdentityAfterVariable, its Const
// half (ONNX has no reference variables, so the Variable -> Identity half has
// no analog). input2 (Const) -> clr2 (Identity) -> allow2 = MatMul(input,
// clr2) -> fetch. Grappler: clr2 and allow2 fp16, the cast sits between the
// constant and the Identity. Casts here: input, input2, allow2 back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @identity_after_constant(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %in2 = train.initializer "input2" {value = dense<0.03125> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.Identity(%in2) {train.name = "clr2", train.outputs = ["c2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.MatMul(%x, %0) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %1 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @identity_after_constant(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[IN2:.*]] = initializer "input2" {{.*}} : tensor<4x4xf32>
// CHECK-NEXT: %[[IN2H:.*]] = Cast(%[[IN2]]) {to = 10 : i64
// CHECK-NEXT: %[[C2:.*]] = Identity(%[[IN2H]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[X]], %[[C2]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.FusedBatchNorm.
// allow1 (Conv2D) -> fbn1 (FusedBatchNorm, training) -> bng1
// (FusedBatchNormGrad, reading fbn1, allow1 and fbn1's saved statistics);
// infer1 = Add(fbn1, bng1) -> allow2 (Conv2D) -> fetch. Grappler: data type T
// of fbn1 and bng1 fp16, statistics type U stays f32, Add and both convs
// fp16, 3 casts (input, weight shared by both convs, output back).
// ONNX: Conv; com.microsoft:BatchNormInternal (training form, infer) whose
// statistics ports are their own constraints T1 (scale, bias) and T2
// (mean, var, saved stats); com.microsoft:BatchNormalizationGrad (infer).
// The T vertices are fp16, the T1/T2 ports keep f32 and get no cast.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @fused_batch_norm(%x: tensor<1x2x4x4xf32> {train.name = "input"}) -> (tensor<1x2x4x4xf32> {train.name = "y"}, tensor<2xf32> {train.name = "running_mean"}, tensor<2xf32> {train.name = "running_var"}) {
    %none = train.none
    %w = train.initializer "weight" {value = dense<2.0> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
    %scale = train.initializer "scale" {value = dense<3.0> : tensor<2xf32>} : tensor<2xf32>
    %offset = train.initializer "offset" {value = dense<4.0> : tensor<2xf32>} : tensor<2xf32>
    %mean = train.initializer "mean" {value = dense<5.0> : tensor<2xf32>} : tensor<2xf32>
    %var = train.initializer "variance" {value = dense<6.0> : tensor<2xf32>} : tensor<2xf32>
    %0 = train.Conv(%x, %w, %none) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    %1:5 = train.ms.BatchNormInternal(%0, %scale, %offset, %mean, %var) {training_mode = 1 : i64, train.name = "fbn1", train.outputs = ["b1", "running_mean", "running_var", "saved_mean", "saved_inv_std"]} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    %2:3 = train.ms.BatchNormalizationGrad(%1#0, %0, %scale, %1#3, %1#4) {epsilon = 1.0e-05 : f32, train.name = "bng1", train.outputs = ["dx", "dscale", "dbias"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>)
    %3 = train.Add(%1#0, %2#0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    %4 = train.Conv(%3, %w, %none) {train.name = "allow2", train.outputs = ["y"]} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
    train.return %4, %1#1, %1#2 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// CHECK-LABEL: train.graph @fused_batch_norm(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK: %[[W:.*]] = Cast(%{{.*}}) {to = 10 : i64, train.name = "weight_CastToFp16"
// CHECK-NEXT: %[[SCALE:.*]] = initializer "scale"
// CHECK-NEXT: %[[OFFSET:.*]] = initializer "offset"
// CHECK-NEXT: %[[MEAN:.*]] = initializer "mean"
// CHECK-NEXT: %[[VAR:.*]] = initializer "variance"
// CHECK-NEXT: %[[A1:.*]] = Conv(%[[X]], %[[W]], %{{.*}}) {{.*}} -> tensor<1x2x4x4xf16>
// CHECK-NEXT: %[[Y:.*]], %[[RM:.*]], %[[RV:.*]], %[[SM:.*]], %[[SIS:.*]] = train.ms.BatchNormInternal(%[[A1]], %[[SCALE]], %[[OFFSET]], %[[MEAN]], %[[VAR]]) {{.*}} : (tensor<1x2x4x4xf16>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x4x4xf16>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[DX:.*]], %{{.*}}, %{{.*}} = train.ms.BatchNormalizationGrad(%[[Y]], %[[A1]], %[[SCALE]], %[[SM]], %[[SIS]]) {{.*}} : (tensor<1x2x4x4xf16>, tensor<1x2x4x4xf16>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x4x4xf16>, tensor<2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[I1:.*]] = Add(%[[Y]], %[[DX]]) {{.*}} -> tensor<1x2x4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = Conv(%[[I1]], %[[W]], %{{.*}}) {{.*}} -> tensor<1x2x4x4xf16>
// CHECK-NEXT: %[[OUT:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[OUT]], %[[RM]], %[[RV]]

// -----

// Grappler: AutoMixedPrecisionTest.RepeatedAndListTypeAttrs.
// allow1 -> clr1 = IdentityN(allow1 x3) (list type attr) -> infer1 = AddN of
// the three (repeated type attr) -> allow2 -> fetch. Grappler: all fp16,
// 2 casts. ONNX: Split (clear, variadic outputs sharing T) for IdentityN,
// Sum (infer, variadic inputs sharing T) for AddN. Casts: both MatMul
// inputs, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @repeated_type_attrs(%x: tensor<4x4xf32> {train.name = "input"}, %w: tensor<4x12xf32> {train.name = "w"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %none = train.none
    %0 = train.MatMul(%x, %w) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x12xf32>) -> tensor<4x12xf32>
    %1:3 = train.Split(%0, %none) {axis = 1 : i64, train.name = "clr1", train.outputs = ["s0", "s1", "s2"]} : (tensor<4x12xf32>, none) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
    %2 = train.Sum(%1#0, %1#1, %1#2) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.MatMul(%2, %2) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %3 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @repeated_type_attrs(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[W:.*]] = Cast(%arg1) {to = 10 : i64
// CHECK-NEXT: %[[NONE:.*]] = none
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[W]]) {{.*}} -> tensor<4x12xf16>
// CHECK-NEXT: %[[S:.*]]:3 = Split(%[[A1]], %[[NONE]]) {{.*}} : (tensor<4x12xf16>, none) -> (tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>)
// CHECK-NEXT: %[[I1:.*]] = Sum(%[[S]]#0, %[[S]]#1, %[[S]]#2) {{.*}} : (tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[I1]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.RecurrentEdgeColorMismatch.
// deny1 (Exp) -> Enter -> Merge <- NextIteration <- allow1; Merge -> Switch ->
// infer1 (Sqrt) -> allow1 (MatMul); Switch -> Exit -> fetch. Grappler: deny
// paint reaches the Merge (it lies between deny1 and infer1), so the whole
// recurrent edge (Enter, Merge, Switch, NextIteration, Exit) stays fp32;
// infer1 fp32; allow1 fp16; 2 casts (infer1 -> fp16, allow1 -> f32 into the
// NextIteration). ONNX: a Loop whose carried value starts as Exp's output;
// the carried value (initial, body input, body output, final) is one
// vertex, painted deny; the casts are inside the body.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @recurrent_edge(%x: tensor<4x4xf32> {train.name = "input"}, %m: tensor<i64> {train.name = "M"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %none = train.none
    %0 = train.Exp(%x) {train.name = "deny1", train.outputs = ["d1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %r = "train.Loop"(%m, %none, %0) ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %h: tensor<4x4xf32>):
      %s = train.Sqrt(%h) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %mm = train.MatMul(%s, %s) {train.name = "allow1", train.outputs = ["h_out"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %c = train.Identity(%cond) {train.name = "cond_id", train.outputs = ["cond_out"]} : (tensor<i1>) -> tensor<i1>
      train.return %c, %mm : tensor<i1>, tensor<4x4xf32>
    }) {train.name = "loop", train.outputs = ["y"], train.subgraphs = {body = {inputs = [{name = "iter", type = tensor<i64>}, {name = "cond_in", type = tensor<i1>}, {name = "h_in", type = tensor<4x4xf32>}], outputs = [{name = "cond_out", type = tensor<i1>}, {name = "h_out", type = tensor<4x4xf32>}]}}} : (tensor<i64>, none, tensor<4x4xf32>) -> (tensor<4x4xf32>)
    train.return %r : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @recurrent_edge(
// CHECK-NOT: Cast
// CHECK: %[[D1:.*]] = Exp(%arg0) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[L:.*]] = "train.Loop"(%arg1, %{{.*}}, %[[D1]]) ({
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %[[H:.*]]: tensor<4x4xf32>):
// CHECK-NEXT: %[[I1:.*]] = train.Sqrt(%[[H]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[I1H:.*]] = train.Cast(%[[I1]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = train.MatMul(%[[I1H]], %[[I1H]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A1F:.*]] = train.Cast(%[[A1]]) {to = 1 : i64
// CHECK-NEXT: %[[C:.*]] = train.Identity
// CHECK-NEXT: train.return %[[C]], %[[A1F]] : tensor<i1>, tensor<4x4xf32>
// CHECK-NEXT: }) {{.*}} : (tensor<i64>, none, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: return %[[L]]

// -----

// Grappler: AutoMixedPrecisionTest.BatchMatMul.
// allow1 = BatchMatMul(input, input) on a rank-3 tensor -> fetch. Grappler:
// fp16 (on CUDA >= 9.1), 2 casts. ONNX MatMul is batched itself.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @batch_matmul(%x: tensor<8x4x4xf32> {train.name = "input"}) -> (tensor<8x4x4xf32> {train.name = "y"}) {
    %0 = train.MatMul(%x, %x) {train.name = "allow1", train.outputs = ["y"]} : (tensor<8x4x4xf32>, tensor<8x4x4xf32>) -> tensor<8x4x4xf32>
    train.return %0 : tensor<8x4x4xf32>
  }
}
// CHECK-LABEL: train.graph @batch_matmul(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[X]]) {{.*}} : (tensor<8x4x4xf16>, tensor<8x4x4xf16>) -> tensor<8x4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A1]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.EluOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Elu -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Elu is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_elu(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Elu(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_elu(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Elu(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.ErfOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Erf -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Erf is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_erf(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Erf(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_erf(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Erf(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.InvOp, AutoMixedPrecisionTest.ReciprocalOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Inv (or Reciprocal) -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Reciprocal is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_reciprocal(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Reciprocal(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_reciprocal(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Reciprocal(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.LogOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Log -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Log is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_log(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Log(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_log(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Log(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.LogSoftmaxOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = LogSoftmax -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX LogSoftmax is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_logsoftmax(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.LogSoftmax(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_logsoftmax(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = LogSoftmax(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.SigmoidOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Sigmoid -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Sigmoid is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_sigmoid(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Sigmoid(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_sigmoid(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Sigmoid(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.SoftmaxOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Softmax -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Softmax is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_softmax(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Softmax(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_softmax(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Softmax(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.SoftplusOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Softplus -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Softplus is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_softplus(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Softplus(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_softplus(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Softplus(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.SqrtOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Sqrt -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Sqrt is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_sqrt(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Sqrt(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_sqrt(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Sqrt(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionTest.TanhOp (TestSimpleUnaryInferOp).
// allow1 = MatMul(input, eye) -> infer1 = Tanh -> allow2 = MatMul(infer1,
// eye) -> fetch. Grappler: all three fp16. ONNX Tanh is infer in our fp16
// list too: fp16 between the two MatMuls; casts: input and eye (shared)
// to fp16, the output back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @unary_tanh(%x: tensor<4x4xf32> {train.name = "input"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    %eye = train.initializer "eye" {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %eye) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Tanh(%0) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %eye) {train.name = "allow2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @unary_tanh(
// CHECK-NEXT: %[[X:.*]] = Cast(%arg0) {to = 10 : i64
// CHECK-NEXT: %[[EYE:.*]] = initializer "eye"
// CHECK-NEXT: %[[EYEH:.*]] = Cast(%[[EYE]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[X]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[I1:.*]] = Tanh(%[[A1]]) {{.*}} : (tensor<4x4xf16>) -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[I1]], %[[EYEH]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[Y:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionCpuTest.MixedFanout, painting only (the CPU
// test checks the emulation mode's cast layout, which has no analog: there
// is no fp16 emulation mode here, a documented deviation).
// allow1 = MatMul(input1, input2) feeds allow2 = MatMul(allow1, input2) and
// deny (Exp); infer = Add(deny, allow2) -> fetch. Grappler's painting: both
// MatMuls fp16; Exp fp32; the Add is painted deny (deny fan-in), so fp32.
// Casts: the two constants to fp16 (input2 shared), allow1 and allow2 back
// to f32.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @mixed_fanout() -> (tensor<4x4xf32> {train.name = "y"}) {
    %in1 = train.initializer "input1" {value = dense<0.03125> : tensor<4x4xf32>} : tensor<4x4xf32>
    %in2 = train.initializer "input2" {value = dense<0.0625> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%in1, %in2) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.MatMul(%0, %in2) {train.name = "allow2", train.outputs = ["a2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Exp(%0) {train.name = "deny", train.outputs = ["d"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Add(%2, %1) {train.name = "infer", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %3 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: train.graph @mixed_fanout(
// CHECK-NEXT: %[[IN1:.*]] = initializer "input1"
// CHECK-NEXT: %[[IN1H:.*]] = Cast(%[[IN1]]) {to = 10 : i64
// CHECK-NEXT: %[[IN2:.*]] = initializer "input2"
// CHECK-NEXT: %[[IN2H:.*]] = Cast(%[[IN2]]) {to = 10 : i64
// CHECK-NEXT: %[[A1:.*]] = MatMul(%[[IN1H]], %[[IN2H]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A1F:.*]] = Cast(%[[A1]]) {to = 1 : i64
// CHECK-NEXT: %[[A2:.*]] = MatMul(%[[A1]], %[[IN2H]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[A2F:.*]] = Cast(%[[A2]]) {to = 1 : i64
// CHECK-NEXT: %[[D:.*]] = Exp(%[[A1F]]) {{.*}} -> tensor<4x4xf32>
// CHECK-NEXT: %[[I:.*]] = Add(%[[D]], %[[A2F]]) {{.*}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: return %[[I]]

// -----

// Grappler: AutoMixedPrecisionMklTest.AlreadyBf16 (bf16 mode, BF16 checks).
// Const -> Cast(bf16) -> MatMul -> Relu -> Cast(f32) -> Relu -> fetch.
// Grappler: unchanged, as AlreadyFp16. Same here.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @already_bf16() -> (tensor<4x4xf32> {train.name = "y"}) {
    %in = train.initializer "input" {value = dense<1.0> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.Cast(%in) {to = 16 : i64, train.name = "cst1", train.outputs = ["h"]} : (tensor<4x4xf32>) -> tensor<4x4xbf16>
    %1 = train.MatMul(%0, %0) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    %2 = train.Relu(%1) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
    %3 = train.Cast(%2) {to = 1 : i64, train.name = "cst2", train.outputs = ["c1f"]} : (tensor<4x4xbf16>) -> tensor<4x4xf32>
    %4 = train.Relu(%3) {train.name = "clr2", train.outputs = ["y"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %4 : tensor<4x4xf32>
  }
}
// BF16-LABEL: train.graph @already_bf16(
// BF16-NEXT: %[[IN:.*]] = initializer "input"
// BF16-NEXT: %[[H:.*]] = Cast(%[[IN]]) {to = 16 : i64, train.name = "cst1"
// BF16-NEXT: %[[A1:.*]] = MatMul(%[[H]], %[[H]]) {{.*}} : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
// BF16-NEXT: %[[C1:.*]] = Relu(%[[A1]]) {{.*}} : (tensor<4x4xbf16>) -> tensor<4x4xbf16>
// BF16-NEXT: %[[F:.*]] = Cast(%[[C1]]) {to = 1 : i64, train.name = "cst2"
// BF16-NEXT: %[[C2:.*]] = Relu(%[[F]]) {{.*}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// BF16-NEXT: return %[[C2]]

// -----

// Grappler: AutoMixedPrecisionMklTest.Simple (bf16 mode, BF16 checks).
// Const -> deny1 (Exp) -> clr1 -> infer1 (Sqrt) -> clr2 -> allow1 (MatMul) ->
// clr3 -> Log -> clr4 -> unlisted (SparseMatMul) -> clr5 -> fetch.
// Grappler: deny1, clr1, infer1 fp32; clr2, allow1, clr3 bf16; Log, clr4,
// the unlisted node and clr5 fp32; 2 casts. Log is infer in our bf16 list
// (and in Grappler's): pass 4 (infer follows an allow fan-in) does not take
// it because its fan-in clr3 becomes bf16 only in pass 5.
module attributes {train.opset_import = [["", 17 : i64], ["my.domain", 1 : i64]]} {
  train.graph @bf16_simple() -> (tensor<4x4xf32> {train.name = "y"}) {
    %in = train.initializer "input" {value = dense<0.03125> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.Exp(%in) {train.name = "deny1", train.outputs = ["d1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "clr1", train.outputs = ["c1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Sqrt(%1) {train.name = "infer1", train.outputs = ["i1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Relu(%2) {train.name = "clr2", train.outputs = ["c2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.MatMul(%3, %3) {train.name = "allow1", train.outputs = ["a1"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = train.Relu(%4) {train.name = "clr3", train.outputs = ["c3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %6 = train.Log(%5) {train.name = "log", train.outputs = ["l"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %7 = train.Relu(%6) {train.name = "clr4", train.outputs = ["c4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %8 = "train.node"(%7, %7) <{attrs = {}, domain = "my.domain", graph_attrs = [], op_type = "SparseMatMul"}> {train.name = "unlisted", train.outputs = ["u"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %9 = train.Relu(%8) {train.name = "clr5", train.outputs = ["y"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %9 : tensor<4x4xf32>
  }
}
// BF16-LABEL: train.graph @bf16_simple(
// BF16-NEXT: %[[IN:.*]] = initializer "input"
// BF16-NEXT: %[[D1:.*]] = Exp(%[[IN]]) {{.*}} -> tensor<4x4xf32>
// BF16-NEXT: %[[C1:.*]] = Relu(%[[D1]]) {{.*}} -> tensor<4x4xf32>
// BF16-NEXT: %[[I1:.*]] = Sqrt(%[[C1]]) {{.*}} -> tensor<4x4xf32>
// BF16-NEXT: %[[I1H:.*]] = Cast(%[[I1]]) {to = 16 : i64
// BF16-NEXT: %[[C2:.*]] = Relu(%[[I1H]]) {{.*}} -> tensor<4x4xbf16>
// BF16-NEXT: %[[A1:.*]] = MatMul(%[[C2]], %[[C2]]) {{.*}} -> tensor<4x4xbf16>
// BF16-NEXT: %[[C3:.*]] = Relu(%[[A1]]) {{.*}} -> tensor<4x4xbf16>
// BF16-NEXT: %[[C3F:.*]] = Cast(%[[C3]]) {to = 1 : i64
// BF16-NEXT: %[[L:.*]] = Log(%[[C3F]]) {{.*}} -> tensor<4x4xf32>
// BF16-NEXT: %[[C4:.*]] = Relu(%[[L]]) {{.*}} -> tensor<4x4xf32>
// BF16-NEXT: %[[U:.*]] = "train.node"(%[[C4]], %[[C4]])
// BF16-NEXT: %[[C5:.*]] = Relu(%[[U]]) {{.*}} -> tensor<4x4xf32>
// BF16-NEXT: return %[[C5]]

// -----

// Grappler: AutoMixedPrecisionMklTest.InferFollowUpStreamAllow (bf16 mode,
// BF16 checks). allow (Conv2D) -> infer (BiasAdd) -> clr (Relu) -> fetch.
// Grappler: all three bf16 (pass 4: the infer op follows its allow fan-in,
// then the clear op follows), 4 casts (input, weight, bias, output back).
// ONNX: Conv at opset 22 (the first Conv that takes bfloat16), Add with a
// per-channel bias, Relu.
module attributes {train.opset_import = [["", 22 : i64]]} {
  train.graph @infer_follows_allow(%x: tensor<1x2x4x4xf32> {train.name = "input1"}) -> (tensor<1x2x4x4xf32> {train.name = "y"}) {
    %none = train.none
    %w = train.initializer "weight" {value = dense<2.0> : tensor<2x2x3x3xf32>} : tensor<2x2x3x3xf32>
    %b = train.initializer "input2" {value = dense<0.03125> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
    %0 = train.Conv(%x, %w, %none) {pads = array<i64: 1, 1, 1, 1>, train.name = "allow", train.outputs = ["a"]} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>, none) -> tensor<1x2x4x4xf32>
    %1 = train.Add(%0, %b) {train.name = "infer", train.outputs = ["i"]} : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %2 = train.Relu(%1) {train.name = "clr", train.outputs = ["y"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    train.return %2 : tensor<1x2x4x4xf32>
  }
}
// BF16-LABEL: train.graph @infer_follows_allow(
// BF16-NEXT: %[[X:.*]] = Cast(%arg0) {to = 16 : i64
// BF16-NEXT: %[[NONE:.*]] = none
// BF16-NEXT: %[[W:.*]] = initializer "weight"
// BF16-NEXT: %[[WH:.*]] = Cast(%[[W]]) {to = 16 : i64
// BF16-NEXT: %[[B:.*]] = initializer "input2"
// BF16-NEXT: %[[BH:.*]] = Cast(%[[B]]) {to = 16 : i64
// BF16-NEXT: %[[A:.*]] = Conv(%[[X]], %[[WH]], %[[NONE]]) {{.*}} -> tensor<1x2x4x4xbf16>
// BF16-NEXT: %[[I:.*]] = Add(%[[A]], %[[BH]]) {{.*}} : (tensor<1x2x4x4xbf16>, tensor<2x1x1xbf16>) -> tensor<1x2x4x4xbf16>
// BF16-NEXT: %[[C:.*]] = Relu(%[[I]]) {{.*}} -> tensor<1x2x4x4xbf16>
// BF16-NEXT: %[[Y:.*]] = Cast(%[[C]]) {to = 1 : i64
// BF16-NEXT: return %[[Y]]

// -----

// Grappler: AutoMixedPrecisionMklTest.InferFollowUpStreamDeny (bf16 mode,
// BF16 checks). deny (Pow) -> infer (BiasAdd) -> clr (Relu) -> fetch.
// Grappler: everything fp32, no node added (no allow-list op: nothing to
// do). Same here: the graph is left unchanged.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @infer_follows_deny(%x: tensor<1x2x4x4xf32> {train.name = "input1"}) -> (tensor<1x2x4x4xf32> {train.name = "y"}) {
    %e = train.initializer "input2" {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
    %b = train.initializer "input3" {value = dense<0.03125> : tensor<4xf32>} : tensor<4xf32>
    %0 = train.Pow(%x, %e) {train.name = "deny", train.outputs = ["d"]} : (tensor<1x2x4x4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
    %1 = train.Add(%0, %b) {train.name = "infer", train.outputs = ["i"]} : (tensor<1x2x4x4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
    %2 = train.Relu(%1) {train.name = "clr", train.outputs = ["y"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
    train.return %2 : tensor<1x2x4x4xf32>
  }
}
// BF16-LABEL: train.graph @infer_follows_deny(
// BF16-NEXT: %[[E:.*]] = initializer "input2"
// BF16-NEXT: %[[B:.*]] = initializer "input3"
// BF16-NEXT: %[[D:.*]] = Pow(%arg0, %[[E]]) {{.*}} -> tensor<1x2x4x4xf32>
// BF16-NEXT: %[[I:.*]] = Add(%[[D]], %[[B]]) {{.*}} -> tensor<1x2x4x4xf32>
// BF16-NEXT: %[[C:.*]] = Relu(%[[I]]) {{.*}} -> tensor<1x2x4x4xf32>
// BF16-NEXT: return %[[C]]
