//===- LoweringOptions.h - the lowering passes' option parsing ---*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: the `dims` option
// (name=size,...) that train-bind-dims and convert-train-to-amprt share.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_LOWERINGOPTIONS_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_LOWERINGOPTIONS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

namespace amp::lowering {

/// Parses `dims` ("batch=64,seq=128") into `out`; an error at `module`
/// naming `pass` and the bad entry.
inline mlir::LogicalResult parseDims(mlir::ModuleOp module,
                                     llvm::StringRef pass, llvm::StringRef dims,
                                     llvm::StringMap<int64_t> &out) {
  llvm::SmallVector<llvm::StringRef> parts;
  dims.split(parts, ',', -1, false);
  for (llvm::StringRef p : parts) {
    auto [k, v] = p.split('=');
    int64_t n;
    if (k.trim().empty() || v.trim().getAsInteger(10, n) || n < 0)
      return mlir::emitError(module.getLoc())
             << pass << ": bad dims entry '" << p << "' (expected name=size)";
    out[k.trim()] = n;
  }
  return mlir::success();
}

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_LOWERINGOPTIONS_H
