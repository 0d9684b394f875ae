//===- Passes.td - the lowering of train graphs to runtime calls -*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The lowering, as passes (docs/Lowering.md). `convert-train-to-runtime` is
// the pipeline of them:
//
//   train-bind-dims -> convert-train-to-amprt -> amprt-fuse
//     -> amprt-plan-buffers
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_PASSES_TD
#define AMP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrainBindDims : Pass<"train-bind-dims", "::mlir::ModuleOp"> {
  let summary = "Bind the symbolic dims of train graph inputs to sizes and "
                "fold the shape queries that become constants";
  let description = [{
    Every `train.graph` input whose type has a dynamic dim named (arg
    attribute `train.dims`) in `dims` gets that size in its type; the input
    is marked `train.bound_dims` (a batch of data, not a weight: the
    lowering's arena report and `narrow-inputs` tell them apart by it).
    Dims `dims` does not name stay dynamic (`convert-train-to-amprt`
    reports them). Then the train dialect's canonicalization runs once over
    each graph, in order: a node computed from what the graph makes known
    (`Shape`/`Size` of a graph input whose type is now static, Constant
    nodes, and what is computed from them: Gather, Unsqueeze, Concat,
    arithmetic, ...) becomes ONNX `Constant` nodes in its place, with its
    names (lib/Dialect/Train/IR/TrainFolders.cpp). Shape queries of
    activations stay; the lowering evaluates them as it binds shapes
    (`train-infer-shapes` writes them back).

    ```mlir
    // train-bind-dims{dims=batch=4}
    train.graph @g(%x: tensor<?x8xf32> {train.dims = ["batch", ""]})
    // becomes
    train.graph @g(%x: tensor<4x8xf32> {train.bound_dims,
                                        train.dims = ["batch", ""]})
    ```
  }];
  let options = [
    Option<"dims", "dims", "std::string", /*default=*/"\"\"",
           "Symbolic dims bound to sizes: name=value,... (e.g. batch=64)">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def TrainInferShapes : Pass<"train-infer-shapes", "::mlir::ModuleOp"> {
  let summary = "Give every value of the train graphs the static type the "
                "lowering computes for it, and fold their shape computations "
                "into Constant nodes";
  let description = [{
    Lowers a copy of each `train.graph` with convert-train-to-amprt's rules
    (the graph inputs' symbolic dims bound by `dims`, or earlier by
    `train-bind-dims`) and writes back into the graph what the lowering
    computed: a node whose every used result it knew on the host (a shape
    computation: `Shape`/`Size` of any value, and what is computed from
    them) becomes `Constant` nodes, as the train dialect's canonicalization
    makes them; every other node result gets the static shape of its
    buffer, and the element type where the graph left it unknown. The
    graph's result types follow. A graph the lowering rejects is an error,
    with the lowering's diagnostics.

    ```mlir
    // amp-opt --train-infer-shapes=dims=batch=8
    %y = Relu(%x) : (tensor<?x4xf32>) -> tensor<?x?xf32>
    %s = Shape(%y) : (tensor<?x?xf32>) -> tensor<?xi64>
    // becomes
    %y = Relu(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %s = Constant() {value = dense<[8, 4]> : tensor<2xi64>} : () -> tensor<?xi64>
    ```
  }];
  let options = [
    Option<"dims", "dims", "std::string", /*default=*/"\"\"",
           "Symbolic dims bound to sizes: name=value,... (e.g. batch=64)">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect",
                           "::amp::amprt::AmpRTDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def ConvertTrainToAmpRT : Pass<"convert-train-to-amprt", "::mlir::ModuleOp"> {
  let summary = "Lower train graphs node by node to amprt calls on memrefs "
                "(unplanned: each temporary its own allocation)";
  let description = [{
    Each `train.graph` becomes a `func.func` marked `amprt.unplanned`: its
    inputs memref arguments of static shape (symbolic dims bound by `dims`,
    or earlier by `train-bind-dims`), each ONNX node one or more
    `amprt.call`s of the runtime's kernels (include/amp/Runtime/Ops.def),
    found by (domain, op_type); initializers and shape computations known
    at lowering time become `memref.global` constants or fold away; every
    temporary is a `memref.alloc` tagged `amprt.role` (activations,
    gradients, weight_copies, workspace). Loss scaling's finite checks
    (`IsNaN(Sum(ReduceSum(x * 0)))`) become one all-finite call. With
    `narrow-inputs`, an f32 data input that the graph only casts to one
    16-bit type is taken in that type (`amprt.narrowed_from`).
  }];
  let options = [
    Option<"dims", "dims", "std::string", /*default=*/"\"\"",
           "Symbolic dims bound to sizes: name=value,... (e.g. batch=64)">,
    Option<"narrowInputs", "narrow-inputs", "bool", /*default=*/"false",
           "The driver converts f32 batches to 16 bits as it fills them: "
           "an f32 data input (a dim bound by dims) that is only cast to "
           "one 16-bit type is taken in that type (arg attribute "
           "amprt.narrowed_from)">,
  ];
  let dependentDialects = ["::amp::amprt::AmpRTDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def AmpRTFuse : Pass<"amprt-fuse", "::mlir::ModuleOp"> {
  let summary = "Fuse the calls of unplanned lowered functions";
  let description = [{
    On each `amprt.unplanned` function, in this order (docs/Lowering.md):
    loss scaling's unscale, check and gate fused into one multi-tensor call
    each; with `overwrite-accumulators`, gradients checked and accumulated
    as they come (the function gets `amprt.overwrite_accumulators`);
    transposes of GEMM operands and results folded into trans flags; with
    `fuse-attention`, attention in 16 bits (scores, softmax, output product
    and their gradient) as one `attention` and one `attention_grad` call;
    sums of GatherGrads as scatters into one buffer; widening casts read by
    their elementwise consumers; with `fuse-gemm-epilogues`, a MatMul with a
    2-D weight and the Add of its bias as one gemm, a gemm and the relu
    reading it as one `gemm_relu`, and a product read only by an
    activation's gradient as one `gemm_act_grad`. Results are bit-identical to the calls
    before, except attention's (its scores and probabilities stay f32
    inside the call) and a 16-bit bias gemm's (the product is not rounded
    before the bias is added).
  }];
  let options = [
    Option<"overwriteAccumulators", "overwrite-accumulators", "bool",
           /*default=*/"false",
           "The driver overwrites the gradient accumulators every step "
           "(lazy_reset_grad always true): loss scaling's gate may then "
           "follow the gradients' accumulation">,
    Option<"fuseAttention", "fuse-attention", "bool", /*default=*/"true",
           "Attention in f16/bf16 and its gradient as fused attention "
           "calls (scores and probabilities never stored)">,
    Option<"fuseGemmEpilogues", "fuse-gemm-epilogues", "bool", /*default=*/"true",
           "A MatMul with a 2-D weight and the Add of its bias as one gemm "
           "(one rounding less in 16 bits), a gemm and its ReLU as one "
           "gemm_relu, a product and the activation gradient reading it as "
           "one gemm_act_grad: the product never stored">,
  ];
  let dependentDialects = ["::amp::amprt::AmpRTDialect"];
}

def AmpRTChannelsLast : Pass<"amprt-channels-last", "::mlir::ModuleOp"> {
  let summary = "Run convolutions and the calls around them channels last "
                "(NHWC) in unplanned lowered functions";
  let description = [{
    The buffers that a convolution, a pooling, a batch normalization, an
    elementwise call (broadcasts of one rank), a reduction keeping its dims,
    a pad or a concat reads and writes together form regions; a region
    that holds a convolution computing in f16/bf16 (`16bit`), or any
    convolution (`all`), takes the channels-last shape ([N, spatial...,
    C]; a convolution's weight [M, kernel..., C/g]), its windows
    `layout = 1`, its global average pools an average pool over the whole
    image, its batch normalizations reshapes to [N * spatial, C]. A buffer
    that something outside the region names too (a graph input or output,
    another call) gets a channels-last twin, kept in step by `transpose`
    calls where the other layout is read next (a region where that would
    write a buffer twice stays). A cast whose wider side only it ties to a
    region stays out of it, so the edge is on the narrow side. Results are bit-identical on the CPU backend (which runs a
    channels-last window through channels-first copies) (docs/Lowering.md,
    "Channels last").
  }];
  let options = [
    Option<"channelsLast", "channels-last", "::amp::ChannelsLast",
           /*default=*/"::amp::ChannelsLast::Off",
           "Which convolutions run channels last",
           [{::amp::channelsLastValues()}]>,
  ];
  let dependentDialects = ["::amp::amprt::AmpRTDialect",
                           "::mlir::memref::MemRefDialect"];
}

def AmpRTPlanBuffers : Pass<"amprt-plan-buffers", "::mlir::ModuleOp"> {
  let summary = "Schedule the calls of unplanned lowered functions and "
                "place their temporaries in one arena";
  let description = [{
    On each `amprt.unplanned` function: with `schedule`, calls moved earlier
    where the step then holds less memory; a far-read cast repeated before
    its late readers; reshapes turned into views of their input; elementwise
    outputs written over a dying input. Then liveness over the call order
    and placement in one 64-byte aligned arena (first fit, greedy by size,
    greedy by area; the smallest wins): the allocs become `memref.view`s of
    one `memref.alloc`, the function gets `amprt.arena_bytes` and
    `amprt.arena_split` (the peak's bytes by role) and a remark says the
    arena's size. With `keep-values`, every temporary that holds an ONNX
    value (`amprt.value`) lives to the end, and no cast is rematerialized
    and no output written over a dying input: each value is still in the
    arena after the function returns (a lowering's own intermediates keep
    their liveness).
  }];
  let options = [
    Option<"schedule", "schedule", "bool", /*default=*/"true",
           "Reorder the calls where the step then holds less memory (off: "
           "the graph's node order)">,
    Option<"keepValues", "keep-values", "bool", /*default=*/"false",
           "Every temporary holding an ONNX value keeps its place to the "
           "function's end (no output written over a dying input, no cast "
           "repeated): each value can be read after the run "
           "(amp-run --compare-precision's fp32 run)">,
  ];
  let dependentDialects = ["::amp::amprt::AmpRTDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // AMP_CONVERSION_PASSES_TD
