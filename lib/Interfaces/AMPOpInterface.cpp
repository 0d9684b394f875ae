//===- AMPOpInterface.cpp - AMP on any dialect ----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Interfaces/AMPOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

#include "amp/Interfaces/AMPOpInterface.cpp.inc"

Type amp::getAMPElementType(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.getElementType();
  return type;
}

Type amp::withAMPElementType(Type type, Type elementType) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(elementType);
  return elementType;
}

Value amp::buildArithAMPCast(OpBuilder &builder, Location loc, Value value,
                             Type type) {
  auto from = cast<FloatType>(getAMPElementType(value.getType()));
  auto to = cast<FloatType>(type);
  Type result = withAMPElementType(value.getType(), type);
  if (to.getWidth() > from.getWidth())
    return arith::ExtFOp::create(builder, loc, result, value);
  return arith::TruncFOp::create(builder, loc, result, value);
}
