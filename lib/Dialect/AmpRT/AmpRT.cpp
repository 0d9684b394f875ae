//===- AmpRT.cpp - the amprt dialect
//----------------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/KernelABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace amp::amprt;

#include "amp/Dialect/AmpRT/AmpRTDialect.cpp.inc"

void AmpRTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "amp/Dialect/AmpRT/AmpRTOps.cpp.inc"
      >();
}

LogicalResult CallOp::verify() {
  const KernelSignature *sig = lookupKernel(getKernel());
  if (!sig)
    return emitOpError("unknown runtime kernel '")
           << getKernel() << "' (not in include/amp/Runtime/Ops.def)";
  ArrayRef<int64_t> counts = getCounts();
  if (counts.size() != sig->numTensorParams())
    return emitOpError("kernel '")
           << getKernel() << "' takes " << sig->numTensorParams()
           << " tensor parameters, counts has " << counts.size();
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0)
      return emitOpError("negative count");
    total += c;
  }
  if (total != int64_t(getTensors().size()))
    return emitOpError("counts add up to ")
           << total << " but the call has " << getTensors().size()
           << " tensor operands";
  for (const KernelParam &p : sig->params) {
    if (p.kind == ParamKind::Context || p.kind == ParamKind::Tensor)
      continue;
    Attribute a = (*this)->getAttr(p.name);
    if (!a)
      return emitOpError("missing attribute '")
             << p.name << "' (parameter of amprt_" << getKernel() << ")";
    bool ok = false;
    switch (p.kind) {
    case ParamKind::I32:
    case ParamKind::I64:
    case ParamKind::U64:
      ok = isa<IntegerAttr>(a);
      break;
    case ParamKind::F32:
    case ParamKind::F64:
      ok = isa<FloatAttr>(a);
      break;
    case ParamKind::I64Array:
      ok = isa<DenseI64ArrayAttr>(a);
      break;
    case ParamKind::Window:
      ok = isa<DictionaryAttr>(a);
      break;
    default:
      break;
    }
    if (!ok)
      return emitOpError("attribute '") << p.name << "' has the wrong kind";
  }
  return success();
}

#define GET_OP_CLASSES
#include "amp/Dialect/AmpRT/AmpRTOps.cpp.inc"
