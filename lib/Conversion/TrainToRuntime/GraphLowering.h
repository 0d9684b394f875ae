//===- GraphLowering.h - the state of lowering one graph ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: convert-train-to-amprt is a
// dialect conversion (TrainToRuntime.cpp) whose patterns lower one graph
// into the state below, writing the function's IR through the conversion's
// rewriter as they go: each buffer a memref.alloc (or memref.get_global)
// when it is made, each call an amprt.call. The node pattern folds shape
// computations on the host (HostFold.cpp), then finds the node's families
// by (domain, op_type) in LoweringTable.cpp; each family's file lists its
// ops:
//   LowerElementwise.cpp unary/binary math, comparisons, logic, Min/Max/Sum,
//                       Where, CastLike, activation gradients
//   LowerMath.cpp       Gemm, MatMul, Reduce*, Softmax, LogSoftmax
//   LowerLoss.cpp       SoftmaxCrossEntropyLoss(+Grad), MSELoss(+Grad)
//   LowerOptimizer.cpp  optimizers and gradient accumulators
//   LowerShape.cpp      Reshape, Flatten, Squeeze, Unsqueeze, Transpose
//   LowerResize.cpp     Resize, Upsample, ResizeGrad
//   LowerNN.cpp         convolution, pooling, normalization, softmax grad,
//                       dropout, random generators
//   LowerData.cpp       gather, slice, concat, expand, FusedMatMul, Scale
//   LowerRecurrent.cpp  LSTM and GRU, their training forms and gradients
//   LowerComposite.cpp  ops made of existing kernels (Tile, Split, ...)
//   LowerCollective.cpp org.amp-mlir:AllReduce and ReduceScatter (data-
//                       parallel gradients, the all-finite flag)
//   NarrowInputs.cpp    f32 data inputs that are only cast to 16 bits,
//                       taken in that type (the driver converts)
//   FiniteCheck.cpp     IsNaN(Sum(ReduceSum(x * 0))) as one all-finite call
// The rewrites after the conversion (amprt-fuse, amprt-plan-buffers) read
// the function into a PlannedProgram (PlannedProgram.h); Passes.cpp holds
// the passes.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_GRAPHLOWERING_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_GRAPHLOWERING_H

#include "PlannedProgram.h"

#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/KernelABI.h"
#include "amp/Dialect/Train/IR/Collectives.h"
#include "amp/Dialect/Train/IR/OnnxSchema.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <map>
#include <optional>

namespace amp::lowering {

class GraphLowering : public PlannedProgram {
public:
  GraphLowering(GraphOp graph, const llvm::StringMap<int64_t> &dims)
      : PlannedProgram(graph.getContext()), graph(graph), dims(dims) {}

  /// What the patterns need before the conversion starts: the graph
  /// inputs bound to static shapes, the fused finite checks planned.
  LogicalResult prepare();
  /// The conversion's steps, one per pattern; each writes its IR through
  /// `rewriter`. After an error (reported at the op) every later step only
  /// erases its op.
  void convertGraph(GraphOp graph, ConversionPatternRewriter &rewriter);
  void convertInitializer(InitializerOp init,
                          ConversionPatternRewriter &rewriter);
  void convertReturn(ReturnOp ret, ConversionPatternRewriter &rewriter);
  /// An ONNX node, or an op no pattern lowers (an error).
  void convertNode(Operation *op, ConversionPatternRewriter &rewriter);
  /// Whether a step reported an error.
  bool failedToLower() const { return hadError; }
  /// The function the conversion wrote (unplanned).
  func::FuncOp loweredFunc() const { return func; }
  /// What the lowering computed for graph value `v`: the static shape and
  /// element type of its buffer, and its value where it was known on the
  /// host (a folded shape computation); nullopt for a value with neither
  /// (a sequence, an absent optional).
  struct ComputedValue {
    Shape shape;
    Type elem;
    ElementsAttr hostValue;
  };
  std::optional<ComputedValue> computed(Value v) const {
    if (auto c = hostConst.find(v); c != hostConst.end()) {
      auto t = cast<ShapedType>(c->second.getType());
      return ComputedValue{Shape(t.getShape()), t.getElementType(), c->second};
    }
    if (auto b = valueBuf.find(v); b != valueBuf.end())
      return ComputedValue{bufs[b->second].shape, bufs[b->second].elem, {}};
    return std::nullopt;
  }
  /// Per argument of the lowered function, whether it is data: a graph
  /// input with a dim bound by `dims`, not a weight.
  SmallVector<bool> dataArgs() const {
    SmallVector<bool> data(argTypes.size(), false);
    for (const Buffer &b : bufs)
      if (b.kind == Buffer::Arg)
        data[b.argIndex] = b.boundDims;
    return data;
  }

private:
  GraphOp graph;
  const llvm::StringMap<int64_t> &dims;
  // --- the IR the conversion writes ------------------------------------------
  ConversionPatternRewriter *rewriter = nullptr;
  func::FuncOp func;
  Block *entry = nullptr;
  /// The last buffer op written (memref.alloc, memref.get_global): the
  /// buffers stand at the top of the function in the order they were made,
  /// the calls after them in the order they were made.
  Operation *lastBufferOp = nullptr;
  /// The value of each buffer in the function (an argument's is set when
  /// the function is made).
  SmallVector<Value> bufValues;
  bool hadError = false;
  /// The symbols of the function's module (its constants take others).
  llvm::StringSet<> symbols;
  void bufferAdded(int id) override;
  /// Names the temporary `id` after the ONNX value it holds.
  void nameBuffer(int id, StringRef name);
  DenseMap<Value, int> valueBuf;
  DenseMap<Value, SmallVector<int>> seqBufs;
  DenseMap<Value, ElementsAttr> hostConst;
  /// MaxPool indices buffer -> the shape of the pooled input (MaxPoolGrad's
  /// output shape).
  DenseMap<int, Shape> poolInput;
  /// Each AveragePool lowered so far: input and output shapes, window
  /// (AveragePoolGrad's dX shape comes from them).
  struct AvgPool {
    Shape x, y;
    DictionaryAttr win;
  };
  SmallVector<AvgPool> avgPools;
  std::string nodeName;
  Operation *current = nullptr;
  /// Finite checks written IsNaN(Sum(ReduceSum(Mul(u_i, 0))))
  /// (FiniteCheck.cpp): the IsNaN node -> the u_i, and the nodes the fused call
  /// replaces.
  DenseMap<Operation *, SmallVector<Value>> finiteChecks;
  llvm::DenseSet<Operation *> fusedAway;
  void planFiniteChecks();

  LogicalResult lowerFiniteCheck(ArrayRef<Value> checked);
  bool isConstantZero(Value v);

  InFlightDiagnostic err() {
    return current->emitError()
           << "node '" << nodeName << "' (" << opTypeOf(current) << "): ";
  }
  static std::string opTypeOf(Operation *op) {
    if (auto n = dyn_cast<OnnxNodeOpInterface>(op)) {
      std::string d = n.getOnnxDomain().str();
      return (d.empty() ? "" : d + ":") + n.getOnnxOpType().str();
    }
    return op->getName().getStringRef().str();
  }

  /// Inputs 0 and 1 multiplied over their last two dims (each transposed
  /// when ta / tb), batched over the broadcast leading dims, times alpha,
  /// into result 0: FusedMatMul, and Deeploy's Gemm on rank-3 operands.
  LogicalResult lowerBatchedMatMul(int64_t ta, int64_t tb, double alpha);
  /// The element type of the first input of the current node that its
  /// ONNX schema gives the type constraint of output `res`, or null.
  Type elementFromTypeConstraint(unsigned res) {
    auto node = dyn_cast<train::OnnxNodeOpInterface>(current);
    const train::OnnxOpSchema *schema =
        node ? train::getSchemaFor(node) : nullptr;
    const train::OnnxParamSchema *o =
        schema ? schema->getOutputParam(res) : nullptr;
    if (!o)
      return {};
    for (unsigned k = 0; k < current->getNumOperands(); ++k) {
      const train::OnnxParamSchema *p = schema->getInputParam(k);
      if (!p || p->typeStr != o->typeStr)
        continue;
      if (Type t = elementOfOperand(k))
        return t;
    }
    return {};
  }
  /// The element type of operand `i`: its buffer's or host value's (known
  /// even where the graph left the value untyped, a node output without
  /// value_info), else its type's; null if none is an int or float.
  Type elementOfOperand(unsigned i) {
    Value v = current->getOperand(i);
    if (auto it = valueBuf.find(v); it != valueBuf.end())
      return bufs[it->second].elem;
    if (auto c = hostConst.find(v); c != hostConst.end())
      return cast<ShapedType>(c->second.getType()).getElementType();
    auto t = dyn_cast<ShapedType>(v.getType());
    if (t && t.getElementType().isIntOrFloat())
      return t.getElementType();
    return {};
  }
  /// The element type of result `res` that the graph left untyped; null
  /// when the node does not determine it.
  Type elementOfUntypedResult(unsigned res) {
    for (StringRef a : {"to", "dtype"})
      if (auto dt = attrOf<IntegerAttr>(a))
        if (Type t = train::getElementTypeForOnnxDataType(current->getContext(),
                                                          int32_t(dt.getInt())))
          return t;
    if (Type t = elementFromTypeConstraint(res))
      return t;
    auto node = dyn_cast<train::OnnxNodeOpInterface>(current);
    StringRef op = node ? node.getOnnxOpType() : StringRef();
    if ((op.ends_with("Like") || op == "Bernoulli") &&
        current->getNumOperands() > 0)
      if (auto it = valueBuf.find(current->getOperand(0)); it != valueBuf.end())
        return bufs[it->second].elem;
    return {};
  }
  /// The buffer an optimizer updates input `input` (in `buf`) in, which
  /// result `res` then names: the input itself when it is exclusive state
  /// (the framework keeps the update, as ORT's kernels alias them), else a
  /// copy.
  FailureOr<int> updatedInPlace(unsigned res, unsigned input, int buf);
  /// Whether input `i` (in buffer `buf`) is state the node may update in
  /// place: a graph input that nothing else reads (the framework keeps it
  /// across steps, as it keeps running statistics and optimizer moments).
  bool isExclusiveState(unsigned i, int buf) {
    return bufs[buf].kind == Buffer::Arg && current->getOperand(i).hasOneUse();
  }

  // --- operand access -----------------------------------------------------
  bool has(unsigned i) {
    return i < current->getNumOperands() &&
           !isa<NoneType>(current->getOperand(i).getType());
  }
  FailureOr<int> in(unsigned i) {
    if (!has(i)) {
      err() << "input " << i << " is required";
      return failure();
    }
    std::optional<int> b = bufferOf(current->getOperand(i));
    if (b)
      return *b;
    err() << "input " << i
          << " has no buffer (a sequence or unsupported "
             "value)";
    return failure();
  }
  /// The buffer holding `v`: its own, or a constant buffer made for a
  /// value known at lowering time; nullopt for neither.
  std::optional<int> bufferOf(Value v) {
    auto it = valueBuf.find(v);
    if (it != valueBuf.end())
      return it->second;
    auto c = hostConst.find(v);
    if (c == hostConst.end())
      return std::nullopt;
    auto type = cast<ShapedType>(c->second.getType());
    Buffer b;
    b.kind = Buffer::Const;
    b.value = c->second;
    b.shape.assign(type.getShape().begin(), type.getShape().end());
    b.elem = type.getElementType();
    int id = newBuffer(b);
    valueBuf[v] = id;
    return id;
  }

  /// Host integer values of input i (a constant or a folded value), or
  /// failure.
  FailureOr<SmallVector<int64_t>> hostInts(unsigned i) {
    auto h = hostIn(i);
    if (!h) {
      err() << "input " << i
            << " must be known when lowering (an initializer, a constant or "
               "a shape computation)";
      return failure();
    }
    SmallVector<int64_t> out;
    for (double d : h->v)
      out.push_back(hostInt(d));
    return out;
  }
  /// Normalizes `axis` in place against `rank` (negative counts from the
  /// end); an error naming it when it is out of range.
  LogicalResult normAxis(int64_t &axis, int64_t rank) {
    if (axis < -rank || axis >= rank)
      return err() << "axis " << axis << " out of range";
    if (axis < 0)
      axis += rank;
    return success();
  }
  /// `axes`: input i (opset >= 13) when present, else the attribute.
  FailureOr<SmallVector<int64_t>> axesOf(unsigned i) {
    if (has(i))
      return hostInts(i);
    return attrInts("axes").value_or(SmallVector<int64_t>());
  }
  /// Host value of input i, when it is one.
  std::optional<HostTensor> hostIn(unsigned i);
  /// The static shape of input i (a buffer or a host value).
  std::optional<Shape> shapeOfInput(unsigned i);
  /// Element type of result i, or `fallback` when the result is untyped.
  Type resultElemOr(unsigned i, Type fallback);
  /// Records result i as the host value `h`.
  void setHost(unsigned i, const HostTensor &h);

  Type resultElem(unsigned i) {
    return cast<ShapedType>(current->getResult(i).getType()).getElementType();
  }
  bool resultUsed(unsigned i) {
    return i < current->getNumResults() &&
           !isa<NoneType>(current->getResult(i).getType());
  }
  /// Whether the current node is a batch normalization train-data-parallel
  /// made a SyncBatchNorm (train::kSyncBatchNormAttr).
  bool syncBatchNorm() { return current->hasAttr(train::kSyncBatchNormAttr); }
  /// Appends input i as the call argument `name` when the node has it.
  LogicalResult optionalIn(SmallVectorImpl<TArg> &ts, StringRef name,
                           unsigned i) {
    if (!has(i))
      return success();
    auto b = in(i);
    if (failed(b))
      return failure();
    ts.push_back({name.str(), {*b}});
    return success();
  }
  /// Appends a new temporary for result i, of `shape`, as the call argument
  /// `name` when the result is used.
  LogicalResult optionalOut(SmallVectorImpl<TArg> &ts, StringRef name,
                            unsigned i, ArrayRef<int64_t> shape) {
    if (!resultUsed(i))
      return success();
    auto b = out(i, shape);
    if (failed(b))
      return failure();
    ts.push_back({name.str(), {*b}});
    return success();
  }
  /// A new temporary for result i with `shape`; checks a static result type.
  FailureOr<int> out(unsigned i, ArrayRef<int64_t> shape, Type elem = nullptr) {
    Value r = current->getResult(i);
    if (!fitsInMemory(shape)) {
      auto diag = err() << "output " << i << " would have shape [";
      llvm::interleaveComma(shape, diag);
      diag << "]: more than " << (kMaxBufferBytes >> 40)
           << " TiB, no buffer can hold it";
      return failure();
    }
    auto type = dyn_cast<ShapedType>(r.getType());
    // A result without any type (no value_info at all): the element type
    // the node names (Cast's `to`, the generators' `dtype`), else that of
    // the input sharing its type constraint, else (the "Like" generators,
    // Bernoulli) that of input 0.
    if (!type && !elem)
      elem = elementOfUntypedResult(i);
    if (!type && elem) {
      // A result the graph left untyped (a value_info-less output of a
      // contrib op) whose element type the op defines: trust the caller.
      Buffer b;
      b.shape.assign(shape.begin(), shape.end());
      b.elem = elem;
      b.role = roleOfResult(i);
      int id = newBuffer(b);
      valueBuf[r] = id;
      return id;
    }
    if (!type) {
      err() << "output " << i << " has type " << r.getType()
            << ", not a tensor";
      return failure();
    }
    if (!elem && !type.getElementType().isIntOrFloat()) {
      // An element type the graph left unknown (`!train.unknown`, from a
      // value_info without elem_type): that of the input sharing the
      // output's type constraint.
      elem = elementFromTypeConstraint(i);
      if (!elem) {
        err() << "output " << i << " has element type " << type.getElementType()
              << " and no input shares its type constraint";
        return failure();
      }
    }
    if (type.hasRank()) {
      bool ok = type.getRank() == int64_t(shape.size());
      for (size_t d = 0; ok && d < shape.size(); ++d)
        ok = type.isDynamicDim(d) || type.getDimSize(d) == shape[d];
      if (!ok) {
        auto diag = err() << "computed shape [";
        llvm::interleaveComma(shape, diag);
        diag << "] of output " << i << " disagrees with its type " << type;
        return failure();
      }
    }
    Buffer b;
    b.shape.assign(shape.begin(), shape.end());
    b.elem = elem ? elem : type.getElementType();
    b.role = roleOfResult(i);
    int id = newBuffer(b);
    valueBuf[r] = id;
    return id;
  }
  /// The Buffer::Role of the current node's result `i`.
  Buffer::Role roleOfResult(unsigned i) {
    if (auto outs = current->getAttrOfType<ArrayAttr>("train.outputs"))
      if (i < outs.size())
        if (auto o = dyn_cast<StringAttr>(outs[i]))
          if (o.getValue().contains("_grad"))
            return Buffer::Gradient;
    if (isa<CastOp>(current) && current->getNumOperands() == 1)
      if (auto it = valueBuf.find(current->getOperand(0));
          it != valueBuf.end() && bufs[it->second].kind == Buffer::Arg &&
          !bufs[it->second].boundDims)
        return Buffer::WeightCopy;
    return Buffer::Activation;
  }

  // --- attributes ---------------------------------------------------------
  /// The ONNX attribute `n` of the current node: an inherent attribute of a
  /// typed op, or an entry of a generic train.node's `attrs`.
  /// ONNX attribute `n` of node `op` (a generic train.node keeps them in
  /// its `attrs` dictionary).
  static Attribute nodeAttrOf(Operation *op, StringRef n) {
    return getOnnxAttribute(op, n);
  }
  static int64_t attrIntOf(Operation *op, StringRef n, int64_t dflt) {
    return getOnnxInt(op, n, dflt);
  }
  Attribute nodeAttr(StringRef n) { return nodeAttrOf(current, n); }
  template <typename T> T attrOf(StringRef n) {
    return dyn_cast_or_null<T>(nodeAttr(n));
  }
  int64_t attrInt(StringRef n, int64_t dflt) {
    return attrIntOf(current, n, dflt);
  }
  double attrFloat(StringRef n, double dflt) {
    if (auto a = attrOf<FloatAttr>(n))
      return a.getValueAsDouble();
    return dflt;
  }
  std::string attrStr(StringRef n, StringRef dflt) {
    if (auto a = attrOf<StringAttr>(n))
      return a.str();
    return dflt.str();
  }
  /// A list of strings (ONNX STRINGS), or nullopt.
  std::optional<SmallVector<std::string>> attrStrs(StringRef n) {
    auto a = attrOf<ArrayAttr>(n);
    if (!a)
      return std::nullopt;
    SmallVector<std::string> v;
    for (Attribute e : a)
      if (auto str = dyn_cast<StringAttr>(e))
        v.push_back(str.str());
    return v;
  }
  /// A random node's seed: its `seed` attribute (an int for Dropout; a
  /// float for the Random* ops and Bernoulli, taken by its bits), else a
  /// hash (FNV-1a: the same on every run and host) of the node's name, or
  /// of its first output's name when the node has none (ONNX names are
  /// optional; value names are unique), so that two nodes draw independent
  /// streams.
  int64_t nodeSeed() {
    Attribute a = nodeAttr("seed");
    if (auto i = dyn_cast_or_null<IntegerAttr>(a))
      return i.getInt();
    if (auto f = dyn_cast_or_null<FloatAttr>(a))
      return llvm::bit_cast<int64_t>(f.getValueAsDouble());
    StringRef key = nodeName;
    if (key.empty())
      if (auto outs = current->getAttrOfType<ArrayAttr>("train.outputs"))
        if (!outs.empty())
          if (auto o = dyn_cast<StringAttr>(outs[0]))
            key = o.getValue();
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : key) {
      h ^= uint8_t(c);
      h *= 0x100000001b3ull;
    }
    return int64_t(h);
  }
  std::optional<SmallVector<int64_t>> attrInts(StringRef n) {
    return getOnnxInts(current, n);
  }

  // --- calls --------------------------------------------------------------

  /// Plans `amprt_<kernel>` with named tensor arguments and attributes,
  /// checked against Ops.def.
  LogicalResult call(StringRef kernel, ArrayRef<TArg> tensors,
                     ArrayRef<std::pair<StringRef, Attribute>> attrs = {}) {
    const KernelSignature *sig = amprt::lookupKernel(kernel);
    if (!sig)
      return err() << "the runtime has no kernel amprt_" << kernel;
    PlannedCall pc{sig, {}, {}, current->getLoc()};
    for (const TArg &t : tensors)
      if (!sig->find(t.name) || sig->find(t.name)->kind != ParamKind::Tensor)
        return err() << "internal: amprt_" << kernel
                     << " has no tensor parameter '" << t.name << "'";
    for (const KernelParam &p : sig->params) {
      if (p.kind == ParamKind::Context)
        continue;
      if (p.kind == ParamKind::Tensor) {
        SmallVector<int, 1> list;
        for (const TArg &t : tensors)
          if (t.name == p.name)
            list = t.bufs;
        pc.tensors.push_back(list);
        continue;
      }
      bool found = false;
      for (auto &[n, a] : attrs)
        if (n == p.name) {
          pc.attrs.set(n, a);
          found = true;
        }
      if (!found)
        return err() << "internal: no value for parameter '" << p.name
                     << "' of amprt_" << kernel;
    }
    pc.attrs.set("node", StringAttr::get(ctx, nodeName));
    OpBuilder::InsertionGuard guard(*rewriter);
    rewriter->setInsertionPointToEnd(entry);
    writeCall(*rewriter, pc, bufValues);
    return success();
  }

  LogicalResult lowerNode(OnnxNodeOpInterface node);
  LogicalResult bindArgs();
  /// Evaluates the current node on the host when it is a shape computation
  /// (HostFold.cpp): true when folded, false when it must run on the device.
  FailureOr<bool> tryHostFold(StringRef domain, StringRef type);
  // --- op families ---------------------------------------------------------
  // Each lowers the current node (true), declines it (false: the next
  // family listed for its (domain, op_type) is tried), or reports an error.
  // Each family file also lists the ops it lowers (register*), which the
  // table of LoweringTable.cpp collects.
public:
  using Family = FailureOr<bool> (GraphLowering::*)(StringRef domain,
                                                    StringRef type);
  class FamilyTable;
  /// The families listed for (domain, op_type), in order ("ai.onnx" is "").
  static ArrayRef<Family> familiesOf(StringRef domain, StringRef type);
  /// Every family, in the order their files were registered: one conversion
  /// pattern each (TrainToRuntime.cpp).
  static ArrayRef<Family> allFamilies();
  /// Adds every family file's ops to `t` (LoweringTable.cpp).
  static void registerFamilies(FamilyTable &t);

private:
  static void registerResize(FamilyTable &t);
  static void registerNN(FamilyTable &t);
  static void registerData(FamilyTable &t);
  static void registerRecurrent(FamilyTable &t);
  static void registerComposite(FamilyTable &t);
  static void registerElementwise(FamilyTable &t);
  static void registerMath(FamilyTable &t);
  static void registerLoss(FamilyTable &t);
  static void registerOptimizer(FamilyTable &t);
  static void registerShape(FamilyTable &t);
  static void registerCollective(FamilyTable &t);
  /// Unary and binary math, comparisons, logic, Min/Max/Sum, Where,
  /// CastLike, activation gradients (LowerElementwise.cpp).
  FailureOr<bool> lowerElementwise(StringRef domain, StringRef type);
  /// Gemm, MatMul, Reduce*, Softmax, LogSoftmax (LowerMath.cpp).
  FailureOr<bool> lowerMath(StringRef domain, StringRef type);
  /// SoftmaxCrossEntropyLoss(+Grad), MSELoss(+Grad) (LowerLoss.cpp).
  FailureOr<bool> lowerLoss(StringRef domain, StringRef type);
  /// Optimizers and gradient accumulators (LowerOptimizer.cpp).
  FailureOr<bool> lowerOptimizer(StringRef domain, StringRef type);
  /// org.amp-mlir:AllReduce and ReduceScatter, train-data-parallel's
  /// buckets and loss scaling's flag over the ranks (LowerCollective.cpp).
  FailureOr<bool> lowerCollective(StringRef domain, StringRef type);
  LogicalResult lowerReduceScatter();
  /// Reshape, Flatten, Squeeze, Unsqueeze, Transpose (LowerShape.cpp).
  FailureOr<bool> lowerShape(StringRef domain, StringRef type);
  /// Convolution, pooling, normalization, softmax grad, dropout
  /// (LowerNN.cpp).
  FailureOr<bool> lowerNN(StringRef domain, StringRef type);
  /// Resize, Upsample, ResizeGrad (LowerResize.cpp).
  FailureOr<bool> lowerResizeFamily(StringRef domain, StringRef type);
  LogicalResult lowerResize(bool grad);
  /// Gather, slice, concat, expand, FusedMatMul, Scale (LowerData.cpp).
  FailureOr<bool> lowerData(StringRef domain, StringRef type);
  /// LSTM and GRU, their ORT training forms and gradients
  /// (LowerRecurrent.cpp).
  FailureOr<bool> lowerRecurrent(StringRef domain, StringRef type);
  /// Tile, Split, ReduceL2, LogSoftmaxGrad, DivGrad as sequences of
  /// existing kernels (LowerComposite.cpp).
  FailureOr<bool> lowerComposite(StringRef domain, StringRef type);
  /// The shape ReduceSum/ReduceMean/ReduceL2 give `sx` (ONNX's axes,
  /// keepdims and noop_with_empty_axes); an error for an axis out of range.
  FailureOr<Shape> reducedShape(ArrayRef<int64_t> sx, ArrayRef<int64_t> axes,
                                bool keepdims, bool noop);
  /// The attributes of a reduce_* call (ONNX's axes, keepdims and
  /// noop_with_empty_axes).
  SmallVector<std::pair<StringRef, Attribute>>
  reduceAttrs(ArrayRef<int64_t> axes, int64_t keepdims, int64_t noop) {
    return {{"axes", ints(axes)},
            {"naxes", i64(axes.size())},
            {"keepdims", i32(keepdims)},
            {"noop_with_empty_axes", i32(noop)}};
  }
  /// A new temporary of `shape` and `elem`.
  int scratch(ArrayRef<int64_t> shape, Type elem);
  /// `kernel`(x = input 0, y = output 0 of x's shape) with `attrs`: the
  /// lowering of every op whose output has its input's shape.
  LogicalResult
  sameShapeCall(StringRef kernel,
                ArrayRef<std::pair<StringRef, Attribute>> attrs = {}) {
    auto x = in(0);
    if (failed(x))
      return failure();
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    return call(kernel, {{"x", {*x}}, {"y", {*y}}}, attrs);
  }
  /// y = x summed over the dims in which `target` (y's shape) was
  /// broadcast to x's shape: a gradient back to its operand's shape.
  LogicalResult sumToShape(int x, ArrayRef<int64_t> target, int y);
  /// What a lowering family returns for a node it handled: true, or the
  /// failure (already reported), never "not handled" (that would report a
  /// second, wrong error: "no runtime implementation").
  static FailureOr<bool> handled(LogicalResult r) {
    if (failed(r))
      return failure();
    return true;
  }
  /// conv / conv_transpose of inputs 0 (x), 1 (w) and the optional bias
  /// (input 2) into output 0 of shape `sy`.
  LogicalResult convForward(StringRef kernel, int x, int w,
                            ArrayRef<int64_t> sy, DictionaryAttr win);
  /// The amprt_window attribute of a Conv/pool node over input shape `x`
  /// with kernel `k` (spatial dims); computes the output spatial dims.
  FailureOr<DictionaryAttr> window(ArrayRef<int64_t> x, ArrayRef<int64_t> k,
                                   bool pool, Shape &outSpatial);
};

/// Lowers `graph` into `state` (made for it): the graph becomes an
/// unplanned func.func, not yet written again through the planned program.
LogicalResult lowerGraph(GraphLowering &state, GraphOp graph);

/// convert-train-to-amprt: every train.graph of `module` becomes an
/// unplanned func.func by a dialect conversion (TrainToRuntime.cpp); with
/// `narrowInputs`, f32 data inputs that are only cast to 16 bits are taken
/// in that type (NarrowInputs.cpp).
LogicalResult convertGraphsToAmpRT(ModuleOp module,
                                   const llvm::StringMap<int64_t> &dims,
                                   bool narrowInputs);

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_GRAPHLOWERING_H
