//===- Passes.cpp - the lowering's passes and its pipeline ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// convert-train-to-amprt (GraphLowering, node by node), amprt-fuse (the
// rewrites of PlannedProgram and the rewrite patterns of FusePatterns.h on
// the functions' unplanned form) and amprt-plan-buffers (the rewrites of
// PlannedProgram), and `convert-train-to-runtime`, the pipeline of them
// after train-bind-dims (BindDims.cpp).
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "GraphLowering.h"

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/SymbolicDims.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SetVector.h"

#include <optional>

namespace amp {
#define GEN_PASS_DEF_CONVERTTRAINTOAMPRT
#define GEN_PASS_DEF_AMPRTFUSE
#define GEN_PASS_DEF_AMPRTPLANBUFFERS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

struct ConvertTrainToAmpRTPass
    : public amp::impl::ConvertTrainToAmpRTBase<ConvertTrainToAmpRTPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<int64_t> dimMap;
    if (failed(train::parseDimBindings(module.getLoc(), getArgument(), dims,
                                       dimMap)))
      return signalPassFailure();
    if (failed(convertGraphsToAmpRT(module, dimMap, narrowInputs)))
      return signalPassFailure();
  }
};

/// Reads each unplanned function of `module`, lets `rewrite` change it, and
/// writes it back in its place: planned (with `rewrite`'s arena) or not.
/// `rewrite` returns whether to write the planned form.
void applyFusion(ModuleOp module,
                 function_ref<void(RewritePatternSet &)> populate,
                 function_ref<bool(func::FuncOp)> applies = nullptr) {
  RewritePatternSet set(module.getContext());
  populate(set);
  FrozenRewritePatternSet patterns(std::move(set));
  GreedyRewriteConfig config;
  config.setUseTopDownTraversal(true)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
      .setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  for (auto f : llvm::to_vector(module.getOps<func::FuncOp>())) {
    if (!f->hasAttr(kUnplannedAttr) || (applies && !applies(f)))
      continue;
    llvm::SetVector<StringAttr> globals;
    f.walk([&](memref::GetGlobalOp g) {
      globals.insert(g.getNameAttr().getAttr());
    });
    (void)applyPatternsGreedily(f.getBody(), patterns, config);
    eraseUnusedBuffers(f);
    for (StringAttr name : globals)
      if (Operation *global = SymbolTable::lookupSymbolIn(module, name))
        if (SymbolTable::symbolKnownUseEmpty(global, module))
          global->erase();
  }
}

struct AmpRTFusePass : public amp::impl::AmpRTFuseBase<AmpRTFusePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The patterns assume the unplanned form (buffers of static shape, of
    // the function): a function not of it is an error at the op, and every
    // function is left as it was.
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr(kUnplannedAttr) && failed(PlannedProgram::read(f)))
        return signalPassFailure();
    applyFusion(module, populateFuseUnscalePatterns);
    // Once per function: the patterns mark it.
    if (overwriteAccumulators)
      applyFusion(module, populateAccumulateEarlyPatterns, [](func::FuncOp f) {
        return !f->hasAttr(kOverwriteAccumulatorsAttr);
      });
    applyFusion(module, populateFoldTransposesPatterns);
    if (fuseAttention) {
      applyFusion(module, populateFuseAttentionPatterns);
      applyFusion(module, populateFoldAttentionViewsPatterns);
    }
    applyFusion(module, populateGatherGradSumsPatterns);
    applyFusion(module, populateFoldCastsPatterns);
    // The GEMM epilogues: each drops a value (the product before the bias
    // or the ReLU, the gradient before the activation's) that a run reading
    // every value (keep-values, --compare-precision, --collect-ranges)
    // needs.
    if (fuseGemmEpilogues) {
      applyFusion(module, populateFuseMatMulBiasPatterns);
      applyFusion(module, populateFuseGemmReluPatterns);
      applyFusion(module, populateFuseGemmActGradPatterns);
    }
  }
};

struct AmpRTPlanBuffersPass
    : public amp::impl::AmpRTPlanBuffersBase<AmpRTPlanBuffersPass> {
  using Base::Base;
  void runOnOperation() override {
    auto place = [&](PlannedProgram &p, int64_t &arena, int64_t *split) {
      if (!keepValues)
        p.rematerializeCasts();
      p.aliasReshapes();
      if (!keepValues)
        p.reuseInputs();
      p.planArena(arena, split, keepValues);
    };
    auto plan = [&](PlannedProgram &p, func::FuncOp f, int64_t &arena,
                    int64_t *split) {
      // The schedule is a greedy search, and the later rewrites and the
      // placement move its result: when its rule with the calls that come
      // along took any, the rule without them is planned through too, and
      // the smaller arena is kept.
      std::optional<PlannedProgram> alone;
      if (schedule) {
        alone = p;
        if (!p.scheduleForMemory(/*pullAlong=*/true))
          alone.reset();
      }
      place(p, arena, split);
      if (alone) {
        int64_t aloneArena = 0, aloneSplit[4] = {0, 0, 0, 0};
        alone->scheduleForMemory(/*pullAlong=*/false);
        place(*alone, aloneArena, aloneSplit);
        if (aloneArena <= arena) {
          p = std::move(*alone);
          arena = aloneArena;
          std::copy(aloneSplit, aloneSplit + 4, split);
        }
      }
      emitRemark(f.getLoc())
          << "graph @" << f.getSymName() << ": arena (peak activation "
          << "memory) " << arena << " bytes";
      return true;
    };
    SmallVector<func::FuncOp> funcs;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr(kUnplannedAttr))
        funcs.push_back(f);
    if (failed(rewriteUnplanned(getOperation(), funcs, plan)))
      signalPassFailure();
  }
};

/// The options of `convert-train-to-runtime` on the command line.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> dims{*this, "dims",
                           llvm::cl::desc("Symbolic dims bound to sizes: "
                                          "name=value,... (e.g. batch=64)"),
                           llvm::cl::init("")};
  Option<bool> schedule{*this, "schedule",
                        llvm::cl::desc("Reorder the calls where the step then "
                                       "holds less memory (off: the graph's "
                                       "node order)"),
                        llvm::cl::init(true)};
  Option<bool> keepValues{
      *this, "keep-values",
      llvm::cl::desc("Every temporary holding an ONNX value keeps its place "
                     "to the function's end: each value can be read after "
                     "the run"),
      llvm::cl::init(false)};
  Option<bool> overwriteAccumulators{
      *this, "overwrite-accumulators",
      llvm::cl::desc("The driver overwrites the gradient accumulators every "
                     "step (lazy_reset_grad always true): loss scaling's "
                     "gate may then follow the gradients' accumulation"),
      llvm::cl::init(false)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Attention in f16/bf16 and its gradient as fused "
                     "attention calls (scores and probabilities never "
                     "stored)"),
      llvm::cl::init(true)};
  Option<bool> fuseGemmEpilogues{
      *this, "fuse-gemm-epilogues",
      llvm::cl::desc("A MatMul with a 2-D weight and the Add of its bias as "
                     "one gemm, a product and the activation gradient "
                     "reading it as one gemm_act_grad"),
      llvm::cl::init(true)};
  Option<ChannelsLast> channelsLast{
      *this, "channels-last",
      llvm::cl::desc("Convolutions and the calls around them channels last "
                     "(NHWC), the layout changed at the edges"),
      llvm::cl::init(ChannelsLast::Off), channelsLastValues()};
  Option<bool> narrowInputs{
      *this, "narrow-inputs",
      llvm::cl::desc("The driver converts f32 batches to 16 bits as it "
                     "fills them: an f32 data input (a dim bound by dims) "
                     "that is only cast to one 16-bit type is taken in that "
                     "type (arg attribute amprt.narrowed_from)"),
      llvm::cl::init(false)};
};

} // namespace

void amp::buildConvertTrainToRuntimePipeline(
    OpPassManager &pm, const TrainToRuntimeOptions &options) {
  pm.addPass(createTrainBindDims({options.dims}));
  pm.addPass(createConvertTrainToAmpRT({options.dims, options.narrowInputs}));
  pm.addPass(
      createAmpRTFuse({options.overwriteAccumulators, options.fuseAttention,
                       options.fuseGemmEpilogues}));
  if (options.channelsLast != ChannelsLast::Off)
    pm.addPass(createAmpRTChannelsLast({options.channelsLast}));
  pm.addPass(createAmpRTPlanBuffers({options.schedule, options.keepValues}));
}

void amp::registerConvertTrainToRuntimePasses() {
  registerAMPConversionPasses();
  PassPipelineRegistration<PipelineOptions>(
      "convert-train-to-runtime",
      "Lower train graphs to amprt runtime calls on static memref buffers, "
      "planned by liveness in one arena (train-bind-dims, "
      "convert-train-to-amprt, amprt-fuse, amprt-channels-last, "
      "amprt-plan-buffers)",
      [](OpPassManager &pm, const PipelineOptions &o) {
        TrainToRuntimeOptions options;
        options.dims = o.dims;
        options.schedule = o.schedule;
        options.keepValues = o.keepValues;
        options.overwriteAccumulators = o.overwriteAccumulators;
        options.narrowInputs = o.narrowInputs;
        options.fuseAttention = o.fuseAttention;
        options.fuseGemmEpilogues = o.fuseGemmEpilogues;
        options.channelsLast = o.channelsLast;
        buildConvertTrainToRuntimePipeline(pm, options);
      });
}
