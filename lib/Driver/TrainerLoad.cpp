//===- TrainerLoad.cpp - the amp-run trainer's setup ----------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Trainer::load(), step by step: the models (an ONNX pair, imported, checked
// and through the AMP pipeline with --amp; or a lowered program), the
// symbolic dims the lowering binds (--dims, --batch), the parameters (from
// --weights, --resume or --init) and their types, the lowering, the runtime
// context and the two programs, and their inputs bound to state buffers. The
// state read from files is TrainerCheckpoint.cpp's, the data source
// TrainerData.cpp's.
//
//===----------------------------------------------------------------------===//

#include "TrainerInternals.h"
#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/LoweredForm.h"
#include "amp/Dialect/Train/Transforms/Pipeline.h"
#include "amp/Driver/GraphFacts.h"
#include "amp/Driver/Lowering.h"
#include "amp/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::driver::detail;
using namespace amp::exec;

//===----------------------------------------------------------------------===//
// load() and its steps
//===----------------------------------------------------------------------===//

namespace {

uint64_t fnv1a(StringRef s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

} // namespace

llvm::Error Trainer::load() {
  if (opts.accumulate < 1 || opts.steps % opts.accumulate != 0)
    return fail("accumulate must be at least 1 and divide the steps");
  if (auto e = joinRanks())
    return e;
  loadDialects(mctx);
  // Warnings (the AMP pass's operator versions that keep nodes f32, ...)
  // reach the user as amp-opt prints them; errors go on to the default
  // handler.
  ScopedDiagnosticHandler warnings(&mctx, [](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Warning)
      return failure();
    if (auto flc = dyn_cast<FileLineColLoc>(d.getLocation()))
      llvm::errs() << flc.getFilename().getValue() << ":" << flc.getLine()
                   << ":" << flc.getColumn();
    else
      llvm::errs() << d.getLocation();
    llvm::errs() << ": warning: " << d << "\n";
    return success();
  });

  // A lowered program (amp-run --dump-lowered): one file, two nested
  // modules @training and @optimizer. Otherwise an ONNX pair.
  bool isLowered = opts.optimizerModel.empty();
  SmallVector<InputInfo> inputs;
  train::GraphOp graph;
  if (isLowered) {
    if (auto e = readLoweredProgram(inputs))
      return e;
  } else {
    if (auto e = importModels())
      return e;
    graph = *trainMod->getOps<train::GraphOp>().begin();
    auto bound = bindDims(graph);
    if (!bound)
      return bound.takeError();
    loweringDims = std::move(*bound);
    collectGraphInputs(graph, inputs);
    // The inputs of a symbolic leading dim carry samples: each rank reads
    // its part of the global batch there.
    for (const InputInfo &in : inputs)
      if (!in.shape.empty() && in.shape[0] < 0)
        batchedInputs.insert(in.name);
  }

  // Parameters: training inputs named in the weights file (or in a resumed
  // checkpoint, or every trainable one with --init); their types give the
  // optimizer's sequences. Their bytes stay where they are (a mapped file,
  // the parsed model's raw data) until each is copied to its buffer, then
  // are let go.
  std::map<std::string, StoredTensor> weights;
  if (auto e = readWeights(weights))
    return e;
  if (!opts.outPath.empty())
    if (auto e = findOutputGraph())
      return e;
  std::map<std::string, StoredTensor> resumed;
  std::optional<CheckpointContents> ckpt;
  if (auto e = readResumeCheckpoint(ckpt, resumed))
    return e;
  SmallVector<Attribute> seqTypes;
  if (auto e = findParameters(inputs, weights, resumed, seqTypes))
    return e;
  if (opts.initSeed && opts.weights.empty() && resumed.empty())
    if (auto e = initParameters(inputs, weights))
      return e;
  // The passes run once the parameters' owners are known (the
  // data-parallel pass reduce-scatters to them).
  if (!isLowered)
    if (auto e = transformModels())
      return e;
  if (!isLowered)
    if (auto e = lowerModels(graph, weights, resumed, seqTypes))
      return e;
  if (!opts.loweredPath.empty() && writesOutputs())
    if (auto e = dumpLowered())
      return e;
  if (auto e = createPrograms())
    return e;
  if (auto e = bindTrainingInputs(weights))
    return e;
  if (auto e = bindOptimizerInputs())
    return e;
  if (ckpt) {
    if (auto e = restoreCheckpoint(*ckpt))
      return e;
  } else if (ortStep) {
    if (auto e = restoreOrtOptimizerState())
      return e;
  }
  if (!ckpt)
    restoreLossScaler();
  if (auto e = loadDataset())
    return e;
  return agreeAcrossRanks();
}

llvm::Error Trainer::readLoweredProgram(SmallVectorImpl<InputInfo> &inputs) {
  if (opts.amp)
    return fail("--amp applies to ONNX models; a lowered program already "
                "has its precision");
  if (opts.batch > 0 || !opts.dims.empty())
    return fail("--batch and --dims apply to ONNX models; a lowered "
                "program already has its shapes (lower the models again "
                "with --dump-lowered for other sizes)");
  llvm::SourceMgr sm;
  SourceMgrDiagnosticHandler handler(sm, &mctx);
  loweredTop =
      parseSourceFile<ModuleOp>(opts.trainingModel, sm, ParserConfig(&mctx));
  if (!loweredTop)
    return fail(opts.trainingModel + ": cannot parse the lowered program");
  for (auto m : loweredTop->getOps<ModuleOp>()) {
    if (m.getSymName() == "training")
      trainLowered = m;
    else if (m.getSymName() == "optimizer")
      optLowered = m;
  }
  if (!trainLowered || !optLowered)
    return fail(opts.trainingModel +
                ": a lowered program holds two modules, @training and "
                "@optimizer (as amp-run --dump-lowered writes them)");
  auto main = trainLowered.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return fail(opts.trainingModel + ": module @training has no func @main");
  if (main->hasAttr(kOverwriteAccumulatorsAttr) && opts.accumulate > 1)
    return fail(opts.trainingModel +
                ": this program was lowered for one step per optimizer "
                "step (its gradient buffers are overwritten every step); "
                "lower the models again with --accumulate " +
                Twine(opts.accumulate) + " --dump-lowered");
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto n = main.getArgAttrOfType<StringAttr>(i, kNameAttr);
    auto t = dyn_cast<MemRefType>(main.getArgumentTypes()[i]);
    if (!n || !t)
      return fail(opts.trainingModel + ": argument " + Twine(i) +
                  " of @training::@main has no amprt.name or no memref "
                  "type");
    inputs.push_back(
        {n.str(), SmallVector<int64_t>(t.getShape()), t.getElementType()});
  }
  return llvm::Error::success();
}

llvm::Error Trainer::importModels() {
  trainMod = importOnnxFile(opts.trainingModel, &mctx);
  if (!trainMod)
    return fail(opts.trainingModel + ": import failed");
  optMod = importOnnxFile(opts.optimizerModel, &mctx);
  if (!optMod)
    return fail(opts.optimizerModel + ": import failed");
  // The pair in its order: an optimizer model updates the parameters
  // through an optimizer node, a training model has none. (Given the eval
  // model instead, amp-run would run it as the "optimizer" and never
  // update a weight.)
  if (containsOptimizer(*trainMod) && !containsOptimizer(*optMod))
    return fail(opts.trainingModel + " holds the optimizer and " +
                opts.optimizerModel +
                " does not: give the training "
                "model first, then the optimizer model");
  if (!containsOptimizer(*optMod))
    return fail(opts.optimizerModel + ": no optimizer node (" +
                llvm::join(std::begin(kLoweredOptimizerOps),
                           std::end(kLoweredOptimizerOps), ", ") +
                "): give the optimizer model generate_artifacts wrote (not "
                "the eval or forward model)");
  if (!opts.ampRangesPath.empty() && !opts.amp)
    return fail("--amp-ranges is a policy of the AMP pass: give --amp too");
  return llvm::Error::success();
}

llvm::Error Trainer::transformModels() {
  // --shard-optimizer: the ranks compare the training graph as imported;
  // from here on each rank's reduces its own parameters' gradients.
  if (sharded())
    trainGraphPrint = graphFingerprint(*trainMod);
  // The gradients reduced across the ranks: all-reduced, or (sharded)
  // reduce-scattered to the parameters' owners.
  std::optional<train::TrainDataParallelOptions> dp;
  if (worldSize > 1) {
    dp.emplace();
    dp->bucketMB = opts.bucketMB;
    dp->summary = false;
    if (sharded()) {
      for (const std::string &p : trainable)
        dp->owners.push_back(p + "=" + std::to_string(owner[p]));
      dp->rank = rank;
      dp->ranks = worldSize;
    }
  }
  // Data-parallel fp32: the gradients reduced across the ranks, no AMP.
  if (!opts.amp && dp) {
    train::AMPPipelineOptions po;
    po.autoMixedPrecision = false;
    po.dataParallel = dp;
    if (failed(train::runAMPPipeline(*trainMod, po)))
      return fail("the data-parallel pass failed");
  }
  if (opts.amp) {
    std::optional<train::AMPMode> mode = train::parseAMPMode(opts.ampMode);
    if (!mode)
      return fail("unknown AMP mode '" + opts.ampMode +
                  "' (expected fp16 or bf16)");
    train::AMPPipelineOptions po;
    po.amp.mode = train::getAMPModeName(*mode).str();
    po.amp.ranges = opts.ampRangesPath;
    po.amp.keepFp32.assign(opts.ampKeepFp32.begin(), opts.ampKeepFp32.end());
    po.lossScaling = *mode == train::AMPMode::FP16;
    // Before loss scaling: its check sees the reduced gradients, so every
    // rank skips a step any rank overflowed in.
    po.dataParallel = dp;
    if (opts.staticLossScale != 0) {
      if (!po.lossScaling)
        return fail("--loss-scale is a setting of fp16 AMP (bf16 has fp32's "
                    "range and trains without loss scaling)");
      po.lossScalingOptions.mode = "static";
      po.lossScalingOptions.initScale = opts.staticLossScale;
    }
    // The optimizer model's gradients come in reduced: no pass reduces
    // them again.
    train::AMPPipelineOptions optPo = po;
    optPo.dataParallel.reset();
    if (failed(train::runAMPPipeline(*trainMod, po)) ||
        failed(train::runAMPPipeline(*optMod, optPo)))
      return fail("the AMP + loss-scaling pipeline failed");
  }
  return llvm::Error::success();
}

llvm::Expected<std::string> Trainer::bindDims(train::GraphOp graph) {
  // --dims names symbolic dims of the training graph's inputs: a name
  // that none has (a typo) or a value that --batch contradicts is an
  // error, not ignored.
  llvm::StringSet<> symbols;
  std::string symbolList;
  auto optGraph = *optMod->getOps<train::GraphOp>().begin();
  for (train::GraphOp g : {graph, optGraph})
    for (unsigned i = 0; i < g.getNumArguments(); ++i)
      if (auto d = g.getArgAttrOfType<ArrayAttr>(i, "train.dims"))
        for (Attribute a : d)
          if (auto s = dyn_cast<StringAttr>(a))
            if (!s.getValue().empty() && symbols.insert(s.getValue()).second)
              symbolList += (symbolList.empty() ? "" : ", ") + s.str();
  SmallVector<StringRef> entries;
  StringRef(opts.dims).split(entries, ',', -1, /*KeepEmpty=*/false);
  llvm::StringMap<int64_t> bound;
  for (StringRef e : entries) {
    auto [name, value] = e.split('=');
    name = name.trim();
    int64_t v;
    if (value.trim().getAsInteger(10, v) || v < 0)
      return fail("--dims " + e + ": a dim is name=<size>");
    if (!symbols.contains(name))
      return fail(
          "--dims " + e +
          ": no input of the two models has a "
          "symbolic dim '" +
          name + "' (" +
          (symbolList.empty() ? "they have none" : "theirs: " + symbolList) +
          ")");
    auto [it, fresh] = bound.try_emplace(name, v);
    if (!fresh && it->second != v)
      return fail("--dims binds '" + name + "' twice, to " + Twine(it->second) +
                  " and " + Twine(v));
  }
  // Bind the leading symbolic dim of the graph inputs to --batch.
  std::string dims = opts.dims;
  if (opts.batch > 0) {
    llvm::StringMap<bool> seen;
    for (unsigned i = 0; i < graph.getNumArguments(); ++i)
      if (auto d = graph.getArgAttrOfType<ArrayAttr>(i, "train.dims"))
        if (!d.empty())
          if (auto s = dyn_cast<StringAttr>(d[0]))
            if (!s.getValue().empty() && !seen[s.getValue()]) {
              seen[s.getValue()] = true;
              auto given = bound.find(s.getValue());
              if (given != bound.end()) {
                if (given->second != opts.batch)
                  return fail("--batch " + Twine(opts.batch) + " and --dims " +
                              s.getValue() + "=" + Twine(given->second) +
                              " disagree");
                continue;
              }
              dims += (dims.empty() ? "" : ",") + s.str() + "=" +
                      std::to_string(opts.batch);
            }
    if (seen.empty() && opts.requireBatchDim)
      return fail("no input of the training graph has a symbolic leading "
                  "dim for the batch to bind: its batch is fixed");
  }
  return dims;
}

void Trainer::collectGraphInputs(train::GraphOp graph,
                                 SmallVectorImpl<InputInfo> &inputs) {
  for (unsigned i = 0; i < graph.getNumArguments(); ++i) {
    auto n = graph.getArgAttrOfType<StringAttr>(i, "train.name");
    auto t = dyn_cast<RankedTensorType>(graph.getArgumentTypes()[i]);
    InputInfo info{n ? n.str() : "", {}, nullptr};
    if (t) {
      info.shape.assign(t.getShape().begin(), t.getShape().end());
      info.elem = t.getElementType();
    }
    inputs.push_back(std::move(info));
  }
}

llvm::Error
Trainer::findParameters(ArrayRef<InputInfo> inputs,
                        const std::map<std::string, StoredTensor> &weights,
                        const std::map<std::string, StoredTensor> &resumed,
                        SmallVectorImpl<Attribute> &seqTypes) {
  llvm::StringSet<> inputNames;
  for (const InputInfo &in : inputs)
    inputNames.insert(in.name);
  std::vector<std::pair<std::string, uint64_t>> sizes;
  llvm::StringMap<Attribute> types;
  for (const InputInfo &in : inputs) {
    if (in.name.empty())
      continue;
    bool hasGrad = inputNames.contains(in.name + "_grad.accumulation.buffer");
    bool initialized = opts.initSeed && opts.weights.empty() && hasGrad;
    if (!weights.count(in.name) && !resumed.count("param:" + in.name) &&
        !initialized) {
      // An input with a gradient accumulator is a trainable parameter: fed
      // batches instead of values, it would train on noise.
      if (hasGrad && !opts.weights.empty())
        return fail("trainable parameter '" + in.name +
                    "' (it has a gradient accumulator) is not in " +
                    opts.weights);
      continue;
    }
    params.push_back(in.name);
    if (!in.elem || llvm::any_of(in.shape, [](int64_t d) { return d < 0; }))
      return fail("parameter '" + in.name + "' has no static shape");
    if (!hasGrad)
      continue;
    trainable.push_back(in.name);
    sizes.push_back(
        {in.name,
         uint64_t(RankedTensorType::get(in.shape, in.elem).getNumElements()) *
             ((in.elem.getIntOrFloatBitWidth() + 7) / 8)});
    types[in.name] = TypeAttr::get(RankedTensorType::get(in.shape, in.elem));
  }
  // The optimizer program updates this rank's parameters: every trainable
  // one, or (--shard-optimizer) those it owns.
  if (auto e = shardParameters(sizes))
    return e;
  for (const std::string &p : optimized)
    seqTypes.push_back(types[p]);
  if (params.empty() && !resumed.empty())
    return fail(opts.resumePath + ": none of its parameters is an input of " +
                opts.trainingModel +
                " (a checkpoint of another model?); nothing was loaded");
  if (params.empty())
    return fail("no parameters: give --weights <model.onnx> whose "
                "initializers are named like the training graph's inputs "
                "(e.g. the forward model) or onnxruntime-training's "
                "checkpoint, --init <seed>, or --resume <checkpoint>");
  return llvm::Error::success();
}

llvm::Error
Trainer::initParameters(ArrayRef<InputInfo> inputs,
                        std::map<std::string, StoredTensor> &weights) {
  // LeCun-uniform weights, zero biases: a start for graphs shipped
  // without their checkpoint. fan_in = product of the dims after the
  // first (Gemm/Conv weights are [out, in, ...]); one splitmix stream per
  // parameter name so the order of inputs does not matter.
  for (const InputInfo &in : inputs) {
    if (!llvm::is_contained(params, in.name))
      continue;
    if (!in.elem.isF32())
      return fail("--init: parameter '" + in.name + "' is not f32");
    HostTensor h;
    h.shape.assign(in.shape.begin(), in.shape.end());
    h.data.resize(h.numel() * 4);
    if (in.shape.size() >= 2) {
      int64_t fanIn = h.numel() / std::max<int64_t>(h.shape[0], 1);
      double bound = 1.0 / std::sqrt(double(std::max<int64_t>(fanIn, 1)));
      uint64_t s = *opts.initSeed ^ fnv1a(in.name);
      auto *f = reinterpret_cast<float *>(h.data.data());
      for (int64_t k = 0; k < h.numel(); ++k) {
        double u = double(splitmix(s) >> 11) * 0x1.0p-53;
        f[k] = float((2 * u - 1) * bound);
      }
    }
    weights[in.name] = StoredTensor{in.name, h.dtype, std::move(h.shape),
                                    TensorBytes::owned(std::move(h.data))};
  }
  return llvm::Error::success();
}

llvm::Error
Trainer::lowerModels(train::GraphOp graph,
                     const std::map<std::string, StoredTensor> &weights,
                     const std::map<std::string, StoredTensor> &resumed,
                     ArrayRef<Attribute> seqTypes) {
  // The small integer parameters, read into host memory for folding.
  std::map<std::string, HostTensor> integers;
  llvm::Error readError = llvm::Error::success();
  inlineFrozenIntegers(graph, [&](StringRef n) -> const HostTensor * {
    const StoredTensor *t = nullptr;
    if (auto r = resumed.find("param:" + n.str()); r != resumed.end())
      t = &r->second;
    else if (auto w = weights.find(n.str()); w != weights.end())
      t = &w->second;
    if (!t || (t->dtype != AMPRT_I64 && t->dtype != AMPRT_I32) ||
        t->bytes.size() > 4096 * 8 || readError)
      return nullptr;
    auto bytes = t->bytes.read();
    if (!bytes) {
      readError = bytes.takeError();
      return nullptr;
    }
    HostTensor &h = integers[n.str()];
    h = HostTensor{t->dtype, t->shape, std::move(*bytes)};
    return &h;
  });
  if (readError)
    return readError;
  auto optGraph = *optMod->getOps<train::GraphOp>().begin();
  for (unsigned i = 0; i < optGraph.getNumArguments(); ++i)
    if (isa<train::SeqType>(optGraph.getArgumentTypes()[i]))
      optGraph.setArgAttr(i, kSeqTypesAttr, ArrayAttr::get(&mctx, seqTypes));
  for (ModuleOp m : {*trainMod, *optMod})
    m.walk([&](train::OnnxNodeOpInterface node) {
      if (auto name = node->getAttrOfType<StringAttr>("train.name"))
        nodeOpTypes[name.getValue()] =
            (node.getOnnxDomain().empty() || node.getOnnxDomain() == "ai.onnx"
                 ? ""
                 : node.getOnnxDomain().str() + ":") +
            node.getOnnxOpType().str();
    });
  if (auto e = lower(*trainMod, opts.trainingModel))
    return e;
  if (auto e = lower(*optMod, opts.optimizerModel))
    return e;
  trainLowered = *trainMod;
  optLowered = *optMod;
  return llvm::Error::success();
}

llvm::Error Trainer::lower(ModuleOp module, StringRef what) {
  // Without --accumulate every step overwrites the gradient buffers
  // (lazy_reset_grad true, a version-1 accumulate signal false): loss
  // scaling's gate may then follow the accumulation (docs/Lowering.md).
  // The trainer fills every batch itself: f32 data that the graph only casts
  // to 16 bits is converted as it is copied (narrow-inputs).
  TrainToRuntimeOptions o;
  o.dims = loweringDims;
  o.overwriteAccumulators = opts.accumulate == 1;
  o.narrowInputs = true;
  o.keepValues = opts.keepValues;
  o.fuseAttention = opts.fuseAttention;
  // --collect-ranges measures every value the AMP lowering may keep: the
  // products too.
  o.fuseGemmEpilogues =
      opts.fuseGemmEpilogues && opts.collectRangesPath.empty();
  // Channels last is a device's gain: on the CPU a channels-last window
  // runs through channels-first copies (the same bits, more time).
  // --collect-ranges reads every value by its name as the graph has it.
  switch (opts.collectRangesPath.empty() ? opts.channelsLast
                                         : ChannelsLastChoice::Off) {
  case ChannelsLastChoice::Auto:
    o.channelsLast =
        opts.device == "cpu" ? ChannelsLast::Off : ChannelsLast::LowPrecision;
    break;
  case ChannelsLastChoice::Off:
    o.channelsLast = ChannelsLast::Off;
    break;
  case ChannelsLastChoice::LowPrecision:
    o.channelsLast = ChannelsLast::LowPrecision;
    break;
  case ChannelsLastChoice::All:
    o.channelsLast = ChannelsLast::All;
    break;
  }
  return lowerToRuntime(module, o, what);
}

llvm::Error Trainer::dumpLowered() {
  // One file that amp-run runs again: module { module @training {...}
  // module @optimizer {...} }.
  OpBuilder b(&mctx);
  auto top = ModuleOp::create(b.getUnknownLoc());
  for (auto [name, m] :
       {std::pair<StringRef, ModuleOp>{"training", trainLowered},
        {"optimizer", optLowered}}) {
    auto inner = cast<ModuleOp>(m->clone());
    inner.setSymName(name);
    top.push_back(inner);
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(opts.loweredPath, ec);
  if (ec) {
    top->erase();
    return fail(opts.loweredPath + ": " + ec.message());
  }
  top->print(os);
  top->erase();
  return llvm::Error::success();
}

llvm::Error Trainer::createPrograms() {
  if (opts.device != "cpu" && opts.device != "cuda")
    return fail("--device must be cpu or cuda, not '" + opts.device + "'");
  // The runtime says why a backend is missing (not built, or no device).
  if (amprt_context_create(opts.device.c_str(), &ctx) != AMPRT_OK)
    return fail("--device " + opts.device + ": " + amprt_last_error(nullptr));
  if (opts.memoryLimit &&
      amprt_set_memory_limit(ctx, opts.memoryLimit) != AMPRT_OK)
    return fail(Twine("memory limit: ") + amprt_last_error(ctx));
  // The training program's collectives reduce over the ranks.
  if (comm && amprt_context_set_comm(ctx, comm) != AMPRT_OK)
    return fail(Twine("data parallel: ") + amprt_last_error(ctx));

  auto tp = Program::create(trainLowered, "main", ctx);
  if (!tp)
    return tp.takeError();
  trainProg = std::move(*tp);
  auto op = Program::create(optLowered, "main", ctx);
  if (!op)
    return op.takeError();
  optProg = std::move(*op);
  return llvm::Error::success();
}

llvm::Error
Trainer::bindTrainingInputs(std::map<std::string, StoredTensor> &weights) {
  // Training inputs: params, accumulation buffers, flags, scaler state,
  // data.
  auto trainMain = trainLowered.lookupSymbol<func::FuncOp>("main");
  for (auto [i, p] : llvm::enumerate(trainProg->inputs())) {
    auto made = alloc(p.name, p);
    if (!made)
      return made.takeError();
    DeviceBuffer &b = **made;
    trainProg->bind(i, b.data);
    bool isParam = llvm::is_contained(params, p.name);
    if (isParam) {
      auto w = weights.find(p.name);
      if (w != weights.end()) {
        if (w->second.dtype != p.dtype || w->second.bytes.size() != b.bytes)
          return fail("weights: '" + p.name +
                      "' does not match the graph input's type");
        if (auto e = toDevice(w->second.bytes, b.data))
          return e;
        // On the device now: its host bytes (or mapping) go.
        weights.erase(w);
      }
    } else if (StringRef(p.name).ends_with(".accumulation.buffer") ||
               StringRef(p.name).starts_with(train::kLossScalingNamePrefix)) {
      if (p.name == kLossScaleName) {
        float s = float(kInitialLossScale);
        amprt_memcpy(ctx, b.data, &s, 4, AMPRT_HOST_TO_DEVICE);
      }
    } else if (trainMain.getArgAttr(i, kAccumulateSignalAttr)) {
      // An InPlaceAccumulator v1 signal (ORT's 2022 graphs name it
      // lazy_reset_grad too, but read it as "accumulate"): fed per step.
      accumulateSignals.push_back(&b);
    } else if (p.name == "lazy_reset_grad") {
      resetSignals.push_back(&b);
    } else {
      dataInputs.push_back(p.name);
    }
  }
  return llvm::Error::success();
}

llvm::Error Trainer::bindOptimizerInputs() {
  // Optimizer inputs.
  for (auto [i, p] : llvm::enumerate(optProg->inputs())) {
    StringRef name = p.name;
    std::string key = p.name;
    if (name.consume_back("]")) {
      auto [seq, idx] = name.split('[');
      unsigned k;
      if (idx.getAsInteger(10, k) || k >= optimized.size())
        return fail("optimizer input '" + p.name + "' is not understood");
      if (seq == "params")
        key = optimized[k];
      else if (seq == "gradients")
        key = optimized[k] + "_grad.accumulation.buffer";
      else
        key = seq.str() + ":" + optimized[k];
    } else {
      // The per-tensor layout of ORTTrainer's AdamOptimizer graphs:
      // <p>_grad.accumulation.out (the accumulated gradient, which the
      // training graph leaves in its buffer), <p>.exp_avg, <p>.exp_avg_sq
      // (the moments, kept as the sequences' would be) and <p>.should_update.
      auto perParam = [&](StringRef suffix) -> std::optional<std::string> {
        StringRef base = name;
        if (!base.consume_back(suffix) || !llvm::is_contained(trainable, base))
          return std::nullopt;
        return base.str();
      };
      if (auto q = perParam("_grad.accumulation.out"))
        key = *q + "_grad.accumulation.buffer";
      else if (auto q = perParam(".exp_avg"))
        key = "first_order_moments:" + *q;
      else if (auto q = perParam(".exp_avg_sq"))
        key = "second_order_moments:" + *q;
      else if (perParam(".should_update"))
        updateIns.push_back(p.name);
      if (sharded() && key != p.name)
        return fail("--shard-optimizer shards an optimizer over sequences "
                    "(onnxruntime-training's AdamW, SGD); '" +
                    p.name + "' is a per-parameter input of another layout");
    }
    if (!state.count(key) &&
        StringRef(key).ends_with("_grad.accumulation.buffer"))
      return fail("optimizer gradient '" + key +
                  "' is not an input of the training graph");
    auto made = alloc(key, p);
    if (!made)
      return made.takeError();
    DeviceBuffer &b = **made;
    if (b.bytes != p.bytes())
      return fail("optimizer input '" + p.name + "' does not match '" + key +
                  "'");
    optProg->bind(i, b.data);
  }
  return llvm::Error::success();
}
