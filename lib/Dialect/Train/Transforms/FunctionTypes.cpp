//===- FunctionTypes.cpp - a model-local function typed from its calls ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/FunctionTypes.h"
#include "amp/Dialect/Train/IR/OnnxSchema.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace amp::train;

static StringRef normalDomain(StringRef d) { return d == "ai.onnx" ? "" : d; }

/// The element type of an ONNX literal type string ("tensor(int64)").
static Type elementOfTypeString(MLIRContext *ctx, StringRef typeStr) {
  if (!typeStr.starts_with("tensor("))
    return {};
  for (int32_t dt = 1; dt <= 16; ++dt)
    if (Type e = getElementTypeForOnnxDataType(ctx, dt))
      if (getOnnxTypeString(UnrankedTensorType::get(e)) == typeStr)
        return e;
  return {};
}

static Type elementOf(Type t) {
  auto tensor = dyn_cast<TensorType>(t);
  return tensor ? tensor.getElementType() : Type();
}

/// The element type of result `res` of `node` from its schema, or null.
static Type inferElement(OnnxNodeOpInterface node, unsigned res) {
  Operation *op = node;
  MLIRContext *ctx = op->getContext();
  if (isa<CastOp>(op)) {
    auto to = dyn_cast_or_null<IntegerAttr>(getOnnxAttribute(op, "to"));
    return to ? getElementTypeForOnnxDataType(ctx, int32_t(to.getInt()))
              : Type();
  }
  const OnnxOpSchema *schema = getSchemaFor(node);
  const OnnxParamSchema *out = schema ? schema->getOutputParam(res) : nullptr;
  if (!out)
    return {};
  if (Type fixed = elementOfTypeString(ctx, out->typeStr))
    return fixed;
  for (unsigned k = 0; k < op->getNumOperands(); ++k) {
    const OnnxParamSchema *in = schema->getInputParam(k);
    if (in && StringRef(in->typeStr) == out->typeStr)
      if (Type e = elementOf(op->getOperand(k).getType()))
        return e;
  }
  return {};
}

std::optional<std::string> amp::train::typeFunctionFromCalls(ModuleOp module,
                                                             FunctionOp fn) {
  unsigned numArgs = fn.getNumArguments();
  SmallVector<Type> args(numArgs);
  unsigned calls = 0;
  SmallVector<Operation *> sites;
  std::optional<std::string> why;
  module.walk([&](OnnxNodeOpInterface node) {
    Operation *op = node;
    if (why || node.getOnnxOpType() != fn.getOnnxName() ||
        normalDomain(node.getOnnxDomain()) != normalDomain(fn.getDomain()) ||
        op->getParentOfType<FunctionOp>() == fn)
      return;
    ++calls;
    sites.push_back(op);
    // A call whose input is not typed (another call's output, say) says
    // nothing of it; the others decide.
    for (unsigned i = 0; i < numArgs && i < op->getNumOperands(); ++i) {
      Type e = elementOf(op->getOperand(i).getType());
      if (!e)
        continue;
      if (args[i] && args[i] != e) {
        why = "its calls pass input " + std::to_string(i) +
              " in two element types";
        return;
      }
      args[i] = e;
    }
  });
  if (why)
    return why;
  if (calls == 0)
    return std::string("no node calls it");
  for (unsigned i = 0; i < numArgs; ++i)
    if (!args[i])
      return "input " + std::to_string(i) + " has no known type at any call";

  Block &body = fn.getBody().front();
  SmallVector<Type> argTypes;
  for (auto [arg, e] : llvm::zip(body.getArguments(), args)) {
    Type t = isa<TensorType>(arg.getType()) ? arg.getType()
                                            : UnrankedTensorType::get(e);
    arg.setType(t);
    argTypes.push_back(t);
  }
  for (Operation &op : body) {
    auto node = dyn_cast<OnnxNodeOpInterface>(op);
    if (!node || op.getNumRegions())
      continue;
    for (OpResult r : op.getResults())
      if (!isa<TensorType, NoneType>(r.getType()))
        if (Type e = inferElement(node, r.getResultNumber()))
          r.setType(UnrankedTensorType::get(e));
  }
  SmallVector<Type> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(v.getType());
  fn.setFunctionTypeAttr(
      TypeAttr::get(FunctionType::get(fn.getContext(), argTypes, results)));
  // The calls' untyped results take the function's (a later call reading
  // them is typed by it).
  for (Operation *call : sites)
    for (auto [r, t] : llvm::zip(call->getResults(), results))
      if (!isa<TensorType, NoneType>(r.getType()) && isa<TensorType>(t))
        r.setType(t);
  return std::nullopt;
}
