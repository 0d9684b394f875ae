//===- AMPDot.h - Graphviz view of AMP decisions ----------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_AMPDOT_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_AMPDOT_H

#include "amp/Dialect/Train/Transforms/AMPReport.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace amp::train {

/// Writes the graphs of `module` (after the AMP rewrite) as Graphviz dot to
/// `path`: one box per ONNX node, filled by its precision (low precision
/// green, fp32 deny-list red, other fp32 grey), the casts the pass inserted as
/// orange diamonds, graph inputs and initializers as plain ellipses, and each
/// edge labelled with the element type it carries.
llvm::Error writeAMPDot(mlir::ModuleOp module, const AMPReport &report,
                        llvm::StringRef path);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPDOT_H
