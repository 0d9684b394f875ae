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

const KernelSignature *CallOp::getSignature() {
  return lookupKernel(getKernel());
}

/// The first operand and the count of the tensor parameter at `slot` among
/// the kernel's tensor parameters.
static std::pair<unsigned, unsigned> operandsOfSlot(CallOp call,
                                                    unsigned slot) {
  ArrayRef<int64_t> counts = call.getCounts();
  unsigned first = 0;
  for (unsigned i = 0; i < slot; ++i)
    first += unsigned(counts[i]);
  return {first, unsigned(counts[slot])};
}

OperandRange CallOp::getTensorParam(StringRef name) {
  const KernelSignature *sig = getSignature();
  unsigned slot = 0;
  if (sig)
    for (const KernelParam &p : sig->params) {
      if (p.kind != ParamKind::Tensor)
        continue;
      if (p.name == name && slot < getCounts().size()) {
        auto [first, count] = operandsOfSlot(*this, slot);
        return getTensors().slice(first, count);
      }
      ++slot;
    }
  return getTensors().slice(0, 0);
}

Value CallOp::getSingleTensor(StringRef name) {
  OperandRange r = getTensorParam(name);
  return r.size() == 1 ? r.front() : Value();
}

StringRef CallOp::getTensorParamName(unsigned operandIndex) {
  const KernelSignature *sig = getSignature();
  if (!sig)
    return {};
  unsigned slot = 0, end = 0;
  ArrayRef<int64_t> counts = getCounts();
  for (const KernelParam &p : sig->params) {
    if (p.kind != ParamKind::Tensor)
      continue;
    if (slot >= counts.size())
      break;
    end += unsigned(counts[slot++]);
    if (operandIndex < end)
      return p.name;
  }
  return {};
}

bool CallOp::writesInPlace(unsigned operandIndex) {
  if (isInPlaceParam(getKernel(), getTensorParamName(operandIndex)))
    return true;
  Value v = getTensors()[operandIndex];
  return llvm::count(getTensors(), v) > 1;
}

CallOp amp::amprt::createCall(OpBuilder &builder, Location loc,
                              StringRef kernel, ArrayRef<TensorArg> tensors,
                              ArrayRef<NamedAttribute> attrs) {
  const KernelSignature *sig = lookupKernel(kernel);
  assert(sig && "kernel missing from Ops.def");
  SmallVector<Value> operands;
  SmallVector<int64_t> counts;
  for (const KernelParam &p : sig->params) {
    if (p.kind != ParamKind::Tensor)
      continue;
    int64_t n = 0;
    for (const TensorArg &t : tensors)
      if (t.name == p.name) {
        operands.append(t.buffers.begin(), t.buffers.end());
        n = int64_t(t.buffers.size());
      }
    counts.push_back(n);
  }
#ifndef NDEBUG
  for (const TensorArg &t : tensors)
    assert(sig->find(t.name) && "no such tensor parameter");
#endif
  auto call = CallOp::create(builder, loc, kernel, operands, counts);
  for (NamedAttribute a : attrs)
    if (a.getName() != call.getKernelAttrName() &&
        a.getName() != call.getCountsAttrName())
      call->setAttr(a.getName(), a.getValue());
  return call;
}

#define GET_OP_CLASSES
#include "amp/Dialect/AmpRT/AmpRTOps.cpp.inc"
