//===- TrainToRuntime.cpp - train graphs to amprt calls on memrefs
//---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Three steps per train.graph:
//  1. plan: walk the ops in order; bind static shapes (graph inputs from
//     their types and the `dims` option, results by each op's shape rule);
//     turn each op into kernel calls on numbered buffers;
//  2. place: temporaries get offsets in one arena by liveness (first fit
//     over [first def, last use] intervals), 64-byte aligned;
//  3. emit: func.func with memref args, the arena alloc and its views,
//     memref.global constants, amprt.call ops, func.return.
// The kernels and their parameters come from Ops.def (KernelABI.h) only.
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
    bool bound = bool(graph.getArgAttr(idx, "train.bound_dims"));
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

FailureOr<Shape> GraphLowering::reshapedShape(StringRef type,
                                              ArrayRef<int64_t> sx) {
  int64_t rank = sx.size();
  Shape s;
  if (type == "Flatten") {
    int64_t axis = attrInt("axis", 1);
    if (axis < -rank || axis > rank) {
      err() << "axis " << axis << " out of range";
      return failure();
    }
    if (axis < 0)
      axis += rank;
    s = {numel(sx.take_front(axis)), numel(sx.drop_front(axis))};
  } else if (type == "Reshape") {
    auto h = hostInts(1);
    if (failed(h))
      return failure();
    int64_t known = 1, infer = -1;
    for (auto [i, d] : llvm::enumerate(*h)) {
      int64_t v = d;
      if (v == 0 && !attrInt("allowzero", 0))
        v = int64_t(i) < rank ? sx[i] : 0;
      if (v < -1 || (v == -1 && infer >= 0)) {
        err() << "bad target shape entry " << d;
        return failure();
      }
      if (v == -1)
        infer = i;
      else
        known *= v;
      s.push_back(v);
    }
    if (infer >= 0)
      s[infer] = known ? numel(sx) / known : 0;
  } else {
    auto axesOr = axesOf(1);
    if (failed(axesOr))
      return failure();
    SmallVector<int64_t> axes = *axesOr;
    int64_t outRank = type == "Squeeze" ? rank : rank + int64_t(axes.size());
    SmallVector<bool> marked(outRank, type == "Squeeze" && axes.empty());
    for (int64_t a : axes) {
      if (a < -outRank || a >= outRank) {
        err() << "axis " << a << " out of range";
        return failure();
      }
      marked[a < 0 ? a + outRank : a] = true;
    }
    if (type == "Squeeze") {
      for (int64_t d = 0; d < rank; ++d)
        if (!(marked[d] && sx[d] == 1))
          s.push_back(sx[d]);
    } else {
      for (int64_t d = 0, k = 0; d < outRank; ++d)
        s.push_back(marked[d] ? 1 : sx[k++]);
    }
  }
  if (numel(s) != numel(sx)) {
    err() << "reshape changes the element count";
    return failure();
  }
  return s;
}

LogicalResult GraphLowering::lowerNode(OnnxNodeOpInterface node) {
  StringRef domain = node.getOnnxDomain();
  StringRef type = node.getOnnxOpType();
  bool ms = domain == "com.microsoft";
  bool onnx = domain.empty() || domain == "ai.onnx";

  // Shape computations first: they become constants, not calls.
  for (auto family : {&GraphLowering::tryHostFold, &GraphLowering::lowerNN,
                      &GraphLowering::lowerData, &GraphLowering::lowerRecurrent,
                      &GraphLowering::lowerComposite}) {
    FailureOr<bool> done = (this->*family)(domain, type);
    if (failed(done))
      return failure();
    if (*done)
      return success();
  }

  static const llvm::StringMap<StringRef> unaryOps = {
      {"Relu", "relu"},
      {"Sigmoid", "sigmoid"},
      {"Tanh", "tanh"},
      {"Exp", "exp"},
      {"Log", "log"},
      {"Sqrt", "sqrt"},
      {"Reciprocal", "reciprocal"},
      {"Neg", "neg"},
      {"Abs", "abs"},
      {"IsNaN", "isnan"},
      {"Not", "logical_not"},
      {"Identity", "identity"},
      {"Cast", "cast"},
      {"Gelu", "gelu"},
      {"Sign", "sign"},
      {"Erf", "erf"},
      {"Sin", "sin"},
      {"Cos", "cos"},
      {"Floor", "floor"},
      {"Ceil", "ceil"},
      {"Round", "round"}};
  static const llvm::StringMap<StringRef> binaryOps = {
      {"Add", "add"},
      {"Sub", "sub"},
      {"Mul", "mul"},
      {"Div", "div"},
      {"Pow", "pow"},
      {"Mod", "mod"},
      {"Less", "less"},
      {"Greater", "greater"},
      {"Equal", "equal"},
      {"LessOrEqual", "less_or_equal"},
      {"GreaterOrEqual", "greater_or_equal"},
      {"And", "logical_and"},
      {"Or", "logical_or"},
      {"Xor", "logical_xor"}};
  static const llvm::StringMap<StringRef> msGradOps = {
      {"ReluGrad", "relu_grad"},
      {"SigmoidGrad", "sigmoid_grad"},
      {"TanhGrad", "tanh_grad"},
      {"GeluGrad", "gelu_grad"},
      {"FastGeluGrad", "fast_gelu_grad"}};

  // Activations with a slope (alpha): LeakyRelu and Swish (ONNX; Swish is
  // x sigmoid(alpha x), QuickGelu's formula), QuickGelu (com.microsoft),
  // and their com.microsoft gradients.
  static const llvm::StringMap<std::pair<StringRef, double>> slopeOps = {
      {"LeakyRelu", {"leaky_relu", 0.01}},
      {"Swish", {"quick_gelu", 1.0}},
      {"QuickGelu", {"quick_gelu", 1.702}},
      {"LeakyReluGrad", {"leaky_relu_grad", 0.01}},
      {"QuickGeluGrad", {"quick_gelu_grad", 1.702}}};
  auto slope = slopeOps.find(type);
  bool sloped = slope != slopeOps.end() &&
                (type == "LeakyRelu" || type == "Swish" ? onnx : ms);
  SmallVector<std::pair<StringRef, Attribute>, 1> slopeAttr;
  if (sloped)
    slopeAttr.push_back(
        {"alpha", f32(attrFloat("alpha", slope->second.second))});

  if (onnx && type == "CastLike") {
    // Cast to the element type of input 1 (whose values are not read).
    Type like = current->getNumOperands() > 1 ? elementOfOperand(1) : Type();
    if (!like)
      return err() << "input 1 has no known element type";
    auto x = in(0);
    if (failed(x))
      return failure();
    auto y = out(0, shapeOf(*x), like);
    if (failed(y))
      return failure();
    return call("cast", {{"x", {*x}}, {"y", {*y}}});
  }
  // Elementwise unary: same shape.
  if ((onnx && unaryOps.count(type)) ||
      (ms && (type == "Gelu" || type == "FastGelu")) ||
      (sloped && !type.ends_with("Grad"))) {
    StringRef k = sloped ? slope->second.first
                  : ms   ? (type == "Gelu" ? "gelu" : "fast_gelu")
                         : unaryOps.lookup(type);
    if (onnx && type == "Gelu") {
      // Opset 20's approximate = "tanh" is FastGelu's formula.
      std::string approx = attrStr("approximate", "none");
      if (approx != "none" && approx != "tanh")
        return err() << "approximate '" << approx << "' is not none or tanh";
      if (approx == "tanh")
        k = "fast_gelu";
    }
    auto x = in(0);
    if (failed(x))
      return failure();
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    return call(k, {{"x", {*x}}, {"y", {*y}}}, slopeAttr);
  }
  if (onnx && binaryOps.count(type)) {
    auto a = in(0), b = in(1);
    if (failed(a) || failed(b))
      return failure();
    Shape s;
    if (!broadcast({shapeOf(*a), shapeOf(*b)}, s))
      return err() << "input shapes do not broadcast";
    auto y = out(0, s);
    if (failed(y))
      return failure();
    StringRef k = type == "Mod" && attrInt("fmod", 0) ? StringRef("fmod")
                                                      : binaryOps.lookup(type);
    return call(k, {{"a", {*a}}, {"b", {*b}}, {"y", {*y}}});
  }
  // Min / Max / Sum: variadic, broadcast.
  if (onnx && (type == "Min" || type == "Max" || type == "Sum")) {
    SmallVector<int> ins;
    SmallVector<Shape> shapes;
    for (unsigned i = 0; i < current->getNumOperands(); ++i) {
      auto b = in(i);
      if (failed(b))
        return failure();
      ins.push_back(*b);
      shapes.push_back(shapeOf(*b));
    }
    Shape s;
    if (!broadcast(shapes, s))
      return err() << "input shapes do not broadcast";
    auto y = out(0, s);
    if (failed(y))
      return failure();
    if (type == "Sum")
      return call("sum",
                  {{"inputs", SmallVector<int, 1>(ins.begin(), ins.end())},
                   {"y", {*y}}},
                  {{"n", i64(ins.size())}});
    StringRef k = type == "Min" ? "min" : "max";
    if (ins.size() == 1)
      return call("expand", {{"x", {ins[0]}}, {"y", {*y}}});
    if (failed(call(k, {{"a", {ins[0]}}, {"b", {ins[1]}}, {"y", {*y}}})))
      return failure();
    for (size_t i = 2; i < ins.size(); ++i)
      if (failed(call(k, {{"a", {*y}}, {"b", {ins[i]}}, {"y", {*y}}})))
        return failure();
    return success();
  }
  if (onnx && type == "Where") {
    auto c = in(0), a = in(1), b = in(2);
    if (failed(c) || failed(a) || failed(b))
      return failure();
    Shape s;
    if (!broadcast({shapeOf(*c), shapeOf(*a), shapeOf(*b)}, s))
      return err() << "input shapes do not broadcast";
    auto y = out(0, s);
    if (failed(y))
      return failure();
    return call("where",
                {{"cond", {*c}}, {"a", {*a}}, {"b", {*b}}, {"y", {*y}}});
  }
  if ((ms && msGradOps.count(type)) || (sloped && type.ends_with("Grad"))) {
    auto dy = in(0), x = in(1);
    if (failed(dy) || failed(x))
      return failure();
    auto dx = out(0, shapeOf(*dy));
    if (failed(dx))
      return failure();
    return call(sloped ? slope->second.first : msGradOps.lookup(type),
                {{"dy", {*dy}}, {"x", {*x}}, {"dx", {*dx}}}, slopeAttr);
  }
  if (onnx && (type == "Gemm" || type == "MatMul")) {
    auto a = in(0), b = in(1);
    if (failed(a) || failed(b))
      return failure();
    Shape sa = shapeOf(*a), sb = shapeOf(*b);
    if (type == "MatMul") {
      if (sa.size() < 2 || sb.size() < 2)
        return err() << "1-D MatMul operands are not supported yet";
      Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), s;
      if (!broadcast({ba, bb}, s) || sa.back() != sb[sb.size() - 2])
        return err() << "MatMul shapes do not agree";
      s.push_back(sa[sa.size() - 2]);
      s.push_back(sb.back());
      auto y = out(0, s);
      if (failed(y))
        return failure();
      return call("matmul", {{"a", {*a}}, {"b", {*b}}, {"y", {*y}}});
    }
    int64_t ta = attrInt("transA", 0), tb = attrInt("transB", 0);
    // Deeploy's training graphs have Gemm on operands of rank 3 (invalid
    // ONNX; its runtime multiplies the last two dims batched over the
    // rest) without C: that is FusedMatMul.
    if ((sa.size() > 2 || sb.size() > 2) && sa.size() >= 2 && sb.size() >= 2 &&
        (!has(2) || attrFloat("beta", 1.0) == 0.0))
      return lowerBatchedMatMul(ta, tb, attrFloat("alpha", 1.0));
    if (sa.size() != 2 || sb.size() != 2)
      return err() << "Gemm operands must be 2-D (or, as Deeploy writes "
                      "them, of rank 3 and more without C)";
    int64_t m = ta ? sa[1] : sa[0], ka = ta ? sa[0] : sa[1];
    int64_t kb = tb ? sb[1] : sb[0], n = tb ? sb[0] : sb[1];
    if (ka != kb)
      return err() << "Gemm inner dims " << ka << " and " << kb << " differ";
    SmallVector<TArg> ts = {{"a", {*a}}, {"b", {*b}}};
    if (failed(optionalIn(ts, "c", 2)))
      return failure();
    auto y = out(0, {m, n});
    if (failed(y))
      return failure();
    ts.push_back({"y", {*y}});
    return call("gemm", ts,
                {{"trans_a", i32(ta)},
                 {"trans_b", i32(tb)},
                 {"alpha", f32(attrFloat("alpha", 1.0))},
                 {"beta", f32(attrFloat("beta", 1.0))}});
  }
  if (onnx && (type == "ReduceSum" || type == "ReduceMean" ||
               type == "ReduceMax" || type == "ReduceMin")) {
    auto x = in(0);
    if (failed(x))
      return failure();
    auto axesOr = axesOf(1);
    if (failed(axesOr))
      return failure();
    SmallVector<int64_t> axes = *axesOr;
    int64_t keep = attrInt("keepdims", 1);
    int64_t noop = attrInt("noop_with_empty_axes", 0);
    auto s = reducedShape(shapeOf(*x), axes, keep, noop);
    if (failed(s))
      return failure();
    auto y = out(0, *s);
    if (failed(y))
      return failure();
    Type e = bufs[*x].elem;
    bool ints = type != "ReduceMean" && (e.isInteger(64) || e.isInteger(32));
    if (!isa<FloatType>(e) && !ints)
      return err() << "input 0 has element type " << e << "; the runtime's "
                   << type << " takes f32, f16, bf16"
                   << (type == "ReduceMean" ? "" : ", i64 or i32");
    StringRef kernel = llvm::StringSwitch<StringRef>(type)
                           .Case("ReduceSum", "reduce_sum")
                           .Case("ReduceMean", "reduce_mean")
                           .Case("ReduceMax", "reduce_max")
                           .Default("reduce_min");
    return call(kernel, {{"x", {*x}}, {"y", {*y}}},
                reduceAttrs(axes, keep, noop));
  }
  if (onnx && (type == "Softmax" || type == "LogSoftmax")) {
    auto x = in(0);
    if (failed(x))
      return failure();
    auto y = out(0, shapeOf(*x));
    if (failed(y))
      return failure();
    return call(type == "Softmax" ? "softmax" : "log_softmax",
                {{"x", {*x}}, {"y", {*y}}},
                {{"axis", i64(attrInt("axis", -1))}});
  }
  if (onnx && (type == "SoftmaxCrossEntropyLoss" ||
               type == "NegativeLogLikelihoodLoss")) {
    // NegativeLogLikelihoodLoss is the same loss on inputs that are
    // log-probabilities already (no log-softmax, no log_prob output).
    bool nll = type == "NegativeLogLikelihoodLoss";
    auto s = in(0), l = in(1);
    if (failed(s) || failed(l))
      return failure();
    SmallVector<TArg> ts = {{nll ? "input" : "scores", {*s}}, {"labels", {*l}}};
    if (failed(optionalIn(ts, "weight", 2)))
      return failure();
    std::string red = attrStr("reduction", "mean");
    if (red != "none" && red != "sum" && red != "mean")
      return err() << "reduction '" << red << "' is not one of none, sum, mean";
    int64_t r = red == "none" ? 0 : red == "sum" ? 1 : 2;
    auto loss = out(0, r == 0 ? shapeOf(*l) : Shape());
    if (failed(loss))
      return failure();
    ts.push_back({"loss", {*loss}});
    if (!nll && failed(optionalOut(ts, "log_prob", 1, shapeOf(*s))))
      return failure();
    auto ign = attrOf<IntegerAttr>("ignore_index");
    return call(nll ? "nll_loss" : "softmax_cross_entropy_loss", ts,
                {{"reduction", i32(r)},
                 {"has_ignore_index", i32(ign ? 1 : 0)},
                 {"ignore_index", i64(ign ? ign.getInt() : 0)}});
  }
  if ((ms || onnx) && type == "SoftmaxCrossEntropyLossGrad") {
    // ORT's form: (dloss, log_prob, labels[, weight]). Deeploy's training
    // graphs use (log_prob, labels): the loss gradient seed is 1.
    bool seeded = current->getNumOperands() >= 3;
    unsigned base = seeded ? 1 : 0;
    auto lp = in(base), l = in(base + 1);
    if (failed(lp) || failed(l))
      return failure();
    int d;
    if (seeded) {
      auto dl = in(0);
      if (failed(dl))
        return failure();
      d = *dl;
    } else {
      d = constBuffer({{}, Float32Type::get(ctx), {1.0}});
    }
    SmallVector<TArg> ts = {
        {"dloss", {d}}, {"log_prob", {*lp}}, {"labels", {*l}}};
    if (failed(optionalIn(ts, "weight", base + 2)))
      return failure();
    auto dx = out(0, shapeOf(*lp));
    if (failed(dx))
      return failure();
    ts.push_back({"dx", {*dx}});
    std::string red = attrStr("reduction", "mean");
    auto ign = attrOf<IntegerAttr>("ignore_index");
    return call("softmax_cross_entropy_loss_grad", ts,
                {{"reduction", i32(red == "none"  ? 0
                                   : red == "sum" ? 1
                                                  : 2)},
                 {"has_ignore_index", i32(ign ? 1 : 0)},
                 {"ignore_index", i64(ign ? ign.getInt() : 0)}});
  }
  // Deeploy's training graphs: MSELoss(x, target) (mean), MSELossGrad(x,
  // target) with seed 1, and per-parameter SGD(param, grad) with an `lr`
  // attribute whose output is the updated parameter.
  if (onnx && (type == "MSELoss" || type == "MSELossGrad")) {
    auto x = in(0), t = in(1);
    if (failed(x) || failed(t))
      return failure();
    if (shapeOf(*x) != shapeOf(*t))
      return err() << "input and target shapes differ";
    if (type == "MSELoss") {
      auto loss = out(0, {});
      if (failed(loss))
        return failure();
      return call("mse_loss",
                  {{"x", {*x}}, {"target", {*t}}, {"loss", {*loss}}});
    }
    auto dx = out(0, shapeOf(*x));
    if (failed(dx))
      return failure();
    return call("mse_loss_grad",
                {{"x", {*x}}, {"target", {*t}}, {"dx", {*dx}}});
  }
  if (onnx && type == "SGD" && current->getNumOperands() == 2) {
    auto p = in(0), g = in(1);
    if (failed(p) || failed(g))
      return failure();
    if (shapeOf(*p) != shapeOf(*g))
      return err() << "parameter and gradient shapes differ";
    // In place on the parameter when it is exclusive state (its output
    // names it), so that amp-run's parameter is the one updated.
    auto y = updatedInPlace(0, 0, *p);
    if (failed(y))
      return failure();
    int lr = constBuffer({{}, Float32Type::get(ctx), {attrFloat("lr", 0.01)}});
    return call("sgd", {{"params", {*y}}, {"grads", {*g}}, {"lr", {lr}}},
                {{"n", i64(1)},
                 {"momentum", f32(0)},
                 {"dampening", f32(0)},
                 {"weight_decay", f32(0)},
                 {"nesterov", i32(0)}});
  }
  if (domain == "ai.onnx.preview.training" &&
      (type == "Adam" || type == "Adagrad" || type == "Momentum")) {
    // (R, T, X..., G..., then one state list for Momentum (V) and Adagrad
    // (H), two for Adam (V, H)) -> (X_new..., state_new...): n tensors per
    // list. The kernels update X and the states in place; the outputs name
    // them (copies where an input is read elsewhere too).
    unsigned lists = type == "Adam" ? 4 : 3;
    unsigned total = current->getNumOperands();
    if (total < 2 + lists || (total - 2) % lists != 0)
      return err() << (total - 2) << " tensor inputs are not " << lists
                   << " lists of equal length (X, G and the state)";
    unsigned n = (total - 2) / lists;
    if (current->getNumResults() != (lists - 1) * n)
      return err() << current->getNumResults() << " outputs, expected "
                   << (lists - 1) * n;
    auto r = in(0), t = in(1);
    if (failed(r) || failed(t))
      return failure();
    if (numel(shapeOf(*r)) != 1 || numel(shapeOf(*t)) != 1)
      return err() << "R and T must be scalars";
    // The loss-scaling pass keeps X and the states on overflow with
    // Where(flag, new, old) per output. When each used output is read only
    // by such a gate, all with one flag, the kernel's `update` flag does
    // the same in place (a skipped step writes nothing: bit-identical
    // state) and the gates name the state buffers.
    auto keepOf = [&](unsigned res) {
      unsigned l = res / n, k = res % n;
      return 2 + (l == 0 ? 0 : l + 1) * n + k;
    };
    Value flag;
    SmallVector<Operation *> gates;
    bool gated = true;
    for (unsigned res = 0; gated && res < current->getNumResults(); ++res) {
      Value v = current->getResult(res);
      if (v.use_empty())
        continue;
      Operation *u = v.hasOneUse() ? *v.user_begin() : nullptr;
      gated = u && isa<WhereOp>(u) && u->getOperand(1) == v &&
              u->getOperand(2) == current->getOperand(keepOf(res)) &&
              (!flag || u->getOperand(0) == flag);
      if (gated) {
        flag = u->getOperand(0);
        gates.push_back(u);
      }
    }
    gated &= !gates.empty();
    // With the gates, a state input is exclusive when the node and its
    // gate are its only readers.
    auto stateInPlace = [&](unsigned input, int buf) -> bool {
      if (!gated || bufs[buf].kind != Buffer::Arg)
        return false;
      for (Operation *user : current->getOperand(input).getUsers())
        if (user != current && !llvm::is_contained(gates, user))
          return false;
      return true;
    };
    // Input list l (0 = X, 1 = G, 2.. = states) element k; the output of
    // list l (X and the states, G has none) is result (l ? l - 1 : 0) * n.
    SmallVector<int, 1> bufsOf[4];
    for (unsigned l = 0; l < lists; ++l)
      for (unsigned k = 0; k < n; ++k) {
        unsigned input = 2 + l * n + k;
        auto b = in(input);
        if (failed(b))
          return failure();
        if (l && shapeOf(*b) != shapeOf(bufsOf[0][k]))
          return err() << "input " << input << " has another shape than X"
                       << k + 1;
        if (l != 1) {
          unsigned res = (l ? l - 1 : 0) * n + k;
          if (stateInPlace(input, *b)) {
            Value v = current->getResult(res);
            for (Operation *gate : gates)
              if (gate->getOperand(1) == v)
                valueBuf[gate->getResult(0)] = *b;
          } else if (gated) {
            return err() << "input " << input << " is read elsewhere too: "
                         << "the overflow gate cannot skip its update in "
                            "place";
          } else {
            auto u = updatedInPlace(res, input, *b);
            if (failed(u))
              return failure();
            b = u;
          }
        }
        bufsOf[l].push_back(*b);
      }
    SmallVector<TArg> ts = {
        {"r", {*r}}, {"t", {*t}}, {"x", bufsOf[0]}, {"g", bufsOf[1]}};
    if (gated) {
      std::optional<int> f = bufferOf(flag);
      if (!f)
        return err() << "the overflow flag has no buffer";
      ts.push_back({"update", {*f}});
      fusedAway.insert(gates.begin(), gates.end());
    }
    if (type == "Adam") {
      ts.push_back({"v", bufsOf[2]});
      ts.push_back({"h", bufsOf[3]});
      return call("onnx_adam", ts,
                  {{"n", i64(n)},
                   {"alpha", f32(attrFloat("alpha", 0.9))},
                   {"beta", f32(attrFloat("beta", 0.999))},
                   {"epsilon", f32(attrFloat("epsilon", 1e-6))},
                   {"norm_coefficient", f32(attrFloat("norm_coefficient", 0))},
                   {"norm_coefficient_post",
                    f32(attrFloat("norm_coefficient_post", 0))}});
    }
    if (type == "Adagrad") {
      ts.push_back({"h", bufsOf[2]});
      return call(
          "onnx_adagrad", ts,
          {{"n", i64(n)},
           {"decay_factor", f32(attrFloat("decay_factor", 0))},
           {"epsilon", f32(attrFloat("epsilon", 1e-6))},
           {"norm_coefficient", f32(attrFloat("norm_coefficient", 0))}});
    }
    for (StringRef a : {"alpha", "beta", "norm_coefficient", "mode"})
      if (!nodeAttr(a))
        return err() << "attribute '" << a << "' is required";
    std::string mode = attrStr("mode", "");
    if (mode != "standard" && mode != "nesterov")
      return err() << "mode '" << mode << "' is not standard or nesterov";
    ts.push_back({"v", bufsOf[2]});
    return call("onnx_momentum", ts,
                {{"n", i64(n)},
                 {"alpha", f32(attrFloat("alpha", 0))},
                 {"beta", f32(attrFloat("beta", 0))},
                 {"norm_coefficient", f32(attrFloat("norm_coefficient", 0))},
                 {"mode", i32(mode == "nesterov")}});
  }
  if (ms && type == "InPlaceAccumulator") {
    // Version 1, as ONNX Runtime's kernel (on-device training build): adds
    // the value when the signal (input 2) is true or absent, otherwise
    // writes the value itself; the output is the new sum. That is
    // inplace_accumulate with overwrite = NOT signal, in place on the buffer.
    auto buf = in(0), v = in(1);
    if (failed(buf) || failed(v))
      return failure();
    SmallVector<TArg> ts = {{"buffer", {*buf}}, {"value", {*v}}};
    if (has(2)) {
      auto signal = in(2);
      if (failed(signal))
        return failure();
      if (bufs[*signal].kind == Buffer::Arg)
        accumulateSignals.insert(bufs[*signal].argIndex);
      Buffer t;
      t.shape = bufs[*signal].shape;
      t.elem = bufs[*signal].elem;
      int overwrite = newBuffer(t);
      if (failed(call("logical_not", {{"x", {*signal}}, {"y", {overwrite}}})))
        return failure();
      ts.push_back({"overwrite", {overwrite}});
    }
    if (resultUsed(0))
      valueBuf[current->getResult(0)] = *buf;
    return call("inplace_accumulate", ts);
  }
  if (ms && type == "InPlaceAccumulatorV2") {
    auto buf = in(0), v = in(1);
    if (failed(buf) || failed(v))
      return failure();
    SmallVector<TArg> ts = {{"buffer", {*buf}}, {"value", {*v}}};
    if (failed(optionalIn(ts, "overwrite", 2)))
      return failure();
    // ORT's output 0 is the `updated` flag; Deeploy's graphs type it as the
    // accumulated buffer itself (same shape, no flag): alias it then.
    auto r0 = dyn_cast<ShapedType>(current->getResult(0).getType());
    bool isBuffer = r0 && r0.hasRank() && numel(shapeOf(*buf)) > 1 &&
                    r0.getShape() == ArrayRef<int64_t>(shapeOf(*buf));
    if (isBuffer)
      valueBuf[current->getResult(0)] = *buf;
    else if (failed(optionalOut(ts, "updated", 0, {1})))
      return failure();
    if (resultUsed(1))
      valueBuf[current->getResult(1)] = *buf; // the buffer, updated in place
    return call("inplace_accumulate", ts);
  }
  if (ms && type == "AdamOptimizer") {
    // ORTTrainer's per-tensor Adam (training_api's 2022 optimizer_graph):
    // outputs step + 1, the new moments and the new weight. It is the adamw
    // kernel on one tensor: weight_decay_mode 0 adds lambda * w to the
    // update, which is decoupled decay (our mode 0), 1 is HuggingFace's
    // (our mode 1), as ORT's CUDA kernel reads the attribute (its CPU
    // kernel ignores it). Input 6 is the update signal when it is a bool
    // (where that graph has it), mixed-precision weights otherwise.
    auto lr = in(0), step = in(1), w = in(2), g = in(3), m1 = in(4), m2 = in(5);
    if (failed(lr) || failed(step) || failed(w) || failed(g) || failed(m1) ||
        failed(m2))
      return failure();
    int64_t wdMode = attrInt("weight_decay_mode", 0);
    if (wdMode != 0 && wdMode != 1)
      return err() << "weight_decay_mode " << wdMode
                   << " is not supported (0 or 1)";
    unsigned signal = 9;
    if (has(6)) {
      auto t = dyn_cast<ShapedType>(current->getOperand(6).getType());
      if (!t || !t.getElementType().isInteger(1))
        return err() << "input 6 (mixed-precision weights) is not supported: "
                        "the update is on the fp32 weights";
      signal = 6;
    }
    if (has(7) || has(8))
      return err() << "inputs 7 and 8 (loss scale, global gradient norm) are "
                      "not supported: unscale and clip before the optimizer";
    if (resultUsed(4) || resultUsed(5))
      return err() << "outputs 4 and 5 (gradient, mixed-precision weights) "
                      "are not supported";
    // Weight and moments are updated in place (in copies when shared).
    auto nw = updatedInPlace(3, 2, *w), nm1 = updatedInPlace(1, 4, *m1),
         nm2 = updatedInPlace(2, 5, *m2);
    if (failed(nw) || failed(nm1) || failed(nm2))
      return failure();
    if (resultUsed(0)) {
      auto ns = out(0, shapeOf(*step));
      if (failed(ns))
        return failure();
      int one = constBuffer({shapeOf(*step), bufs[*step].elem, {1.0}});
      if (failed(call("add", {{"a", {*step}}, {"b", {one}}, {"y", {*ns}}})))
        return failure();
    }
    SmallVector<TArg> ts = {{"params", {*nw}}, {"grads", {*g}},
                            {"m1", {*nm1}},    {"m2", {*nm2}},
                            {"lr", {*lr}},     {"step", {*step}}};
    if (signal == 6 && has(9)) {
      // Both the graph's signal and one at the schema's position (where the
      // loss-scaling pass puts its all-finite flag): update when both are
      // true, a AND b = where(a, b, a).
      auto a = in(6), b = in(9);
      if (failed(a) || failed(b))
        return failure();
      int both = newBufferLike(*a);
      if (failed(
              call("where",
                   {{"cond", {*a}}, {"a", {*b}}, {"b", {*a}}, {"y", {both}}})))
        return failure();
      ts.push_back({"update", {both}});
    } else if (failed(optionalIn(ts, "update", signal))) {
      return failure();
    }
    return call("adamw", ts,
                {{"n", i64(1)},
                 {"beta1", f32(attrFloat("alpha", 0.9))},
                 {"beta2", f32(attrFloat("beta", 0.999))},
                 {"epsilon", f32(attrFloat("epsilon", 1e-8))},
                 {"weight_decay", f32(attrFloat("lambda", 0))},
                 {"mode", i32(wdMode)},
                 {"correct_bias", i32(attrInt("do_bias_correction", 1))}});
  }
  if (ms && type == "AdamWOptimizer") {
    auto lr = in(0), step = in(1);
    if (failed(lr) || failed(step))
      return failure();
    SmallVector<int, 1> lists[4];
    for (unsigned i = 0; i < 4; ++i) {
      auto it = seqBufs.find(current->getOperand(2 + i));
      if (it == seqBufs.end())
        return err() << "input " << 2 + i << " must be a sequence graph input";
      lists[i].assign(it->second.begin(), it->second.end());
    }
    size_t n = lists[0].size();
    for (auto &l : lists)
      if (l.size() != n)
        return err() << "the weight, gradient and moment sequences differ "
                        "in length";
    for (unsigned i = 1; i < 4; ++i)
      if (resultUsed(i))
        return err() << "output " << i
                     << " (updated sequence) is not supported: the update "
                        "is in place on the inputs";
    SmallVector<TArg> ts = {{"params", lists[0]}, {"grads", lists[1]},
                            {"m1", lists[2]},     {"m2", lists[3]},
                            {"lr", {*lr}},        {"step", {*step}}};
    if (failed(optionalIn(ts, "update", 6)) ||
        failed(optionalOut(ts, "updated", 0, {1})))
      return failure();
    return call("adamw", ts,
                {{"n", i64(n)},
                 {"beta1", f32(attrFloat("alpha", 0.9))},
                 {"beta2", f32(attrFloat("beta", 0.999))},
                 {"epsilon", f32(attrFloat("epsilon", 1e-8))},
                 {"weight_decay", f32(attrFloat("weight_decay", 1e-2))},
                 {"mode", i32(attrInt("adam_mode", 0))},
                 {"correct_bias", i32(attrInt("correct_bias", 1))}});
  }
  if (ms && type == "SGDOptimizerV2") {
    // generate_artifacts' SGD: (learning_rate, weights, gradients,
    // update_signal?) -> update_completed; W -= lr G, in place.
    auto lr = in(0);
    if (failed(lr))
      return failure();
    SmallVector<int, 1> lists[2];
    for (unsigned i = 0; i < 2; ++i) {
      auto it = seqBufs.find(current->getOperand(1 + i));
      if (it == seqBufs.end())
        return err() << "input " << 1 + i << " must be a sequence graph input";
      lists[i].assign(it->second.begin(), it->second.end());
    }
    if (lists[0].size() != lists[1].size())
      return err() << "the weight and gradient sequences differ in length";
    if (resultUsed(1))
      return err() << "output 1 (updated weights) is not supported: the "
                      "update is in place on the inputs";
    SmallVector<TArg> ts = {
        {"params", lists[0]}, {"grads", lists[1]}, {"lr", {*lr}}};
    if (failed(optionalIn(ts, "update", 3)) ||
        failed(optionalOut(ts, "updated", 0, {1})))
      return failure();
    return call("sgd", ts,
                {{"n", i64(lists[0].size())},
                 {"momentum", f32(0)},
                 {"dampening", f32(0)},
                 {"weight_decay", f32(0)},
                 {"nesterov", i32(0)}});
  }
  if (onnx && (type == "Reshape" || type == "Flatten" || type == "Squeeze" ||
               type == "Unsqueeze")) {
    auto sx = shapeOfInput(0);
    if (!sx)
      return err() << "input 0 has no buffer";
    auto s = reshapedShape(type, *sx);
    if (failed(s))
      return failure();
    if (auto h = hostIn(0)) {
      h->shape = *s;
      setHost(0, std::move(*h));
      return success();
    }
    auto x = in(0);
    if (failed(x))
      return failure();
    auto y = out(0, *s);
    if (failed(y))
      return failure();
    return call("reshape", {{"x", {*x}}, {"y", {*y}}});
  }
  if (onnx && type == "Transpose") {
    auto x = in(0);
    if (failed(x))
      return failure();
    const Shape &sx = shapeOf(*x);
    SmallVector<int64_t> perm;
    if (auto p = attrInts("perm"))
      perm = *p;
    else
      for (int64_t d = sx.size() - 1; d >= 0; --d)
        perm.push_back(d);
    Shape s;
    for (int64_t p : perm)
      s.push_back(sx[p]);
    auto y = out(0, s);
    if (failed(y))
      return failure();
    return call("transpose", {{"x", {*x}}, {"y", {*y}}},
                {{"perm", ints(perm)}, {"nperm", i64(perm.size())}});
  }
  return err() << "no runtime implementation (supported: docs/Lowering.md)";
}

FailureOr<Shape> GraphLowering::reducedShape(ArrayRef<int64_t> sx,
                                             ArrayRef<int64_t> axes,
                                             bool keepdims, bool noop) {
  int64_t rank = sx.size();
  SmallVector<bool> red(rank, axes.empty() && !noop);
  for (int64_t ax : axes) {
    if (ax < -rank || ax >= rank) {
      err() << "axis " << ax << " out of range";
      return failure();
    }
    red[ax < 0 ? ax + rank : ax] = true;
  }
  Shape s;
  for (int64_t d = 0; d < rank; ++d)
    if (!red[d])
      s.push_back(sx[d]);
    else if (keepdims)
      s.push_back(1);
  return s;
}

FailureOr<int> GraphLowering::updatedInPlace(unsigned res, unsigned input,
                                             int buf) {
  if (isExclusiveState(input, buf)) {
    if (resultUsed(res))
      valueBuf[current->getResult(res)] = buf;
    return buf;
  }
  // A copy nothing reads would lose the update.
  if (!resultUsed(res)) {
    err() << "input " << input
          << " is read elsewhere too, so it would be updated in a copy, but "
             "output "
          << res << " that would hold the copy is unused";
    return failure();
  }
  FailureOr<int> copy = out(res, shapeOf(buf));
  if (failed(copy) || failed(call("identity", {{"x", {buf}}, {"y", {*copy}}})))
    return failure();
  return copy;
}

LogicalResult GraphLowering::lowerBatchedMatMul(int64_t ta, int64_t tb,
                                                double alpha) {
  auto a = in(0), b = in(1);
  if (failed(a) || failed(b))
    return failure();
  Shape sa = shapeOf(*a), sb = shapeOf(*b);
  if (sa.size() < 2 || sb.size() < 2)
    return err() << "operands must have rank 2 or more";
  int64_t m = sa[sa.size() - (ta ? 1 : 2)], ka = sa[sa.size() - (ta ? 2 : 1)];
  int64_t kb = sb[sb.size() - (tb ? 1 : 2)], n = sb[sb.size() - (tb ? 2 : 1)];
  if (ka != kb)
    return err() << "inner dims " << ka << " and " << kb << " differ";
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), s;
  if (!broadcast({ba, bb}, s))
    return err() << "batch dims do not broadcast";
  s.push_back(m);
  s.push_back(n);
  auto y = out(0, s);
  if (failed(y))
    return failure();
  return call(
      "fused_matmul", {{"a", {*a}}, {"b", {*b}}, {"y", {*y}}},
      {{"trans_a", i32(ta)}, {"trans_b", i32(tb)}, {"alpha", f32(alpha)}});
}

LogicalResult GraphLowering::run() {
  // The casts a pass inserted carry the names the exporter would give them,
  // so the calls (and their diagnostics and profiles) name their node.
  nameUnnamedCasts(graph);
  if (failed(bindArgs()))
    return failure();
  planFiniteChecks();
  Block &body = graph.getBody().front();
  for (Operation &op : body) {
    if (fusedAway.count(&op))
      continue;
    current = &op;
    auto nameAttr = op.getAttrOfType<StringAttr>("train.name");
    nodeName = nameAttr ? nameAttr.str() : "";
    if (isa<NoneOp>(op))
      continue;
    if (auto init = dyn_cast<InitializerOp>(op)) {
      auto value = dyn_cast_or_null<ElementsAttr>(init.getValue());
      if (!value || init.getExternal())
        return op.emitError() << "initializer '" << init.getName()
                              << "' has no inline value (external data is "
                                 "not supported by the lowering yet)";
      hostConst[init.getResult()] = value;
      continue;
    }
    if (auto ret = dyn_cast<ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto rn = graph.getResultAttrOfType<StringAttr>(i, "train.name");
        std::string name = rn ? rn.str() : ("result" + std::to_string(i));
        current = &op;
        nodeName = name;
        auto b = valueBuf.find(v);
        if (b == valueBuf.end()) {
          auto c = hostConst.find(v);
          if (c == hostConst.end())
            return op.emitError()
                   << "graph output '" << name << "' has no buffer";
          auto id = in(i);
          if (failed(id))
            return failure();
          results.push_back(*id);
        } else {
          results.push_back(b->second);
        }
        resultNames.push_back(name);
      }
      continue;
    }
    auto node = dyn_cast<OnnxNodeOpInterface>(op);
    if (!node)
      return op.emitError()
             << "op " << op.getName() << " cannot be lowered to runtime calls";
    auto check = finiteChecks.find(&op);
    if (failed(check != finiteChecks.end() ? lowerFiniteCheck(check->second)
                                           : lowerNode(node)))
      return failure();
  }

  if (narrowInputs)
    narrowDataInputs();
  return success();
}

} // namespace amp::lowering
