//===- DataParallel.cpp - gradients reduced across data-parallel ranks ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// train-data-parallel: the gradients a training graph feeds its
// accumulators and optimizers, in the order they are computed, grouped in
// buckets of at most bucket-mb; each bucket one org.amp-mlir:AllReduce node
// after its last gradient, whose outputs replace the gradients everywhere
// after it (docs/Distributed.md).
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Collectives.h"
#include "amp/Dialect/Train/IR/OnnxSchema.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/GraphEditor.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Dialect/Train/Transforms/TrainingNodes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Format.h"

namespace amp::train {
#define GEN_PASS_DEF_TRAINDATAPARALLEL
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;

namespace {

/// The bytes of a tensor of type `type`, or nullopt when its shape is not
/// static.
std::optional<int64_t> bytesOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape() || !t.getElementType().isIntOrFloat())
    return std::nullopt;
  return t.getNumElements() *
         int64_t((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// The bytes of gradient `g`: its type's, else (a gradient the graph left
/// untyped) the accumulation buffer's it is added to.
std::optional<int64_t> gradientBytes(Value g) {
  if (std::optional<int64_t> b = bytesOf(g.getType()))
    return b;
  for (Operation *user : g.getUsers())
    if (isAccumulator(user) && user->getOperand(1) == g)
      if (std::optional<int64_t> b = bytesOf(user->getOperand(0).getType()))
        return b;
  return std::nullopt;
}

struct GraphResult {
  std::string graph;
  int64_t gradients = 0, bytes = 0, buckets = 0, syncedNorms = 0;
};

struct TrainDataParallel
    : public amp::train::impl::TrainDataParallelBase<TrainDataParallel> {
  using TrainDataParallelBase::TrainDataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (reduction != "mean" && reduction != "sum") {
      module.emitError() << "train-data-parallel: unknown reduction '"
                         << reduction << "' (expected mean or sum)";
      return signalPassFailure();
    }
    if (!(bucketMB > 0) || !std::isfinite(bucketMB)) {
      module.emitError()
          << "train-data-parallel: bucket-mb must be a positive number";
      return signalPassFailure();
    }
    SmallVector<GraphResult> results;
    for (GraphOp graph : module.getOps<GraphOp>()) {
      GraphResult &r = results.emplace_back();
      r.graph = graph.getSymName().str();
      if (failed(runOnGraph(graph, r)))
        return signalPassFailure();
    }
    if (summary) {
      llvm::errs() << "Data parallel (train-data-parallel):\n";
      for (const GraphResult &r : results) {
        llvm::errs() << "  " << r.graph << ": " << r.gradients << " gradients, "
                     << llvm::format("%.2f", double(r.bytes) / 1e6)
                     << " MB, reduced (" << reduction << ") in " << r.buckets
                     << " bucket" << (r.buckets == 1 ? "" : "s")
                     << " of at most "
                     << llvm::format("%g", bucketMB.getValue()) << " MB";
        if (r.syncedNorms)
          llvm::errs() << "; " << r.syncedNorms
                       << " batch normalizations synchronized (SyncBatchNorm)";
        llvm::errs() << "\n";
      }
    }
  }

  LogicalResult runOnGraph(GraphOp graph, GraphResult &result) {
    Block &body = graph.getBody().front();
    // The gradients computed here: a graph input (an optimizer model's
    // gradients) was reduced where it was computed.
    SmallVector<Value> gradients;
    for (Value g : getAccumulatedGradients(graph)) {
      Operation *def = g.getDefiningOp();
      if (!def || def->getBlock() != &body || isa<InitializerOp>(def))
        continue;
      auto t = dyn_cast<TensorType>(g.getType());
      if (!t || !isa<FloatType>(t.getElementType()))
        continue;
      gradients.push_back(g);
    }
    if (gradients.empty())
      return success();
    // SyncBatchNorm: the training graph's batch normalizations take the
    // global batch's statistics (the lowering's *_sync kernels).
    if (syncBatchNorm)
      for (Operation &op : body) {
        auto node = dyn_cast<OnnxNodeOpInterface>(op);
        if (!node)
          continue;
        StringRef type = node.getOnnxOpType(),
                  domain = normalizeOnnxDomain(node.getOnnxDomain());
        auto mode = dyn_cast_or_null<IntegerAttr>(
            getOnnxAttribute(&op, "training_mode"));
        bool bn =
            (domain.empty() && type == "BatchNormalization" && mode &&
             mode.getInt() != 0) ||
            (domain == "com.microsoft" &&
             (type == "BatchNormInternal" || type == "BatchNormalizationGrad"));
        if (bn) {
          op.setAttr(kSyncBatchNormAttr, UnitAttr::get(graph.getContext()));
          ++result.syncedNorms;
        }
      }
    // In the order they are computed.
    llvm::stable_sort(gradients, [](Value a, Value b) {
      return a.getDefiningOp()->isBeforeInBlock(b.getDefiningOp());
    });

    GraphEditor editor(graph);
    // At most 1 TB: no overflow of the byte counts.
    int64_t limit = int64_t(std::min(bucketMB.getValue(), 1e6) * 1e6);
    SmallVector<SmallVector<Value>> buckets;
    int64_t fill = 0;
    for (Value g : gradients) {
      // A gradient of unknown size is a bucket of its own.
      std::optional<int64_t> bytes = gradientBytes(g);
      int64_t b = bytes.value_or(limit);
      if (buckets.empty() || fill + b > limit) {
        buckets.emplace_back();
        fill = 0;
      }
      buckets.back().push_back(g);
      fill += b;
      result.bytes += bytes.value_or(0);
    }
    result.gradients = gradients.size();
    result.buckets = buckets.size();

    editor.importOpset(kAmpDomain, 1);
    MLIRContext *ctx = graph.getContext();
    auto attrs = DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, kReductionAttr),
                             StringAttr::get(ctx, reduction))});
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      Operation *last = bucket.back().getDefiningOp();
      editor.builder.setInsertionPointAfter(last);
      SmallVector<Type> types;
      for (Value g : bucket)
        types.push_back(g.getType());
      auto node = NodeOp::create(editor.builder, last->getLoc(), types, bucket,
                                 kAmpDomain, kAllReduceOpType, attrs,
                                 editor.builder.getStrArrayAttr({}), 0);
      editor.name(node, "data_parallel/all_reduce_" + std::to_string(k));
      for (auto [g, reduced] : llvm::zip(bucket, node.getResults())) {
        // The reduced gradient is the one the graph names: the rank's own
        // becomes <name>.local.
        std::string name = getOnnxValueName(graph, g);
        editor.renameValue(g, editor.uniqueValueName(name + ".local"));
        editor.renameValue(reduced, name);
        // What the accumulators, the optimizers and the graph's outputs
        // read; a use that goes on computing the backward pass keeps the
        // rank's own value.
        g.replaceUsesWithIf(reduced, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          return user != node &&
                 (isAccumulator(user) || getOptimizerInfo(user) ||
                  isa<SequenceConstructOp, ReturnOp>(user));
        });
      }
    }
    // A reader of a bucket's first gradients may come before its last:
    // a stable topological sort puts every reader after the reduction.
    if (!sortTopologically(&body))
      return graph.emitError("train-data-parallel: the graph has a cycle");
    return success();
  }
};

} // namespace
