//===- LoweringTable.h - the op families by (domain, op_type) ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: the table GraphLowering::
// lowerNode dispatches through (LoweringTable.cpp), and the domains its
// keys use.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_LOWERINGTABLE_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_LOWERINGTABLE_H

#include "GraphLowering.h"

#include "llvm/ADT/StringMap.h"

namespace amp::lowering {

/// The default ONNX domain ("" and "ai.onnx").
inline constexpr const char *kOnnxDomain = "";
inline constexpr const char *kMicrosoftDomain = "com.microsoft";
inline constexpr const char *kPreviewTrainingDomain =
    "ai.onnx.preview.training";

class GraphLowering::FamilyTable {
public:
  /// Lists `f` for each of `types` in `domain`.
  void add(StringRef domain, ArrayRef<StringRef> types, Family f);
  /// The families of (domain, type), in the order they were added.
  ArrayRef<Family> lookup(StringRef domain, StringRef type) const;
  /// Every family added, in the order first added.
  ArrayRef<Family> families() const { return order; }

private:
  llvm::StringMap<SmallVector<Family, 2>> map;
  SmallVector<Family> order;
};

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_LOWERINGTABLE_H
