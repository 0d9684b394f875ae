// RUN: amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s
// RUN: amp-opt %s --auto-mixed-precision="summary=false" -o %t.onnx
// RUN: %python -c "import onnx; m = onnx.load('%t.onnx'); onnx.checker.check_model(m, full_check=True); print([(n.op_type, list(n.input), list(n.output)) for n in m.graph.node]); print([o.name for o in m.graph.output])" | FileCheck %s --check-prefix=ONNX

// Regression (found by test/python/amp_property.py): a graph output whose
// producer became fp16 was fed by the cast back to f32 named `<value>_fp32`,
// so the ONNX export failed ("graph output 'y' is fed by value 'y_fp32' of
// another name"). The f32 value keeps the output's name; the fp16 producer
// output is renamed `<name>_fp16`. Other f32 consumers share that cast.

module attributes {train.ir_version = 8 : i64, train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @main
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}) attributes {train.graph_name = "g"} {
    %w = train.initializer "w" {value = dense<0.5> : tensor<4x4xf32>} : tensor<4x4xf32>
    // CHECK: %[[MM:.*]] = MatMul({{.*}}) {train.name = "mm", train.outputs = ["y_fp16"]} : {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[Y:.*]] = Cast(%[[MM]]) {to = 1 : i64, train.name = "mm_CastToFp32", train.outputs = ["y"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %0 = train.MatMul(%x, %w) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: %[[Z:.*]] = Sigmoid(%[[Y]]) {{.*}} -> tensor<4x4xf32>
    %1 = train.Sigmoid(%0) {train.name = "sig", train.outputs = ["z"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK-NEXT: return %[[Y]], %[[Z]]
    train.return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// ONNX: ('MatMul', ['x_fp16', 'w_fp16'], ['y_fp16']), ('Cast', ['y_fp16'], ['y']), ('Sigmoid', ['y'], ['z'])
// ONNX-NEXT: ['y', 'z']
