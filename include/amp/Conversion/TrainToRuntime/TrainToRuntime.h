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
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
#define AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace amp {

struct TrainToRuntimeOptions {
  /// Symbolic dims bound to sizes: "batch=64,seq=128".
  std::string dims;
  /// Reorder the calls where the step then holds less memory
  /// (docs/Lowering.md); off keeps the graph's node order (for tests of
  /// the other rewrites).
  bool schedule = true;
  /// The caller overwrites the gradient accumulators every step (feeds
  /// lazy_reset_grad true, a version-1 accumulate signal false): loss
  /// scaling's gate may follow the accumulation, so that no gradient waits
  /// for the all-finite flag (docs/Lowering.md). The lowered function then
  /// has kOverwriteAccumulatorsAttr.
  bool overwriteAccumulators = false;
  /// The caller fills the batches of data itself and can convert f32
  /// samples to f16/bf16 (round to nearest even) as it copies them: an f32
  /// data input (a dim bound by `dims`) that the graph only casts to one
  /// 16-bit type is taken in that type, and its argument has
  /// kNarrowedFromAttr (docs/Lowering.md).
  bool narrowInputs = false;
};

std::unique_ptr<mlir::Pass>
createConvertTrainToRuntimePass(const TrainToRuntimeOptions &options = {});

/// Registers `convert-train-to-runtime` with the global pass registry.
void registerConvertTrainToRuntimePass();

/// Arg attribute a caller sets on a `!train.seq<...>` graph input to give
/// its element types (an ArrayAttr of TypeAttr, static tensor types): the
/// lowering expands the sequence into that many memref arguments.
inline constexpr const char *kSeqTypesAttr = "amprt.seq_types";
/// Arg/result attribute of the lowered function: the ONNX name of a graph
/// input or output (a sequence element: "<name>[i]").
inline constexpr const char *kNameAttr = "amprt.name";
/// Arg attribute of the lowered function on a boolean input that an
/// `InPlaceAccumulator` (version 1) reads as its signal: "accumulate" (true
/// adds to the buffer, false overwrites it). A training loop that never
/// accumulates across steps feeds it false; the `lazy_reset_grad` input of
/// `InPlaceAccumulatorV2` graphs means "overwrite" and is fed true.
inline constexpr const char *kAccumulateSignalAttr = "amprt.accumulate_signal";
/// Module attribute: arena bytes (peak activation memory) per function.
inline constexpr const char *kArenaBytesAttr = "amprt.arena_bytes";
/// Function attribute: what the arena holds at the call where most of it is
/// alive, in bytes, by kind (a dictionary with the keys of kArenaRoles):
/// activations (node outputs), gradients (node outputs named `<x>_grad...`,
/// as ORT's gradient builder names them), weight copies (casts of graph
/// inputs of static shape: AMP's 16-bit weights) and workspace
/// (intermediates of lowerings that are no ONNX value).
inline constexpr const char *kArenaSplitAttr = "amprt.arena_split";
/// Function attribute: the function assumes its gradient accumulators are
/// overwritten every step (TrainToRuntimeOptions::overwriteAccumulators).
inline constexpr const char *kOverwriteAccumulatorsAttr =
    "amprt.overwrite_accumulators";
/// Arg attribute of the lowered function: the argument is a data input the
/// graph gives in this type (a TypeAttr, f32), taken in the argument's
/// 16-bit type instead (TrainToRuntimeOptions::narrowInputs). The caller
/// rounds each value to nearest even into it, as the graph's cast would.
inline constexpr const char *kNarrowedFromAttr = "amprt.narrowed_from";
inline constexpr const char *kArenaRoles[] = {"activations", "gradients",
                                              "weight_copies", "workspace"};

} // namespace amp

#endif // AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
