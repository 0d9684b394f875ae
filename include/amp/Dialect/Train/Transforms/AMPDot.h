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

/// How one ONNX node is drawn: its fill colour ("#rrggbb"), shape (a
/// Graphviz shape name), an extra label line and a tooltip (may be empty).
struct DotNodeStyle {
  std::string fill = "#d9d9d9", shape = "box", extraLine, tooltip;
};
/// Writes the graphs of `module` as Graphviz dot to `path`, whole or not at
/// all: one node per ONNX node ("name\nop_type", then `style`'s line),
/// graph inputs and initializers as ellipses, each edge labelled with the
/// element type it carries. writeAMPDot draws with it.
llvm::Error
writeGraphDot(mlir::ModuleOp module, llvm::StringRef path,
              llvm::function_ref<DotNodeStyle(llvm::StringRef name,
                                              llvm::StringRef opType)>
                  style);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPDOT_H
