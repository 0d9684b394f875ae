//===- TrainDialect.cpp - Train dialect -----------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace amp::train;

#include "amp/Dialect/Train/IR/TrainOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "amp/Dialect/Train/IR/TrainOpsTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "amp/Dialect/Train/IR/TrainOpsAttrs.cpp.inc"

void TrainDialect::initialize() {
  registerTrainDialectOperations(this);
  registerTypes();
  registerAttributes();
}

void TrainDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "amp/Dialect/Train/IR/TrainOpsTypes.cpp.inc"
      >();
}

void TrainDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "amp/Dialect/Train/IR/TrainOpsAttrs.cpp.inc"
      >();
}
