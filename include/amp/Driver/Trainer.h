//===- Trainer.h - the amp-run training loop ----------------------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Runs an ONNX Runtime training-artifact pair (training + optimizer model)
// for N steps on the runtime: import, optional AMP + loss-scaling pipeline,
// convert-train-to-runtime, then a loop that feeds batches, runs the
// training program, hands the accumulated gradients to the optimizer
// program, keeps loss-scaler state, logs, checkpoints. docs/amp-run.md.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_TRAINER_H
#define AMP_DRIVER_TRAINER_H

#include "amp/Execution/Program.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace amp::driver {

/// When -o and --ort-checkpoint keep tensors in an external data file.
enum class ExternalData {
  /// When the tensors written hold at least externalDataThreshold bytes, or
  /// (-o) the --weights model kept its tensors in external data.
  Auto,
  Always,
  /// Inline; a file over its format's 2 GB limit is refused before training.
  Never,
};

/// Whether amp-run records a step as one graph and launches it for the
/// steps after (--cuda-graph).
enum class StepGraph {
  /// When the device has graphs and the run allows one (else call by call,
  /// with a line saying why on a device).
  Auto,
  /// As Auto, but a run that cannot record its step is an error.
  On,
  Off,
};

/// Which convolutions amp-run lowers channels last (--channels-last;
/// amp::ChannelsLast).
enum class ChannelsLastChoice {
  /// Those computing in f16/bf16 on a device; none on the CPU.
  Auto,
  Off,
  LowPrecision,
  All,
};

struct TrainOptions {
  std::string trainingModel;  ///< training_model.onnx
  std::string optimizerModel; ///< optimizer_model.onnx
  std::string weights;        ///< ONNX file whose initializers are the params
  /// Without weights: initialize every trainable parameter from this seed
  /// (uniform(+-1/sqrt(fan_in)) for rank >= 2, zeros for rank <= 1).
  std::optional<uint64_t> initSeed;
  std::string device = "cpu";
  /// The CPU backend's configuration in force (CpuSetup.h), for the log.
  std::string cpuInfo;
  std::string data = "synthetic:0"; ///< synthetic:<seed> or a folder
  std::string dims;                 ///< extra symbolic dims: name=value,...
  std::string logPath, outPath, checkpointPath, resumePath, loweredPath;
  /// Where to write onnxruntime-training's own checkpoint at the end
  /// (parameters, optimizer state, loss-scaler state as properties).
  std::string ortCheckpointPath;
  ExternalData externalData = ExternalData::Auto;
  /// Auto's threshold: onnxruntime-training's (1800 MiB), which also keeps
  /// -o's model under protobuf's 2 GiB.
  uint64_t externalDataThreshold = uint64_t(1800) << 20;
  int64_t steps = 1;
  int64_t batch = 0; ///< binds dim 0 of every data input (0: from dims)
  uint64_t seed = 0;
  bool shuffle = true;
  bool amp = false;
  /// With amp: the low type, "fp16" (with dynamic loss scaling) or "bf16"
  /// (without: bf16 has fp32's exponent range, as PyTorch uses it).
  std::string ampMode = "fp16";
  /// With fp16 AMP: a static loss scale (loss-scaling's static mode), or 0
  /// for the dynamic scaler (from 65536, as GradScaler and Apex start).
  /// --collect-ranges judges gradients' underflow under it too.
  double staticLossScale = 0;
  double lr = 1e-3;
  bool lrGiven = false; ///< lr came from the command line
  /// Gradient accumulation: the optimizer runs every `accumulate` steps on
  /// the gradients summed over them (steps must be a multiple).
  int64_t accumulate = 1;
  /// With checkpointPath: also write the checkpoint after every this many
  /// steps (a multiple of accumulate; 0: only at the end).
  int64_t checkpointEvery = 0;
  int64_t injectNonFiniteStep = -1; ///< makes step k's batch NaN (testing)
  /// With injectNonFiniteStep in data-parallel training: only this rank's
  /// batch (-1: every rank's).
  int64_t injectNonFiniteRank = -1;
  /// Data-parallel training (amp-run started as several ranks by mpirun or
  /// srun; docs/Distributed.md): the largest bucket of gradients reduced
  /// together, in MB (DDP's 25 by default).
  double bucketMB = 25;
  /// Data-parallel training: after every step, check that every rank holds
  /// the same parameters and optimizer state (a checksum compared across
  /// the ranks); a difference is an error naming the step.
  bool verifyReplicas = false;
  /// Data-parallel training, ZeRO stage 1: each trainable parameter's
  /// optimizer state lives on one rank (its owner, by size), which alone
  /// updates it and then broadcasts the parameter; optimizer memory per
  /// rank falls by the number of ranks. Checkpoints are one file per rank
  /// (`<path>.<rank>-of-<ranks>`), resumed on the same number of ranks.
  bool shardOptimizer = false;
  /// When a step's loss or all-finite flag is non-finite, run the step
  /// again call by call and report the first node that made a non-finite
  /// value from finite inputs (NonfiniteLocator.h).
  bool localizeNonfinite = false;
  /// Where to write the value ranges measured over the steps (fp32 only;
  /// RangeCollector.h), or empty.
  std::string collectRangesPath;
  /// With amp: nodes (names or regular expressions) the AMP pass keeps
  /// fp32 (its keep-fp32=).
  std::vector<std::string> ampKeepFp32;
  /// Runs a step's program in place of Program::run() (a diagnostic that
  /// looks at every call: --compare-precision). `optimizer` says which
  /// program; `opTypes` the training graph's node op types by name.
  std::function<llvm::Error(exec::Program &prog, amprt_context *ctx,
                            int64_t step, bool optimizer,
                            const llvm::StringMap<std::string> &opTypes)>
      stepRunner;
  /// Lower with every temporary in its own place to the program's end
  /// (keep-values): a stepRunner may read each value after the program ran
  /// (--compare-precision's fp32 run); more memory.
  bool keepValues = false;
  /// Attention in f16/bf16 and its gradient as fused calls (amprt-fuse's
  /// fuse-attention; off with keepValues, whose values they never store).
  bool fuseAttention = true;
  /// A MatMul and its bias Add as one gemm, a product and the activation
  /// gradient of it as one gemm_act_grad (amprt-fuse's fuse-gemm-epilogues;
  /// off with keepValues).
  bool fuseGemmEpilogues = true;
  /// Convolutions and the calls around them channels last (amprt-channels-
  /// last; off with keepValues).
  ChannelsLastChoice channelsLast = ChannelsLastChoice::Auto;
  /// The step as one graph, launched once a step (docs/amp-run.md, "Steps
  /// without waiting").
  StepGraph stepGraph = StepGraph::Auto;
  /// With amp: value ranges (--collect-ranges) the AMP pass keeps the
  /// nodes that would overflow or underflow fp32 by (its ranges= option).
  std::string ampRangesPath;
  /// The log gets a last column, `seconds`: wall time since the training
  /// loop started, when each step's results are back on the host. Off by
  /// default, so that a log is the same bytes run after run.
  bool logTime = false;
  bool progress = true;
  /// The most device memory the run may hold (amprt_set_memory_limit;
  /// 0: the device's): past it an allocation fails as on a full device.
  uint64_t memoryLimit = 0;
  /// Fail, rather than train at the model's own size, when --batch binds
  /// no graph input's leading dim (the batch search needs one to vary).
  bool requireBatchDim = false;
};

/// The device memory a run held (amprt_memory_stats of its context).
struct MemoryUse {
  uint64_t peak = 0;
  /// Allocations refused by the limit or the device: a run that failed
  /// with refusals did not fit.
  uint64_t refused = 0;
  uint64_t deviceFree = 0, deviceTotal = 0;
};

/// Trains as `options` say; progress to `status`. Returns the first error;
/// no output file (weights, checkpoint, log) is left half-written.
/// With `memory`, what the run held (also after a failure).
llvm::Error train(const TrainOptions &options, llvm::raw_ostream &status,
                  MemoryUse *memory = nullptr);

/// `bytes` as "12.34 MiB", for messages.
std::string formatMiB(uint64_t bytes);

/// `options` with no file written (-o, the log, checkpoints, the lowered
/// dump, the ranges) and no progress: a run inside another one (a
/// comparison's, a batch search's probe).
TrainOptions withoutOutputs(const TrainOptions &options);

/// The loss scale of step 0 that `options` give: the static scale, else
/// the dynamic scaler's initial one (kInitialLossScale).
double initialLossScale(const TrainOptions &options);

/// The dynamic loss scaler's initial scale (2^16, as PyTorch's GradScaler
/// and Apex start).
inline constexpr double kInitialLossScale = 65536.0;

} // namespace amp::driver

#endif // AMP_DRIVER_TRAINER_H
