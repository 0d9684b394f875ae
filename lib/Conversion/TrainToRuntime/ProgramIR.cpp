//===- ProgramIR.cpp - a planned program to and from its func.func -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The two IR forms of a lowered function (PlannedProgram.h). Writing emits
// the function's signature and attributes (docs/Lowering.md), one
// `memref.global` per constant a call reads (numbered in buffer order), the
// temporaries (tagged allocs, or views of the arena), the calls and the
// return. Reading an unplanned function takes the buffers in that order:
// the arguments, then each `memref.get_global` and `memref.alloc`.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

using namespace amp;
using namespace amp::lowering;

/// Whether `t` is a buffer the runtime can hold: identity layout, default
/// memory space, an int or float element type, at most kMaxBufferBytes.
static bool isBufferType(MemRefType t) {
  return t && t.hasStaticShape() && t.getLayout().isIdentity() &&
         !t.getMemorySpace() && t.getElementType().isIntOrFloat() &&
         fitsInMemory(t.getShape());
}

FailureOr<PlannedProgram> PlannedProgram::read(func::FuncOp func) {
  PlannedProgram p(func.getContext());
  if (!func->hasAttr(kUnplannedAttr) || func.getBody().getBlocks().size() != 1)
    return func.emitError() << "not an unplanned lowered function (attribute "
                            << kUnplannedAttr << ", one block)";
  Block &body = func.getBody().front();
  DenseMap<Value, int> buf;
  DenseMap<StringAttr, int> globalBuf; // a global read twice: one buffer
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    unsigned i = arg.getArgNumber();
    if (!isBufferType(type))
      return func.emitError()
             << "argument " << i
             << " is not a memref of static shape, identity layout and int "
                "or float elements that a buffer can hold";
    Buffer b;
    b.kind = Buffer::Arg;
    b.argIndex = i;
    b.shape.assign(type.getShape().begin(), type.getShape().end());
    b.elem = type.getElementType();
    buf[arg] = p.newBuffer(b);
    p.argTypes.push_back(type);
    auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
    p.argNames.push_back(name ? name.str() : "arg" + std::to_string(i));
    if (func.getArgAttr(i, kAccumulateSignalAttr))
      p.accumulateSignals.insert(int(i));
    if (auto from = func.getArgAttrOfType<TypeAttr>(i, kNarrowedFromAttr))
      p.narrowedArgs.push_back({i, from.getValue()});
  }
  p.earlyAccumulated = func->hasAttr(kOverwriteAccumulatorsAttr);
  auto bufferOf = [&](Operation *op, Value v) -> FailureOr<int> {
    auto it = buf.find(v);
    if (it == buf.end())
      return op->emitError() << "operand is no buffer of the function "
                                "(an argument, a memref.get_global or a "
                                "memref.alloc)";
    return it->second;
  };
  for (Operation &op : body) {
    if (auto g = dyn_cast<memref::GetGlobalOp>(op);
        g && globalBuf.count(g.getNameAttr().getAttr())) {
      buf[g.getResult()] = globalBuf[g.getNameAttr().getAttr()];
      continue;
    }
    if (auto g = dyn_cast<memref::GetGlobalOp>(op)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          func, g.getNameAttr());
      auto value =
          global ? dyn_cast_or_null<ElementsAttr>(global.getInitialValueAttr())
                 : ElementsAttr();
      if (!value || !isBufferType(g.getType()))
        return op.emitError() << "global @" << g.getName()
                              << " has no constant value a buffer can hold";
      Buffer b;
      b.kind = Buffer::Const;
      b.value = value;
      b.shape.assign(g.getType().getShape().begin(),
                     g.getType().getShape().end());
      b.elem = g.getType().getElementType();
      b.shared = global->hasAttr(kSharedConstAttr);
      buf[g.getResult()] = globalBuf[g.getNameAttr().getAttr()] =
          p.newBuffer(b);
      if (b.shared)
        p.constBuffers.try_emplace(value, buf[g.getResult()]);
      continue;
    }
    if (auto a = dyn_cast<memref::AllocOp>(op)) {
      auto role = a->getAttrOfType<StringAttr>(kRoleAttr);
      const auto *r = role ? llvm::find(kArenaRoles, role.getValue())
                           : std::end(kArenaRoles);
      if (r == std::end(kArenaRoles) || !isBufferType(a.getType()))
        return op.emitError()
               << "a temporary must be a memref.alloc of static shape, "
                  "identity layout and int or float elements that a buffer "
                  "can hold, with "
               << kRoleAttr << " one of the arena roles";
      Buffer b;
      b.role = Buffer::Role(r - std::begin(kArenaRoles));
      if (auto value = a->getAttrOfType<StringAttr>(kValueAttr))
        b.name = value.str();
      b.shape.assign(a.getType().getShape().begin(),
                     a.getType().getShape().end());
      b.elem = a.getType().getElementType();
      buf[a.getResult()] = p.newBuffer(b);
      continue;
    }
    if (auto c = dyn_cast<amprt::CallOp>(op)) {
      const KernelSignature *sig = amprt::lookupKernel(c.getKernel());
      if (!sig) // the verifier's job; a dialect-less read may skip it
        return op.emitError() << "unknown kernel " << c.getKernel();
      unsigned tensorParams = 0;
      for (const KernelParam &kp : sig->params)
        tensorParams += kp.kind == ParamKind::Tensor;
      int64_t total = 0;
      for (int64_t n : c.getCounts())
        total += n < 0 ? 1 << 30 : n;
      if (c.getCounts().size() != tensorParams ||
          total != int64_t(c.getTensors().size()))
        return op.emitError() << "counts do not match amprt_" << c.getKernel()
                              << "'s tensor parameters and the operands";
      PlannedCall pc{sig, {}, {}, c.getLoc()};
      unsigned next = 0;
      for (int64_t n : c.getCounts()) {
        SmallVector<int, 1> list;
        for (int64_t k = 0; k < n; ++k) {
          FailureOr<int> b = bufferOf(&op, c.getTensors()[next++]);
          if (failed(b))
            return failure();
          list.push_back(*b);
        }
        pc.tensors.push_back(list);
      }
      for (NamedAttribute a : c->getAttrs())
        if (a.getName() != c.getKernelAttrName() &&
            a.getName() != c.getCountsAttrName())
          pc.attrs.push_back(a);
      // The rewrites name the calls they make after the node of the calls
      // they replace.
      if (!pc.attrs.get("node"))
        pc.attrs.set("node", StringAttr::get(func.getContext(), ""));
      p.calls.push_back(std::move(pc));
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        FailureOr<int> b = bufferOf(&op, v);
        if (failed(b))
          return failure();
        p.results.push_back(*b);
        auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
        p.resultNames.push_back(name ? name.str()
                                     : "result" + std::to_string(i));
      }
      continue;
    }
    return op.emitError() << "op " << op.getName()
                          << " in an unplanned lowered function";
  }
  return p;
}

amprt::CallOp PlannedProgram::writeCall(OpBuilder &builder,
                                        const PlannedCall &c,
                                        ArrayRef<Value> values) {
  SmallVector<Value> operands;
  SmallVector<int64_t> counts;
  for (auto &list : c.tensors) {
    counts.push_back(list.size());
    for (int b : list)
      operands.push_back(values[b]);
  }
  auto op =
      amprt::CallOp::create(builder, c.loc, c.sig->name, operands, counts);
  for (NamedAttribute a : c.attrs)
    op->setAttr(a.getName(), a.getValue());
  return op;
}

func::FuncOp PlannedProgram::write(OpBuilder &builder, StringRef name,
                                   Location loc, bool planned,
                                   int64_t arenaBytes, const int64_t *split) {
  SmallVector<Type> resultTypes;
  for (int b : results)
    resultTypes.push_back(MemRefType::get(bufs[b].shape, bufs[b].elem));
  auto func = func::FuncOp::create(
      builder, loc, name, builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, n] : llvm::enumerate(argNames))
    func.setArgAttr(i, kNameAttr, builder.getStringAttr(n));
  for (int i : accumulateSignals)
    func.setArgAttr(i, kAccumulateSignalAttr, builder.getUnitAttr());
  for (auto [i, from] : narrowedArgs)
    func.setArgAttr(i, kNarrowedFromAttr, TypeAttr::get(from));
  for (auto [i, n] : llvm::enumerate(resultNames))
    func.setResultAttr(i, kNameAttr, builder.getStringAttr(n));
  if (planned) {
    func->setAttr(kArenaBytesAttr, builder.getI64IntegerAttr(arenaBytes));
    NamedAttrList splitAttrs;
    for (auto [role, roleName] : llvm::enumerate(kArenaRoles))
      splitAttrs.set(roleName, builder.getI64IntegerAttr(split[role]));
    func->setAttr(kArenaSplitAttr, splitAttrs.getDictionary(ctx));
  } else {
    func->setAttr(kUnplannedAttr, builder.getUnitAttr());
  }
  if (earlyAccumulated)
    func->setAttr(kOverwriteAccumulatorsAttr, builder.getUnitAttr());

  // What the calls and results name (planned: planArena's liveness says).
  SmallVector<bool> used(bufs.size(), false);
  if (planned) {
    for (auto [id, b] : llvm::enumerate(bufs))
      used[id] = b.first >= 0;
  } else {
    for (const PlannedCall &c : calls)
      for (auto &list : c.tensors)
        for (int b : list)
          used[b] = true;
    for (int b : results)
      used[b] = true;
  }

  OpBuilder moduleBuilder(builder);
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  Value arena;
  if (planned && arenaBytes > 0)
    arena = memref::AllocOp::create(
        builder, loc, MemRefType::get({arenaBytes}, builder.getI8Type()),
        builder.getI64IntegerAttr(64));
  SmallVector<Value> vals(bufs.size());
  unsigned globals = 0;
  moduleBuilder.setInsertionPoint(func);
  // The symbols beside the function (names its constants must not take).
  llvm::StringSet<> taken;
  if (Operation *scope = func->getParentOp())
    for (Region &region : scope->getRegions())
      for (Block &block : region)
        for (Operation &op : block)
          if (auto name = op.getAttrOfType<StringAttr>(
                  SymbolTable::getSymbolAttrName()))
            taken.insert(name.getValue());
  for (auto [id, b] : llvm::enumerate(bufs)) {
    auto type = MemRefType::get(b.shape, b.elem);
    if (b.kind == Buffer::Arg) {
      vals[id] = entry->getArgument(b.argIndex);
    } else if (!used[id]) {
      continue;
    } else if (b.kind == Buffer::Const) {
      std::string global = (name + "_const" + std::to_string(globals++)).str();
      // A name another function kept (a hand-written module): the next
      // free one.
      for (unsigned k = 1; taken.contains(global); ++k)
        global = (name + "_const" + std::to_string(globals - 1) + "_" +
                  std::to_string(k))
                     .str();
      taken.insert(global);
      auto g = memref::GlobalOp::create(
          moduleBuilder, loc, global, moduleBuilder.getStringAttr("private"),
          type, b.value, /*constant=*/true, IntegerAttr());
      if (!planned && b.shared)
        g->setAttr(kSharedConstAttr, moduleBuilder.getUnitAttr());
      vals[id] = memref::GetGlobalOp::create(builder, loc, type, global);
    } else if (planned) {
      Value off = arith::ConstantIndexOp::create(builder, loc, b.offset);
      auto view =
          memref::ViewOp::create(builder, loc, type, arena, off, ValueRange());
      if (!b.name.empty())
        view->setAttr(kValueAttr, builder.getStringAttr(b.name));
      if (b.reshapeView)
        view->setAttr(kAliasAttr, builder.getUnitAttr());
      vals[id] = view;
    } else {
      auto alloc = memref::AllocOp::create(builder, loc, type);
      alloc->setAttr(kRoleAttr, builder.getStringAttr(kArenaRoles[b.role]));
      if (!b.name.empty())
        alloc->setAttr(kValueAttr, builder.getStringAttr(b.name));
      vals[id] = alloc;
    }
  }
  for (PlannedCall &c : calls)
    writeCall(builder, c, vals);
  SmallVector<Value> rets;
  for (int b : results)
    rets.push_back(vals[b]);
  func::ReturnOp::create(builder, loc, rets);
  return func;
}

LogicalResult amp::lowering::rewriteUnplanned(
    ModuleOp module, ArrayRef<func::FuncOp> funcs,
    function_ref<bool(PlannedProgram &, func::FuncOp, int64_t &, int64_t *)>
        rewrite) {
  for (func::FuncOp f : funcs) {
    FailureOr<PlannedProgram> p = PlannedProgram::read(f);
    if (failed(p))
      return failure();
    int64_t arena = 0, split[4] = {0, 0, 0, 0};
    bool planned = rewrite(*p, f, arena, split);
    // The function is written again in its place, its constants too
    // (renumbered for the calls left); a global another op still names
    // stays.
    llvm::SetVector<Operation *> globals;
    SymbolTable symbols(module);
    f.walk([&](memref::GetGlobalOp g) {
      if (Operation *global = symbols.lookup(g.getName()))
        globals.insert(global);
    });
    std::string name = f.getSymName().str();
    Location loc = f.getLoc();
    OpBuilder builder(f);
    Block *block = f->getBlock();
    Operation *next = f->getNextNode();
    f.erase();
    for (Operation *g : globals)
      if (SymbolTable::symbolKnownUseEmpty(g, module))
        g->erase();
    if (next)
      builder.setInsertionPoint(next);
    else
      builder.setInsertionPointToEnd(block);
    p->write(builder, name, loc, planned, arena, split);
  }
  return success();
}

/// Applies the patterns `populate` adds to each unplanned function of
/// `module` (for which `applies` holds, when given), top-down in call order
/// without folding (a call is matched again after a pattern changed it),
/// then erases the buffers nothing names any more, and the globals the
/// function read that nothing reads then (the driver erases an unused
/// buffer as it goes, a constant's `memref.get_global` too, but not its
/// global).
