//===- TrainToRuntime.cpp - train graphs to amprt calls on memrefs -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// convert-train-to-amprt as a dialect conversion. Before it, the graph
// inputs are bound to static shapes (bindArgs) and loss scaling's finite
// checks planned (FiniteCheck.cpp). Its patterns, applied to the graph's
// ops in order:
//   GraphToFunc        train.graph -> func.func, the signature converted
//                      (each input a memref; a sequence, one per element)
//   InitializerToHost  an initializer becomes a host value (a constant
//                      buffer where a call reads it)
//   FamilyToCalls      one per op family: the nodes the table
//                      (LoweringTable.cpp) gives it become a host value
//                      (HostFold.cpp) or the family's calls (lowerNode)
//   NodeToCalls        any other node: a host value (Shape, Constant, ...)
//                      or "no runtime implementation"; any other op is an
//                      error
//   ReturnToFunc       train.return -> func.return of the outputs' buffers
// Each writes its IR through the rewriter; the node's results are replaced
// by their buffers. The function is then written again through the
// PlannedProgram (unused buffers dropped, constants numbered, data inputs
// narrowed). The kernels and their parameters come from Ops.def
// (KernelABI.h) only.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

#include "llvm/ADT/StringSwitch.h"

#include "amp/Dialect/Train/IR/CastNamer.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::lowering;

namespace amp::lowering {

LogicalResult GraphLowering::bindArgs() {
  Block &body = graph.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    unsigned idx = arg.getArgNumber();
    auto nameAttr = graph.getArgAttrOfType<StringAttr>(idx, "train.name");
    std::string name =
        nameAttr ? nameAttr.str() : ("arg" + std::to_string(idx));
    if (isa<SeqType>(arg.getType())) {
      auto types = graph.getArgAttrOfType<ArrayAttr>(idx, kSeqTypesAttr);
      if (!types)
        return graph.emitError()
               << "graph input '" << name
               << "' is a sequence: give its element types with the arg "
                  "attribute "
               << kSeqTypesAttr << " (amp-run does this from the training "
               << "graph)";
      SmallVector<int> list;
      for (auto [k, t] : llvm::enumerate(types)) {
        auto tt = cast<RankedTensorType>(cast<TypeAttr>(t).getValue());
        Buffer b;
        b.kind = Buffer::Arg;
        b.argIndex = argTypes.size();
        b.shape.assign(tt.getShape().begin(), tt.getShape().end());
        b.elem = tt.getElementType();
        list.push_back(newBuffer(b));
        argTypes.push_back(MemRefType::get(tt.getShape(), b.elem));
        argNames.push_back(name + "[" + std::to_string(k) + "]");
      }
      seqBufs[arg] = list;
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return graph.emitError()
             << "graph input '" << name << "' has no rank (" << arg.getType()
             << "); the lowering needs static shapes";
    auto dimNames = graph.getArgAttrOfType<ArrayAttr>(idx, "train.dims");
    Shape shape;
    // A dim bound by `dims` (here or by train-bind-dims): data, not a
    // weight.
    bool bound = bool(graph.getArgAttr(idx, attrs::kBoundDims));
    for (int64_t d = 0; d < type.getRank(); ++d) {
      bound |= type.isDynamicDim(d);
      if (!type.isDynamicDim(d)) {
        shape.push_back(type.getDimSize(d));
        continue;
      }
      StringRef sym;
      if (dimNames && d < int64_t(dimNames.size()))
        if (auto s = dyn_cast<StringAttr>(dimNames[d]))
          sym = s.getValue();
      auto it = sym.empty() ? dims.end() : dims.find(sym);
      if (it == dims.end()) {
        auto diag = graph.emitError()
                    << "graph input '" << name << "' dim " << d;
        if (sym.empty())
          diag << " is dynamic and unnamed; the lowering needs static "
                  "shapes";
        else
          diag << " is the symbolic dim '" << sym
               << "': bind it with dims=" << sym << "=<size>";
        return diag;
      }
      shape.push_back(it->second);
    }
    if (!fitsInMemory(shape)) {
      auto diag = graph.emitError()
                  << "graph input '" << name << "' would have shape [";
      llvm::interleaveComma(shape, diag);
      return diag << "]: more than " << (kMaxBufferBytes >> 40)
                  << " TiB, no buffer can hold it";
    }
    Buffer b;
    b.kind = Buffer::Arg;
    b.argIndex = argTypes.size();
    b.shape = shape;
    b.elem = type.getElementType();
    b.boundDims = bound;
    valueBuf[arg] = newBuffer(b);
    argTypes.push_back(MemRefType::get(shape, b.elem));
    argNames.push_back(name);
  }
  return success();
}

LogicalResult GraphLowering::lowerNode(OnnxNodeOpInterface node) {
  StringRef domain = node.getOnnxDomain();
  StringRef type = node.getOnnxOpType();
  // Shape computations first: they become constants, not calls.
  FailureOr<bool> folded = tryHostFold(domain, type);
  if (failed(folded))
    return failure();
  if (*folded)
    return success();
  // The families that lower this (domain, op_type), in order
  // (LoweringTable.cpp); one may decline a node (false) for the next.
  for (Family family : familiesOf(domain, type)) {
    FailureOr<bool> done = (this->*family)(domain, type);
    if (failed(done))
      return failure();
    if (*done)
      return success();
  }
  return err() << "no runtime implementation (supported: docs/Lowering.md)";
}

LogicalResult GraphLowering::prepare() {
  // The casts a pass inserted carry the names the exporter would give them,
  // so the calls (and their diagnostics and profiles) name their node.
  nameUnnamedCasts(graph);
  if (failed(bindArgs()))
    return failure();
  planFiniteChecks();
  return success();
}

void GraphLowering::bufferAdded(int id) {
  bufValues.resize(bufs.size());
  const Buffer &b = bufs[id];
  if (b.kind == Buffer::Arg) // set when the function is made
    return;
  OpBuilder::InsertionGuard guard(*rewriter);
  if (lastBufferOp)
    rewriter->setInsertionPointAfter(lastBufferOp);
  else
    rewriter->setInsertionPointToStart(entry);
  Location loc = current ? current->getLoc() : func.getLoc();
  auto type = MemRefType::get(b.shape, b.elem);
  if (b.kind == Buffer::Temp) {
    auto alloc = memref::AllocOp::create(*rewriter, loc, type);
    alloc->setAttr(kRoleAttr, rewriter->getStringAttr(kArenaRoles[b.role]));
    if (!b.name.empty())
      alloc->setAttr(kValueAttr, rewriter->getStringAttr(b.name));
    lastBufferOp = alloc;
    bufValues[id] = alloc;
    return;
  }
  // A constant: a global beside the function, named for now (writing the
  // unplanned function again numbers the ones the calls use).
  std::string name;
  for (unsigned k = id;; ++k) {
    name = (func.getSymName() + "_lowering_const" + Twine(k)).str();
    if (symbols.insert(name).second)
      break;
  }
  {
    OpBuilder::InsertionGuard moduleGuard(*rewriter);
    rewriter->setInsertionPoint(func);
    auto global = memref::GlobalOp::create(
        *rewriter, loc, name, rewriter->getStringAttr("private"), type, b.value,
        /*constant=*/true, IntegerAttr());
    if (b.shared)
      global->setAttr(kSharedConstAttr, rewriter->getUnitAttr());
  }
  auto get = memref::GetGlobalOp::create(*rewriter, loc, type, name);
  lastBufferOp = get;
  bufValues[id] = get;
}

void GraphLowering::nameBuffer(int id, StringRef name) {
  bufs[id].name = name.str();
  Operation *alloc = bufValues[id].getDefiningOp();
  rewriter->modifyOpInPlace(alloc, [&] {
    alloc->setAttr(kValueAttr, rewriter->getStringAttr(name));
  });
}

void GraphLowering::convertGraph(GraphOp op, ConversionPatternRewriter &rw) {
  assert(op == graph && "the state lowers the graph it was made for");
  (void)op;
  rewriter = &rw;
  rw.setInsertionPoint(graph);
  func = func::FuncOp::create(rw, graph.getLoc(), graph.getSymName(),
                              rw.getFunctionType(argTypes, {}));
  for (auto [i, n] : llvm::enumerate(argNames))
    func.setArgAttr(i, kNameAttr, rw.getStringAttr(n));
  func->setAttr(kUnplannedAttr, rw.getUnitAttr());
  // The symbols beside the function, which its constants must not take.
  for (Operation &op : *func->getBlock())
    if (auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      symbols.insert(name.getValue());
  Region &body = func.getBody();
  rw.inlineRegionBefore(graph.getBody(), body, body.end());
  // Each graph input becomes its buffer's argument; a sequence, one
  // argument per element.
  Block &old = body.front();
  TypeConverter::SignatureConversion signature(old.getNumArguments());
  for (BlockArgument arg : old.getArguments()) {
    SmallVector<Type> types;
    if (auto seq = seqBufs.find(arg); seq != seqBufs.end())
      for (int b : seq->second)
        types.push_back(argTypes[bufs[b].argIndex]);
    else
      types.push_back(argTypes[bufs[valueBuf.lookup(arg)].argIndex]);
    signature.addInputs(arg.getArgNumber(), types);
  }
  entry = rw.applySignatureConversion(&old, signature);
  for (auto [id, b] : llvm::enumerate(bufs))
    if (b.kind == Buffer::Arg)
      bufValues[id] = entry->getArgument(b.argIndex);
  rw.eraseOp(graph);
}

void GraphLowering::convertInitializer(InitializerOp init,
                                       ConversionPatternRewriter &rw) {
  rewriter = &rw;
  auto value = dyn_cast_or_null<ElementsAttr>(init.getValue());
  if (!hadError && (!value || init.getExternal())) {
    init.emitError() << "initializer '" << init.getName()
                     << "' has no inline value (external data is not "
                        "supported by the lowering yet)";
    hadError = true;
  }
  // A host value: a call that reads it reads it as a constant buffer.
  if (!hadError)
    hostConst[init.getResult()] = value;
  rw.eraseOp(init);
}

void GraphLowering::convertReturn(ReturnOp ret, ConversionPatternRewriter &rw) {
  rewriter = &rw;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (hadError)
      break;
    auto rn = graph.getResultAttrOfType<StringAttr>(i, "train.name");
    std::string name = rn ? rn.str() : ("result" + std::to_string(i));
    current = ret;
    nodeName = name;
    auto b = valueBuf.find(v);
    if (b != valueBuf.end()) {
      results.push_back(b->second);
    } else if (!hostConst.count(v)) {
      ret.emitError() << "graph output '" << name << "' has no buffer";
      hadError = true;
    } else if (auto id = in(i); succeeded(id)) {
      results.push_back(*id);
    } else {
      hadError = true;
    }
    resultNames.push_back(name);
  }
  if (!hadError) {
    SmallVector<Type> types;
    SmallVector<Value> values;
    for (int b : results) {
      types.push_back(MemRefType::get(bufs[b].shape, bufs[b].elem));
      values.push_back(bufValues[b]);
    }
    rw.modifyOpInPlace(func, [&] {
      func.setFunctionType(rw.getFunctionType(argTypes, types));
      for (int i : accumulateSignals)
        func.setArgAttr(i, kAccumulateSignalAttr, rw.getUnitAttr());
      for (auto [i, n] : llvm::enumerate(resultNames))
        func.setResultAttr(i, kNameAttr, rw.getStringAttr(n));
    });
    rw.setInsertionPointToEnd(entry);
    func::ReturnOp::create(rw, ret.getLoc(), values);
  }
  rw.eraseOp(ret);
}

void GraphLowering::convertNode(Operation *op, ConversionPatternRewriter &rw) {
  rewriter = &rw;
  if (hadError || fusedAway.count(op) || isa<NoneOp>(op)) {
    rw.eraseOp(op);
    return;
  }
  current = op;
  auto nameAttr = op->getAttrOfType<StringAttr>("train.name");
  nodeName = nameAttr ? nameAttr.str() : "";
  auto node = dyn_cast<OnnxNodeOpInterface>(op);
  LogicalResult lowered = failure();
  if (!node)
    op->emitError() << "op " << op->getName()
                    << " cannot be lowered to runtime calls";
  else if (auto check = finiteChecks.find(op); check != finiteChecks.end())
    lowered = lowerFiniteCheck(check->second);
  else
    lowered = lowerNode(node);
  if (failed(lowered)) {
    hadError = true;
    rw.eraseOp(op);
    return;
  }
  // The temporaries the node made hold its outputs: named after them. The
  // node's results are their buffers (none for a value folded on the host:
  // its readers read the host value).
  auto outs = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
  SmallVector<SmallVector<Value>> replacements;
  for (auto [i, res] : llvm::enumerate(op->getResults())) {
    auto b = valueBuf.find(res);
    if (b == valueBuf.end()) {
      replacements.emplace_back();
      continue;
    }
    replacements.push_back({bufValues[b->second]});
    auto s =
        outs && i < outs.size() ? dyn_cast<StringAttr>(outs[i]) : StringAttr();
    if (s && bufs[b->second].kind == Buffer::Temp &&
        bufs[b->second].name.empty())
      nameBuffer(b->second, s.getValue());
  }
  rw.replaceOpWithMultiple(op, std::move(replacements));
}

} // namespace amp::lowering

namespace {

/// The conversion of one op by one step of the lowering's state:
///   GraphToFunc        train.graph -> func.func (convertGraph)
///   InitializerToHost  an initializer -> a host value (convertInitializer)
///   ReturnToFunc       train.return -> func.return (convertReturn)
template <typename Op,
          void (GraphLowering::*step)(Op, ConversionPatternRewriter &)>
struct StepPattern : OpConversionPattern<Op> {
  StepPattern(MLIRContext *ctx, GraphLowering &state)
      : OpConversionPattern<Op>(ctx), state(state) {}
  LogicalResult
  matchAndRewrite(Op op, typename OpConversionPattern<Op>::OneToNOpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    (state.*step)(op, rewriter);
    return success();
  }
  GraphLowering &state;
};
using GraphToFunc = StepPattern<GraphOp, &GraphLowering::convertGraph>;
using InitializerToHost =
    StepPattern<InitializerOp, &GraphLowering::convertInitializer>;
using ReturnToFunc = StepPattern<ReturnOp, &GraphLowering::convertReturn>;

/// The ONNX nodes of one op family, the first listed for their (domain,
/// op_type) in the table (LoweringTable.cpp; the family's file lists its
/// ops): a host value when the node is a shape computation (HostFold.cpp),
/// else the family's calls (or the next family's, where one declines).
struct FamilyToCalls : ConversionPattern {
  FamilyToCalls(MLIRContext *ctx, GraphLowering &state,
                GraphLowering::Family family)
      : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        state(state), family(family) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<ValueRange>,
                  ConversionPatternRewriter &rewriter) const override {
    auto node = dyn_cast<OnnxNodeOpInterface>(op);
    ArrayRef<GraphLowering::Family> listed =
        node ? GraphLowering::familiesOf(node.getOnnxDomain(),
                                         node.getOnnxOpType())
             : ArrayRef<GraphLowering::Family>();
    if (listed.empty() || listed.front() != family)
      return failure();
    state.convertNode(op, rewriter);
    return success();
  }
  GraphLowering &state;
  GraphLowering::Family family;
};

/// Every other op of the graph: an ONNX node no family lists becomes a host
/// value when it is a shape computation (Shape, Size, Constant, ...);
/// anything else is an error at the op.
struct NodeToCalls : ConversionPattern {
  NodeToCalls(MLIRContext *ctx, GraphLowering &state)
      : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/0, ctx),
        state(state) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<ValueRange>,
                  ConversionPatternRewriter &rewriter) const override {
    state.convertNode(op, rewriter);
    return success();
  }
  GraphLowering &state;
};

} // namespace

LogicalResult amp::lowering::lowerGraph(GraphLowering &state, GraphOp graph) {
  MLIRContext *ctx = graph.getContext();
  if (failed(state.prepare()))
    return failure();
  ConversionTarget target(*ctx);
  target.addLegalDialect<amprt::AmpRTDialect, memref::MemRefDialect,
                         func::FuncDialect, arith::ArithDialect>();
  target.addIllegalDialect<TrainDialect>();
  ConversionConfig config;
  // The train ops' folds are train-bind-dims' business; the lowering
  // folds on the host (HostFold.cpp).
  config.foldingMode = DialectConversionFoldingMode::Never;
  RewritePatternSet patterns(ctx);
  patterns.add<GraphToFunc, InitializerToHost, ReturnToFunc, NodeToCalls>(
      ctx, state);
  for (GraphLowering::Family family : GraphLowering::allFamilies())
    patterns.add<FamilyToCalls>(ctx, state, family);
  if (failed(applyPartialConversion(graph.getOperation(), target,
                                    std::move(patterns), config)) ||
      state.failedToLower())
    return failure();
  return success();
}

LogicalResult amp::lowering::convertGraphsToAmpRT(
    ModuleOp module, const llvm::StringMap<int64_t> &dims, bool narrowInputs) {
  SmallVector<func::FuncOp> funcs;
  SmallVector<SmallVector<bool>> dataArgs;
  for (GraphOp graph : llvm::to_vector(module.getOps<GraphOp>())) {
    GraphLowering state(graph, dims);
    if (failed(lowerGraph(state, graph)))
      return failure();
    func::FuncOp f = state.loweredFunc();
    funcs.push_back(f);
    dataArgs.push_back(state.dataArgs());
  }
  // Written again through the planned program: the buffers no call uses
  // go, the constants are numbered; with narrowInputs, the data inputs
  // that are only cast to 16 bits are taken in that type.
  DenseMap<Operation *, unsigned> index;
  for (auto [i, f] : llvm::enumerate(funcs))
    index[f] = i;
  return rewriteUnplanned(
      module, funcs,
      [&](PlannedProgram &p, func::FuncOp f, int64_t &, int64_t *) {
        if (narrowInputs) {
          ArrayRef<bool> data = dataArgs[index.lookup(f)];
          p.narrowDataInputs([&](unsigned i) { return data[i]; });
        }
        return false;
      });
}
