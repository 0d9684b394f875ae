//===- Passes.td - Train dialect transformation passes ----*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
#define AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutoMixedPrecision : Pass<"auto-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Convert the compute-heavy parts of ONNX training graphs to "
                "fp16/bf16, with casts at the edges";
  let description = [{
    Automatic mixed precision in the style of TensorFlow Grappler's
    `auto_mixed_precision` rewrite, ported to the `train` dialect.

    Every ONNX node is split into one vertex per ONNX type constraint
    (`T`, `T1`, ...): all inputs and outputs bound to one constraint change
    precision together, fixed-type ports (`tensor(int64)`, ...) never change.
    Nodes are classified by four op lists keyed `domain:op_type`
    (allow / deny / infer / clear); the vertices are then painted by the
    Grappler passes (allow ops; deny forward through clear/infer toward
    deny/infer; clear/infer between allow ops; in bf16 mode infer ops after
    allow ops; allow through clear ops; drop what cannot take the low type).
    ALLOW vertices whose type is `f32` change their element type to `f16`
    (or `bf16`) and `train.Cast` nodes are inserted on the edges whose two
    ends disagree, at most one per (value, target type). Graph inputs,
    outputs and initializers keep their types; existing casts feeding only
    low-precision consumers are retargeted.

    Example (fp16):

    ```mlir
    %y = train.Gemm(%x, %w, %b) {train.name = "fc", train.outputs = ["y"]}
        : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    train.return %y : tensor<2x3xf32>
    ```

    becomes

    ```mlir
    %x16 = train.Cast(%x) {to = 10 : i64, train.name = "x_CastToFp16", ...}
    %w16 = train.Cast(%w) {to = 10 : i64, ...}
    %b16 = train.Cast(%b) {to = 10 : i64, ...}
    %y = train.Gemm(%x16, %w16, %b16) {train.name = "fc", train.outputs = ["y"]}
        : (tensor<2x4xf16>, tensor<3x4xf16>, tensor<3xf16>) -> tensor<2x3xf16>
    %y32 = train.Cast(%y) {to = 1 : i64, train.name = "fc_CastToFp32", ...}
    train.return %y32 : tensor<2x3xf32>
    ```

    The new casts are shown named: the pass itself leaves them unnamed and
    they get these names when the graph is written (ONNX export, or the
    `train-name-casts` pass, which amp-opt runs before printing MLIR).

    The lists can be changed with `lists=` (a JSON file that replaces the
    defaults), the `*-add` / `*-remove` options and Grappler's
    `TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_*` environment variables (applied
    before the options). See docs/AutoMixedPrecision.md.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"fp16\"",
           "Target precision: fp16 or bf16">,
    Option<"lists", "lists", "std::string", /*default=*/"\"\"",
           "JSON file with the allow/deny/infer/clear lists; replaces the "
           "defaults">,
    ListOption<"allowAdd", "allow-add", "std::string",
               "Ops (op_type or domain:op_type) added to the allow list">,
    ListOption<"allowRemove", "allow-remove", "std::string",
               "Ops removed from the allow list">,
    ListOption<"denyAdd", "deny-add", "std::string",
               "Ops added to the deny list">,
    ListOption<"denyRemove", "deny-remove", "std::string",
               "Ops removed from the deny list">,
    ListOption<"inferAdd", "infer-add", "std::string",
               "Ops added to the infer list">,
    ListOption<"inferRemove", "infer-remove", "std::string",
               "Ops removed from the infer list">,
    ListOption<"clearAdd", "clear-add", "std::string",
               "Ops added to the clear list">,
    ListOption<"clearRemove", "clear-remove", "std::string",
               "Ops removed from the clear list">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "Node names or regular expressions (full match) of nodes that "
               "stay fp32">,
    Option<"dims", "dims", "std::string", /*default=*/"\"\"",
           "Sizes of symbolic dims (name=size,...; the names of the graph "
           "inputs' and value_info's dim_params) for the Tensor Core "
           "report">,
    Option<"ranges", "ranges", "std::string", /*default=*/"\"\"",
           "Value ranges measured in fp32 (amp-run --collect-ranges): "
           "nodes whose outputs or inputs would overflow the low type, "
           "lose more than underflow-limit of their values to underflow or "
           "more than resolution-limit of their variation to rounding "
           "stay fp32">,
    Option<"rangeMargin", "range-margin", "double", /*default=*/"2.0",
           "With ranges: keep fp32 when max |output| times this reaches "
           "the low type's largest value (65504 for fp16)">,
    Option<"underflowLimit", "underflow-limit", "double", /*default=*/"0.25",
           "With ranges (fp16): keep fp32 when more than this fraction of "
           "an output's nonzero values (gradients under the loss scale) "
           "fall below fp16's smallest normal">,
    Option<"resolutionLimit", "resolution-limit", "double",
           /*default=*/"0.5",
           "With ranges: keep fp32 when more than this fraction of a "
           "value's varying elements lie within half the low type's "
           "spacing of its mean (a base weight plus a small change: the "
           "change is lost to rounding)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write a JSON report of the decisions to this file">,
    Option<"dot", "dot", "std::string", /*default=*/"\"\"",
           "Write the graph, coloured by precision with casts marked, as "
           "Graphviz dot to this file">,
    Option<"summary", "summary", "bool", /*default=*/"true",
           "Print the pass summary to stderr">,
  ];
}

def NameCasts : Pass<"train-name-casts", "::mlir::ModuleOp"> {
  let summary = "Give the casts passes left unnamed their ONNX node and "
                "output names";
  let description = [{
    The AMP pass inserts its `train.Cast` nodes without `train.name` and
    `train.outputs` (interning two fresh names per cast was most of its time
    on large graphs). The ONNX exporter names them as it writes them; this
    pass gives them the same names in the IR: node
    `<producer>_CastTo<Fp16|Bf16|Fp32>`, output `<input>_<fp16|bf16|fp32>`,
    made unique with `_1`, `_2`, ... (amp/Dialect/Train/IR/CastNames.h).
    `amp-opt` runs it after the pipeline whenever it prints MLIR. Casts that
    have names keep them.
  }];
}

def LossScaling : Pass<"loss-scaling", "::mlir::ModuleOp"> {
  let summary = "Loss scaling for mixed-precision ONNX training graphs: "
                "scale the loss gradient, unscale and check the gradients, "
                "skip the update on overflow";
  let description = [{
    Rewrites ONNX Runtime style training graphs so that fp16 gradients do
    not underflow, with PyTorch GradScaler semantics, in standard ONNX ops:

    * the loss-gradient seed (`<loss>_grad`, the value ONNX Runtime's
      gradient builder names after the first graph output, or the `dY` of a
      loss-gradient op, or `seed=`) is multiplied by the loss scale;
    * every gradient (what `InPlaceAccumulator`/`InPlaceAccumulatorV2` or an
      optimizer consumes, or a `*_grad` graph output, or `gradients=`) is
      multiplied by `1/scale` in fp32, and one flag says whether all of them
      are finite (graph output `amp.all_finite`);
    * the update is skipped when they are not: accumulators add zeros,
      `AdamWOptimizer`/`SGDOptimizerV2`/`AdamOptimizer` get the flag as
      `update_signal`, `ai.onnx.preview.training` optimizers keep their old
      values (`Where`);
    * dynamic mode: the scale (graph input `amp.loss_scale`, f32 scalar) and
      its growth counter (`amp.growth_tracker`, int64 scalar) are graph state:
      the updated values are the outputs `amp.loss_scale.out` and
      `amp.growth_tracker.out` (backoff on overflow, growth after
      `growth-interval` clean steps, clamped to [min-scale, max-scale]).
      Static mode: the scale is an initializer and never changes.

    An optimizer-only graph (ONNX Runtime's `optimizer_model.onnx`) gets a
    graph input `amp.all_finite` wired to the optimizers' update signal.
    See docs/LossScaling.md.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"dynamic\"",
           "dynamic (GradScaler) or static">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "Initial loss scale (static: the scale)">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Scale multiplier after growth-interval finite steps (> 1)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Scale multiplier after a non-finite step (in (0, 1))">,
    Option<"growthInterval", "growth-interval", "int64_t",
           /*default=*/"2000",
           "Finite steps before the scale grows">,
    Option<"minScale", "min-scale", "double", /*default=*/"1.0",
           "Lower bound of the scale">,
    Option<"maxScale", "max-scale", "double", /*default=*/"16777216.0",
           "Upper bound of the scale (finite)">,
    Option<"seed", "seed", "std::string", /*default=*/"\"\"",
           "ONNX name of the loss-gradient seed (default: detected)">,
    ListOption<"gradients", "gradients", "std::string",
               "ONNX names of the gradients (default: detected)">,
    Option<"summary", "summary", "bool", /*default=*/"true",
           "Print what was rewritten to stderr">,
  ];
}

def TrainDataParallel : Pass<"train-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Reduce a training step's gradients across data-parallel "
                "ranks before they are accumulated or applied";
  let description = [{
    Data parallelism with the semantics of PyTorch DDP and Megatron: every
    rank runs the same training graph on its own shard of the batch, and
    the gradients the graph feeds its accumulators (onnxruntime-training's
    InPlaceAccumulator) and optimizers are averaged over the ranks before
    they are used, so every rank applies the same update.

    The gradients are grouped in buckets in the order they are computed
    (at most `bucket-mb` MB each, 25 by default as DDP's); each bucket is
    one `org.amp-mlir:AllReduce` node placed after its last gradient is
    computed, so its reduction can start while the backward pass goes on.
    The reduced gradient keeps the ONNX name (`<param>_grad`); the rank's
    own is renamed `<param>_grad.local`. Run before loss-scaling: its
    unscale and all-finite check then see the reduced gradients, so one
    rank's overflow makes every rank skip the step and back off the scale
    alike. A graph without accumulators or optimizers (an optimizer model,
    whose gradients are inputs) is left as it is.

    Lowered to the runtime's `all_reduce_many` over the communicator the
    context is given (docs/Distributed.md); in one process it is a copy.

    With `owners` (ZeRO stage 1, amp-run `--shard-optimizer`), each
    parameter's gradient goes to its owner rank only: a bucket becomes one
    `org.amp-mlir:ReduceScatter` node per element type, its gradients
    packed by owner into `ranks` equal parts (padded to the largest) and
    reduce-scattered (the runtime's `reduce_scatter`); rank `rank`'s
    accumulators read the reduced gradients it owns, the others' read the
    rank's own (no optimizer of this rank reads them). loss-scaling then
    reduces its all-finite flag with MIN over the ranks.
  }];
  let options = [
    Option<"bucketMB", "bucket-mb", "double", /*default=*/"25.0",
           "Largest bucket of gradients reduced together, in MB (a "
           "gradient larger than this is a bucket of its own)">,
    Option<"reduction", "reduction", "std::string", /*default=*/"\"mean\"",
           "mean (DDP: the ranks' average) or sum">,
    Option<"syncBatchNorm", "sync-batch-norm", "bool", /*default=*/"true",
           "Batch normalizations use the statistics of the global batch, "
           "over every rank (SyncBatchNorm), so N ranks train as one "
           "process at N times the batch; false: each rank's own batch, "
           "as DDP without SyncBatchNorm">,
    ListOption<"owners", "owners", "std::string",
               "ZeRO: each trainable parameter's owner rank, as "
               "<param>=<rank> (a gradient's parameter: the <param> of the "
               "<param>_grad.accumulation.buffer it is accumulated into, "
               "else of its name <param>_grad); with it the buckets are "
               "reduce-scattered to the owners">,
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "With owners: the rank whose graph this is (it unpacks its "
           "own part)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "With owners: the number of ranks (parts)">,
    Option<"summary", "summary", "bool", /*default=*/"true",
           "Print what was rewritten to stderr">,
  ];
}

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
