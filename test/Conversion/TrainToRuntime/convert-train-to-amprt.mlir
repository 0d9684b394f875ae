// RUN: amp-opt %s --convert-train-to-amprt=dims=batch=8 | FileCheck %s

// convert-train-to-amprt alone: the unplanned form. Every node becomes
// calls (no fusion yet: the transposes are calls), every temporary its own
// memref.alloc tagged with its arena role (w_grad is a gradient), an
// initializer a memref.global (in buffer order), and the function
// amprt.unplanned.
// CHECK: memref.global "private" constant @main_const0 : memref<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: memref<8x4xf32> {amprt.name = "x"}, %[[W:.*]]: memref<3x4xf32> {amprt.name = "w"}, %[[DY:.*]]: memref<8x3xf32> {amprt.name = "dy"})
// CHECK-SAME: -> (memref<8x3xf32> {amprt.name = "y"}, memref<3x4xf32> {amprt.name = "w_grad"})
// CHECK-SAME: attributes {amprt.unplanned}
// CHECK: %[[WT:.*]] = memref.alloc() {amprt.role = "activations"{{(, amprt.value = "[^"]*")?}}} : memref<4x3xf32>
// CHECK: %[[Y:.*]] = memref.alloc() {amprt.role = "activations"{{(, amprt.value = "[^"]*")?}}} : memref<8x3xf32>
// CHECK: %[[B:.*]] = memref.get_global @main_const0 : memref<3xf32>
// CHECK: %[[YB:.*]] = memref.alloc() {amprt.role = "activations"{{(, amprt.value = "[^"]*")?}}} : memref<8x3xf32>
// CHECK: %[[XT:.*]] = memref.alloc() {amprt.role = "activations"{{(, amprt.value = "[^"]*")?}}} : memref<4x8xf32>
// CHECK: %[[DWT:.*]] = memref.alloc() {amprt.role = "activations"{{(, amprt.value = "[^"]*")?}}} : memref<4x3xf32>
// CHECK: %[[DW:.*]] = memref.alloc() {amprt.role = "gradients"{{(, amprt.value = "[^"]*")?}}} : memref<3x4xf32>
// CHECK-NOT: memref.view
// CHECK: amprt.call "transpose"(%[[W]], %[[WT]]) {{.*}}node = "wt"
// CHECK: amprt.call "matmul"(%[[X]], %[[WT]], %[[Y]]) {{.*}}node = "fwd"
// CHECK: amprt.call "add"(%[[Y]], %[[B]], %[[YB]]) {{.*}}node = "bias"
// CHECK: amprt.call "transpose"(%[[X]], %[[XT]]) {{.*}}node = "xt"
// CHECK: amprt.call "matmul"(%[[XT]], %[[DY]], %[[DWT]]) {{.*}}node = "wgrad"
// CHECK: amprt.call "transpose"(%[[DWT]], %[[DW]]) {{.*}}node = "dw"
// CHECK: return %[[YB]], %[[DW]]
module {
  train.graph @main(%x: tensor<?x4xf32> {train.name = "x", train.dims = ["batch", ""]}, %w: tensor<3x4xf32> {train.name = "w"}, %dy: tensor<?x3xf32> {train.name = "dy", train.dims = ["batch", ""]}) -> (tensor<?x3xf32> {train.name = "y"}, tensor<3x4xf32> {train.name = "w_grad"}) {
    %b = train.initializer "b" {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
    %wt = Transpose(%w) {perm = array<i64: 1, 0>, train.name = "wt", train.outputs = ["wt"]} : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %y = MatMul(%x, %wt) {train.name = "fwd", train.outputs = ["xw"]} : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
    %yb = Add(%y, %b) {train.name = "bias", train.outputs = ["y"]} : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %xt = Transpose(%x) {perm = array<i64: 1, 0>, train.name = "xt", train.outputs = ["xt"]} : (tensor<?x4xf32>) -> tensor<4x?xf32>
    %dwt = MatMul(%xt, %dy) {train.name = "wgrad", train.outputs = ["dwt"]} : (tensor<4x?xf32>, tensor<?x3xf32>) -> tensor<4x3xf32>
    %dw = Transpose(%dwt) {perm = array<i64: 1, 0>, train.name = "dw", train.outputs = ["w_grad"]} : (tensor<4x3xf32>) -> tensor<3x4xf32>
    train.return %yb, %dw : tensor<?x3xf32>, tensor<3x4xf32>
  }
}
