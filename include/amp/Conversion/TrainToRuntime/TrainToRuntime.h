//===- TrainToRuntime.h - lower train graphs to runtime calls ----*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// `convert-train-to-runtime`: every `train.graph` becomes a `func.func` on
// static memref buffers whose body is `amprt.call`s of the runtime kernels
// of include/amp/Runtime/Ops.def. Temporaries live in one arena
// (`memref.alloc` + `memref.view`), placed by liveness; initializers become
// `memref.global` constants. docs/Lowering.md describes the lowered form.
// It is a pipeline of the passes of amp/Conversion/Passes.td:
// train-bind-dims, convert-train-to-amprt, amprt-fuse, amprt-plan-buffers.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
#define AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H

#include "amp/Dialect/AmpRT/LoweredForm.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>

namespace amp {

/// Which convolutions run channels last, with the calls around them
/// (amprt-channels-last; docs/Lowering.md, "Channels last").
enum class ChannelsLast {
  /// None: every window channels first, as ONNX has it.
  Off,
  /// The regions of convolutions that compute in f16/bf16 (Tensor Cores).
  LowPrecision,
  /// The regions of every convolution.
  All
};

/// The spellings of ChannelsLast on a command line (`channels-last=`), for
/// the pass's option and the pipeline's.
inline auto channelsLastValues() {
  return llvm::cl::values(
      clEnumValN(ChannelsLast::Off, "off", "none"),
      clEnumValN(ChannelsLast::LowPrecision, "16bit",
                 "the regions of convolutions computing in f16/bf16"),
      clEnumValN(ChannelsLast::All, "all", "the regions of every convolution"));
}

struct TrainToRuntimeOptions {
  /// Symbolic dims bound to sizes: "batch=64,seq=128".
  std::string dims;
  /// Reorder the calls where the step then holds less memory
  /// (docs/Lowering.md); off keeps the graph's node order (for tests of
  /// the other rewrites).
  bool schedule = true;
  /// Every temporary holding an ONNX value keeps its own place in the arena
  /// to the function's end, so that each value can be read after the run
  /// (amp-run
  /// --compare-precision's fp32 run; amprt-plan-buffers' keep-values).
  bool keepValues = false;
  /// The caller overwrites the gradient accumulators every step (feeds
  /// lazy_reset_grad true, a version-1 accumulate signal false): loss
  /// scaling's gate may follow the accumulation, so that no gradient waits
  /// for the all-finite flag (docs/Lowering.md). The lowered function then
  /// has kOverwriteAccumulatorsAttr.
  bool overwriteAccumulators = false;
  /// Attention in f16/bf16 and its gradient become fused `attention` and
  /// `attention_grad` calls (amprt-fuse's fuse-attention; docs/Lowering.md).
  bool fuseAttention = true;
  /// A MatMul with a 2-D weight and the Add of its bias become one gemm, a
  /// product and the activation gradient that reads it one gemm_act_grad
  /// (amprt-fuse's fuse-gemm-epilogues; docs/Lowering.md).
  bool fuseGemmEpilogues = true;
  /// The caller fills the batches of data itself and can convert f32
  /// samples to f16/bf16 (round to nearest even) as it copies them: an f32
  /// data input (a dim bound by `dims`) that the graph only casts to one
  /// 16-bit type is taken in that type, and its argument has
  /// kNarrowedFromAttr (docs/Lowering.md).
  bool narrowInputs = false;
  /// Convolutions and the calls around them channels last, the layout
  /// changed at the region's edges (amprt-channels-last).
  ChannelsLast channelsLast = ChannelsLast::Off;
};

/// Adds the passes of `convert-train-to-runtime` to `pm` (on modules).
void buildConvertTrainToRuntimePipeline(mlir::OpPassManager &pm,
                                        const TrainToRuntimeOptions &options);

/// Registers the passes of the lowering (amp/Conversion/Passes.td) and the
/// pipeline `convert-train-to-runtime` with the global registries.
void registerConvertTrainToRuntimePasses();

} // namespace amp

#endif // AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
