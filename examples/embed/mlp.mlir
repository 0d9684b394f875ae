// The embed example's own IR: one linear layer, its loss and the weight
// gradient of an ONNX Runtime style training graph (seed `loss_grad`,
// gradient accumulator). See docs/Embedding.md.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  train.graph @main(%x: tensor<8x16xf32> {train.name = "x"}, %w: tensor<4x16xf32> {train.name = "w"}, %b: tensor<4xf32> {train.name = "b"}, %buf: tensor<4x16xf32> {train.name = "w_grad.accumulation.buffer"}, %reset: tensor<1xi1> {train.name = "lazy_reset_grad"}) -> (tensor<f32> {train.name = "loss"}, tensor<1xi1> {train.name = "w_grad.accumulation.out"}) {
    %n = none
    %seed = initializer "loss_grad" {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %y = train.Gemm(%x, %w, %b) {transB = 1 : i64, train.name = "fc", train.outputs = ["y"]} : (tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %r = train.Relu(%y) {train.name = "relu", train.outputs = ["r"]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %e = train.Exp(%r) {train.name = "exp", train.outputs = ["e"]} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %loss = train.ReduceMean(%e, %n) {keepdims = 0 : i64, train.name = "loss_node", train.outputs = ["loss"]} : (tensor<8x4xf32>, none) -> tensor<f32>
    %dy = train.Mul(%e, %seed) {train.name = "loss_grad_node", train.outputs = ["r_grad"]} : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
    %wg = train.Gemm(%dy, %x, %n) {transA = 1 : i64, train.name = "wgrad", train.outputs = ["w_grad"]} : (tensor<8x4xf32>, tensor<8x16xf32>, none) -> tensor<4x16xf32>
    %flag, %none = train.ms.InPlaceAccumulatorV2(%buf, %wg, %reset) {train.name = "acc", train.outputs = ["w_grad.accumulation.out"]} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi1>) -> (tensor<1xi1>, none)
    train.return %loss, %flag : tensor<f32>, tensor<1xi1>
  }
}
