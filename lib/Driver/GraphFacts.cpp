//===- GraphFacts.cpp - what the execution layer reads off a graph --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/GraphFacts.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>

using namespace mlir;
using namespace amp;
using namespace amp::driver;

StringRef amp::driver::opTypeOf(Operation *op) {
  auto node = dyn_cast<train::OnnxNodeOpInterface>(op);
  return node ? node.getOnnxOpType() : StringRef();
}

bool amp::driver::isOptimizerOp(Operation *op) {
  StringRef t = opTypeOf(op);
  return llvm::is_contained(kLoweredOptimizerOps, t) ||
         llvm::is_contained(kPreviewOptimizerOps, t);
}

bool amp::driver::containsOptimizer(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return isOptimizerOp(op) ? WalkResult::interrupt()
                                 : WalkResult::advance();
      })
      .wasInterrupted();
}

void amp::driver::inlineFrozenIntegers(
    train::GraphOp graph,
    llvm::function_ref<const HostTensor *(StringRef name)> valueOf) {
  llvm::StringSet<> outputs;
  for (unsigned i = 0; i < graph.getNumResults(); ++i)
    if (auto n = graph.getResultAttrOfType<StringAttr>(i, "train.name"))
      outputs.insert(n.getValue());
  // The ops whose lowering updates an input in place (the in-place
  // kernels of PlannedCalls.cpp: accumulators and optimizers).
  auto updatesInPlace = [](Operation *op) {
    return isOptimizerOp(op) ||
           llvm::is_contained({"InPlaceAccumulator", "InPlaceAccumulatorV2"},
                              opTypeOf(op));
  };
  OpBuilder b(graph.getContext());
  b.setInsertionPointToStart(&graph.getBody().front());
  for (unsigned i = 0; i < graph.getNumArguments(); ++i) {
    auto n = graph.getArgAttrOfType<StringAttr>(i, "train.name");
    auto t = dyn_cast<RankedTensorType>(graph.getArgumentTypes()[i]);
    BlockArgument arg = graph.getBody().front().getArgument(i);
    if (!n || !t || !t.hasStaticShape() || arg.use_empty() ||
        !(t.getElementType().isInteger(64) ||
          t.getElementType().isInteger(32)) ||
        outputs.contains((n.getValue() + ".out").str()) ||
        llvm::any_of(arg.getUsers(), updatesInPlace))
      continue;
    const HostTensor *found = valueOf(n.getValue());
    if (!found)
      continue;
    const HostTensor &h = *found;
    bool wide = t.getElementType().isInteger(64);
    if (h.numel() > 4096 || h.dtype != (wide ? AMPRT_I64 : AMPRT_I32) ||
        !llvm::equal(h.shape, t.getShape()))
      continue;
    bool exact = true;
    for (int64_t k = 0; k < h.numel() && exact; ++k) {
      int64_t v;
      if (wide)
        std::memcpy(&v, h.data.data() + 8 * k, 8);
      else
        v = reinterpret_cast<const int32_t *>(h.data.data())[k];
      // INT64_MIN / INT64_MAX ("to the end" of a Slice) survive the
      // doubles: host folding saturates them back.
      exact = (v >= -(int64_t(1) << 53) && v <= (int64_t(1) << 53)) ||
              v == INT64_MAX || v == INT64_MIN;
    }
    if (!exact)
      continue;
    auto value = DenseElementsAttr::getFromRawBuffer(
        t, ArrayRef<char>(h.data.data(), h.data.size()));
    auto init = train::InitializerOp::create(
        b, arg.getLoc(), t, b.getStringAttr(n.str() + ".frozen"), value,
        /*raw=*/nullptr, /*sparse=*/nullptr, /*doc_string=*/nullptr,
        /*external=*/nullptr);
    arg.replaceAllUsesWith(init.getResult());
  }
}
