//===- LossScaling.cpp - Loss scaling for mixed-precision training --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Scales the loss gradient, unscales the gradients in fp32, computes one
// all-finite flag, skips the update when it is false and (dynamic mode)
// updates the scale with PyTorch GradScaler semantics. Everything is built
// from standard ONNX ops so the exported graph stays valid ONNX and runs
// anywhere; the scale state is graph inputs/outputs so it checkpoints.
// See docs/LossScaling.md.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Collectives.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/CollectiveNodes.h"
#include "amp/Dialect/Train/Transforms/GraphEditor.h"
#include "amp/Dialect/Train/Transforms/LossScalingReport.h"
#include "amp/Dialect/Train/Transforms/LossScalingState.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Dialect/Train/Transforms/TrainingNodes.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Regex.h"
#include <cmath>

namespace amp::train {
#define GEN_PASS_DEF_LOSSSCALING
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;

namespace {

constexpr llvm::StringLiteral kPrefix = "amp.loss_scaling/";

struct LossScalingConfig {
  bool dynamic = true;
  double initScale = 65536.0, growthFactor = 2.0, backoffFactor = 0.5;
  int64_t growthInterval = 2000;
  double minScale = 1.0, maxScale = 16777216.0;
  std::string seed;
  SmallVector<std::string> gradients;
};

/// What the pass did to one graph, for the summary (public for the C++ API).
using GraphRecord = LossScalingGraphRecord;

static StringRef opTypeOf(Operation *op) {
  return cast<OnnxNodeOpInterface>(op).getOnnxOpType();
}

static bool isLossGradOp(Operation *op) {
  static const llvm::Regex re("(Loss[A-Za-z]*Grad|CrossEntropyGrad)$");
  return re.match(opTypeOf(op));
}

static bool isFloatTensor(Value v) {
  auto t = dyn_cast<TensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

class GraphLossScaler {
public:
  GraphLossScaler(GraphOp graph, const LossScalingConfig &config,
                  GraphRecord &record)
      : graph(graph), config(config), record(record), editor(graph) {
    MLIRContext *ctx = graph.getContext();
    f32 = Float32Type::get(ctx);
    scalarF32 = RankedTensorType::get({}, f32);
    scalarI64 = RankedTensorType::get({}, IntegerType::get(ctx, 64));
    scalarI1 = RankedTensorType::get({}, IntegerType::get(ctx, 1));
  }

  LogicalResult run();

private:
  LogicalResult findSeeds();
  void findGradients();
  LogicalResult checkOpset();

  Value scalarF32Const(StringRef name, double v) {
    return editor.addInitializer(
        (kPrefix + name).str(),
        DenseElementsAttr::get(scalarF32, APFloat(static_cast<float>(v))));
  }
  Value scalarI64Const(StringRef name, int64_t v) {
    return editor.addInitializer(
        (kPrefix + name).str(),
        DenseElementsAttr::get(scalarI64, APInt(64, v, /*isSigned=*/true)));
  }
  /// Names a new node `amp.loss_scaling/<what>`.
  template <typename OpT> OpT named(OpT op, const Twine &what) {
    editor.name(op.getOperation(), (kPrefix + what).str());
    return op;
  }
  /// Replaces the uses of `old` except in `except` by `repl`; a node output
  /// hands its ONNX name over to `repl` (graph outputs keep their names)
  /// and becomes `<name>.<suffix>`.
  void takeOver(Value old, Value repl, Operation *except, StringRef suffix);
  Value castTo(Value v, Type elementType, const Twine &what);
  /// A float graph input that carries a gradient into an optimizer graph.
  bool isGradientInput(BlockArgument arg) {
    auto n = graph.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                attrs::kValueName);
    return n && isFloatTensor(arg) &&
           (n.getValue().ends_with("_grad") ||
            n.getValue().ends_with("_grad.accumulation.buffer"));
  }

  GraphOp graph;
  const LossScalingConfig &config;
  GraphRecord &record;
  GraphEditor editor;
  Type f32;
  RankedTensorType scalarF32, scalarI64, scalarI1;

  SmallVector<Value> seeds;
  llvm::SetVector<Value> gradients; ///< produced in this graph
  SmallVector<std::pair<Operation *, OptimizerInfo>> optimizers;
  Value nonFloat; ///< a gradient candidate that is no float tensor
};

} // namespace

LogicalResult GraphLossScaler::findSeeds() {
  if (!config.seed.empty()) {
    Value v = editor.lookup(config.seed);
    if (!v)
      return graph.emitError("loss-scaling: seed '")
             << config.seed << "' names no value of the graph";
    if (!isFloatTensor(v))
      return graph.emitError("loss-scaling: seed '")
             << config.seed << "' is not a floating-point tensor";
    seeds.push_back(v);
    return success();
  }
  // ONNX Runtime's gradient builder names the seed after the loss: the
  // first graph output whose `<name>_grad` exists.
  ArrayAttr resAttrs = graph.getResAttrsAttr();
  for (unsigned i = 0, e = graph.getNumResults(); i < e; ++i) {
    auto dict = resAttrs ? dyn_cast<DictionaryAttr>(resAttrs[i]) : nullptr;
    auto n = dict ? dict.getAs<StringAttr>(attrs::kValueName) : nullptr;
    if (!n)
      continue;
    Value v = editor.lookup((n.getValue() + "_grad").str());
    if (v && isFloatTensor(v)) {
      seeds.push_back(v);
      return success();
    }
  }
  // Otherwise the loss-gradient ops' float outputs (some have no dY input:
  // their output is the loss gradient seeded with 1).
  for (Operation &op : graph.getBody().front())
    if (isa<OnnxNodeOpInterface>(op) && isLossGradOp(&op))
      for (Value r : op.getResults())
        if (isFloatTensor(r))
          seeds.push_back(r);
  return success();
}

void GraphLossScaler::findGradients() {
  Block &body = graph.getBody().front();
  auto producedHere = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && def->getBlock() == &body && !isa<InitializerOp>(def) &&
           isFloatTensor(v);
  };
  auto add = [&](Value v) {
    // A gradient that only feeds a Cast or Identity (e.g. the cast back to
    // fp32 that the AMP pass put before an accumulator) is unscaled after
    // it, once, in the precision the consumer gets.
    while (v.hasOneUse() && isa<CastOp, IdentityOp>(*v.getUsers().begin()) &&
           isFloatTensor(v.getUsers().begin()->getResult(0)))
      v = v.getUsers().begin()->getResult(0);
    if (producedHere(v) && !llvm::is_contained(seeds, v))
      gradients.insert(v);
    else if (v.getDefiningOp() && !isFloatTensor(v) && !nonFloat)
      nonFloat = v;
  };

  for (const std::string &n : config.gradients)
    if (Value v = editor.lookup(n))
      add(v);

  // `<param>_grad` for every graph input and initializer.
  for (BlockArgument arg : body.getArguments())
    if (Value v = editor.lookup(getOnnxValueName(graph, arg) + "_grad"))
      add(v);
  for (auto init : body.getOps<InitializerOp>())
    if (Value v = editor.lookup((init.getName() + "_grad").str()))
      add(v);

  // Gradients are leaves of the backward pass: a candidate from which
  // another one is computed (a named intermediate gradient) is not one.
  DenseSet<Operation *> ancestors;
  SmallVector<Operation *> stack;
  auto pushOperands = [&](Operation *op) {
    for (Value v : op->getOperands())
      if (Operation *d = v.getDefiningOp();
          d && d->getBlock() == &body && ancestors.insert(d).second)
        stack.push_back(d);
  };
  auto dropIntermediate = [&] {
    ancestors.clear();
    for (Value g : gradients)
      pushOperands(g.getDefiningOp());
    while (!stack.empty())
      pushOperands(stack.pop_back_val());
    gradients.remove_if(
        [&](Value g) { return ancestors.contains(g.getDefiningOp()); });
  };
  dropIntermediate();

  for (Operation &op : body) {
    if (!isa<OnnxNodeOpInterface>(op))
      continue;
    if (isAccumulator(&op)) {
      add(op.getOperand(1));
      continue;
    }
    std::optional<OptimizerInfo> info = getOptimizerInfo(&op);
    if (!info)
      continue;
    optimizers.push_back({&op, *info});
    for (unsigned i : info->gradientOperands) {
      Value g = op.getOperand(i);
      if (auto seq = g.getDefiningOp<SequenceConstructOp>())
        for (Value t : seq->getOperands())
          add(t);
      else
        add(g);
    }
  }
  // Once more over all of them, by value (a node's other outputs may feed
  // on, as BatchNormalizationGrad's dX does): a value named <param>_grad
  // that is reduced across data-parallel ranks (train-data-parallel)
  // before its accumulator is not the gradient, the reduced one is.
  DenseSet<Value> feeding;
  SmallVector<Value> work;
  for (Value g : gradients)
    if (Operation *d = g.getDefiningOp())
      work.append(d->operand_begin(), d->operand_end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *d = v.getDefiningOp();
    if (!feeding.insert(v).second || !d || d->getBlock() != &body)
      continue;
    work.append(d->operand_begin(), d->operand_end());
  }
  gradients.remove_if([&](Value g) { return feeding.contains(g); });
}

LogicalResult GraphLossScaler::checkOpset() {
  // IsNaN, Where and int64 Less exist from opset 9.
  int64_t v = editor.getOpsetVersion("");
  if (v != 0 && v < 9)
    return graph.emitError("loss-scaling: needs ONNX opset 9 or later (the "
                           "graph imports opset ")
           << v << ")";
  return success();
}

void GraphLossScaler::takeOver(Value old, Value repl, Operation *except,
                               StringRef suffix) {
  old.replaceAllUsesExcept(repl, except);
  Operation *def = old.getDefiningOp();
  if (!def || isa<InitializerOp>(def))
    return;
  std::string name = getOnnxValueName(graph, old);
  editor.renameValue(old, editor.uniqueValueName(name + "." + suffix.str()));
  editor.renameValue(repl, name);
}

Value GraphLossScaler::castTo(Value v, Type elementType, const Twine &what) {
  auto t = cast<TensorType>(v.getType());
  if (t.getElementType() == elementType)
    return v;
  int64_t to = getOnnxDataType(elementType).value_or(1);
  auto c =
      CastOp::create(editor.builder, graph.getLoc(), t.clone(elementType), v,
                     nullptr, nullptr, editor.builder.getI64IntegerAttr(to));
  return named(c, what).getResult();
}

LogicalResult GraphLossScaler::run() {
  record.graph = graph.getSymName().str();
  Block &body = graph.getBody().front();
  if (editor.lookup(kLossScaleName) || editor.lookup(kAllFiniteName)) {
    graph.emitWarning("loss-scaling: the graph already has '")
        << kAllFiniteName << "' or '" << kLossScaleName << "': left unchanged";
    record.nothing = true;
    return success();
  }
  if (failed(findSeeds()))
    return failure();
  findGradients();

  if (seeds.empty()) {
    if (!gradients.empty())
      return graph.emitError("loss-scaling: the graph computes gradients ('")
             << getOnnxValueName(graph, gradients.front())
             << "', ...) but no loss-gradient seed was found; name it with "
                "seed=";
    // Optimizer-only graph: the flag comes in from the training graph.
    bool gradInputs = llvm::any_of(body.getArguments(), [&](BlockArgument a) {
      return isGradientInput(a) && !a.use_empty();
    });
    if (optimizers.empty() && !gradInputs) {
      record.nothing = true;
      graph.emitWarning("loss-scaling: no loss gradient, gradients or "
                        "optimizer found in graph '")
          << graph.getSymName() << "': left unchanged";
      return success();
    }
  } else if (gradients.empty()) {
    InFlightDiagnostic diag =
        graph.emitError("loss-scaling: found the loss-gradient seed '")
        << getOnnxValueName(graph, seeds.front())
        << "' but no gradients (no accumulator, optimizer or <param>_grad "
           "value of a floating-point type); name them with gradients=";
    if (nonFloat)
      diag << " (gradient '" << getOnnxValueName(graph, nonFloat)
           << "' has element type " << nonFloat.getType() << ")";
    return diag;
  }
  if (failed(checkOpset()))
    return failure();

  OpBuilder &b = editor.builder;
  Location loc = graph.getLoc();
  Operation *terminator = body.getTerminator();
  b.setInsertionPoint(terminator);

  Value flag;
  Value zeroConst;
  auto zero = [&] {
    if (!zeroConst)
      zeroConst = scalarF32Const("zero", 0.0);
    return zeroConst;
  };
  if (seeds.empty()) {
    flag = editor.addInput(kAllFiniteName, scalarI1);
    record.flagIsInput = true;
    // Gradients that are graph inputs (inline update expressions): a skipped
    // step sees zeros.
    for (BlockArgument arg : body.getArguments()) {
      if (!isGradientInput(arg) || arg.use_empty())
        continue;
      // Uses that an optimizer gates itself keep the input.
      if (llvm::all_of(arg.getUsers(), [](Operation *u) {
            return isa<SequenceConstructOp>(u) || getOptimizerInfo(u);
          }))
        continue;
      Type et = cast<TensorType>(arg.getType()).getElementType();
      auto gated = named(WhereOp::create(b, loc, arg.getType(), flag, arg,
                                         castTo(zero(), et, "zero_cast")),
                         "gate/" + getOnnxValueName(graph, arg));
      arg.replaceUsesWithIf(gated.getResult(), [&](OpOperand &use) {
        Operation *u = use.getOwner();
        return u != gated && !isa<SequenceConstructOp>(u) &&
               !getOptimizerInfo(u);
      });
      ++record.zeroed;
    }
  } else {
    // The scale: state (dynamic) or a constant (static).
    Value scale, inv;
    if (config.dynamic) {
      scale = editor.addInput(kLossScaleName, scalarF32);
      inv =
          named(ReciprocalOp::create(b, loc, scalarF32, scale), "inverse_scale")
              .getResult();
    } else {
      scale = scalarF32Const("scale", config.initScale);
      inv = scalarF32Const("inverse_scale", 1.0 / config.initScale);
    }

    // Scale the seeds (in fp32, before any cast to low precision).
    for (Value s : seeds) {
      // Placement is fixed by the topological sort at the end.
      b.setInsertionPoint(terminator);
      Type et = cast<TensorType>(s.getType()).getElementType();
      Value sc = castTo(scale, et, "scale_cast");
      auto mul = named(MulOp::create(b, loc, s.getType(), s, sc),
                       "scale_loss_gradient");
      takeOver(s, mul.getResult(), mul, "unscaled");
      record.seeds.push_back(getOnnxValueName(graph, s));
    }

    // Unscale every gradient right after its producer, and check it.
    SmallVector<Value> checks;
    llvm::MapVector<Value, Value> unscaled;
    DenseSet<Operation *> checkOps;
    NoneOp none;
    for (Value g : gradients) {
      b.setInsertionPoint(terminator);
      std::string gname = getOnnxValueName(graph, g);
      Type et = cast<TensorType>(g.getType()).getElementType();
      Value g32 = castTo(g, f32, "to_fp32/" + gname);
      auto mul = named(MulOp::create(b, loc, g32.getType(), g32, inv),
                       "unscale/" + gname);
      Value u = castTo(mul.getResult(), et, "from_fp32/" + gname);
      Operation *keep = g32 == g ? mul.getOperation() : g32.getDefiningOp();
      takeOver(g, u, keep, "scaled");
      unscaled[g] = u;
      ++record.unscaled;
      // Non-finite x: x * 0 is NaN; the sum of those is NaN iff any is.
      b.setInsertionPoint(terminator);
      auto z =
          named(MulOp::create(b, loc, mul.getType(), mul.getResult(), zero()),
                "check/" + gname + "/zero");
      checkOps.insert(z);
      if (!none)
        none = NoneOp::create(b, loc, b.getNoneType());
      auto r = named(ReduceSumOp::create(b, loc, scalarF32, z.getResult(),
                                         none.getResult(),
                                         b.getI64IntegerAttr(0), nullptr),
                     "check/" + gname + "/sum");
      checks.push_back(r.getResult());
    }
    b.setInsertionPoint(terminator);
    Value total =
        checks.size() == 1
            ? checks.front()
            : named(SumOp::create(b, loc, scalarF32, checks), "check/total")
                  .getResult();
    auto nan = named(IsNaNOp::create(b, loc, scalarI1, total), "found_inf");
    flag = named(NotOp::create(b, loc, scalarI1, nan.getResult()), "all_finite")
               .getResult();
    // Gradients reduce-scattered to their owners (train-data-parallel's
    // ZeRO form): this rank checked only its part of the reduced
    // gradients. The flag is the MIN over the ranks, so every rank skips a
    // step that overflowed in any rank's part and backs off alike.
    if (llvm::any_of(gradients, isReduceScattered)) {
      editor.renameValue(
          flag, editor.uniqueValueName((kAllFiniteName + ".local").str()));
      MLIRContext *ctx = graph.getContext();
      flag =
          createCollective(editor, loc, kAllReduceOpType, {scalarI1}, {flag},
                           {NamedAttribute(StringAttr::get(ctx, kReductionAttr),
                                           StringAttr::get(ctx, "min"))},
                           (kPrefix + "all_finite_over_ranks").str())
              ->getResult(0);
      record.flagReduced = true;
    }
    editor.renameValue(flag, editor.uniqueValueName(kAllFiniteName));

    // Gate the uses of the unscaled gradients.
    for (auto &[g, u] : unscaled) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : u.getUses())
        uses.push_back(&use);
      Value gated;
      for (OpOperand *use : uses) {
        Operation *owner = use->getOwner();
        if (owner == terminator || checkOps.contains(owner))
          continue; // graph outputs: unscaled values; the check itself
        if (isa<SequenceConstructOp>(owner) || getOptimizerInfo(owner))
          continue; // gated by update_signal
        if (!gated) {
          b.setInsertionPoint(terminator);
          Value z =
              castTo(zero(), cast<TensorType>(u.getType()).getElementType(),
                     "zero_cast");
          gated = named(WhereOp::create(b, loc, u.getType(), flag, u, z),
                        "gate/" + getOnnxValueName(graph, u))
                      .getResult();
          if (isAccumulator(owner))
            ++record.accumulators;
          else
            ++record.zeroed;
        }
        use->set(gated);
      }
    }
    for (auto &[g, u] : unscaled)
      if (llvm::is_contained(terminator->getOperands(), u))
        ++record.outputs;

    if (config.dynamic) {
      // GradScaler's _amp_update_scale_: backoff on overflow; growth after
      // growth-interval clean steps; both clamped.
      Value tracker = editor.addInput(kGrowthTrackerName, scalarI64);
      b.setInsertionPoint(terminator);
      Value one = scalarI64Const("one", 1);
      Value zeroI = scalarI64Const("zero_i64", 0);
      Value interval = scalarI64Const("growth_interval", config.growthInterval);
      Value growth = scalarF32Const("growth_factor", config.growthFactor);
      Value backoff = scalarF32Const("backoff_factor", config.backoffFactor);
      Value lo = scalarF32Const("min_scale", config.minScale);
      Value hi = scalarF32Const("max_scale", config.maxScale);
      auto t1 = named(AddOp::create(b, loc, scalarI64, tracker, one),
                      "update/tracker_plus_one");
      auto below = named(LessOp::create(b, loc, scalarI1, t1, interval),
                         "update/below_interval");
      auto grow = named(NotOp::create(b, loc, scalarI1, below), "update/grow");
      auto up = named(MulOp::create(b, loc, scalarF32, scale, growth),
                      "update/grown");
      auto upC = named(
          MinOp::create(b, loc, scalarF32, ValueRange{up.getResult(), hi}),
          "update/grown_clamped");
      auto down = named(MulOp::create(b, loc, scalarF32, scale, backoff),
                        "update/backed_off");
      auto downC = named(
          MaxOp::create(b, loc, scalarF32, ValueRange{down.getResult(), lo}),
          "update/backed_off_clamped");
      auto s1 = named(WhereOp::create(b, loc, scalarF32, grow, upC, scale),
                      "update/finite_scale");
      auto newScale = named(WhereOp::create(b, loc, scalarF32, flag, s1, downC),
                            "update/scale");
      auto k1 = named(WhereOp::create(b, loc, scalarI64, grow, zeroI, t1),
                      "update/finite_tracker");
      auto newTracker =
          named(WhereOp::create(b, loc, scalarI64, flag, k1, zeroI),
                "update/tracker");
      editor.renameValue(
          newScale,
          editor.uniqueValueName((kLossScaleName + kUpdatedSuffix).str()));
      editor.renameValue(
          newTracker,
          editor.uniqueValueName((kGrowthTrackerName + kUpdatedSuffix).str()));
      editor.addOutput(newScale);
      editor.addOutput(newTracker);
    }
    editor.addOutput(flag);
  }

  // Optimizers: update_signal (com.microsoft) or keep the old values.
  for (auto &[op, info] : optimizers) {
    ++record.optimizers;
    if (info.updateSignal >= 0) {
      unsigned idx = info.updateSignal;
      b.setInsertionPoint(op);
      if (idx < op->getNumOperands() &&
          !isa<NoneType>(op->getOperand(idx).getType())) {
        // And broadcasts the scalar flag to the signal's shape.
        Value old = op->getOperand(idx);
        auto both = named(AndOp::create(b, loc, old.getType(), old, flag),
                          "update_signal");
        op->setOperand(idx, both.getResult());
      } else if (idx < op->getNumOperands()) {
        op->setOperand(idx, flag);
      } else {
        while (op->getNumOperands() < idx)
          op->insertOperands(
              op->getNumOperands(),
              NoneOp::create(b, loc, b.getNoneType()).getResult());
        op->insertOperands(idx, flag);
      }
      continue;
    }
    b.setInsertionPointAfter(op);
    for (auto [i, keep] : llvm::enumerate(info.keepOperand)) {
      Value out = op->getResult(i);
      Value old = op->getOperand(keep);
      if (out.use_empty())
        continue;
      // The output may be less typed than the input it replaces (no
      // value_info: unranked); the element types must agree.
      if (getElementTypeOrSelf(old.getType()) !=
          getElementTypeOrSelf(out.getType()))
        return op->emitError("loss-scaling: output ")
               << i << " of " << opTypeOf(op) << " has element type "
               << getElementTypeOrSelf(out.getType()) << ", its input " << keep
               << " " << getElementTypeOrSelf(old.getType())
               << ": cannot keep the input on overflow";
      auto sel = named(WhereOp::create(b, loc, out.getType(), flag, out, old),
                       "keep_on_overflow/" + getOnnxValueName(graph, out));
      takeOver(out, sel.getResult(), sel, "unchecked");
    }
  }

  // New nodes went in front of the terminator; a stable topological sort
  // puts each where its operands are ready.
  if (!sortTopologically(&body))
    return graph.emitError("loss-scaling: the rewritten graph has a cycle");
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

static void printSummary(llvm::raw_ostream &os, const LossScalingConfig &c,
                         ArrayRef<GraphRecord> records) {
  os << "Loss Scaling Pass Summary:\n";
  auto num = [](double v) { return llvm::format("%.10g", v); };
  if (c.dynamic)
    os << "Mode: dynamic (init scale " << num(c.initScale) << ", x"
       << num(c.growthFactor) << " after " << c.growthInterval
       << " finite steps, x" << num(c.backoffFactor) << " on overflow, bounds ["
       << num(c.minScale) << ", " << num(c.maxScale) << "])\n";
  else
    os << "Mode: static (scale " << num(c.initScale) << ")\n";
  for (const GraphRecord &r : records) {
    os << "Graph @" << r.graph << ": ";
    if (r.nothing) {
      os << "unchanged (no loss gradient, gradients or optimizer)\n";
      continue;
    }
    if (r.flagIsInput) {
      os << "optimizer graph: " << r.optimizers << " optimizer(s) and "
         << r.zeroed << " inline update(s) gated by input " << kAllFiniteName
         << "\n";
      continue;
    }
    os << "loss gradient ";
    llvm::interleaveComma(r.seeds, os);
    os << " scaled; " << r.unscaled << " gradient(s) unscaled and checked";
    if (r.flagReduced)
      os << " (this rank's part of the reduce-scattered gradients; the flag "
            "is the MIN over the ranks)";
    os << "; output " << kAllFiniteName << " gates " << r.accumulators
       << " accumulator(s), " << r.optimizers << " optimizer(s), " << r.zeroed
       << " other update(s); " << r.outputs << " gradient output(s) unscaled\n";
  }
}

namespace {
struct LossScalingPass
    : public amp::train::impl::LossScalingBase<LossScalingPass> {
  using LossScalingBase::LossScalingBase;
  LossScalingPass(LossScalingOptions options, LossScalingReport *out)
      : LossScalingBase(std::move(options)), out(out) {}

  /// Where the API (createLossScaling with a report) wants the outcome.
  LossScalingReport *out = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LossScalingConfig c;
    if (mode != "dynamic" && mode != "static") {
      module.emitError() << "loss-scaling: unknown mode '" << mode
                         << "' (expected dynamic or static)";
      return signalPassFailure();
    }
    c.dynamic = mode == "dynamic";
    c.initScale = initScale;
    c.growthFactor = growthFactor;
    c.backoffFactor = backoffFactor;
    c.growthInterval = growthInterval;
    c.minScale = minScale;
    c.maxScale = maxScale;
    c.seed = seed;
    c.gradients.assign(gradients.begin(), gradients.end());

    auto bad = [&](StringRef what) {
      module.emitError() << "loss-scaling: " << what;
      signalPassFailure();
    };
    if (!(std::isfinite(c.initScale) && c.initScale > 0))
      return bad("init-scale must be a positive finite number");
    if (c.dynamic) {
      if (!(c.growthFactor > 1) || !std::isfinite(c.growthFactor))
        return bad("growth-factor must be a finite number > 1");
      if (!(c.backoffFactor > 0 && c.backoffFactor < 1))
        return bad("backoff-factor must be in (0, 1)");
      if (c.growthInterval < 1)
        return bad("growth-interval must be at least 1");
      if (!(c.minScale > 0 && c.minScale <= c.maxScale) ||
          !std::isfinite(c.maxScale) || c.maxScale > 3.0e38)
        return bad("need 0 < min-scale <= max-scale <= 3e38");
      if (c.initScale < c.minScale || c.initScale > c.maxScale)
        return bad("init-scale must lie in [min-scale, max-scale]");
    }

    SmallVector<GraphRecord> records;
    for (GraphOp graph : llvm::make_early_inc_range(module.getOps<GraphOp>())) {
      GraphRecord &r = records.emplace_back();
      GraphLossScaler scaler(graph, c, r);
      if (failed(scaler.run()))
        return signalPassFailure();
    }
    if (summary)
      printSummary(llvm::errs(), c, records);
    if (out) {
      LossScalingOptions &o = out->options;
      o.mode = mode;
      o.initScale = initScale;
      o.growthFactor = growthFactor;
      o.backoffFactor = backoffFactor;
      o.growthInterval = growthInterval;
      o.minScale = minScale;
      o.maxScale = maxScale;
      o.seed = seed;
      o.gradients = c.gradients;
      o.summary = summary;
      out->graphs.assign(records.begin(), records.end());
    }
  }
};
} // namespace

std::unique_ptr<Pass> amp::train::createLossScaling(LossScalingOptions options,
                                                    LossScalingReport *report) {
  return std::make_unique<LossScalingPass>(std::move(options), report);
}
