// Debian's mlir-opt-22 with amp-mlir's plugin lowers train graphs: each pass
// of the lowering (include/amp/Conversion/Passes.td) on its own, then the
// whole pipeline, convert-train-to-runtime, as AMP training uses it.
// REQUIRES: mlir-opt
// UNSUPPORTED: sanitizers
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(train-bind-dims{dims=batch=2})' %s \
// RUN:   | FileCheck %s --check-prefix=BIND
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(train-bind-dims{dims=batch=2},convert-train-to-amprt)' %s \
// RUN:   | tee %t.unplanned.mlir | FileCheck %s --check-prefix=CONVERT
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(amprt-fuse)' %t.unplanned.mlir \
// RUN:   | tee %t.fused.mlir | FileCheck %s --check-prefix=FUSE
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(amprt-plan-buffers)' %t.fused.mlir 2>/dev/null \
// RUN:   | tee %t.planned.mlir | FileCheck %s --check-prefix=PLAN
// train-infer-shapes (the lowering's types written back into the graph).
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(train-infer-shapes{dims=batch=2})' %s \
// RUN:   | FileCheck %s --check-prefix=INFER
// The pipeline in one go gives what the four passes gave, and what amp-opt
// gives.
// RUN: %mlir_opt --load-dialect-plugin=%amp_plugin --load-pass-plugin=%amp_plugin \
// RUN:   --pass-pipeline='builtin.module(convert-train-to-runtime{dims=batch=2})' %s 2>/dev/null > %t.pipeline.mlir
// RUN: diff %t.planned.mlir %t.pipeline.mlir
// RUN: amp-opt --convert-train-to-runtime=dims=batch=2 %s 2>/dev/null | diff - %t.pipeline.mlir

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<?x4xf32> {train.name = "x", train.dims = ["batch", ""]}, %w: tensor<3x4xf32> {train.name = "w"}) -> (tensor<?x3xf32> {train.name = "y"}) {
    %wt = train.Transpose(%w) {perm = array<i64: 1, 0>, train.name = "wt", train.outputs = ["wt"]} : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %y = train.MatMul(%x, %wt) {train.name = "fc", train.outputs = ["fc_out"]} : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
    %r = train.Relu(%y) {train.name = "relu", train.outputs = ["y"]} : (tensor<?x3xf32>) -> tensor<?x3xf32>
    train.return %r : tensor<?x3xf32>
  }
}

// BIND: train.graph @main(%{{.*}}: tensor<2x4xf32> {train.bound_dims

// CONVERT: func.func @main(%{{.*}}: memref<2x4xf32> {amprt.name = "x"}, %{{.*}}: memref<3x4xf32> {amprt.name = "w"}) -> (memref<2x3xf32> {amprt.name = "y"}) attributes {amprt.unplanned}
// CONVERT: memref.alloc() {amprt.role = "activations"{{(, amprt.value = "[^"]*")?}}} : memref<4x3xf32>
// CONVERT: amprt.call "transpose"
// CONVERT: amprt.call "matmul"
// CONVERT: amprt.call "relu"

// FUSE-NOT: "transpose"
// FUSE: amprt.call "fused_matmul"({{.*}}trans_b = 1 : i32
// FUSE: amprt.call "relu"

// PLAN: attributes {amprt.arena_bytes = 64 : i64
// PLAN: memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// PLAN: amprt.call "fused_matmul"
// PLAN: amprt.call "relu"

// INFER: MatMul(%{{.*}}, %{{.*}}) {{.*}} : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// INFER: Relu(%{{.*}}) {{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
