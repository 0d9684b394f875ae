// RUN: amp-opt %s --split-input-file --auto-mixed-precision="summary=false" | FileCheck %s
// Repeated conversion changes nothing (onnxconverter-common#276, PR #310:
// converting twice produced orphan and self-recurring Casts):
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="summary=false" | amp-opt --split-input-file --auto-mixed-precision="summary=false" | FileCheck %s
// RUN: amp-opt %s --split-input-file --auto-mixed-precision="summary=false mode=bf16" | FileCheck %s --check-prefix=BF16

// One case per failure that peers' mixed-precision converters are known for
// (/work/shared/reference/peers-amp.md, section 3 "Pain points" and the
// summary), each with the exact result the pass must give.

// Casts around every op: onnxconverter-common's float16.py puts a Cast
// before each input and after each output of a blocked node, and ORT 1.17
// stopped removing the back-to-back casts this leaves (onnxconverter-common
// #179, #271 / PR #286). A chain allow -> clear -> infer -> clear -> allow
// has casts only at its borders: none inside.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @casts_around_every_op
  train.graph @casts_around_every_op(%x: tensor<4x8xf32> {train.name = "x"}) -> (tensor<4x8xf32> {train.name = "y"}) {
    // CHECK: %[[X:.*]] = Cast(%arg0) {to = 10 : i64, train.name = "x_CastToFp16"
    // CHECK: %[[W:.*]] = Cast(%{{.*}}) {to = 10 : i64, train.name = "w_CastToFp16"
    // CHECK: %[[B:.*]] = Cast(%{{.*}}) {to = 10 : i64, train.name = "b_CastToFp16"
    %w = train.initializer "w" {value = dense<0.1> : tensor<8x8xf32>} : tensor<8x8xf32>
    %b = train.initializer "b" {value = dense<0.5> : tensor<8xf32>} : tensor<8xf32>
    %shape = train.initializer "shape" {value = dense<[4, 8]> : tensor<2xi64>} : tensor<2xi64>
    // CHECK: %[[M1:.*]] = MatMul(%[[X]], %[[W]]) {{.*}} -> tensor<4x8xf16>
    // CHECK-NEXT: %[[R:.*]] = Relu(%[[M1]]) {{.*}} -> tensor<4x8xf16>
    // CHECK-NEXT: %[[A:.*]] = Add(%[[R]], %[[B]]) {{.*}} -> tensor<4x8xf16>
    // CHECK-NEXT: %[[T:.*]] = Transpose(%[[A]]) {{.*}} -> tensor<8x4xf16>
    // CHECK-NEXT: %[[RS:.*]] = Reshape(%[[T]], %{{.*}}) {{.*}} -> tensor<4x8xf16>
    // CHECK-NEXT: %[[M2:.*]] = MatMul(%[[RS]], %[[W]]) {{.*}} -> tensor<4x8xf16>
    // CHECK-NEXT: %[[Y:.*]] = Cast(%[[M2]]) {to = 1 : i64, train.name = "mm2_CastToFp32", train.outputs = ["y"]}
    // CHECK-NEXT: return %[[Y]]
    %0 = train.MatMul(%x, %w) {train.name = "mm1", train.outputs = ["a"]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %1 = train.Relu(%0) {train.name = "relu", train.outputs = ["r"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = train.Add(%1, %b) {train.name = "bias", train.outputs = ["s"]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %3 = train.Transpose(%2) {perm = array<i64: 1, 0>, train.name = "t", train.outputs = ["tt"]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %4 = train.Reshape(%3, %shape) {train.name = "reshape", train.outputs = ["rs"]} : (tensor<8x4xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    %5 = train.MatMul(%4, %w) {train.name = "mm2", train.outputs = ["y"]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    train.return %5 : tensor<4x8xf32>
  }
}

// -----

// Duplicated casts: with keep_io_types, onnxconverter-common inserts a Cast
// per downstream consumer (float16.py step 2; ORT's cascaded-cast clean-up,
// onnxruntime#20346, PR #12871). Three fp32 consumers of one fp16 value
// share one cast back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @duplicated_casts
  train.graph @duplicated_casts(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "e"}, tensor<4x4xf32> {train.name = "p"}, tensor<4x4xf32> {train.name = "q"}) {
    // CHECK: %[[M:.*]] = MatMul({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[C:.*]] = Cast(%[[M]]) {to = 1 : i64, train.name = "mm_CastToFp32", train.outputs = ["m_fp32"]}
    // CHECK-NEXT: Exp(%[[C]])
    // CHECK: Pow(%[[C]], %{{.*}})
    // CHECK-NEXT: Sin(%[[C]])
    // CHECK-NOT: Cast
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["m"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Exp(%0) {train.name = "exp", train.outputs = ["e"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %two = train.initializer "two" {value = dense<2.0> : tensor<f32>} : tensor<f32>
    %2 = train.Pow(%0, %two) {train.name = "pow", train.outputs = ["p"]} : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %3 = train.Sin(%0) {train.name = "sin", train.outputs = ["q"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %1, %2, %3 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Weights cast more than once (PyTorch autocast and Apex cache one fp16
// copy per weight; ORT's CastNodeArg makes one Cast per tensor and type): a
// weight used by three GEMMs, as a graph input (ORT training artifacts) or
// an initializer, gets exactly one cast; the f32 master stays.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @weights_cast_once
  // CHECK-SAME: %arg1: tensor<4x4xf32> {train.name = "w"}
  train.graph @weights_cast_once(%x: tensor<4x4xf32> {train.name = "x"}, %w: tensor<4x4xf32> {train.name = "w"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    // CHECK: %[[W:.*]] = Cast(%arg1) {to = 10 : i64, train.name = "w_CastToFp16"
    // CHECK: %[[VI:.*]] = initializer "v" {{.*}} : tensor<4x4xf32>
    // CHECK-NEXT: %[[V:.*]] = Cast(%[[VI]]) {to = 10 : i64, train.name = "v_CastToFp16"
    // CHECK-NEXT: %[[M1:.*]] = MatMul(%{{.*}}, %[[W]])
    // CHECK-NEXT: %[[M2:.*]] = MatMul(%[[M1]], %[[V]])
    // CHECK-NEXT: %[[G:.*]] = Gemm(%[[M2]], %[[W]], %[[V]])
    // CHECK-NEXT: MatMul(%[[G]], %[[V]])
    // CHECK-NOT: Cast(%arg1)
    // CHECK-NOT: Cast(%[[VI]])
    %v = train.initializer "v" {value = dense<0.5> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %w) {train.name = "mm1", train.outputs = ["a"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.MatMul(%0, %v) {train.name = "mm2", train.outputs = ["b"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Gemm(%1, %w, %v) {train.name = "gemm", transB = 1 : i64, train.outputs = ["c"]} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.MatMul(%2, %v) {train.name = "mm3", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %3 : tensor<4x4xf32>
  }
}

// -----

// fp32-only inputs cast to fp16: the Dropout and DropoutGrad ratio (ORT's
// mixed_precision_transformer.cc pins Dropout[1] and DropoutGrad[2] to
// fp32). The data ports go fp16, the ratio initializer and the bool ports
// keep their types and get no cast.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  // CHECK-LABEL: train.graph @dropout_ratio
  train.graph @dropout_ratio(%dy: tensor<4x4xf32> {train.name = "dy"}, %x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    // CHECK: %[[RATIO:.*]] = initializer "ratio" {{.*}} : tensor<f32>
    // CHECK-NEXT: %[[T:.*]] = initializer "t"
    // CHECK-NOT: Cast(%[[RATIO]])
    // CHECK: %[[M:.*]] = MatMul({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[D:.*]], %[[MASK:.*]] = Dropout(%{{.*}}, %[[RATIO]], %[[T]]) {{.*}} : (tensor<4x4xf16>, tensor<f32>, tensor<i1>) -> (tensor<4x4xf16>, tensor<4x4xi1>)
    // CHECK-NEXT: train.ms.DropoutGrad(%[[M]], %[[MASK]], %[[RATIO]], %[[T]]) {{.*}} : (tensor<4x4xf16>, tensor<4x4xi1>, tensor<f32>, tensor<i1>) -> tensor<4x4xf16>
    %ratio = train.initializer "ratio" {value = dense<0.1> : tensor<f32>} : tensor<f32>
    %t = train.initializer "t" {value = dense<true> : tensor<i1>} : tensor<i1>
    %0 = train.MatMul(%dy, %x) {train.name = "mm1", train.outputs = ["a"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1:2 = train.Dropout(%x, %ratio, %t) {train.name = "drop", train.outputs = ["d", "mask"]} : (tensor<4x4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x4xf32>, tensor<4x4xi1>)
    %2 = train.ms.DropoutGrad(%0, %1#1, %ratio, %t) {train.name = "dgrad", train.outputs = ["g"]} : (tensor<4x4xf32>, tensor<4x4xi1>, tensor<f32>, tensor<i1>) -> tensor<4x4xf32>
    %3 = train.MatMul(%2, %1#0) {train.name = "mm2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %3 : tensor<4x4xf32>
  }
}

// -----

// Resize `scales` cast to fp16 (onnxconverter-common#207, #208, #272, #306;
// onnxruntime#1782, #8327, #9789, #14827): scales is a fixed tensor(float)
// port and roi its own constraint; neither is ever cast. In bf16 mode Resize
// is a clear op and its data goes bf16; in fp16 mode it is on no list and
// stays f32.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @resize_scales
  // BF16-LABEL: train.graph @resize_scales
  train.graph @resize_scales(%x: tensor<4x8xf32> {train.name = "x"}) -> (tensor<4x8xf32> {train.name = "y"}) {
    // CHECK: %[[ROI:.*]] = initializer "roi" {{.*}} : tensor<8xf32>
    // CHECK-NEXT: %[[SC:.*]] = initializer "scales" {{.*}} : tensor<4xf32>
    // CHECK: %[[UP:.*]] = Cast(%{{.*}}) {to = 1 : i64, train.name = "to4d_CastToFp32"
    // CHECK: Resize(%[[UP]], %[[ROI]], %[[SC]], %{{.*}}) {{.*}} : (tensor<1x1x4x8xf32>, tensor<8xf32>, tensor<4xf32>, none) -> tensor<1x1x4x8xf32>
    // BF16: %[[ROI:.*]] = initializer "roi" {{.*}} : tensor<8xf32>
    // BF16-NEXT: %[[SC:.*]] = initializer "scales" {{.*}} : tensor<4xf32>
    // BF16-NOT: Cast(%[[SC]])
    // BF16-NOT: Cast(%[[ROI]])
    // BF16: %[[R4:.*]] = Reshape({{.*}}) {{.*}} -> tensor<1x1x4x8xbf16>
    // BF16-NEXT: %{{.*}} = none
    // BF16-NEXT: Resize(%[[R4]], %[[ROI]], %[[SC]], %{{.*}}) {{.*}} : (tensor<1x1x4x8xbf16>, tensor<8xf32>, tensor<4xf32>, none) -> tensor<1x1x4x8xbf16>
    %w = train.initializer "w" {value = dense<0.1> : tensor<8x8xf32>} : tensor<8x8xf32>
    %s4 = train.initializer "s4" {value = dense<[1, 1, 4, 8]> : tensor<4xi64>} : tensor<4xi64>
    %s2 = train.initializer "s2" {value = dense<[4, 8]> : tensor<2xi64>} : tensor<2xi64>
    %roi = train.initializer "roi" {value = dense<0.0> : tensor<8xf32>} : tensor<8xf32>
    %scales = train.initializer "scales" {value = dense<1.0> : tensor<4xf32>} : tensor<4xf32>
    %0 = train.MatMul(%x, %w) {train.name = "mm1", train.outputs = ["a"]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %1 = train.Reshape(%0, %s4) {train.name = "to4d", train.outputs = ["a4"]} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
    %none = train.none
    %2 = train.Resize(%1, %roi, %scales, %none) {mode = "nearest", train.name = "resize", train.outputs = ["r4"]} : (tensor<1x1x4x8xf32>, tensor<8xf32>, tensor<4xf32>, none) -> tensor<1x1x4x8xf32>
    %3 = train.Reshape(%2, %s2) {train.name = "to2d", train.outputs = ["r"]} : (tensor<1x1x4x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    %4 = train.MatMul(%3, %w) {train.name = "mm2", train.outputs = ["y"]} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    train.return %4 : tensor<4x8xf32>
  }
}

// -----

// Concat with mixed fp16/fp32 inputs after conversion (onnx/onnxmltools
// #361, #446): Concat, a clear op next to an fp16 MatMul, becomes fp16 and
// every input is fp16 (the graph input and the fp32 Exp output get a cast).
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @concat_mixed
  train.graph @concat_mixed(%x: tensor<4x4xf32> {train.name = "x"}, %z: tensor<4x4xf32> {train.name = "z"}) -> (tensor<4x12xf32> {train.name = "y"}) {
    // CHECK: %[[Z:.*]] = Cast(%arg1) {to = 10 : i64, train.name = "z_CastToFp16"
    // CHECK: %[[M:.*]] = MatMul({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[E:.*]] = Exp(%arg1) {{.*}} -> tensor<4x4xf32>
    // CHECK-NEXT: %[[EC:.*]] = Cast(%[[E]]) {to = 10 : i64
    // CHECK-NEXT: Concat(%[[M]], %[[Z]], %[[EC]]) {{.*}} : (tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x12xf16>
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["a"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Exp(%z) {train.name = "exp", train.outputs = ["e"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Concat(%0, %z, %1) {axis = 1 : i64, train.name = "concat", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x12xf32>
    train.return %2 : tensor<4x12xf32>
  }
}

// -----

// "Type parameter (T) bound to different types" (onnxruntime#6501): every
// port of one type constraint has one type. Add between two MatMuls goes
// fp16 with its bias cast; Mul after the last allow op stays f32 and reads
// the f32 bias and the MatMul output cast back.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @type_parameter_bound
  train.graph @type_parameter_bound(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "z"}) {
    // CHECK: %[[B:.*]] = initializer "b"
    // CHECK-NEXT: %[[B16:.*]] = Cast(%[[B]]) {to = 10 : i64
    // CHECK-NEXT: %[[M1:.*]] = MatMul({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[M1C:.*]] = Cast(%[[M1]]) {to = 1 : i64
    // CHECK-NEXT: Add(%[[M1]], %[[B16]]) {{.*}} : (tensor<4x4xf16>, tensor<4xf16>) -> tensor<4x4xf16>
    // CHECK: Mul(%[[M1C]], %[[B]]) {{.*}} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %b = train.initializer "b" {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
    %0 = train.MatMul(%x, %x) {train.name = "mm1", train.outputs = ["a"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Add(%0, %b) {train.name = "between", train.outputs = ["s"]} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %x) {train.name = "mm2", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Mul(%0, %b) {train.name = "after", train.outputs = ["z"]} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    train.return %2, %3 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Cast nodes to float not patched (onnxconverter-common#320, #331,
// onnxruntime#25522): an existing Cast(-> FLOAT) whose consumers all go
// fp16 is retargeted to FLOAT16 (no second cast after it).
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @cast_to_float_patched
  train.graph @cast_to_float_patched(%i: tensor<4x4xi32> {train.name = "i"}) -> (tensor<4x4xf32> {train.name = "y"}) {
    // CHECK: %[[C:.*]] = Cast(%arg0) {to = 10 : i64, train.name = "tofloat", train.outputs = ["f"]} : (tensor<4x4xi32>) -> tensor<4x4xf16>
    // CHECK-NEXT: MatMul(%[[C]], %[[C]]) {{.*}} -> tensor<4x4xf16>
    %0 = train.Cast(%i) {to = 1 : i64, train.name = "tofloat", train.outputs = ["f"]} : (tensor<4x4xi32>) -> tensor<4x4xf32>
    %1 = train.MatMul(%0, %0) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %1 : tensor<4x4xf32>
  }
}

// -----

// Initializer typed fp16 but used as float (onnxconverter-common#304): an
// initializer shared by an fp16 MatMul and an fp32 Exp keeps its f32 type;
// the MatMul reads a cast, the Exp the initializer itself.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @initializer_shared
  train.graph @initializer_shared(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "e"}) {
    // CHECK: %[[W:.*]] = initializer "w" {{.*}} : tensor<4x4xf32>
    // CHECK-NEXT: %[[W16:.*]] = Cast(%[[W]]) {to = 10 : i64
    // CHECK-NEXT: MatMul(%{{.*}}, %[[W16]])
    // CHECK: Exp(%[[W]]) {{.*}} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %w = train.initializer "w" {value = dense<0.5> : tensor<4x4xf32>} : tensor<4x4xf32>
    %0 = train.MatMul(%x, %w) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Exp(%w) {train.name = "exp", train.outputs = ["e"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Lossy cast pairs folded (openxla/xla#41605 elides f32 -> bf16 -> f32;
// onnxconverter-common's remove_unnecessary_cast_node deletes Cast16 ->
// Cast32 pairs): the graph's own f32 -> fp16 -> f32 pair stays, the Sin
// after it still reads the rounded value, and the fp32 Exp reads x itself,
// not x rounded. The existing x -> fp16 cast is the one the MatMul shares.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @lossy_pairs_kept
  train.graph @lossy_pairs_kept(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "e"}, tensor<4x4xf32> {train.name = "q"}) {
    // CHECK: %[[DOWN:.*]] = Cast(%arg0) {to = 10 : i64, train.name = "down", train.outputs = ["h"]}
    // CHECK-NEXT: MatMul(%[[DOWN]], %[[DOWN]])
    // CHECK: Exp(%arg0)
    // CHECK-NEXT: %[[UP:.*]] = Cast(%[[DOWN]]) {to = 1 : i64, train.name = "up", train.outputs = ["hf"]}
    // CHECK-NEXT: Sin(%[[UP]])
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Exp(%x) {train.name = "exp", train.outputs = ["e"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Cast(%x) {to = 10 : i64, train.name = "down", train.outputs = ["h"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %3 = train.Cast(%2) {to = 1 : i64, train.name = "up", train.outputs = ["hf"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %4 = train.Sin(%3) {train.name = "sin", train.outputs = ["q"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %0, %1, %4 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Loss in fp16: every peer keeps the loss fp32 (ORT PR #4268 carves out the
// loss subgraph). The forward and gradient Gemms go fp16; the loss, its
// log_prob and the com.microsoft loss gradient stay f32.
module attributes {train.opset_import = [["", 17 : i64], ["com.microsoft", 1 : i64]]} {
  // CHECK-LABEL: train.graph @loss_fp32
  train.graph @loss_fp32(%x: tensor<4x8xf32> {train.name = "x"}, %w: tensor<4x8xf32> {train.name = "w"}, %labels: tensor<4xi64> {train.name = "labels"}) -> (tensor<f32> {train.name = "loss"}, tensor<4x8xf32> {train.name = "w_grad"}) {
    // CHECK: %[[FC:.*]] = Gemm({{.*}}) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[FCC:.*]] = Cast(%[[FC]]) {to = 1 : i64
    // CHECK-NEXT: %[[LOSS:.*]], %[[LP:.*]] = SoftmaxCrossEntropyLoss(%[[FCC]], {{.*}} : (tensor<4x4xf32>, tensor<4xi64>, none) -> (tensor<f32>, tensor<4x4xf32>)
    // CHECK-NEXT: %[[G:.*]] = train.ms.SoftmaxCrossEntropyLossGrad(%{{.*}}, %[[LP]], {{.*}} : (tensor<f32>, tensor<4x4xf32>, tensor<4xi64>, none) -> tensor<4x4xf32>
    // CHECK-NEXT: %[[GC:.*]] = Cast(%[[G]]) {to = 10 : i64
    // CHECK-NEXT: Gemm(%[[GC]], {{.*}} -> tensor<4x8xf16>
    // CHECK: return %[[LOSS]], %{{.*}} : tensor<f32>, tensor<4x8xf32>
    %none = train.none
    %seed = train.initializer "seed" {value = dense<1.0> : tensor<f32>} : tensor<f32>
    %0 = train.Gemm(%x, %w, %none) {transB = 1 : i64, train.name = "fc", train.outputs = ["logits"]} : (tensor<4x8xf32>, tensor<4x8xf32>, none) -> tensor<4x4xf32>
    %1:2 = train.SoftmaxCrossEntropyLoss(%0, %labels, %none) {reduction = "mean", train.name = "sce", train.outputs = ["loss", "log_prob"]} : (tensor<4x4xf32>, tensor<4xi64>, none) -> (tensor<f32>, tensor<4x4xf32>)
    %2 = train.ms.SoftmaxCrossEntropyLossGrad(%seed, %1#1, %labels, %none) {reduction = "mean", train.name = "sce_grad", train.outputs = ["logits_grad"]} : (tensor<f32>, tensor<4x4xf32>, tensor<4xi64>, none) -> tensor<4x4xf32>
    %3 = train.Gemm(%2, %x, %none) {transA = 1 : i64, train.name = "fc_grad", train.outputs = ["w_grad"]} : (tensor<4x4xf32>, tensor<4x8xf32>, none) -> tensor<4x8xf32>
    train.return %1#0, %3 : tensor<f32>, tensor<4x8xf32>
  }
}

// -----

// keep_io_types broke the topological order (onnxconverter-common#208):
// graph inputs and outputs keep their f32 types; the input's cast goes to
// the top of the graph, the output's cast right after its producer, so the
// graph stays sorted whatever consumes them.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @keep_io_types_order
  // CHECK-SAME: (%arg0: tensor<4x4xf32> {train.name = "x"}, %arg1: tensor<4x4xf32> {train.name = "k"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "s"})
  train.graph @keep_io_types_order(%x: tensor<4x4xf32> {train.name = "x"}, %k: tensor<4x4xf32> {train.name = "k"}) -> (tensor<4x4xf32> {train.name = "y"}, tensor<4x4xf32> {train.name = "s"}) {
    // CHECK-NEXT: %[[K:.*]] = Cast(%arg1) {to = 10 : i64, train.name = "k_CastToFp16"
    // CHECK-NEXT: %[[S:.*]] = Sigmoid(%arg0)
    // CHECK-NEXT: %[[T:.*]] = Tanh(%[[S]])
    // CHECK-NEXT: %[[TC:.*]] = Cast(%[[T]]) {to = 10 : i64
    // CHECK-NEXT: %[[M:.*]] = MatMul(%[[TC]], %[[K]])
    // CHECK-NEXT: %[[Y:.*]] = Cast(%[[M]]) {to = 1 : i64, train.name = "mm_CastToFp32", train.outputs = ["y"]}
    // CHECK-NEXT: return %[[Y]], %[[S]] : tensor<4x4xf32>, tensor<4x4xf32>
    %0 = train.Sigmoid(%x) {train.name = "sig", train.outputs = ["s"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Tanh(%0) {train.name = "tanh", train.outputs = ["t"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.MatMul(%1, %k) {train.name = "mm", train.outputs = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2, %0 : tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Self-recurring and orphaned Casts (onnxconverter-common#276, PR #310;
// #307: remove_unnecessary_cast_node failed on a Cast with no consumer):
// an existing no-op Cast of a value that becomes fp16 is the shared cast
// back (never fed by itself); a Cast(fp16 -> f32) whose only consumer goes
// fp16 is folded away instead of being left without a consumer; a Cast
// whose only use is a graph output is kept.
module attributes {train.opset_import = [["", 17 : i64]]} {
  // CHECK-LABEL: train.graph @no_self_or_orphan_casts
  train.graph @no_self_or_orphan_casts(%h: tensor<4x4xf16> {train.name = "h"}, %x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "n"}, tensor<4x4xf32> {train.name = "c"}, tensor<4x4xf32> {train.name = "s"}, tensor<4x4xf32> {train.name = "z"}) {
    // CHECK-NOT: train.name = "up"
    // CHECK: %[[M:.*]] = MatMul(%arg0, %arg0) {{.*}} -> tensor<4x4xf16>
    // CHECK-NEXT: %[[N:.*]] = Cast(%[[M]]) {to = 1 : i64, train.name = "noop", train.outputs = ["n"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    // CHECK-NOT: Cast(%[[M]])
    // CHECK: %[[C:.*]] = Cast(%arg1) {to = 1 : i64, train.name = "only_output", train.outputs = ["c"]}
    // CHECK-NEXT: %[[S:.*]] = Sigmoid(%[[N]])
    // CHECK-NEXT: %[[Z:.*]] = Tanh(%[[N]])
    // CHECK-NEXT: return %[[N]], %[[C]], %[[S]], %[[Z]]
    %0 = train.Cast(%h) {to = 1 : i64, train.name = "up", train.outputs = ["hf"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %1 = train.MatMul(%0, %0) {train.name = "mm", train.outputs = ["m"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Cast(%x) {to = 1 : i64, train.name = "only_output", train.outputs = ["c"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %3 = train.Sigmoid(%1) {train.name = "sig", train.outputs = ["s"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %4 = train.Cast(%1) {to = 1 : i64, train.name = "noop", train.outputs = ["n"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = train.Tanh(%4) {train.name = "tanh", train.outputs = ["z"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %4, %2, %3, %5 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}
