//===- AmpRT.h - the amprt dialect --------------------------------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_AMPRT_AMPRT_H
#define AMP_DIALECT_AMPRT_AMPRT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"

#include "amp/Dialect/AmpRT/AmpRTDialect.h.inc"

#define GET_OP_CLASSES
#include "amp/Dialect/AmpRT/AmpRTOps.h.inc"

#endif // AMP_DIALECT_AMPRT_AMPRT_H
