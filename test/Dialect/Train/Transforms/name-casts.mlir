// RUN: amp-opt %s --train-name-casts | FileCheck %s
// RUN: amp-opt %s -o %t.onnx
// RUN: %python -c "import onnx; m = onnx.load('%t.onnx'); onnx.checker.check_model(m, full_check=True); [print(n.op_type, n.name, list(n.input), list(n.output)) for n in m.graph.node]" | FileCheck %s --check-prefix=ONNX
// RUN: amp-opt %s --auto-mixed-precision=summary=false --mlir-print-ir-after=auto-mixed-precision -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER

// Casts a pass left unnamed get `<producer>_CastTo<Fp16|Bf16|Fp32>` and
// output `<input>_<fp16|bf16|fp32>`, made unique against the names in use,
// both in the IR (train-name-casts, which amp-opt runs before printing MLIR
// after auto-mixed-precision) and in the ONNX the exporter writes (directly,
// without naming them in the IR). Named casts keep their names; a cast to
// another type is not named by the rule.

module attributes {train.ir_version = 8 : i64, train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @main
  train.graph @main(%x: tensor<4xf32> {train.name = "x"}) -> (tensor<4xf32> {train.name = "y"}) attributes {train.graph_name = "g"} {
    // `x_fp16` and `x_CastToFp16` are taken: the new cast of x gets `_1`.
    // CHECK: Relu(%arg0) {train.name = "x_CastToFp16", train.outputs = ["x_fp16"]}
    %r = train.Relu(%x) {train.name = "x_CastToFp16", train.outputs = ["x_fp16"]} : (tensor<4xf32>) -> tensor<4xf32>
    // CHECK: Cast(%arg0) {to = 10 : i64, train.name = "x_CastToFp16_1", train.outputs = ["x_fp16_1"]}
    %c0 = train.Cast(%x) {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
    // A node output: named after the node (multi-output: `<node>_<k>`).
    // CHECK: TopK
    %k = train.initializer "k" {value = dense<2> : tensor<1xi64>} : tensor<1xi64>
    %v, %i = train.TopK(%r, %k) {train.name = "top", train.outputs = ["v", "i"]} : (tensor<4xf32>, tensor<1xi64>) -> (tensor<2xf32>, tensor<2xi64>)
    // CHECK: Cast(%{{.*}}) {to = 16 : i64, train.name = "top_0_CastToBf16", train.outputs = ["v_bf16"]}
    %c1 = train.Cast(%v) {to = 16 : i64} : (tensor<2xf32>) -> tensor<2xbf16>
    // CHECK: Cast(%{{.*}}) {to = 1 : i64, train.name = "x_CastToFp16_1_CastToFp32", train.outputs = ["x_fp16_1_fp32"]}
    %c2 = train.Cast(%c0) {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
    // Named: kept.
    // CHECK: Cast(%arg0) {to = 10 : i64, train.name = "mine", train.outputs = ["m"]}
    %c3 = train.Cast(%x) {to = 10 : i64, train.name = "mine", train.outputs = ["m"]} : (tensor<4xf32>) -> tensor<4xf16>
    // To int32: not a generated cast name.
    // CHECK: Cast(%arg0) {to = 6 : i64} :
    %c4 = train.Cast(%x) {to = 6 : i64} : (tensor<4xf32>) -> tensor<4xi32>
    %s = train.Add(%c2, %r) {train.name = "add", train.outputs = ["y"]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    train.return %s : tensor<4xf32>
  }
}

// ONNX: Relu x_CastToFp16 ['x'] ['x_fp16']
// ONNX: Cast x_CastToFp16_1 ['x'] ['x_fp16_1']
// ONNX: TopK top ['x_fp16', 'k'] ['v', 'i']
// ONNX: Cast top_0_CastToBf16 ['v'] ['v_bf16']
// ONNX: Cast x_CastToFp16_1_CastToFp32 ['x_fp16_1'] ['x_fp16_1_fp32']
// ONNX: Cast mine ['x'] ['m']
// ONNX: Cast  ['x'] ['amp_value_0']
// ONNX: Add add ['x_fp16_1_fp32', 'x_fp16'] ['y']

// After the AMP pass alone, the casts it inserted have no names yet.
// AFTER-LABEL: IR Dump After AutoMixedPrecision
// AFTER: Cast(%arg0) {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
