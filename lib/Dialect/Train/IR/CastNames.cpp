//===- CastNames.cpp - The ONNX names of generated casts ------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/CastNames.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace amp::train;

StringRef amp::train::getCastNameSuffix(Type elementType) {
  if (elementType.isF32())
    return "Fp32";
  if (elementType.isBF16())
    return "Bf16";
  if (elementType.isF16())
    return "Fp16";
  return "";
}

static StringRef castSuffix(Operation *op) {
  auto cast = dyn_cast<CastOp>(op);
  if (!cast)
    return "";
  auto type = dyn_cast<TensorType>(cast.getType());
  return type ? getCastNameSuffix(type.getElementType()) : StringRef();
}

bool amp::train::isUnnamedCast(Operation *op) {
  return !castSuffix(op).empty() && !op->hasAttr(attrs::kNodeName);
}

bool amp::train::hasUnnamedCastOutput(Operation *op) {
  if (castSuffix(op).empty())
    return false;
  auto outs = op->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
  if (!outs || outs.empty())
    return true;
  auto s = dyn_cast<StringAttr>(outs[0]);
  return !s || s.getValue().empty();
}

std::string amp::train::getCastNodeNameBase(
    CastOp castOp, StringRef inputName,
    llvm::function_ref<StringRef(Operation *)> nodeNameOf) {
  Value input = castOp.getInput();
  std::string producer;
  if (Operation *def = input.getDefiningOp()) {
    StringRef name;
    if (nodeNameOf)
      name = nodeNameOf(def);
    else if (auto n = def->getAttrOfType<StringAttr>(attrs::kNodeName))
      name = n.getValue();
    if (!name.empty()) {
      producer = name.str();
      if (def->getNumResults() > 1)
        producer +=
            "_" + std::to_string(cast<OpResult>(input).getResultNumber());
    }
  }
  if (producer.empty())
    producer = inputName.str();
  return producer + "_CastTo" + castSuffix(castOp).str();
}

std::string amp::train::getCastValueNameBase(CastOp castOp,
                                             StringRef inputName) {
  return (inputName + "_" + castSuffix(castOp).lower()).str();
}

/// `name` less a trailing `_<digits>`.
static StringRef dropCounter(StringRef name) {
  size_t us = name.rfind('_');
  if (us != StringRef::npos && us + 1 < name.size() &&
      llvm::all_of(name.substr(us + 1),
                   [](char c) { return llvm::isDigit(c); }))
    return name.take_front(us);
  return name;
}

bool amp::train::mayBeCastNodeName(StringRef name) {
  name = dropCounter(name);
  return name.ends_with("_CastToFp16") || name.ends_with("_CastToBf16") ||
         name.ends_with("_CastToFp32");
}

bool amp::train::mayBeCastValueName(StringRef name) {
  name = dropCounter(name);
  return name.ends_with("_fp16") || name.ends_with("_bf16") ||
         name.ends_with("_fp32");
}

std::string
amp::train::makeUniqueName(StringRef base,
                           llvm::function_ref<bool(StringRef)> taken) {
  SmallString<64> name(base);
  for (unsigned k = 1; taken(name); ++k)
    (base + "_" + Twine(k)).toVector((name.clear(), name));
  return name.str().str();
}
