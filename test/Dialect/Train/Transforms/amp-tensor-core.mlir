// RUN: amp-opt %s --auto-mixed-precision=report=%t.json -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: amp-opt %s --auto-mixed-precision=mode=bf16 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: amp-opt %s --auto-mixed-precision=dims=batch=60 -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIMS
// RUN: not amp-opt %s --auto-mixed-precision=dims=batch -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADDIMS

// Tensor Core alignment of the GEMMs and convolutions the pass converts
// (docs/AutoMixedPrecision.md): M, N, K of a product (Gemm's transposes
// taken into account), the channels of a convolution, each against a
// multiple of 8, with the size to pad to. A symbolic size (the batch) is
// reported as such and the node judged on the others.
// CHECK:      Nodes blocked from conversion by denylisted nodes: 0
// CHECK-NEXT: Tensor Core aligned GEMMs and convolutions (sizes multiples of 8): 1 of 4 (2 with a symbolic size, judged on the others)
// CHECK-NEXT:   misaligned: fc1 (MatMul): N 10 -> pad to 16, K 20 -> pad to 24; M symbolic
// CHECK-NEXT:   misaligned: fc2 (MatMul): K 10 -> pad to 16; M symbolic
// CHECK-NEXT:   misaligned: conv (Conv): C_in 3 -> pad to 8
// CHECK-NOT:  misaligned

// JSON:      "tensor_core": {
// JSON-NEXT:   "aligned": 1,
// JSON-NEXT:   "multiple": 8,
// JSON-NEXT:   "nodes": [
// JSON:          "aligned": false,
// JSON-NEXT:     "name": "fc1",
// JSON-NEXT:     "op_type": "MatMul",
// JSON-NEXT:     "pad_to": {
// JSON-NEXT:       "K": 24,
// JSON-NEXT:       "N": 16
// JSON-NEXT:     },
// JSON-NEXT:     "sizes": {
// JSON-NEXT:       "K": 20,
// JSON-NEXT:       "M": null,
// JSON-NEXT:       "N": 10
// JSON:          "aligned": true,
// JSON-NEXT:     "name": "g",
// JSON-NEXT:     "op_type": "Gemm",
// JSON-NEXT:     "pad_to": {},
// JSON-NEXT:     "sizes": {
// JSON-NEXT:       "K": 32,
// JSON-NEXT:       "M": 16,
// JSON-NEXT:       "N": 16
// JSON:          "name": "conv",
// JSON:          "sizes": {
// JSON-NEXT:       "C_in": 3,
// JSON-NEXT:       "C_out": 16
// JSON:        "total": 4

// dims= sizes the symbolic dims by name: x's "batch" (its train.dims) and
// h's (the graph's value_info), so fc1's and fc2's M are 60, to pad to 64.
// DIMS:      Tensor Core aligned GEMMs and convolutions (sizes multiples of 8): 1 of 4
// DIMS-NEXT:   misaligned: fc1 (MatMul): M 60 -> pad to 64, N 10 -> pad to 16, K 20 -> pad to 24
// DIMS-NEXT:   misaligned: fc2 (MatMul): M 60 -> pad to 64, K 10 -> pad to 16
// BADDIMS: error: auto-mixed-precision: bad dims entry 'batch' (expected name=size)

// bf16 wants the same multiples.
// BF16: Tensor Core aligned GEMMs and convolutions (sizes multiples of 8): 1 of 4
module {
  train.graph @main(%x: tensor<?x20xf32> {train.name = "x", train.dims = ["batch", ""]}, %w: tensor<20x10xf32> {train.name = "w"}, %v: tensor<10x16xf32> {train.name = "v"}, %a: tensor<16x32xf32> {train.name = "a"}, %b: tensor<32x16xf32> {train.name = "b"}, %img: tensor<2x3x8x8xf32> {train.name = "img"}, %k: tensor<16x3x3x3xf32> {train.name = "k"}) -> (tensor<?x16xf32> {train.name = "y"}, tensor<16x16xf32> {train.name = "z"}, tensor<2x16x6x6xf32> {train.name = "c"}) attributes {train.value_info = [{name = "h", train.dims = ["batch", ""], type = tensor<?x10xf32>}]} {
    %h = MatMul(%x, %w) {train.name = "fc1", train.outputs = ["h"]} : (tensor<?x20xf32>, tensor<20x10xf32>) -> tensor<?x10xf32>
    %y = MatMul(%h, %v) {train.name = "fc2", train.outputs = ["y"]} : (tensor<?x10xf32>, tensor<10x16xf32>) -> tensor<?x16xf32>
    %n = none
    %z = Gemm(%b, %a, %n) {transA = 1 : i64, transB = 1 : i64, train.name = "g", train.outputs = ["z"]} : (tensor<32x16xf32>, tensor<16x32xf32>, none) -> tensor<16x16xf32>
    %c = Conv(%img, %k, %n) {train.name = "conv", train.outputs = ["c"]} : (tensor<2x3x8x8xf32>, tensor<16x3x3x3xf32>, none) -> tensor<2x16x6x6xf32>
    train.return %y, %z, %c : tensor<?x16xf32>, tensor<16x16xf32>, tensor<2x16x6x6xf32>
  }
}
