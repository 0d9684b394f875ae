// RUN: amp-opt %s --split-input-file --auto-mixed-precision="report=%t.json summary=false" | FileCheck %s
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="report=%t.json summary=false" -o - | amp-opt --split-input-file --auto-mixed-precision=summary=false | FileCheck %s
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="keep-fp32=if,loop summary=false" | FileCheck %s --check-prefix=KEEP

// If/Loop/Scan are painted through: result i of an If, output i of both
// branches are one vertex; a Loop's carried value (initial value, body
// input, body output, final value) is one vertex, so it has one type in
// every iteration; Scan's states and scan slices likewise. Nodes inside the
// bodies are painted like any other (values they capture from the outer
// graph are read in the outer graph's precision). The second RUN checks
// that a second pass changes nothing.

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}, %c: tensor<i1> {train.name = "c"}) -> (tensor<4x4xf32> {train.name = "v2_fp32"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = "train.If"(%c) ({
      %e = train.Relu(%0) {train.name = "else_relu", train.outputs = ["e0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
      train.return %e : tensor<4x4xf32>
    }, {
      %t = train.MatMul(%0, %0) {train.name = "then_mm", train.outputs = ["t0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      train.return %t : tensor<4x4xf32>
    }) {train.name = "if", train.outputs = ["v1"], train.subgraphs = {else_branch = {inputs = [], outputs = [{name = "e0", type = tensor<4x4xf32>}]}, then_branch = {inputs = [], outputs = [{name = "t0", type = tensor<4x4xf32>}]}}} : (tensor<i1>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %1) {train.name = "mm2", train.outputs = ["v2"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}

// CHECK-LABEL: train.graph @main
// CHECK: %[[MM:.*]] = MatMul({{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[IF:.*]] = "train.If"
// CHECK-NEXT: train.Relu(%[[MM]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: train.return %{{.*}} : tensor<4x4xf16>
// CHECK: train.MatMul(%[[MM]], %[[MM]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: train.return %{{.*}} : tensor<4x4xf16>
// CHECK: }) {train.name = "if", {{.*}}} : (tensor<i1>) -> tensor<4x4xf16>
// CHECK-NEXT: MatMul(%[[IF]], %[[IF]]) {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: Cast
// CHECK-NEXT: return

// keep-fp32=if: the If's boundary stays f32; the nodes inside are still
// painted, and cast back to f32 inside their branch. Each branch output is
// renamed after the value it now returns.
// KEEP-LABEL: train.graph @main
// KEEP: %[[MM:.*]] = MatMul({{.*}} -> tensor<4x4xf16>
// KEEP-NEXT: %[[IF:.*]] = "train.If"
// KEEP-NEXT: %[[E:.*]] = train.Relu(%[[MM]]) {{.*}} -> tensor<4x4xf16>
// KEEP-NEXT: %[[EUP:.*]] = train.Cast(%[[E]]) {to = 1 : i64, train.name = "else_relu_CastToFp32", train.outputs = ["e0_fp32"]}
// KEEP-NEXT: train.return %[[EUP]] : tensor<4x4xf32>
// KEEP: %[[T:.*]] = train.MatMul(%[[MM]], %[[MM]]) {{.*}} -> tensor<4x4xf16>
// KEEP-NEXT: %[[TUP:.*]] = train.Cast(%[[T]]) {to = 1 : i64, train.name = "then_mm_CastToFp32", train.outputs = ["t0_fp32"]}
// KEEP-NEXT: train.return %[[TUP]] : tensor<4x4xf32>
// KEEP: }) {train.name = "if", {{.*}}else_branch = {inputs = [], outputs = [{name = "e0_fp32", {{.*}}then_branch = {inputs = [], outputs = [{name = "t0_fp32", {{.*}}} : (tensor<i1>) -> tensor<4x4xf32>
// KEEP-NEXT: %[[DOWN:.*]] = Cast(%[[IF]]) {to = 10 : i64
// KEEP-NEXT: MatMul(%[[DOWN]], %[[DOWN]]) {{.*}} -> tensor<4x4xf16>

// -----

// Loop: h = Relu(MatMul(h, W)) carried, also scanned out; W captured.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @loop(%x: tensor<4x8xf32> {train.name = "x"}, %w: tensor<8x8xf32> {train.name = "W"}, %m: tensor<i64> {train.name = "M"}) -> (tensor<4x8xf32> {train.name = "h_final"}, tensor<3x4x8xf32> {train.name = "h_all"}) {
    %none = none
    %r:2 = "train.Loop"(%m, %none, %x) ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %h: tensor<4x8xf32>):
      %mm = train.MatMul(%h, %w) {train.name = "body_mm", train.outputs = ["mm"]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %relu = train.Relu(%mm) {train.name = "body_relu", train.outputs = ["h_out"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %c2 = train.Identity(%cond) {train.name = "body_cond", train.outputs = ["cond_out"]} : (tensor<i1>) -> tensor<i1>
      train.return %c2, %relu, %relu : tensor<i1>, tensor<4x8xf32>, tensor<4x8xf32>
    }) {train.name = "loop", train.outputs = ["h_final", "h_all"], train.subgraphs = {body = {inputs = [{name = "iter", type = tensor<i64>}, {name = "cond_in", type = tensor<i1>}, {name = "h_in", type = tensor<4x8xf32>}], outputs = [{name = "cond_out", type = tensor<i1>}, {name = "h_out", type = tensor<4x8xf32>}, {name = "h_out", type = tensor<4x8xf32>}]}}} : (tensor<i64>, none, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<3x4x8xf32>)
    train.return %r#0, %r#1 : tensor<4x8xf32>, tensor<3x4x8xf32>
  }
}

// CHECK-LABEL: train.graph @loop
// CHECK-DAG: %[[X:.*]] = Cast(%arg0) {to = 10 : i64, train.name = "x_CastToFp16"
// CHECK-DAG: %[[W:.*]] = Cast(%arg1) {to = 10 : i64, train.name = "W_CastToFp16"
// CHECK: %[[L:.*]]:2 = "train.Loop"(%arg2, %{{.*}}, %[[X]]) ({
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %[[H:.*]]: tensor<4x8xf16>):
// CHECK-NOT: Cast
// CHECK: train.MatMul(%[[H]], %[[W]]) {{.*}} -> tensor<4x8xf16>
// CHECK-NOT: Cast
// CHECK: train.return %{{.*}} : tensor<i1>, tensor<4x8xf16>, tensor<4x8xf16>
// CHECK-NEXT: }) {train.name = "loop"
// CHECK-SAME: train.outputs = ["h_final_fp16", "h_all_fp16"]
// CHECK-DAG: Cast(%[[L]]#0) {to = 1 : i64, train.name = "loop_0_CastToFp32", train.outputs = ["h_final"]}
// CHECK-DAG: Cast(%[[L]]#1) {to = 1 : i64, train.name = "loop_1_CastToFp32", train.outputs = ["h_all"]}

// KEEP-LABEL: train.graph @loop
// KEEP: "train.Loop"(%arg2, %{{.*}}, %arg0) ({
// KEEP-NEXT: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %[[H:.*]]: tensor<4x8xf32>):
// KEEP-NEXT: %[[HC:.*]] = train.Cast(%[[H]]) {to = 10 : i64, train.name = "h_in_CastToFp16", train.outputs = ["h_in_fp16"]}
// KEEP: train.MatMul(%[[HC]], %{{.*}}) {{.*}} -> tensor<4x8xf16>
// KEEP: train.Relu
// KEEP-NEXT: %[[UP:.*]] = train.Cast({{.*}}) {to = 1 : i64, train.name = "body_relu_CastToFp32", train.outputs = ["h_out_fp32"]}
// KEEP: train.return %{{.*}}, %[[UP]], %[[UP]] : tensor<i1>, tensor<4x8xf32>, tensor<4x8xf32>
// KEEP: outputs = [{name = "cond_out", type = tensor<i1>}, {name = "h_out_fp32", type = tensor<4x8xf32>}, {name = "h_out_fp32", type = tensor<4x8xf32>}]

// -----

// Scan: state s = MatMul(x_t, W) + MatMul(s, W), scan output y_t = s.
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @scan(%s0: tensor<8xf32> {train.name = "s0"}, %xs: tensor<5x8xf32> {train.name = "xs"}, %w: tensor<8x8xf32> {train.name = "W"}) -> (tensor<8xf32> {train.name = "s_final"}, tensor<5x8xf32> {train.name = "ys"}) {
    %r:2 = "train.Scan"(%s0, %xs) ({
    ^bb0(%s: tensor<8xf32>, %xt: tensor<8xf32>):
      %p = train.MatMul(%xt, %w) {train.name = "body_mm", train.outputs = ["p"]} : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
      %q = train.MatMul(%s, %w) {train.name = "body_mm2", train.outputs = ["q"]} : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
      %a = train.Add(%p, %q) {train.name = "body_add", train.outputs = ["s_out"]} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      train.return %a, %a : tensor<8xf32>, tensor<8xf32>
    }) {num_scan_inputs = 1 : i64, train.name = "scan", train.outputs = ["s_final", "ys"], train.subgraphs = {body = {inputs = [{name = "s_in", type = tensor<8xf32>}, {name = "x_t", type = tensor<8xf32>}], outputs = [{name = "s_out", type = tensor<8xf32>}, {name = "s_out", type = tensor<8xf32>}]}}} : (tensor<8xf32>, tensor<5x8xf32>) -> (tensor<8xf32>, tensor<5x8xf32>)
    train.return %r#0, %r#1 : tensor<8xf32>, tensor<5x8xf32>
  }
}

// CHECK-LABEL: train.graph @scan
// CHECK: "train.Scan"(%{{.*}}, %{{.*}}) {{.*}}({
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<8xf16>, %{{.*}}: tensor<8xf16>):
// CHECK-NOT: Cast
// CHECK: train.Add({{.*}} -> tensor<8xf16>
// CHECK-NEXT: train.return %{{.*}} : tensor<8xf16>, tensor<8xf16>
// CHECK: -> (tensor<8xf16>, tensor<5x8xf16>)

// -----

// Loop whose initial value comes from a node (not a graph input): the edge
// from the producer into the Loop's carried group is what paints the group
// next to the fp16 MatMul (a regression of the single-walk graph build,
// which added only the edges from the bodies' terminators into a group).
module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @loop_from_node(%x: tensor<4x8xf32> {train.name = "x"}, %w: tensor<8x8xf32> {train.name = "W"}, %m: tensor<i64> {train.name = "M"}) -> (tensor<4x8xf32> {train.name = "h_final"}) {
    %none = none
    %y = train.MatMul(%x, %w) {train.name = "pre_mm", train.outputs = ["y"]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = "train.Loop"(%m, %none, %y) ({
    ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %h: tensor<4x8xf32>):
      %relu = train.Relu(%h) {train.name = "body_relu", train.outputs = ["h_out"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %c2 = train.Identity(%cond) {train.name = "body_cond", train.outputs = ["cond_out"]} : (tensor<i1>) -> tensor<i1>
      train.return %c2, %relu : tensor<i1>, tensor<4x8xf32>
    }) {train.name = "loop", train.outputs = ["h_final"], train.subgraphs = {body = {inputs = [{name = "iter", type = tensor<i64>}, {name = "cond_in", type = tensor<i1>}, {name = "h_in", type = tensor<4x8xf32>}], outputs = [{name = "cond_out", type = tensor<i1>}, {name = "h_out", type = tensor<4x8xf32>}]}}} : (tensor<i64>, none, tensor<4x8xf32>) -> (tensor<4x8xf32>)
    train.return %r : tensor<4x8xf32>
  }
}

// CHECK-LABEL: train.graph @loop_from_node
// CHECK: %[[Y:.*]] = MatMul({{.*}}) {train.name = "pre_mm"{{.*}} -> tensor<4x8xf16>
// CHECK-NOT: Cast
// CHECK: "train.Loop"(%arg2, %{{.*}}, %[[Y]]) ({
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %{{.*}}: tensor<4x8xf16>):
// CHECK: Cast(%{{.*}}) {to = 1 : i64, train.name = "loop_CastToFp32", train.outputs = ["h_final"]}
