//===- BufferFacts.cpp - what the fusion patterns ask of a buffer ---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "PlannedProgram.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

SmallVector<BufferUse, 4> amp::lowering::bufferUses(Value buffer) {
  SmallVector<BufferUse, 4> uses;
  for (OpOperand &use : buffer.getUses()) {
    auto call = dyn_cast<amprt::CallOp>(use.getOwner());
    if (!call)
      continue;
    // The call's operands are its tensors.
    unsigned i = use.getOperandNumber();
    uses.push_back({call, i, call.getTensorParamName(i)});
  }
  llvm::sort(uses, [](const BufferUse &a, const BufferUse &b) {
    if (a.call != b.call)
      return a.call->isBeforeInBlock(b.call);
    return a.operand < b.operand;
  });
  return uses;
}

bool amp::lowering::isTemporary(Value buffer) {
  return buffer.getDefiningOp<memref::AllocOp>() != nullptr;
}

bool amp::lowering::isReturned(Value buffer) {
  return llvm::any_of(buffer.getUsers(),
                      [](Operation *op) { return isa<func::ReturnOp>(op); });
}

bool amp::lowering::isWrittenInPlace(Value buffer) {
  for (OpOperand &use : buffer.getUses())
    if (auto call = dyn_cast<amprt::CallOp>(use.getOwner()))
      if (call.writesInPlace(use.getOperandNumber()))
        return true;
  return false;
}

ElementsAttr amp::lowering::constantValue(Value buffer) {
  auto get = buffer.getDefiningOp<memref::GetGlobalOp>();
  if (!get)
    return {};
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  if (!global || !global.getConstant())
    return {};
  return dyn_cast_or_null<ElementsAttr>(global.getInitialValueAttr());
}

ArrayRef<int64_t> amp::lowering::bufferShape(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getShape();
}

Type amp::lowering::elementType(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementType();
}

bool amp::lowering::isCallOf(Operation *op, StringRef kernel) {
  auto call = dyn_cast<amprt::CallOp>(op);
  return call && call.getKernel() == kernel;
}

void amp::lowering::setInsertionPointAfterBuffers(OpBuilder &builder,
                                                  func::FuncOp func) {
  Block &body = func.getBody().front();
  Operation *lastBuffer = nullptr;
  for (Operation &op : body)
    if (isa<memref::AllocOp, memref::GetGlobalOp>(op))
      lastBuffer = &op;
  if (lastBuffer)
    builder.setInsertionPointAfter(lastBuffer);
  else
    builder.setInsertionPointToStart(&body);
}

Value amp::lowering::createConstantBuffer(RewriterBase &rewriter,
                                          func::FuncOp func, ElementsAttr value,
                                          bool shared) {
  Block &body = func.getBody().front();
  if (shared)
    for (Operation &op : body)
      if (auto get = dyn_cast<memref::GetGlobalOp>(op))
        if (auto global =
                SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
                    get, get.getNameAttr());
            global && global->hasAttr(kSharedConstAttr) &&
            global.getInitialValueAttr() == value)
          return get;

  auto tensorType = cast<ShapedType>(value.getType());
  auto type =
      MemRefType::get(tensorType.getShape(), tensorType.getElementType());
  // The module's symbols before the new global joins them (a table built
  // with two globals of one name would be malformed).
  SymbolTable symbols(func->getParentOp());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(func);
  auto global = memref::GlobalOp::create(
      rewriter, func.getLoc(), (func.getSymName() + "_const").str(),
      rewriter.getStringAttr("private"), type, value, /*constant=*/true,
      IntegerAttr());
  if (shared)
    global->setAttr(kSharedConstAttr, rewriter.getUnitAttr());
  // A unique name among the module's symbols.
  symbols.insert(global);
  setInsertionPointAfterBuffers(rewriter, func);
  return memref::GetGlobalOp::create(rewriter, func.getLoc(), type,
                                     global.getSymName());
}

void amp::lowering::eraseUnusedBuffers(func::FuncOp func) {
  SmallVector<Operation *> dead;
  for (Operation &op : func.getBody().front())
    if (isa<memref::AllocOp, memref::GetGlobalOp>(op) && op.use_empty())
      dead.push_back(&op);
  SmallVector<StringAttr> names;
  for (Operation *op : dead) {
    if (auto get = dyn_cast<memref::GetGlobalOp>(op))
      names.push_back(get.getNameAttr().getAttr());
    op->erase();
  }
  Operation *module = func->getParentOp();
  for (StringAttr name : names)
    if (Operation *global = SymbolTable::lookupSymbolIn(module, name))
      if (SymbolTable::symbolKnownUseEmpty(global, module))
        global->erase();
}

bool amp::lowering::holdsValueBefore(Value buffer, amprt::CallOp call) {
  if (!isTemporary(buffer))
    return true;
  SmallVector<BufferUse, 4> uses = bufferUses(buffer);
  return !uses.empty() && uses.front().call->isBeforeInBlock(call);
}
