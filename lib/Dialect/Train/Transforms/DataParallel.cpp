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
// after it (docs/Distributed.md). With owners (ZeRO), each bucket is
// reduce-scattered to the parameters' owners instead: org.amp-mlir:
// ReduceScatter nodes whose outputs, the gradients this rank owns, replace
// those.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Collectives.h"
#include "amp/Dialect/Train/IR/OnnxSchema.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/CollectiveNodes.h"
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

/// The parameter whose gradient `g` is, by onnxruntime-training's names:
/// the <param> of the <param>_grad.accumulation.buffer it is accumulated
/// into, else of its own name <param>_grad; empty when neither says.
std::string parameterOf(GraphOp graph, Value g) {
  for (Operation *user : g.getUsers())
    if (isAccumulator(user) && user->getOperand(1) == g) {
      std::string buffer = getOnnxValueName(graph, user->getOperand(0));
      StringRef p = buffer;
      if (p.consume_back("_grad.accumulation.buffer"))
        return p.str();
    }
  std::string name = getOnnxValueName(graph, g);
  StringRef p = name;
  return p.consume_back("_grad") ? p.str() : std::string();
}

struct GraphResult {
  std::string graph;
  int64_t gradients = 0, bytes = 0, buckets = 0, syncedNorms = 0;
  /// With owners: the gradients this rank owns.
  int64_t owned = 0;
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
    if (failed(parseOwners(module)))
      return signalPassFailure();
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
                     << llvm::format("%.2f", double(r.bytes) / 1e6) << " MB, "
                     << (owners.empty() ? "reduced" : "reduce-scattered")
                     << " (" << reduction << ") in " << r.buckets << " bucket"
                     << (r.buckets == 1 ? "" : "s") << " of at most "
                     << llvm::format("%g", bucketMB.getValue()) << " MB";
        if (!owners.empty())
          llvm::errs() << " to their owners over " << int64_t(ranks)
                       << " ranks (rank " << int64_t(rank) << " owns "
                       << r.owned << ")";
        if (r.syncedNorms)
          llvm::errs() << "; " << r.syncedNorms
                       << " batch normalizations synchronized (SyncBatchNorm)";
        llvm::errs() << "\n";
      }
    }
  }

  /// With owners: each parameter's owner rank.
  llvm::StringMap<int64_t> ownerOf;

  LogicalResult parseOwners(ModuleOp module) {
    ownerOf.clear();
    if (owners.empty())
      return success();
    if (ranks < 1 || rank < 0 || rank >= ranks)
      return module.emitError()
             << "train-data-parallel: with owners, ranks must be at least 1 "
                "and rank in [0, ranks) (ranks "
             << int64_t(ranks) << ", rank " << int64_t(rank) << ")";
    for (const std::string &entry : owners) {
      auto [param, r] = StringRef(entry).rsplit('=');
      int64_t v;
      if (param.empty() || r.getAsInteger(10, v) || v < 0 || v >= ranks)
        return module.emitError()
               << "train-data-parallel: owners entry '" << entry
               << "' is not <param>=<rank> with a rank below "
               << int64_t(ranks);
      if (!ownerOf.try_emplace(param, v).second)
        return module.emitError() << "train-data-parallel: parameter '" << param
                                  << "' has two owners";
    }
    return success();
  }

  /// Whatever the graph read as gradient `g` (its accumulators, optimizers,
  /// sequences and outputs) reads `reduced` instead, which takes `g`'s name
  /// (`g` becomes <name>.local); a use that goes on computing the backward
  /// pass keeps the rank's own value.
  void useReduced(GraphEditor &editor, Value g, Value reduced,
                  Operation *node) {
    std::string name = getOnnxValueName(editor.getGraph(), g);
    editor.renameValue(g, editor.uniqueValueName(name + ".local"));
    editor.renameValue(reduced, name);
    g.replaceUsesWithIf(reduced, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return user != node && (isAccumulator(user) || getOptimizerInfo(user) ||
                              isa<SequenceConstructOp, ReturnOp>(user));
    });
  }

  /// Bucket `k` reduce-scattered to the owners: one node per element type,
  /// its gradients in the order of their owners; this rank's outputs
  /// replace the gradients it owns.
  LogicalResult reduceScatter(GraphEditor &editor, GraphOp graph,
                              ArrayRef<Value> bucket, size_t k,
                              GraphResult &result) {
    SmallVector<Type> elems;
    for (Value g : bucket) {
      Type e = cast<TensorType>(g.getType()).getElementType();
      if (!llvm::is_contained(elems, e))
        elems.push_back(e);
    }
    MLIRContext *ctx = graph.getContext();
    for (auto [j, elem] : llvm::enumerate(elems)) {
      SmallVector<std::pair<int64_t, Value>> owned;
      for (Value g : bucket) {
        if (cast<TensorType>(g.getType()).getElementType() != elem)
          continue;
        std::string param = parameterOf(graph, g);
        auto it = ownerOf.find(param);
        if (it == ownerOf.end())
          return emitError(g.getLoc())
                 << "train-data-parallel: gradient '"
                 << getOnnxValueName(graph, g) << "' (parameter '" << param
                 << "') has no owner in owners=";
        owned.push_back({it->second, g});
      }
      llvm::stable_sort(owned, [](const auto &a, const auto &b) {
        return a.first < b.first;
      });
      SmallVector<Value> inputs;
      SmallVector<int64_t> ownerList;
      SmallVector<Type> types;
      for (auto [r, g] : owned) {
        inputs.push_back(g);
        ownerList.push_back(r);
        if (r == rank)
          types.push_back(g.getType());
      }
      result.owned += types.size();
      std::string name = "data_parallel/reduce_scatter_" + std::to_string(k);
      if (elems.size() > 1)
        name += "_" + std::to_string(j);
      auto attr = [&](StringRef n, Attribute a) {
        return NamedAttribute(StringAttr::get(ctx, n), a);
      };
      NodeOp node = createCollective(
          editor, bucket.back().getDefiningOp()->getLoc(), kReduceScatterOpType,
          types, inputs,
          {attr(kReductionAttr, StringAttr::get(ctx, reduction)),
           attr(kOwnersAttr, DenseI64ArrayAttr::get(ctx, ownerList)),
           attr(kRankAttr, editor.builder.getI64IntegerAttr(rank)),
           attr(kRanksAttr, editor.builder.getI64IntegerAttr(ranks))},
          name);
      unsigned out = 0;
      for (auto [r, g] : owned)
        if (r == rank)
          useReduced(editor, g, node.getResult(out++), node);
    }
    return success();
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

    MLIRContext *ctx = graph.getContext();
    NamedAttribute reductionAttr(StringAttr::get(ctx, kReductionAttr),
                                 StringAttr::get(ctx, reduction));
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      Operation *last = bucket.back().getDefiningOp();
      editor.builder.setInsertionPointAfter(last);
      if (!ownerOf.empty()) {
        if (failed(reduceScatter(editor, graph, bucket, k, result)))
          return failure();
        continue;
      }
      SmallVector<Type> types;
      for (Value g : bucket)
        types.push_back(g.getType());
      NodeOp node = createCollective(
          editor, last->getLoc(), kAllReduceOpType, types, bucket,
          {reductionAttr}, "data_parallel/all_reduce_" + std::to_string(k));
      for (auto [g, reduced] : llvm::zip(bucket, node.getResults()))
        useReduced(editor, g, reduced, node);
    }
    // A reader of a bucket's first gradients may come before its last:
    // a stable topological sort puts every reader after the reduction.
    if (!sortTopologically(&body))
      return graph.emitError("train-data-parallel: the graph has a cycle");
    return success();
  }
};

} // namespace
