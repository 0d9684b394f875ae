//===- Trainer.cpp - the amp-run training loop
//-----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX Runtime training-API semantics (orttraining/training_api): the
// training graph's gradient accumulation buffers are state, reset lazily
// (lazy_reset_grad = true on the first step of each group of --accumulate
// steps, 1 by default; a version-1 InPlaceAccumulator's "accumulate" signal
// the opposite); the optimizer runs on each group's last step, gets
// `step + 1`, and the step counter grows only when the optimizer reports an
// update; learning_rate is an input.
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/Trainer.h"
#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/LossScalingState.h"
#include "amp/Dialect/Train/Transforms/Pipeline.h"
#include "amp/Driver/Checkpoint.h"
#include "amp/Driver/GraphFacts.h"
#include "amp/Driver/HostTensor.h"
#include "amp/Driver/Lowering.h"
#include "amp/Driver/ModelWriter.h"
#include "amp/Driver/OrtCheckpoint.h"
#include "amp/Execution/Program.h"
#include "amp/Runtime/Kernels.h"
#include "amp/Target/ONNX/ExternalData.h"
#include "amp/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::exec;

namespace {

llvm::Error fail(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(StringRef s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// A device buffer owned by the trainer.
struct DeviceBuffer {
  amprt_context *ctx = nullptr;
  void *data = nullptr;
  size_t bytes = 0;
  int32_t dtype = AMPRT_F32;
  /// A data input the lowering narrowed: the dtype of its samples (f32),
  /// rounded into `dtype` as a batch is filled; else `dtype`.
  int32_t fedAs = AMPRT_F32;
  std::vector<int64_t> shape;
  ~DeviceBuffer() {
    if (data)
      amprt_free(ctx, data);
  }
};

class Trainer {
public:
  Trainer(const TrainOptions &o, llvm::raw_ostream &status)
      : opts(o), status(status) {}
  ~Trainer() {
    state.clear();
    trainProg.reset();
    optProg.reset();
    if (ctx)
      amprt_context_destroy(ctx);
    if (hostCtx)
      amprt_context_destroy(hostCtx);
  }
  llvm::Error run();

private:
  const TrainOptions &opts;
  llvm::raw_ostream &status;
  MLIRContext mctx;
  amprt_context *ctx = nullptr;
  /// The CPU backend, for converting batches of narrowed data inputs on the
  /// host (created when one is first filled from files).
  amprt_context *hostCtx = nullptr;
  std::unique_ptr<Program> trainProg, optProg;
  OwningOpRef<ModuleOp> trainMod, optMod, loweredTop;
  /// The lowered training and optimizer modules (each with func @main).
  ModuleOp trainLowered, optLowered;
  /// Whether --weights names an onnxruntime-training checkpoint (rather
  /// than an ONNX model): its first bytes say so.
  /// The optimizer state of an onnxruntime-training checkpoint given as
  /// --weights: its step count and moments (loaded once the optimizer's
  /// inputs are bound).
  std::optional<int64_t> ortStep;
  std::vector<OrtCheckpointMoment> ortMoments;
  /// Its property bag: the loss-scaler state amp-run saved there.
  OrtCheckpointProperties ortProperties;
  /// Set by load(), before anything reads --weights.
  bool weightsAreOrtCheckpoint = false;
  /// "fp32", "AMP fp16" or "AMP bf16": the 16-bit float type the lowered
  /// training step computes in, if any (for the status line).
  std::string precisionName() {
    bool f16 = false, bf16 = false;
    trainLowered.walk([&](Operation *op) {
      for (Type t : op->getResultTypes())
        if (auto m = dyn_cast<MemRefType>(t)) {
          f16 |= m.getElementType().isF16();
          bf16 |= m.getElementType().isBF16();
        }
    });
    return bf16 ? "AMP bf16" : f16 ? "AMP fp16" : "fp32";
  }
  // Persistent state by name, and per-step data inputs.
  llvm::StringMap<std::unique_ptr<DeviceBuffer>> state;
  std::vector<std::string> params; // training graph order
  /// Per-parameter update signals of the optimizer (AdamOptimizer's
  /// <p>.should_update): fed the step's all-finite flag.
  std::vector<std::string> updateIns;
  /// The training graph's gradient-buffer signals, fed per step: V2's
  /// lazy_reset_grad (overwrite) is true on the first step of each
  /// accumulation group, v1's accumulate signal the opposite.
  std::vector<DeviceBuffer *> resetSignals, accumulateSignals;
  /// The parameters with a gradient (`<p>_grad.accumulation.buffer` is a
  /// training input): the optimizer's sequences, in this order. The others
  /// (BatchNorm running statistics) are state the training graph updates.
  std::vector<std::string> trainable;
  std::vector<std::string> dataInputs; // fed from the data source
  std::map<std::string, HostTensor> dataset;
  int64_t datasetRows = 0;
  uint64_t optimizerStep = 0, skipped = 0, stepsDone = 0;

  /// The state buffer `name` when it holds one value of `dtype`.
  DeviceBuffer *scalarState(StringRef name, int32_t dtype) {
    auto it = state.find(name);
    bool one = it != state.end() && it->second->dtype == dtype &&
               it->second->bytes == amprt_dtype_size(dtype);
    return one ? it->second.get() : nullptr;
  }
  DeviceBuffer &alloc(StringRef name, const Port &p) {
    auto &slot = state[name];
    if (!slot) {
      slot = std::make_unique<DeviceBuffer>();
      slot->ctx = ctx;
      slot->bytes = p.bytes();
      slot->dtype = p.dtype;
      slot->fedAs = p.fedAs;
      slot->shape = p.shape;
      amprt_malloc(ctx, slot->bytes, &slot->data);
      amprt_memset(ctx, slot->data, 0, slot->bytes);
    }
    return *slot;
  }
  llvm::Error load();
  llvm::Error lower(ModuleOp module, StringRef what);
  /// Copies `bytes` to the device buffer at `dst`, a piece at a time.
  llvm::Error toDevice(const TensorBytes &bytes, void *dst) {
    return bytes.forEachPiece([&](uint64_t at, StringRef piece) -> llvm::Error {
      if (amprt_memcpy(ctx, static_cast<char *>(dst) + at, piece.data(),
                       piece.size(), AMPRT_HOST_TO_DEVICE) != AMPRT_OK)
        return fail(Twine("device memory: ") + amprt_last_error(ctx));
      return llvm::Error::success();
    });
  }
  /// The bytes of a state buffer, for a file: the buffer itself on the CPU
  /// backend (host memory), else read through a staging buffer.
  TensorBytes deviceBytes(const DeviceBuffer &b) {
    if (StringRef(amprt_backend_name(ctx)) == "cpu")
      return TensorBytes::inHost(b.data, b.bytes);
    return TensorBytes::filledBy(
        b.bytes,
        [this, &b](uint64_t at,
                   llvm::MutableArrayRef<char> piece) -> llvm::Error {
          if (amprt_memcpy(ctx, piece.data(),
                           static_cast<const char *>(b.data) + at, piece.size(),
                           AMPRT_DEVICE_TO_HOST) != AMPRT_OK)
            return fail(Twine("device memory: ") + amprt_last_error(ctx));
          return llvm::Error::success();
        });
  }
  llvm::Error fillBatch(int64_t step);
  /// The state after `steps` steps (amp-run's checkpoint format).
  llvm::Error saveCheckpoint(StringRef path, uint64_t steps);
  llvm::Error loadCheckpoint(StringRef path);
  struct OrtEntry {
    std::string key;   ///< in `state`
    std::string name;  ///< in the checkpoint
    std::string param; ///< for optimizer state: its parameter
    bool trainable;
  };
  struct OrtLayout {
    std::vector<OrtEntry> entries;
    bool externalData; ///< the tensors go to `<checkpoint>.data`
  };
  llvm::Expected<OrtLayout> ortCheckpointLayout();
  llvm::Error saveOrtCheckpoint(StringRef path);
  /// The ONNX model -o writes the trained parameters into: --weights when
  /// it is one, else the artifacts' eval model; an error (before training)
  /// when there is none.
  llvm::Error findOutputGraph();
  std::string outputGraph;
  llvm::Error writeWeights(StringRef path);
  int64_t numClasses(StringRef input);
  /// numClasses of each integer data input, found once.
  llvm::StringMap<int64_t> classCounts;
};

/// The loss scaler's state (graph inputs of the loss-scaling pass), kept in
/// an onnxruntime-training checkpoint's property bag under the same names.
using train::kGrowthTrackerName;
using train::kLossScaleName;

llvm::Error Trainer::lower(ModuleOp module, StringRef what) {
  // Without --accumulate every step overwrites the gradient buffers
  // (lazy_reset_grad true, a version-1 accumulate signal false): loss
  // scaling's gate may then follow the accumulation (docs/Lowering.md).
  // The trainer fills every batch itself: f32 data that the graph only casts
  // to 16 bits is converted as it is copied (narrow-inputs).
  return lowerToRuntime(module, opts.dims, what, opts.accumulate == 1,
                        /*narrowInputs=*/true);
}

/// One training-graph input: its ONNX name, static shape (dynamic dims
/// are negative) and element type.
struct InputInfo {
  std::string name;
  SmallVector<int64_t> shape;
  Type elem;
};

llvm::Error Trainer::load() {
  if (opts.accumulate < 1 || opts.steps % opts.accumulate != 0)
    return fail("accumulate must be at least 1 and divide the steps");
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
  } else {
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
    if (opts.amp) {
      std::optional<train::AMPMode> mode = train::parseAMPMode(opts.ampMode);
      if (!mode)
        return fail("unknown AMP mode '" + opts.ampMode +
                    "' (expected fp16 or bf16)");
      train::AMPPipelineOptions po;
      po.amp.mode = train::getAMPModeName(*mode).str();
      po.lossScaling = *mode == train::AMPMode::FP16;
      if (failed(train::runAMPPipeline(*trainMod, po)) ||
          failed(train::runAMPPipeline(*optMod, po)))
        return fail("the AMP + loss-scaling pipeline failed");
    }
    graph = *trainMod->getOps<train::GraphOp>().begin();
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
        return fail("--dims binds '" + name + "' twice, to " +
                    Twine(it->second) + " and " + Twine(v));
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
                    return fail("--batch " + Twine(opts.batch) +
                                " and --dims " + s.getValue() + "=" +
                                Twine(given->second) + " disagree");
                  continue;
                }
                dims += (dims.empty() ? "" : ",") + s.str() + "=" +
                        std::to_string(opts.batch);
              }
    }
    const_cast<TrainOptions &>(opts).dims = dims;
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

  // Parameters: training inputs named in the weights file (or in a resumed
  // checkpoint, or every trainable one with --init); their types give the
  // optimizer's sequences. Their bytes stay where they are (a mapped file,
  // the parsed model's raw data) until each is copied to its buffer, then
  // are let go.
  std::map<std::string, StoredTensor> weights;
  weightsAreOrtCheckpoint =
      !opts.weights.empty() && isOrtCheckpointFile(opts.weights);
  if (!opts.weights.empty() && weightsAreOrtCheckpoint) {
    // onnxruntime-training's `checkpoint`: its module state.
    auto c = readOrtCheckpoint(opts.weights);
    if (!c)
      return c.takeError();
    ortStep = c->optimizerStep;
    ortMoments = std::move(c->moments);
    ortProperties = std::move(c->properties);
    // ORT's Optimizer, too, takes its learning rate from the user, not
    // from the checkpoint: say so when they differ.
    if (ortStep && !opts.lrGiven && c->initialLearningRate > 0 &&
        float(opts.lr) != c->initialLearningRate)
      status << "amp-run: note: " << opts.weights
             << " was saved with learning rate "
             << llvm::format("%g", double(c->initialLearningRate))
             << "; this run uses " << llvm::format("%g", opts.lr)
             << " (--lr)\n";
    for (OrtCheckpointTensor &t : c->params) {
      StoredTensor w{t.name, dtypeOfOnnx(t.onnxType), std::move(t.dims),
                     std::move(t.data)};
      if (w.dtype < 0)
        return fail(opts.weights + ": parameter '" + t.name +
                    "': unsupported data type");
      weights[t.name] = std::move(w);
    }
  } else if (!opts.weights.empty()) {
    onnx::ModelProto model;
    std::ifstream in(opts.weights, std::ios::binary);
    if (!in || !model.ParseFromIstream(&in))
      return fail(opts.weights + ": cannot read the ONNX model");
    for (auto &t : *model.mutable_graph()->mutable_initializer()) {
      auto w = takeTensorProto(t, llvm::sys::path::parent_path(opts.weights));
      if (!w)
        return w.takeError();
      weights[t.name()] = std::move(*w);
    }
  }
  if (!opts.outPath.empty())
    if (auto e = findOutputGraph())
      return e;
  std::map<std::string, StoredTensor> resumed;
  std::optional<CheckpointContents> ckpt;
  if (!opts.resumePath.empty()) {
    auto c = readCheckpoint(opts.resumePath);
    if (!c)
      return c.takeError();
    ckpt = std::move(*c);
    for (const StoredTensor &t : ckpt->tensors)
      resumed[t.name] = t;
  }
  SmallVector<Attribute> seqTypes;
  llvm::StringSet<> inputNames;
  for (const InputInfo &in : inputs)
    inputNames.insert(in.name);
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
    seqTypes.push_back(TypeAttr::get(RankedTensorType::get(in.shape, in.elem)));
  }
  if (params.empty() && !resumed.empty())
    return fail(opts.resumePath + ": none of its parameters is an input of " +
                opts.trainingModel +
                " (a checkpoint of another model?); nothing was loaded");
  if (params.empty())
    return fail("no parameters: give --weights <model.onnx> whose "
                "initializers are named like the training graph's inputs "
                "(e.g. the forward model) or onnxruntime-training's "
                "checkpoint, --init <seed>, or --resume <checkpoint>");
  if (opts.initSeed && opts.weights.empty() && resumed.empty()) {
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
  }
  if (!isLowered) {
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
    if (auto e = lower(*trainMod, opts.trainingModel))
      return e;
    if (auto e = lower(*optMod, opts.optimizerModel))
      return e;
    trainLowered = *trainMod;
    optLowered = *optMod;
  }
  if (!opts.loweredPath.empty()) {
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
  }

  if (opts.device != "cpu" && opts.device != "cuda")
    return fail("--device must be cpu or cuda, not '" + opts.device + "'");
  // The runtime says why a backend is missing (not built, or no device).
  if (amprt_context_create(opts.device.c_str(), &ctx) != AMPRT_OK)
    return fail("--device " + opts.device + ": " + amprt_last_error(nullptr));

  auto tp = Program::create(trainLowered, "main", ctx);
  if (!tp)
    return tp.takeError();
  trainProg = std::move(*tp);
  auto op = Program::create(optLowered, "main", ctx);
  if (!op)
    return op.takeError();
  optProg = std::move(*op);

  // Training inputs: params, accumulation buffers, flags, scaler state,
  // data.
  auto trainMain = trainLowered.lookupSymbol<func::FuncOp>("main");
  for (auto [i, p] : llvm::enumerate(trainProg->inputs())) {
    DeviceBuffer &b = alloc(p.name, p);
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
        float s = 65536.0f;
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
  // Optimizer inputs.
  for (auto [i, p] : llvm::enumerate(optProg->inputs())) {
    StringRef name = p.name;
    std::string key = p.name;
    if (name.consume_back("]")) {
      auto [seq, idx] = name.split('[');
      unsigned k;
      if (idx.getAsInteger(10, k) || k >= trainable.size())
        return fail("optimizer input '" + p.name + "' is not understood");
      if (seq == "params")
        key = trainable[k];
      else if (seq == "gradients")
        key = trainable[k] + "_grad.accumulation.buffer";
      else
        key = seq.str() + ":" + trainable[k];
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
    }
    if (!state.count(key) &&
        StringRef(key).ends_with("_grad.accumulation.buffer"))
      return fail("optimizer gradient '" + key +
                  "' is not an input of the training graph");
    DeviceBuffer &b = alloc(key, p);
    if (b.bytes != p.bytes())
      return fail("optimizer input '" + p.name + "' does not match '" + key +
                  "'");
    optProg->bind(i, b.data);
  }
  if (ckpt) {
    const CheckpointCounters &counters = ckpt->counters;
    if (counters.steps % uint64_t(opts.accumulate) != 0)
      return fail(opts.resumePath + ": the checkpoint is " +
                  std::to_string(counters.steps) +
                  " steps in, inside a group of --accumulate " +
                  std::to_string(opts.accumulate) + "; nothing was loaded");
    for (const StoredTensor &t : ckpt->tensors) {
      StringRef key = t.name;
      key.consume_front("param:");
      auto it = state.find(key);
      if (it == state.end() || it->second->bytes != t.bytes.size() ||
          it->second->dtype != t.dtype)
        return fail(opts.resumePath + ": tensor '" + key +
                    "' does not match the graphs; nothing was loaded");
    }
    // From the mapped file, a window at a time.
    for (const StoredTensor &t : ckpt->tensors) {
      StringRef key = t.name;
      key.consume_front("param:");
      if (auto e = toDevice(t.bytes, state[key]->data))
        return e;
    }
    stepsDone = counters.steps;
    optimizerStep = counters.optimizerStep;
    skipped = counters.skipped;
  } else if (ortStep) {
    // onnxruntime-training's AdamW moments, "momentum0" and "momentum1" per
    // parameter, are the optimizer graph's first and second order moments.
    // All or nothing: every moment the optimizer model takes must come from
    // the checkpoint (zero moments at a late step would skip Adam's bias
    // correction and take steps of several lr).
    if (*ortStep < 0)
      return fail(opts.weights + ": negative optimizer step count");
    llvm::StringSet<> wanted, given;
    for (const auto &e : state)
      if (e.getKey().starts_with("first_order_moments:") ||
          e.getKey().starts_with("second_order_moments:"))
        wanted.insert(e.getKey());
    std::vector<std::pair<DeviceBuffer *, const OrtCheckpointMoment *>> into;
    for (const OrtCheckpointMoment &m : ortMoments) {
      StringRef prefix = m.moment == "momentum0"   ? "first_order_moments:"
                         : m.moment == "momentum1" ? "second_order_moments:"
                                                   : "";
      auto it = state.find((prefix + m.param).str());
      if (prefix.empty() || it == state.end() ||
          it->second->shape != m.tensor.dims ||
          it->second->dtype != dtypeOfOnnx(m.tensor.onnxType))
        return fail(opts.weights + ": the optimizer state '" + m.moment +
                    "' of '" + m.param +
                    "' does not fit the optimizer model's inputs" +
                    (wanted.empty() ? " (it takes no moments)" : ""));
      given.insert(it->getKey());
      into.push_back({it->second.get(), &m});
    }
    if (given.size() != wanted.size())
      return fail(opts.weights + ": the checkpoint's optimizer state holds " +
                  Twine(given.size()) + " of the " + Twine(wanted.size()) +
                  " moments the optimizer model takes");
    for (auto [b, m] : into)
      if (auto e = toDevice(m->tensor.data, b->data))
        return e;
    optimizerStep = uint64_t(*ortStep);
    status << "amp-run: optimizer state from " << opts.weights << " (step "
           << optimizerStep << ", " << ortMoments.size() << " moments)\n";
    ortMoments.clear(); // on the device now
    ortMoments.shrink_to_fit();
  }
  if (!ckpt) {
    // The loss-scaler state that --ort-checkpoint keeps in the property bag
    // (ORT's checkpoint has no other place for it): the scale and its
    // growth counter go on where they were.
    auto restore = [&](StringRef name, int32_t dtype, const void *v) {
      if (DeviceBuffer *b = scalarState(name, dtype)) {
        amprt_memcpy(ctx, b->data, v, b->bytes, AMPRT_HOST_TO_DEVICE);
        status << "amp-run: " << name << " from " << opts.weights << "\n";
      }
    };
    if (auto f = ortProperties.floats.find(kLossScaleName.str());
        f != ortProperties.floats.end())
      restore(kLossScaleName, AMPRT_F32, &f->second);
    if (auto i = ortProperties.ints.find(kGrowthTrackerName.str());
        i != ortProperties.ints.end())
      restore(kGrowthTrackerName, AMPRT_I64, &i->second);
  }

  // Data source.
  StringRef src = opts.data;
  if (!src.starts_with("synthetic:")) {
    for (const std::string &name : dataInputs) {
      if (!isPlainFileName(name))
        return fail("data: graph input '" + name + "' cannot name a file in " +
                    src +
                    " (a path separator or a dot name); use "
                    "--data synthetic:<seed>");
      auto found = readNamedTensor(src, name);
      if (!found)
        return found.takeError();
      if (!*found)
        return fail("data: no " + name + ".npy or " + name + ".pb in " + src +
                    " for graph input '" + name + "'");
      HostTensor t = std::move(**found);
      const Port &p = trainProg->inputs()[trainProg->findInput(name)];
      if (p.shape.empty())
        return fail("data: graph input '" + name +
                    "' is a scalar, which cannot be fed samples along axis "
                    "0; give it with --weights, or as a constant in the "
                    "graph");
      if (t.dtype != p.fedAs)
        return fail(Twine("data for '") + name + "' is " +
                    amprt_dtype_name(t.dtype) + ", the graph wants " +
                    amprt_dtype_name(p.fedAs));
      if (t.shape.empty() ||
          std::vector<int64_t>(t.shape.begin() + 1, t.shape.end()) !=
              std::vector<int64_t>(p.shape.begin() + 1, p.shape.end())) {
        ArrayRef<int64_t> ts(t.shape), ps(p.shape);
        return fail("data for '" + name + "' has shape " + shapeString(ts) +
                    (ts.empty()
                         ? std::string(": a scalar, not samples")
                         : ": samples of " + shapeString(ts.drop_front())) +
                    ", the graph input wants samples of " +
                    shapeString(ps.drop_front()) + " (samples along axis 0)");
      }
      if (datasetRows && datasetRows != t.shape[0])
        return fail("data files have different numbers of samples: " +
                    Twine(t.shape[0]) + " for '" + name + "', " +
                    Twine(datasetRows) + " for '" + dataset.begin()->first +
                    "'");
      datasetRows = t.shape[0];
      if (datasetRows < p.shape[0])
        return fail("data has " + Twine(datasetRows) +
                    " samples, fewer than one batch of " + Twine(p.shape[0]));
      dataset[name] = std::move(t);
    }
  }
  return llvm::Error::success();
}

/// The class count of an integer label input: dim 1 of the scores of the
/// loss kernel that reads it (16 when no loss reads it).
int64_t Trainer::numClasses(StringRef input) {
  int64_t classes = 16;
  trainLowered->walk([&](amprt::CallOp call) {
    if (call.getKernel() != "softmax_cross_entropy_loss")
      return;
    auto operands = call.getTensors();
    auto arg = dyn_cast<BlockArgument>(operands[1]);
    auto func = call->getParentOfType<func::FuncOp>();
    if (!arg || !func)
      return;
    auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
    auto scores = cast<MemRefType>(operands[0].getType());
    if (n && n.getValue() == input && scores.getRank() >= 2)
      classes = scores.getDimSize(1);
  });
  return classes;
}

llvm::Error Trainer::fillBatch(int64_t step) {
  StringRef src = opts.data;
  bool synthetic = src.consume_front("synthetic:");
  uint64_t seed = 0;
  if (synthetic)
    src.getAsInteger(10, seed);
  for (auto [k, name] : llvm::enumerate(dataInputs)) {
    DeviceBuffer &b = *state[name];
    int64_t batch = b.shape.empty() ? 1 : b.shape[0];
    if (synthetic) {
      uint64_t s = seed * 0x100000001b3ull + uint64_t(step) * 7919 + k;
      // A narrowed input is drawn in its 16-bit type: random_fill rounds
      // the f32 draw once more, the values the graph's cast made.
      if (b.fedAs != AMPRT_F32 && b.fedAs != AMPRT_I64 &&
          b.fedAs != AMPRT_I32 && b.fedAs != AMPRT_BOOL)
        return fail("synthetic data: unsupported dtype for '" + name + "'");
      int64_t classes = 0;
      if (b.dtype == AMPRT_I64 || b.dtype == AMPRT_I32) {
        auto it = classCounts.find(name);
        if (it == classCounts.end())
          it = classCounts
                   .try_emplace(name, std::max<int64_t>(numClasses(name), 1))
                   .first;
        classes = it->second;
      }
      // Element i is the (i+1)-th draw of the splitmix stream from s, drawn
      // where the batch lives (on the device for cuda): no host work and no
      // copy per step, the same values on every backend.
      amprt_tensor t = {b.data, b.dtype, int32_t(b.shape.size()),
                        b.shape.data()};
      if (amprt_random_fill(ctx, &t, s, classes) != AMPRT_OK)
        return fail(Twine("synthetic data for '") + name +
                    "': " + amprt_last_error(ctx));
    } else {
      // Epoch e uses a permutation of the rows seeded by (seed, e); the
      // batch of a step is a pure function of the step, so a resumed run
      // sees the same batches.
      std::vector<char> host(b.bytes);
      int64_t perEpoch = datasetRows / batch;
      int64_t epoch = step / perEpoch, first = (step % perEpoch) * batch;
      std::vector<int64_t> perm(datasetRows);
      for (int64_t i = 0; i < datasetRows; ++i)
        perm[i] = i;
      if (opts.shuffle) {
        uint64_t s = opts.seed * 0x9e3779b97f4a7c15ull + uint64_t(epoch);
        for (int64_t i = datasetRows - 1; i > 0; --i)
          std::swap(perm[i], perm[splitmix(s) % uint64_t(i + 1)]);
      }
      const HostTensor &t = dataset[name];
      bool narrowed = b.fedAs != b.dtype;
      // The samples' rows, gathered in the data's dtype.
      size_t row = b.bytes / size_t(batch) / amprt_dtype_size(b.dtype) *
                   amprt_dtype_size(b.fedAs);
      std::vector<char> rows(narrowed ? row * size_t(batch) : 0);
      char *gathered = narrowed ? rows.data() : host.data();
      for (int64_t r = 0; r < batch; ++r)
        std::memcpy(&gathered[r * row], &t.data[perm[first + r] * row], row);
      if (narrowed) {
        // Rounded as the graph's cast rounds (the runtime's own cast).
        if (!hostCtx && amprt_context_create("cpu", &hostCtx) != AMPRT_OK)
          return fail(Twine("the CPU backend: ") + amprt_last_error(nullptr));
        int64_t n = int64_t(b.bytes / amprt_dtype_size(b.dtype));
        amprt_tensor from = {gathered, b.fedAs, 1, &n};
        amprt_tensor to = {host.data(), b.dtype, 1, &n};
        if (amprt_cast(hostCtx, &from, &to) != AMPRT_OK)
          return fail(Twine("data for '") + name +
                      "': " + amprt_last_error(hostCtx));
      }
      amprt_memcpy(ctx, b.data, host.data(), b.bytes, AMPRT_HOST_TO_DEVICE);
    }
    if (step == opts.injectNonFiniteStep && b.fedAs == AMPRT_F32 && b.bytes) {
      float nan = NAN;
      uint16_t nan16 = b.dtype == AMPRT_F16 ? 0x7e00 : 0x7fc0; // f16, bf16
      amprt_memcpy(ctx, b.data,
                   b.dtype == AMPRT_F32 ? static_cast<void *>(&nan) : &nan16,
                   amprt_dtype_size(b.dtype), AMPRT_HOST_TO_DEVICE);
    }
  }
  return llvm::Error::success();
}

llvm::Error Trainer::saveCheckpoint(StringRef path, uint64_t steps) {
  CheckpointCounters c{steps, optimizerStep, skipped, opts.lr};
  std::vector<std::string> keys;
  for (auto &e : state)
    if (!llvm::is_contained(dataInputs, e.getKey().str()) &&
        e.getKey() != "learning_rate" && e.getKey() != "step" &&
        e.getKey() != "lazy_reset_grad")
      keys.push_back(e.getKey().str());
  llvm::sort(keys);
  // Straight from the state buffers to the file, a piece at a time.
  std::vector<StoredTensor> tensors;
  for (const std::string &k : keys) {
    const DeviceBuffer &b = *state[k];
    tensors.push_back({llvm::is_contained(params, k) ? "param:" + k : k,
                       b.dtype, b.shape, deviceBytes(b)});
  }
  return writeCheckpoint(path, c, tensors);
}

/// The state as onnxruntime-training keeps it: trainable and frozen
/// parameters, by name, and the optimizer's per-parameter state (keys
/// "<sequence>:<param>"), of which ORT names only Adam's two moments,
/// "momentum0" and "momentum1". Known before training, so that a state ORT
/// cannot hold is refused before the steps are spent.
llvm::Expected<Trainer::OrtLayout> Trainer::ortCheckpointLayout() {
  std::vector<OrtEntry> out;
  std::vector<std::string> sorted = params;
  llvm::sort(sorted);
  for (const std::string &p : sorted)
    out.push_back({p, p, "", llvm::is_contained(trainable, p)});
  std::vector<std::string> keys;
  for (auto &e : state)
    keys.push_back(e.getKey().str());
  llvm::sort(keys);
  for (StringRef key : keys) {
    auto [seq, param] = key.split(':');
    if (param.empty() || !llvm::is_contained(trainable, param))
      continue;
    StringRef moment = seq == "first_order_moments"    ? "momentum0"
                       : seq == "second_order_moments" ? "momentum1"
                                                       : "";
    if (moment.empty())
      return fail("--ort-checkpoint: the optimizer state '" + seq + "' of '" +
                  param +
                  "' has no name in onnxruntime-training's "
                  "checkpoint (it names Adam's two moments)");
    out.push_back({key.str(), moment.str(), param.str(), false});
  }
  // ORT's rule: state from its threshold on goes to `<checkpoint>.data`
  // (counting the moments too, which share the FlatBuffer's 2 GB).
  uint64_t total = 0;
  for (const OrtEntry &e : out)
    total += state[e.key]->bytes;
  bool external = opts.externalData == ExternalData::Always ||
                  (opts.externalData == ExternalData::Auto &&
                   total >= opts.externalDataThreshold);
  if (!external && total >= (uint64_t(1) << 31) - (uint64_t(1) << 24))
    return fail("--ort-checkpoint: the state holds " + Twine(total) +
                " bytes, more than one checkpoint buffer can (2 GB) with "
                "--external-data=never");
  return OrtLayout{std::move(out), external};
}

llvm::Error Trainer::saveOrtCheckpoint(StringRef path) {
  auto layout = ortCheckpointLayout();
  if (!layout)
    return layout.takeError();
  OrtCheckpoint c;
  for (const OrtEntry &e : layout->entries) {
    const DeviceBuffer &b = *state[e.key];
    OrtCheckpointTensor t;
    t.name = e.name;
    t.onnxType = onnxOfDtype(b.dtype);
    t.dims = b.shape;
    t.trainable = e.trainable;
    t.data = deviceBytes(b);
    if (e.param.empty())
      c.params.push_back(std::move(t));
    else
      c.moments.push_back({e.param, e.name, std::move(t)});
  }
  c.optimizerStep = int64_t(optimizerStep);
  c.initialLearningRate = float(opts.lr);
  // The properties of a checkpoint given as --weights go on (an epoch
  // count, a best score); then the loss-scaler state, which ORT's
  // checkpoint has no field for.
  c.properties = ortProperties;
  if (DeviceBuffer *b = scalarState(kLossScaleName, AMPRT_F32))
    amprt_memcpy(ctx, &c.properties.floats[kLossScaleName.str()], b->data, 4,
                 AMPRT_DEVICE_TO_HOST);
  if (DeviceBuffer *b = scalarState(kGrowthTrackerName, AMPRT_I64))
    amprt_memcpy(ctx, &c.properties.ints[kGrowthTrackerName.str()], b->data, 8,
                 AMPRT_DEVICE_TO_HOST);
  return writeOrtCheckpoint(c, path, layout->externalData);
}

llvm::Error Trainer::findOutputGraph() {
  if (!opts.weights.empty() && !weightsAreOrtCheckpoint) {
    outputGraph = opts.weights;
    return llvm::Error::success();
  }
  // No ONNX model gave the parameters: the eval model generate_artifacts
  // writes next to the training model takes them as inputs.
  std::string from = !opts.weights.empty()
                         ? "onnxruntime-training's checkpoint " + opts.weights
                     : opts.initSeed
                         ? std::string("--init")
                         : "amp-run's checkpoint " + opts.resumePath;
  if (!opts.optimizerModel.empty()) {
    llvm::SmallString<256> eval =
        llvm::sys::path::parent_path(opts.trainingModel);
    llvm::sys::path::append(eval, "eval_model.onnx");
    if (llvm::sys::fs::exists(eval)) {
      outputGraph = std::string(eval);
      return llvm::Error::success();
    }
  }
  return fail("-o " + opts.outPath + ": the parameters come from " + from +
              ", which holds no graph, and there is no eval_model.onnx next "
              "to " +
              opts.trainingModel +
              " to write them into; give --weights <model.onnx> (the forward "
              "model) or put the artifacts' eval model there");
}

llvm::Error Trainer::writeWeights(StringRef path) {
  onnx::ModelProto model;
  {
    std::ifstream in(outputGraph, std::ios::binary);
    if (!in || !model.ParseFromIstream(&in))
      return fail(outputGraph + ": cannot read the ONNX model");
  }
  StringRef dir = llvm::sys::path::parent_path(outputGraph);
  auto *g = model.mutable_graph();
  llvm::StringSet<> paramSet;
  for (const std::string &p : params)
    paramSet.insert(p);
  // The eval model takes the parameters as inputs: they become initializers
  // (and stop being inputs), so that the model runs on its data alone.
  auto *inputs = g->mutable_input();
  inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                               [&](const onnx::ValueInfoProto &v) {
                                 return paramSet.contains(v.name());
                               }),
                inputs->end());
  // The parameters and the tensors kept in external data leave the proto:
  // their bytes are streamed into the file from where they are (the state
  // buffers, the mapped data file). The other initializers stay.
  std::vector<StreamedInitializer> streamed;
  bool hadExternalData = false;
  uint64_t total = 0;
  for (const onnx::TensorProto &t : g->initializer())
    hadExternalData |= t.data_location() == onnx::TensorProto::EXTERNAL;
  // Keeps the initializers `keep` accepts in the model and moves the
  // others' bytes (raw data, or their range of an external data file) to
  // `streamed`, each keeping its name, type and dims; the parameters' old
  // values go.
  auto split = [&](auto keep) -> llvm::Error {
    google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
    for (onnx::TensorProto &t : *g->mutable_initializer()) {
      if (paramSet.contains(t.name()))
        continue;
      if (keep(t)) {
        kept.Add(std::move(t));
        continue;
      }
      auto bytes = takeTensorProto(t, dir);
      if (!bytes)
        return fail(outputGraph + ": " + llvm::toString(bytes.takeError()));
      for (auto clear : {&onnx::TensorProto::clear_raw_data,
                         &onnx::TensorProto::clear_float_data,
                         &onnx::TensorProto::clear_int32_data,
                         &onnx::TensorProto::clear_int64_data,
                         &onnx::TensorProto::clear_double_data,
                         &onnx::TensorProto::clear_uint64_data,
                         &onnx::TensorProto::clear_external_data,
                         &onnx::TensorProto::clear_data_location})
        (t.*clear)();
      streamed.push_back({std::move(t), std::move(bytes->bytes)});
    }
    g->mutable_initializer()->Swap(&kept);
    return llvm::Error::success();
  };
  // The tensors kept in external data are streamed (from their file).
  if (auto e = split([](const onnx::TensorProto &t) {
        return t.data_location() != onnx::TensorProto::EXTERNAL;
      }))
    return e;
  for (const StreamedInitializer &i : streamed)
    total += i.bytes.size();
  for (const onnx::TensorProto &t : g->initializer())
    total += t.ByteSizeLong();
  // Each in its own type: frozen state can be a bool mask or an integer
  // counter, not only f32 weights.
  for (const std::string &p : params) {
    const DeviceBuffer &b = *state[p];
    onnx::TensorProto header;
    header.set_name(p);
    header.set_data_type(onnxOfDtype(b.dtype));
    for (int64_t d : b.shape)
      header.add_dims(d);
    total += b.bytes;
    streamed.push_back({std::move(header), deviceBytes(b)});
  }
  bool external = opts.externalData == ExternalData::Always ||
                  (opts.externalData == ExternalData::Auto &&
                   (hadExternalData || total >= opts.externalDataThreshold));
  // In external data, the other initializers from 1 KiB on join them
  // (onnx.save_model's default size_threshold); smaller ones stay in the
  // model.
  if (external)
    if (auto e = split(
            [](const onnx::TensorProto &t) { return t.ByteSizeLong() < 1024; }))
      return e;
  return writeModel(model, std::move(streamed), path, external);
}

llvm::Error Trainer::run() {
  if (auto e = load())
    return e;
  if (!opts.ortCheckpointPath.empty())
    if (auto layout = ortCheckpointLayout(); !layout)
      return layout.takeError();
  // -o inline: a model past protobuf's 2 GiB is refused now, not after
  // training (writeModel checks the exact size).
  if (!opts.outPath.empty() && opts.externalData == ExternalData::Never) {
    uint64_t total = 0;
    llvm::sys::fs::file_size(outputGraph, total);
    for (const std::string &p : params)
      total += state[p]->bytes;
    if (total > kMaxProtobufBytes)
      return fail("-o " + opts.outPath + ": the model would hold at least " +
                  Twine(total) +
                  " bytes, more than one protobuf can (2 "
                  "GiB) with --external-data=never");
  }
  int lossOut = -1, scaleOut = -1, finiteOut = -1;
  for (auto [i, p] : llvm::enumerate(trainProg->outputs())) {
    if (lossOut < 0 && p.dtype == AMPRT_F32 && p.shape.empty())
      lossOut = i;
    if (p.name == (kLossScaleName + train::kUpdatedSuffix).str())
      scaleOut = i;
    if (p.name == train::kAllFiniteName)
      finiteOut = i;
  }
  // Outputs written back into state: "<x>.out" for an input "<x>".
  std::vector<std::pair<unsigned, DeviceBuffer *>> writeBack;
  for (auto [i, p] : llvm::enumerate(trainProg->outputs())) {
    StringRef n = p.name;
    if (n.consume_back(".out") && trainProg->findInput(n) >= 0) {
      DeviceBuffer *b = state[n].get();
      if (b->bytes == p.bytes())
        writeBack.push_back({unsigned(i), b});
    }
  }
  // The optimizer's "updated" flag: AdamWOptimizer's output 0 (a bool);
  // graphs without one update when their update signals are fed true.
  int updatedOut = -1;
  if (!optProg->outputs().empty() && optProg->outputs()[0].dtype == AMPRT_BOOL)
    updatedOut = 0;
  std::vector<DeviceBuffer *> updateSignals;
  for (const std::string &n : updateIns)
    updateSignals.push_back(state[n].get());
  DeviceBuffer *lr =
      state.count("learning_rate") ? state["learning_rate"].get() : nullptr;
  DeviceBuffer *stepIn = state.count("step") ? state["step"].get() : nullptr;
  DeviceBuffer *finiteIn = state.count(train::kAllFiniteName)
                               ? state[train::kAllFiniteName].get()
                               : nullptr;
  if (lr) {
    float v = float(opts.lr);
    amprt_memcpy(ctx, lr->data, &v, 4, AMPRT_HOST_TO_DEVICE);
  }

  std::unique_ptr<llvm::raw_fd_ostream> log;
  std::string logTmp;
  if (!opts.logPath.empty()) {
    std::error_code ec;
    logTmp = opts.logPath + ".tmp";
    log = std::make_unique<llvm::raw_fd_ostream>(logTmp, ec);
    if (ec)
      return fail(logTmp + ": " + ec.message());
    *log << "step,loss,loss_scale,all_finite,skipped,optimizer_step"
         << (opts.logTime ? ",seconds\n" : "\n");
  }
  status << "amp-run: " << params.size() << " parameters, "
         << trainProg->numCalls() << " + " << optProg->numCalls()
         << " runtime calls, arena " << trainProg->arenaBytes() << " + "
         << optProg->arenaBytes() << " bytes, " << precisionName()
         << ", device " << opts.device << "\n";
  // What the training arena holds where most of it is alive.
  if (auto main = trainLowered.lookupSymbol<func::FuncOp>("main"))
    if (auto split = main->getAttrOfType<DictionaryAttr>(kArenaSplitAttr)) {
      status << "amp-run: training arena at its peak:";
      for (auto [i, role] : llvm::enumerate(kArenaRoles))
        if (auto n = split.getAs<IntegerAttr>(role))
          status << (i ? ", " : " ")
                 << llvm::join(llvm::split(StringRef(role), '_'), " ") << " "
                 << n.getInt();
      status << " bytes\n";
    }
  bool tty = opts.progress && llvm::sys::Process::StandardErrIsDisplayed();
  auto start = std::chrono::steady_clock::now();
  uint64_t first = stepsDone;
  // Gradient accumulation: the optimizer runs on the last step of each
  // group of opts.accumulate steps, if every step of the group was finite.
  //
  // The control values of a step stay on the device: the signals are
  // filled by kernels, the all-finite flag goes from the training graph to
  // the optimizer (and-ed over an accumulation group) without a host round
  // trip, and the optimizer's step counter grows there by its "updated"
  // flag. The host reads the step's results (loss, scale, flags) once, at
  // its end, and keeps its own counts from them.
  DeviceBuffer groupBuf[2];
  int group = 0; // groupBuf[group] holds the group's flag so far
  DeviceBuffer stepOne, stepNext;
  for (DeviceBuffer *b : {&groupBuf[0], &groupBuf[1], &stepOne, &stepNext}) {
    b->ctx = ctx;
    b->bytes = 1;
    b->dtype = AMPRT_BOOL;
    if (stepIn && (b == &stepOne || b == &stepNext)) {
      // The counter's own type and shape (i64 in ORT's optimizer graphs).
      b->bytes = stepIn->bytes;
      b->dtype = stepIn->dtype;
      b->shape = stepIn->shape;
    }
    if (amprt_malloc(ctx, b->bytes, &b->data) != AMPRT_OK)
      return fail(Twine("device memory: ") + amprt_last_error(ctx));
  }
  auto desc = [](const DeviceBuffer &b) {
    return amprt_tensor{b.data, b.dtype, int32_t(b.shape.size()),
                        b.shape.data()};
  };
  auto check = [&](amprt_status st, StringRef what) -> llvm::Error {
    if (st == AMPRT_OK)
      return llvm::Error::success();
    return fail(Twine(what) + ": " + amprt_last_error(ctx));
  };
  auto fillWith = [&](DeviceBuffer &b, double v) {
    amprt_tensor t = desc(b);
    return check(amprt_fill(ctx, &t, v), "step signal");
  };
  // The flag the optimizer gets is device data when the training graph
  // reports one; "updated" is, when the optimizer reports it or follows
  // that flag.
  bool deviceFlag = finiteOut >= 0;
  bool followsFlag = !updateSignals.empty() || finiteIn;
  bool deviceUpdated = updatedOut >= 0 || (deviceFlag && followsFlag);
  if (stepIn && deviceUpdated)
    if (auto e = fillWith(*stepIn, double(optimizerStep + 1)))
      return e;
  uint8_t groupFinite = 1;
  for (; int64_t(stepsDone) < opts.steps; ++stepsDone) {
    if (auto e = fillBatch(stepsDone))
      return e;
    bool groupStart = stepsDone % opts.accumulate == 0;
    bool groupEnd = (stepsDone + 1) % opts.accumulate == 0;
    for (DeviceBuffer *b : resetSignals)
      if (auto e = fillWith(*b, groupStart))
        return e;
    for (DeviceBuffer *b : accumulateSignals)
      if (auto e = fillWith(*b, !groupStart))
        return e;
    // New dropout masks and random draws each step; a resumed run draws
    // what the uninterrupted one drew at this step.
    if (auto e = check(amprt_set_random_offset(ctx, stepsDone), "random"))
      return e;
    if (auto e = trainProg->run())
      return e;
    for (auto &[i, b] : writeBack)
      amprt_memcpy(ctx, b->data, trainProg->output(i), b->bytes,
                   AMPRT_DEVICE_TO_DEVICE);
    // The group's flag on the device: this step's, and-ed with the
    // earlier steps' of the group.
    const void *flag = deviceFlag ? trainProg->output(finiteOut) : nullptr;
    if (deviceFlag && opts.accumulate > 1) {
      DeviceBuffer &cur = groupBuf[group], &other = groupBuf[1 - group];
      amprt_tensor f = {const_cast<void *>(flag), AMPRT_BOOL, 0, nullptr},
                   a = desc(cur), y = desc(other);
      if (groupStart)
        amprt_memcpy(ctx, cur.data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
      else if (auto e =
                   check(amprt_logical_and(ctx, &a, &f, &y), "all-finite flag"))
        return e;
      else
        group = 1 - group;
      flag = groupBuf[group].data;
    }
    void *updatedDev = nullptr;
    if (groupEnd) {
      for (DeviceBuffer *b : updateSignals) {
        if (flag)
          amprt_memcpy(ctx, b->data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
        else if (auto e = fillWith(*b, 1))
          return e;
      }
      if (finiteIn) {
        if (flag)
          amprt_memcpy(ctx, finiteIn->data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
        else if (auto e = fillWith(*finiteIn, 1))
          return e;
      }
      if (stepIn && !deviceUpdated)
        if (auto e = fillWith(*stepIn, double(optimizerStep + 1)))
          return e;
      if (auto e = optProg->run())
        return e;
      updatedDev = updatedOut >= 0 ? optProg->output(updatedOut)
                                   : const_cast<void *>(flag);
      if (stepIn && deviceUpdated) {
        // step += updated, for the next optimizer run.
        amprt_tensor u = {updatedDev, AMPRT_BOOL, int32_t(stepIn->shape.size()),
                          stepIn->shape.data()},
                     one = desc(stepOne), next = desc(stepNext),
                     cur = desc(*stepIn);
        if (auto e = check(amprt_cast(ctx, &u, &one), "optimizer step"))
          return e;
        if (auto e = check(amprt_add(ctx, &cur, &one, &next), "optimizer step"))
          return e;
        amprt_memcpy(ctx, stepIn->data, stepNext.data, stepIn->bytes,
                     AMPRT_DEVICE_TO_DEVICE);
      }
    }
    // The step's results, read once the device is done with it.
    uint8_t finite = 1;
    if (finiteOut >= 0)
      amprt_memcpy(ctx, &finite, trainProg->output(finiteOut), 1,
                   AMPRT_DEVICE_TO_HOST);
    groupFinite &= finite;
    if (groupEnd) {
      // Without an "updated" output, the flag fed to the optimizer says.
      uint8_t updated = followsFlag ? groupFinite : uint8_t(1);
      if (updatedOut >= 0)
        amprt_memcpy(ctx, &updated, updatedDev, 1, AMPRT_DEVICE_TO_HOST);
      if (updated)
        ++optimizerStep;
      if (!groupFinite)
        ++skipped;
      groupFinite = 1;
    }
    float loss = NAN, scale = 1.0f;
    if (lossOut >= 0)
      amprt_memcpy(ctx, &loss, trainProg->output(lossOut), 4,
                   AMPRT_DEVICE_TO_HOST);
    if (scaleOut >= 0)
      amprt_memcpy(ctx, &scale, trainProg->output(scaleOut), 4,
                   AMPRT_DEVICE_TO_HOST);
    // Seconds since the loop started, taken after the step's results were
    // read back (so its device work is done): with --log-time a benchmark
    // takes the steady state from one process, (seconds[j] - seconds[i]) /
    // (j - i).
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (log) {
      *log << stepsDone << "," << llvm::format("%.9g", loss) << ","
           << llvm::format("%.9g", scale) << "," << int(finite) << ","
           << skipped << "," << optimizerStep;
      if (opts.logTime)
        *log << "," << llvm::format("%.6f", secs);
      *log << "\n";
    }
    bool last = int64_t(stepsDone) + 1 == opts.steps;
    if (opts.progress && (tty || last))
      status << (tty ? "\r" : "") << "step " << stepsDone + 1 << "/"
             << opts.steps << "  loss " << llvm::format("%.6f", loss)
             << "  scale " << llvm::format("%g", scale) << "  skipped "
             << skipped << "  "
             << llvm::format("%.1f", double(stepsDone + 1 - first) /
                                         std::max(secs, 1e-9))
             << " steps/s" << (last || !tty ? "\n" : "");
    status.flush();
    // --checkpoint-every: the state after this step (a multiple of
    // --accumulate, so between groups), replaced atomically; the last
    // step's is written below.
    if (opts.checkpointEvery > 0 && !last &&
        (stepsDone + 1) % uint64_t(opts.checkpointEvery) == 0)
      if (auto e = saveCheckpoint(opts.checkpointPath, stepsDone + 1))
        return e;
  }
  if (log) {
    log->close();
    if (log->has_error())
      return fail(logTmp + ": write failed");
    if (std::error_code ec = llvm::sys::fs::rename(logTmp, opts.logPath))
      return fail(opts.logPath + ": " + ec.message());
  }
  if (!opts.checkpointPath.empty())
    if (auto e = saveCheckpoint(opts.checkpointPath, stepsDone))
      return e;
  if (!opts.ortCheckpointPath.empty())
    if (auto e = saveOrtCheckpoint(opts.ortCheckpointPath))
      return e;
  if (!opts.outPath.empty())
    if (auto e = writeWeights(opts.outPath))
      return e;
  return llvm::Error::success();
}

} // namespace

llvm::Error amp::driver::train(const TrainOptions &options,
                               llvm::raw_ostream &status) {
  Trainer t(options, status);
  return t.run();
}
