//===- TrainerInternals.h - the amp-run trainer's state ---------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to the trainer: the Trainer, which holds the state of one
// `amp-run` training run (the MLIR context and modules, the runtime
// context, the lowered programs, the device buffers by name, the counters),
// and the helpers its files share. Its member functions live in one file
// per concern:
//   Trainer.cpp            the run: the step loop, its setup and its end
//   TrainerStep.cpp        one step: its device work (signals, the
//                          training and optimizer programs, the all-finite
//                          flag), queued or recorded as a graph, and its
//                          results, read back without waiting and logged
//   TrainerLoad.cpp        load(): import or parse, the AMP pipeline, the
//                          --dims/--batch binding, the parameters, the
//                          lowering, the programs and their inputs
//   TrainerData.cpp        the data source: files or synthetic batches
//   TrainerCheckpoint.cpp  the state read and written: --weights (ONNX or
//                          onnxruntime-training's checkpoint), amp-run's
//                          checkpoints, --ort-checkpoint, -o
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_DRIVER_TRAINERINTERNALS_H
#define AMP_LIB_DRIVER_TRAINERINTERNALS_H

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/LossScalingState.h"
#include "amp/Driver/Checkpoint.h"
#include "amp/Driver/HostTensor.h"
#include "amp/Driver/OrtCheckpoint.h"
#include "amp/Driver/RangeCollector.h"
#include "amp/Driver/Trainer.h"
#include "amp/Execution/Program.h"
#include "amp/Runtime/Kernels.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <chrono>
#include <map>
#include <optional>

namespace amp::driver::detail {

using namespace mlir;
using namespace amp::exec;

inline llvm::Error fail(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

inline uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The ranks a launcher started and this process's rank: Open MPI's
/// mpirun, MPICH's hydra (PMI), Slurm's srun (TrainerDistributed.cpp);
/// nullopt without one.
std::optional<std::pair<int64_t, int64_t>> launcherWorld();

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
  /// The buffer as a runtime tensor.
  amprt_tensor tensor() const {
    return {data, dtype, int32_t(shape.size()), shape.data()};
  }
  ~DeviceBuffer() {
    if (data)
      amprt_free(ctx, data);
  }
};

/// One training-graph input: its ONNX name, static shape (dynamic dims
/// are negative) and element type.
struct InputInfo {
  std::string name;
  SmallVector<int64_t> shape;
  Type elem;
};

class Trainer {
public:
  Trainer(const TrainOptions &o, llvm::raw_ostream &status)
      : opts(o), status(status) {}
  ~Trainer() {
    for (auto &[i, copy] : stepSnapshots)
      amprt_free(ctx, copy);
    for (auto &[i, copy] : optSnapshots)
      amprt_free(ctx, copy);
    state.clear();
    gatherGroups.clear();
    if (scratchData)
      amprt_free(ctx, scratchData);
    if (stepGraph)
      amprt_graph_destroy(ctx, stepGraph);
    for (DeviceBuffer *b : {&plan.groupBuf[0], &plan.groupBuf[1], &plan.stepOne,
                            &plan.stepNext}) {
      amprt_free(ctx, b->data);
      b->data = nullptr;
    }
    if (records)
      amprt_host_free(ctx, records);
    for (auto &[name, s] : staging)
      for (void *p : s.buf)
        amprt_host_free(ctx, p);
    trainProg.reset();
    optProg.reset();
    if (ctx)
      amprt_context_destroy(ctx);
    if (hostCtx)
      amprt_context_destroy(hostCtx);
    if (comm)
      amprt_comm_destroy(comm);
  }
  llvm::Error run();
  bool isDataParallel() const { return comm && worldSize > 1; }
  /// What the run's context held (zeros before it has one).
  MemoryUse memoryUse() const;
  /// Data-parallel training: after an error on this rank, ends every rank
  /// (no other rank waits in a collective for it forever).
  void abortRanks(int32_t code) {
    if (comm && worldSize > 1)
      amprt_comm_abort(comm, code);
  }

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
  /// The op type ("Gemm", "com.microsoft:SoftmaxGrad_13") of each named
  /// node of the training graph, as imported (--localize-nonfinite).
  llvm::StringMap<std::string> nodeOpTypes;
  /// --localize-nonfinite: the inputs the training step writes in place,
  /// as they were before the step (a rerun starts from them).
  std::vector<std::pair<unsigned, void *>> stepSnapshots;
  llvm::Error localizeStep(int64_t step, float loss, bool flagFalse);
  /// The same for the optimizer program: its inputs written in place (the
  /// parameters, the moments) before it ran; when it leaves one of them
  /// non-finite, it runs again from them call by call.
  std::vector<std::pair<unsigned, void *>> optSnapshots;
  llvm::Error localizeOptimizer(int64_t step);
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
  /// The symbolic dims the lowering binds: --dims, plus --batch bound to
  /// the leading symbolic dim of the training graph's inputs.
  std::string loweringDims;
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
  // Data-parallel training (TrainerDistributed.cpp): the ranks the
  // launcher started (one without a launcher), this one's, and the
  // communicator the context reduces gradients over.
  amprt_comm *comm = nullptr;
  int32_t rank = 0, worldSize = 1;
  /// The data inputs whose dim 0 is the batch: each rank reads its own
  /// part of the global batch there (the others are the same on every
  /// rank).
  llvm::StringSet<> batchedInputs;
  /// Joins the ranks the launcher (mpirun, srun) started, if more than one.
  llvm::Error joinRanks();
  /// Before the first step: the ranks agree on the models, the options and
  /// the data, and every rank takes rank 0's state (broadcast, checked by a
  /// checksum).
  llvm::Error agreeAcrossRanks();
  /// A 64-bit checksum of the state buffers (parameters, optimizer and
  /// loss-scaler state, not the data).
  uint64_t stateChecksum();
  /// Every rank takes rank `root`'s state buffer `name` (`what` names the
  /// reason in an error).
  llvm::Error broadcastState(StringRef name, int32_t root, StringRef what);
  /// Device memory for the small per-step reductions (loss, checksums),
  /// made once.
  llvm::Expected<void *> reductionScratch();
  void *scratchData = nullptr;
  /// Whether `value` is the same on every rank.
  llvm::Expected<bool> sameOnAllRanks(uint64_t value);
  /// Every rank takes rank 0's parameters that have no gradient (state
  /// the training step updates itself: BatchNorm's running statistics),
  /// as DDP broadcasts its buffers; nothing in one process.
  llvm::Error broadcastBuffers();
  /// The parameters without a gradient that the training step writes
  /// (in place, or as `<name>.out`): what broadcastBuffers sends.
  std::vector<std::string> stepWrittenParams;
  /// The mean of `v` over the ranks.
  llvm::Expected<float> meanOverRanks(float v);
  /// --shard-optimizer: the rank that updates each trainable parameter
  /// (every one is this rank's without it), and the trainable parameters
  /// this rank's optimizer program updates, in `trainable` order.
  llvm::StringMap<int32_t> owner;
  std::vector<std::string> optimized;
  /// Assigns each trainable parameter (of `bytes`) an owner: the largest
  /// first, each to the rank with the fewest bytes so far.
  llvm::Error shardParameters(ArrayRef<std::pair<std::string, uint64_t>> bytes);
  /// The state buffers every rank holds alike, by name.
  std::vector<std::pair<std::string, DeviceBuffer *>> replicatedState();
  /// The optimizer state's bytes on this rank, and what they would be
  /// unsharded.
  std::pair<uint64_t, uint64_t> optimizerStateBytes();
  /// --shard-optimizer: every rank takes each parameter from its owner
  /// (all_gather of the parameters packed by owner).
  llvm::Error gatherParameters();
  /// One all_gather of gatherParameters: the trainable parameters of one
  /// dtype, each at its element offset in its owner's part; every rank's
  /// part is `part` elements (the largest owner's), `send` this rank's,
  /// `recv` all of them in rank order.
  struct GatherGroup {
    int32_t dtype = AMPRT_F32;
    int64_t part = 0;
    std::vector<std::pair<std::string, int64_t>> layout;
    DeviceBuffer send, recv;
  };
  std::vector<std::unique_ptr<GatherGroup>> gatherGroups;
  /// Plans gatherGroups (once, before the first step).
  llvm::Error planGather();
  /// --shard-optimizer: the collectives of one step and their bytes, for
  /// the status line.
  std::string shardedTraffic();
  /// --shard-optimizer: a fingerprint of the training graph as imported
  /// (each rank's lowered program differs: it unpacks and checks only its
  /// own parameters' gradients), which the ranks compare instead.
  uint64_t trainGraphPrint = 0;
  /// Whether the optimizer state is sharded across more than one rank.
  bool sharded() const { return opts.shardOptimizer && worldSize > 1; }
  /// A checkpoint's file: `path`, or this rank's shard of it.
  std::string checkpointFile(StringRef path) const {
    return sharded()
               ? (path + "." + Twine(rank) + "-of-" + Twine(worldSize)).str()
               : path.str();
  }
  /// Only rank 0 writes the log, the progress and the files.
  bool writesOutputs() const { return rank == 0; }
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
  /// The buffer of state `name` (made, zeroed, on first use), or the
  /// device's refusal.
  llvm::Expected<DeviceBuffer *> alloc(StringRef name, const Port &p) {
    auto &slot = state[name];
    if (!slot) {
      auto b = std::make_unique<DeviceBuffer>();
      b->ctx = ctx;
      b->bytes = p.bytes();
      b->dtype = p.dtype;
      b->fedAs = p.fedAs;
      b->shape = p.shape;
      if (amprt_malloc(ctx, b->bytes, &b->data) != AMPRT_OK) {
        state.erase(name);
        return fail("'" + name + "' (" + Twine(b->bytes) +
                    " bytes): " + amprt_last_error(ctx));
      }
      amprt_memset(ctx, b->data, 0, b->bytes);
      slot = std::move(b);
    }
    return slot.get();
  }
  // load() and its steps, in their order (TrainerLoad.cpp).
  llvm::Error load();
  /// A lowered program (amp-run --dump-lowered): its modules and the
  /// training inputs.
  llvm::Error readLoweredProgram(SmallVectorImpl<InputInfo> &inputs);
  /// The ONNX pair, imported and checked.
  llvm::Error importModels();
  /// The pair through the passes: the AMP pipeline with --amp, the
  /// data-parallel pass on several ranks (reduce-scattering to the
  /// parameters' owners with --shard-optimizer).
  llvm::Error transformModels();
  /// --dims checked against the two graphs' symbolic dims, plus --batch
  /// bound to the leading symbolic dim of `graph`'s inputs: the dims the
  /// lowering binds.
  llvm::Expected<std::string> bindDims(train::GraphOp graph);
  /// The inputs of the training graph.
  void collectGraphInputs(train::GraphOp graph,
                          SmallVectorImpl<InputInfo> &inputs);
  /// The parameters among `inputs` (those `weights`, `resumed` or --init
  /// give), the trainable ones and their types (`seqTypes`).
  llvm::Error findParameters(ArrayRef<InputInfo> inputs,
                             const std::map<std::string, StoredTensor> &weights,
                             const std::map<std::string, StoredTensor> &resumed,
                             SmallVectorImpl<Attribute> &seqTypes);
  /// --init: the parameters' values from the seed.
  llvm::Error initParameters(ArrayRef<InputInfo> inputs,
                             std::map<std::string, StoredTensor> &weights);
  /// The two ONNX modules lowered to amprt calls.
  llvm::Error lowerModels(train::GraphOp graph,
                          const std::map<std::string, StoredTensor> &weights,
                          const std::map<std::string, StoredTensor> &resumed,
                          ArrayRef<Attribute> seqTypes);
  llvm::Error lower(ModuleOp module, StringRef what);
  /// --dump-lowered: the lowered modules, in one file amp-run runs again.
  llvm::Error dumpLowered();
  /// The runtime context on --device and the two programs.
  llvm::Error createPrograms();
  /// The training program's inputs bound to state buffers, the parameters
  /// copied in.
  llvm::Error bindTrainingInputs(std::map<std::string, StoredTensor> &weights);
  /// The optimizer program's inputs bound to state buffers.
  llvm::Error bindOptimizerInputs();
  // The state read from files (TrainerCheckpoint.cpp).
  /// --weights: an ONNX model's initializers or onnxruntime-training's
  /// checkpoint (then also its optimizer state and properties).
  llvm::Error readWeights(std::map<std::string, StoredTensor> &weights);
  /// --resume: amp-run's checkpoint, and its tensors by name.
  llvm::Error
  readResumeCheckpoint(std::optional<CheckpointContents> &ckpt,
                       std::map<std::string, StoredTensor> &resumed);
  /// The state buffers and counters from a checkpoint (--resume).
  llvm::Error restoreCheckpoint(const CheckpointContents &ckpt);
  /// The optimizer's moments and step from onnxruntime-training's
  /// checkpoint given as --weights.
  llvm::Error restoreOrtOptimizerState();
  /// The loss scaler's state from the property bag of onnxruntime-training's
  /// checkpoint given as --weights.
  void restoreLossScaler();
  /// The data source's files, read and checked against the data inputs
  /// (TrainerData.cpp).
  llvm::Error loadDataset();
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
  /// The step's batch from the data files: gathered on the host into
  /// host memory the device copies from, and copied without waiting
  /// (synthetic batches are drawn by the step's device work).
  llvm::Error fillBatch(int64_t step);
  /// The synthetic batch of the step the random offset names, drawn on
  /// the device (part of the step's device work, so of its graph).
  llvm::Error drawSyntheticBatch();
  /// --inject-nonfinite's step: the first element of every float data
  /// input made NaN, after the batch.
  llvm::Error injectNonFinite();
  /// The failure amprt_last_error holds, for the step that caused it: a
  /// deferred data check names it by its random offset, else `step` (0
  /// based) is taken.
  llvm::Error stepFailure(uint64_t step);
  /// Per data input: two buffers of host memory the batches are staged in
  /// by turns, each with the fence of its last copy.
  struct Staging {
    void *buf[2] = {nullptr, nullptr};
    uint64_t fence[2] = {0, 0};
    int next = 0;
  };
  llvm::StringMap<Staging> staging;

  // One step (TrainerStep.cpp).
  /// What the step loop found once: the outputs it reads and the buffers
  /// it feeds.
  struct StepPlan {
    int lossOut = -1, scaleOut = -1, finiteOut = -1, updatedOut = -1;
    /// The scale the log shows where the graph has no scaler state.
    double staticScale = 1.0;
    /// Outputs written back into state: "<x>.out" for an input "<x>".
    std::vector<std::pair<unsigned, DeviceBuffer *>> writeBack;
    std::vector<DeviceBuffer *> updateSignals;
    DeviceBuffer *stepIn = nullptr, *finiteIn = nullptr;
    /// The flag the optimizer gets is device data (deviceFlag); the
    /// optimizer follows it (followsFlag); "updated" is device data.
    bool deviceFlag = false, followsFlag = false, deviceUpdated = false;
    /// The group's all-finite flag so far: groupBuf[group].
    DeviceBuffer groupBuf[2];
    int group = 0;
    DeviceBuffer stepOne, stepNext;
  } plan;
  /// Finds `plan` and makes its buffers.
  llvm::Error planSteps();
  /// Queues the device work of step stepsDone: its synthetic batch, the
  /// signals, the training program, the all-finite flag, the optimizer at
  /// a group's end, and the random offset moved on. The same calls every
  /// step once groups are one step long: what a step graph records.
  llvm::Error queueStep(bool groupStart, bool groupEnd);
  /// What the host reads of a step, copied to host memory without waiting.
  struct StepRecord {
    float loss;
    float scale;
    uint8_t finite;
    uint8_t updated;
  };
  static constexpr unsigned kRecords = 4;
  StepRecord *records = nullptr;
  /// A step queued whose record is not read yet.
  struct PendingStep {
    uint64_t step;
    uint64_t fence;
    bool groupEnd;
  };
  std::vector<PendingStep> pending;
  /// Queues the copies of step stepsDone's results into its record.
  llvm::Error queueResults(bool groupEnd);
  /// Waits for the oldest pending step's record and logs it.
  llvm::Error finishStep();
  /// Why the step cannot be one graph ("" when it can).
  std::string stepGraphObstacle() const;
  /// The recorded step, launched for every step after the first; tried
  /// once (stepGraphTried).
  amprt_graph *stepGraph = nullptr;
  bool stepGraphTried = false;
  /// Queues step stepsDone's device work: by the graph when there is one
  /// (recorded here at the second step of the process), else call by
  /// call.
  llvm::Error runStep(bool groupStart, bool groupEnd);
  /// --collect-ranges: runs the training program and measures its values.
  std::optional<RangeCollector> collector;
  // What finishStep keeps between steps.
  uint8_t groupFinite = 1;
  std::chrono::steady_clock::time_point loopStart;
  uint64_t firstStep = 0;
  bool tty = false;
  std::unique_ptr<llvm::raw_fd_ostream> log;
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

/// A 64-bit fingerprint of `module`'s structure (its ops, attributes and
/// types as printed, large constants elided): the same on every host.
uint64_t graphFingerprint(ModuleOp module);

/// The loss scaler's state (graph inputs of the loss-scaling pass), kept in
/// an onnxruntime-training checkpoint's property bag under the same names.
using train::kGrowthTrackerName;
using train::kLossScaleName;

} // namespace amp::driver::detail

#endif // AMP_LIB_DRIVER_TRAINERINTERNALS_H
