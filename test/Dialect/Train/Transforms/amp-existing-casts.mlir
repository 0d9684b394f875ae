// RUN: amp-opt %s --split-input-file --auto-mixed-precision="summary=false" | FileCheck %s

// Regressions (found by test/python/amp_property.py) around Cast nodes the
// graph already has. Each case keeps "at most one cast per (value, target
// type)" and never makes a cast read its own result.

// An existing cast of a graph input to fp16 placed after the first fp16
// consumer: the pass added a second x -> fp16 cast at the top. Now the
// existing cast moves up to the top and is shared.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @later_cast
  train.graph @later_cast(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}) {
    // CHECK: %[[XC:.*]] = Cast(%{{.*}}) {to = 10 : i64, train.name = "existing", train.outputs = ["x16"]}
    // CHECK-NOT: Cast(%arg0)
    // CHECK: MatMul(%[[XC]], %[[XC]])
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = train.Cast(%x) {to = 10 : i64, train.name = "existing", train.outputs = ["x16"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %1 = train.Cast(%c) {to = 1 : i64, train.name = "back", train.outputs = ["z"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    train.return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A no-op Cast(v -> f32) of a value that becomes fp16 is the cast back to
// f32 that other f32 consumers share. Before, its own input was "fixed"
// with the cached cast, i.e. itself: %c = Cast(%c) failed verification
// ("operand #0 does not dominate this use"), the self-recurring cast of
// onnxconverter-common#276.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @self_cast
  train.graph @self_cast(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}) {
    // CHECK: %[[MM:.*]] = MatMul({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[C:.*]] = Cast(%[[MM]]) {to = 1 : i64, train.name = "noop", train.outputs = ["c"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    // CHECK-NOT: Cast(%[[MM]])
    // CHECK: Sigmoid(%[[C]])
    // CHECK: Tanh(%[[C]])
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Sigmoid(%0) {train.name = "sig", train.outputs = ["y"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = train.Cast(%0) {to = 1 : i64, train.name = "noop", train.outputs = ["c"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Tanh(%c) {train.name = "tanh", train.outputs = ["z"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %1, %2 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A graph output that becomes fp16 and also has a no-op Cast(-> f32): the
// output needs a value of its own name, so the pass makes the cast back
// named after the output and the existing cast reads it (before, the output
// was fed by the existing cast's result and the export failed).
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @output_and_cast
  train.graph @output_and_cast(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "v"}, tensor<4x4xf32> {train.name = "c"}) {
    // CHECK: %[[MM:.*]] = MatMul({{.*}}) {train.name = "mm", train.outputs = ["v_fp16"]} {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[V:.*]] = Cast(%[[MM]]) {to = 1 : i64, train.name = "mm_CastToFp32", train.outputs = ["v"]}
    // CHECK-NEXT: %[[C:.*]] = Cast(%[[V]]) {to = 1 : i64, train.name = "noop", train.outputs = ["c"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: return %[[V]], %[[C]]
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = train.Cast(%0) {to = 1 : i64, train.name = "noop", train.outputs = ["c"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0, %c : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A no-op Cast(v -> f32) whose consumers are all fp16 is not retargeted to
// fp16 when v already has a cast to fp16: retargeting made two v -> fp16
// casts. Its consumers get the f32 cast's fp16 copy instead.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @no_second_retarget
  train.graph @no_second_retarget(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}) {
    // CHECK: %[[V:.*]] = Sigmoid
    // CHECK: %[[N:.*]] = Cast(%[[V]]) {to = 1 : i64, train.name = "noop"
    // CHECK: Cast(%[[N]]) {to = 10 : i64, train.name = "noop_CastToFp16"
    // CHECK: Cast(%[[V]]) {to = 10 : i64, train.name = "to16"
    // CHECK-NOT: Cast(%[[V]]) {to = 10
    %v = train.Sigmoid(%x) {train.name = "sig", train.outputs = ["v"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n = train.Cast(%v) {to = 1 : i64, train.name = "noop", train.outputs = ["n"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %0 = train.MatMul(%n, %n) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %h = train.Cast(%v) {to = 10 : i64, train.name = "to16", train.outputs = ["h"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %1 = train.Cast(%h) {to = 1 : i64, train.name = "back", train.outputs = ["z"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    train.return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// An existing Cast(x -> f32) after the first fp16 consumer of x, that the
// pass retargets to fp16 because its consumers are all fp16: the earlier
// consumer shares it (moved up) rather than getting a second x -> fp16 cast.
// The pass lowers nodes as it goes; cast nodes are lowered first so that
// this reuse sees their final types.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @later_retargeted_cast
  train.graph @later_retargeted_cast(%x: tensor<4x4xf32> {train.name = "x"}, %w: tensor<4x4xf32> {train.name = "w"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}) {
    // CHECK: %[[XC:.*]] = Cast(%arg0) {to = 10 : i64, train.name = "existing"{{.*}} -> tensor<4x4xf16>
    // CHECK-NOT: Cast(%arg0)
    // CHECK: MatMul(%[[XC]],
    // CHECK-NOT: Cast(%arg0)
    // CHECK: MatMul(%[[XC]],
    %0 = train.MatMul(%x, %w) {train.name = "mm1", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = train.Cast(%x) {to = 1 : i64, train.name = "existing", train.outputs = ["xc"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.MatMul(%c, %w) {train.name = "mm2", train.outputs = ["z"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}
