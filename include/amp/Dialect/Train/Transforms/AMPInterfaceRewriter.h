//===- AMPInterfaceRewriter.h - AMP on ops of any dialect -------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_AMPINTERFACEREWRITER_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_AMPINTERFACEREWRITER_H

#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "amp/Dialect/Train/Transforms/AMPReport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"

namespace amp::train {

/// Runs the auto-mixed-precision painting and rewrite on the body of `fn`, a
/// function of upstream-dialect ops: the ops implementing AMPOpInterface
/// (amp/Interfaces) are the nodes, keyed `<dialect>:<op>` in the lists; all
/// other ops and the function's arguments and results keep their types,
/// with casts at the edges (the interface builds them). `keepNames` and
/// `keepRegexes` match an op's location name (`loc("name")`). Adds to
/// `report`.
void runAMPOnFunction(mlir::FunctionOpInterface fn, const AMPLists &lists,
                      AMPMode mode, llvm::ArrayRef<llvm::Regex> keepRegexes,
                      const llvm::StringSet<> &keepNames, AMPReport &report,
                      bool records);

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPINTERFACEREWRITER_H
