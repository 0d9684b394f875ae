//===- LoweredForm.h - the attributes of a lowered training step -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The contract between `convert-train-to-runtime` (which writes a lowered
// `func.func` of `amprt.call`s), the drivers that feed it and the
// interpreter that runs it (lib/Execution): the names of the attributes on
// the lowered function, its arguments and results. docs/Lowering.md
// describes the lowered form.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_AMPRT_LOWEREDFORM_H
#define AMP_DIALECT_AMPRT_LOWEREDFORM_H

namespace amp {

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
/// Attribute of a temporary (an unplanned `memref.alloc`, a planned
/// `memref.view`): the ONNX value it holds (a node output's name), for
/// diagnostics that report by value (amp-run --collect-ranges).
inline constexpr const char *kValueAttr = "amprt.value";
/// Attribute (unit) of a planned `memref.view` that is another temporary's
/// memory seen with another shape (a reshape the plan made a view, whose
/// call is gone): no call writes it first; reading it reads the other.
inline constexpr const char *kAliasAttr = "amprt.alias";
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

#endif // AMP_DIALECT_AMPRT_LOWEREDFORM_H
