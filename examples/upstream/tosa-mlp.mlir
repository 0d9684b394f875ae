func.func @tosa_mlp(%x: tensor<1x4x8xf32>, %w: tensor<1x8x16xf32>, %b: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %add = tosa.add %mm, %b : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %r = tosa.clamp %add {min_val = 0.0 : f32, max_val = 3.4028235e38 : f32} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %mm2 = tosa.matmul %r, %w, %zp, %zp : (tensor<1x4x16xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  %e = tosa.exp %mm2 : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %e : tensor<1x4x16xf32>
}
