//===- AutoMixedPrecision.cpp - Automatic mixed precision pass ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Paints (node, ONNX type constraint) vertices allow/deny following the
// Grappler auto_mixed_precision algorithm, changes the element type of the
// ALLOW vertices' ports to f16/bf16 and inserts train.Cast nodes on the edges
// whose two ends disagree. See docs/AutoMixedPrecision.md.
//
// This file holds the pass: its options (mode, lists, keep-fp32), the
// rewriter (AMPGraphRewriter.h) run on each train.graph, AMPOpInterface
// painting of other dialects' functions, and the summary, report and dot
// outputs.
//
//===----------------------------------------------------------------------===//

#include "AMPGraphRewriter.h"
#include "amp/Dialect/Train/IR/SymbolicDims.h"
#include "amp/Dialect/Train/Transforms/AMPDot.h"
#include "amp/Dialect/Train/Transforms/AMPInterfaceRewriter.h"
#include "amp/Dialect/Train/Transforms/FunctionTypes.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

namespace amp::train {
#define GEN_PASS_DEF_AUTOMIXEDPRECISION
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;
using namespace amp::train::detail;

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct AutoMixedPrecisionPass
    : public amp::train::impl::AutoMixedPrecisionBase<AutoMixedPrecisionPass> {
  using AutoMixedPrecisionBase::AutoMixedPrecisionBase;
  AutoMixedPrecisionPass(AutoMixedPrecisionOptions options, AMPReport *out)
      : AutoMixedPrecisionBase(std::move(options)), out(out) {}

  /// Where the API (createAutoMixedPrecision with a report) wants the report.
  AMPReport *out = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<AMPMode> parsedMode = parseAMPMode(mode);
    if (!parsedMode) {
      module.emitError() << "auto-mixed-precision: unknown mode '" << mode
                         << "' (expected fp16 or bf16)";
      return signalPassFailure();
    }

    AMPLists amLists = AMPLists::getDefaults(*parsedMode);
    if (!lists.empty()) {
      auto loaded = AMPLists::loadJSON(lists);
      if (!loaded) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      amLists = std::move(*loaded);
    }
    amLists.applyEnvironment();
    // Pass options come after the environment: adds, then removes, per list.
    auto edit = [&](AMPList list, ArrayRef<std::string> adds,
                    ArrayRef<std::string> removes) {
      for (const std::string &e : adds)
        amLists.add(list, e);
      for (const std::string &e : removes)
        amLists.remove(list, e);
    };
    edit(AMPList::Allow, allowAdd, allowRemove);
    edit(AMPList::Deny, denyAdd, denyRemove);
    edit(AMPList::Infer, inferAdd, inferRemove);
    edit(AMPList::Clear, clearAdd, clearRemove);
    SmallVector<std::string> conflicts = amLists.findConflicts();
    if (!conflicts.empty()) {
      for (const std::string &msg : conflicts)
        module.emitError() << "auto-mixed-precision: op lists have "
                              "conflicting entries: "
                           << msg;
      return signalPassFailure();
    }

    llvm::StringSet<> keepNames;
    SmallVector<llvm::Regex> keepRegexes;
    for (const std::string &k : keepFp32) {
      keepNames.insert(k);
      llvm::Regex re("^(" + k + ")$");
      std::string err;
      if (!re.isValid(err)) {
        module.emitError() << "auto-mixed-precision: keep-fp32 entry '" << k
                           << "' is not a valid regular expression: " << err;
        return signalPassFailure();
      }
      keepRegexes.push_back(std::move(re));
    }

    AMPRanges measured;
    AMPRangePolicy rangePolicy;
    if (!ranges.empty()) {
      auto loaded = readAMPRanges(ranges);
      if (!loaded) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      if (!(rangeMargin >= 1) ||
          !(underflowLimit >= 0 && underflowLimit <= 1) ||
          !(resolutionLimit >= 0 && resolutionLimit <= 1)) {
        module.emitError() << "auto-mixed-precision: range-margin must be at "
                              "least 1, underflow-limit and resolution-limit "
                              "in [0, 1]";
        return signalPassFailure();
      }
      measured = std::move(*loaded);
      rangePolicy = {&measured, rangeMargin, underflowLimit, resolutionLimit};
    }

    llvm::StringMap<int64_t> dimBindings;
    if (failed(parseDimBindings(module.getLoc(), "auto-mixed-precision", dims,
                                dimBindings)))
      return signalPassFailure();

    // Model-local functions get the types their calls give them first
    // (FunctionTypes.h), which types the calls' results in the graphs too;
    // one that cannot be typed is left as it is, with a warning saying why.
    SmallVector<FunctionOp> typedFunctions;
    for (FunctionOp fn : llvm::to_vector(module.getOps<FunctionOp>())) {
      if (std::optional<std::string> why = typeFunctionFromCalls(module, fn))
        emitWarning(fn.getLoc()) << "auto-mixed-precision: function '"
                                 << fn.getOnnxName() << "' left fp32: " << *why;
      else
        typedFunctions.push_back(fn);
    }

    AMPReport rep;
    rep.mode = *parsedMode;
    rep.rangesPath = ranges;
    for (GraphOp graph : module.getOps<GraphOp>()) {
      AMPGraphRewriter rewriter(
          graph, amLists, *parsedMode, keepRegexes, keepNames, rangePolicy, rep,
          /*records=*/out || !report.empty() || !dot.empty());
      rewriter.setDimBindings(&dimBindings);
      rewriter.run();
    }
    // Model-local functions (train.function), typed above, painted as
    // graphs are.
    for (FunctionOp fn : typedFunctions) {
      AMPGraphRewriter rewriter(
          fn, amLists, *parsedMode, keepRegexes, keepNames, rangePolicy, rep,
          /*records=*/out || !report.empty() || !dot.empty());
      rewriter.setDimBindings(&dimBindings);
      rewriter.run();
    }
    // Functions of other dialects' ops (linalg, arith, math, tosa, ...):
    // painted through AMPOpInterface.
    // Pre-order, so that skipping a function skips its body: a train.graph
    // of a million nodes is not walked again here.
    module.walk<WalkOrder::PreOrder>([&](FunctionOpInterface fn) {
      if (isa<TrainDialect>(fn->getDialect()) || fn.isExternal())
        return WalkResult::skip();
      runAMPOnFunction(fn, amLists, *parsedMode, keepRegexes, keepNames, rep,
                       /*records=*/out || !report.empty() || !dot.empty());
      return WalkResult::skip();
    });

    if (summary) {
      if (rep.foundAllowOps)
        rep.printSummary(llvm::errs());
      else
        llvm::errs() << "auto-mixed-precision: no allowlist ops found, nothing "
                        "to do\n";
    }
    if (!report.empty())
      if (llvm::Error err = rep.writeJSON(report)) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(std::move(err));
        return signalPassFailure();
      }
    if (!dot.empty())
      if (llvm::Error err = writeAMPDot(module, rep, dot)) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(std::move(err));
        return signalPassFailure();
      }
    if (out)
      *out = std::move(rep);
  }
};
} // namespace

std::unique_ptr<Pass>
amp::train::createAutoMixedPrecision(AutoMixedPrecisionOptions options,
                                     AMPReport *report) {
  return std::make_unique<AutoMixedPrecisionPass>(std::move(options), report);
}
