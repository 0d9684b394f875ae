//===- LowerElementwise.cpp - elementwise ops
//------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Unary and binary ONNX math, comparisons and logic, Min/Max/Sum, Where,
// CastLike, and the com.microsoft activation gradients, each one call of
// an elementwise kernel (broadcast by the kernel).
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

namespace amp::lowering {

namespace {
const llvm::StringMap<StringRef> unaryOps = {{"Relu", "relu"},
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
const llvm::StringMap<StringRef> binaryOps = {
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
const llvm::StringMap<StringRef> msGradOps = {
    {"ReluGrad", "relu_grad"},
    {"SigmoidGrad", "sigmoid_grad"},
    {"TanhGrad", "tanh_grad"},
    {"GeluGrad", "gelu_grad"},
    {"FastGeluGrad", "fast_gelu_grad"}};

// Activations with a slope (alpha): LeakyRelu and Swish (ONNX; Swish is
// x sigmoid(alpha x), QuickGelu's formula), QuickGelu (com.microsoft),
// and their com.microsoft gradients.
const llvm::StringMap<std::pair<StringRef, double>> slopeOps = {
    {"LeakyRelu", {"leaky_relu", 0.01}},
    {"Swish", {"quick_gelu", 1.0}},
    {"QuickGelu", {"quick_gelu", 1.702}},
    {"LeakyReluGrad", {"leaky_relu_grad", 0.01}},
    {"QuickGeluGrad", {"quick_gelu_grad", 1.702}}};
} // namespace

FailureOr<bool> GraphLowering::lowerElementwise(StringRef domain,
                                                StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";

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
    return handled(call("cast", {{"x", {*x}}, {"y", {*y}}}));
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
    return handled(sameShapeCall(k, slopeAttr));
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
    return handled(call(k, {{"a", {*a}}, {"b", {*b}}, {"y", {*y}}}));
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
      return handled(
          call("sum",
               {{"inputs", SmallVector<int, 1>(ins.begin(), ins.end())},
                {"y", {*y}}},
               {{"n", i64(ins.size())}}));
    StringRef k = type == "Min" ? "min" : "max";
    if (ins.size() == 1)
      return handled(call("expand", {{"x", {ins[0]}}, {"y", {*y}}}));
    if (failed(call(k, {{"a", {ins[0]}}, {"b", {ins[1]}}, {"y", {*y}}})))
      return failure();
    for (size_t i = 2; i < ins.size(); ++i)
      if (failed(call(k, {{"a", {*y}}, {"b", {ins[i]}}, {"y", {*y}}})))
        return failure();
    return true;
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
    return handled(
        call("where", {{"cond", {*c}}, {"a", {*a}}, {"b", {*b}}, {"y", {*y}}}));
  }
  if ((ms && msGradOps.count(type)) || (sloped && type.ends_with("Grad"))) {
    auto dy = in(0), x = in(1);
    if (failed(dy) || failed(x))
      return failure();
    auto dx = out(0, shapeOf(*dy));
    if (failed(dx))
      return failure();
    return handled(call(sloped ? slope->second.first : msGradOps.lookup(type),
                        {{"dy", {*dy}}, {"x", {*x}}, {"dx", {*dx}}},
                        slopeAttr));
  }
  return false;
}

void GraphLowering::registerElementwise(FamilyTable &t) {
  auto keys = [](const auto &map) {
    SmallVector<StringRef> k;
    for (const auto &e : map)
      k.push_back(e.getKey());
    return k;
  };
  Family f = &GraphLowering::lowerElementwise;
  t.add(kOnnxDomain, keys(unaryOps), f);
  t.add(kOnnxDomain, keys(binaryOps), f);
  t.add(kOnnxDomain,
        {"CastLike", "Min", "Max", "Sum", "Where", "LeakyRelu", "Swish"}, f);
  t.add(kMicrosoftDomain, keys(msGradOps), f);
  t.add(kMicrosoftDomain,
        {"Gelu", "FastGelu", "QuickGelu", "LeakyReluGrad", "QuickGeluGrad"}, f);
}

} // namespace amp::lowering
