//===- TrainToRuntime.cpp - train graphs to amprt calls on memrefs
//---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The walk of convert-train-to-amprt: the graph inputs bound to static
// shapes (bindArgs), then each op in order: initializers become host
// constants, loss scaling's finite checks one call (FiniteCheck.cpp), every
// other node the calls of its op family (lowerNode, LoweringTable.cpp),
// the return the program's results. The kernels and their parameters come
// from Ops.def (KernelABI.h) only.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

#include "llvm/ADT/StringSwitch.h"

#include "amp/Dialect/Train/IR/CastNamer.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::lowering;

namespace amp::lowering {

LogicalResult GraphLowering::bindArgs() {
  Block &body = graph.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    unsigned idx = arg.getArgNumber();
    auto nameAttr = graph.getArgAttrOfType<StringAttr>(idx, "train.name");
    std::string name =
        nameAttr ? nameAttr.str() : ("arg" + std::to_string(idx));
    if (isa<SeqType>(arg.getType())) {
      auto types = graph.getArgAttrOfType<ArrayAttr>(idx, kSeqTypesAttr);
      if (!types)
        return graph.emitError()
               << "graph input '" << name
               << "' is a sequence: give its element types with the arg "
                  "attribute "
               << kSeqTypesAttr << " (amp-run does this from the training "
               << "graph)";
      SmallVector<int> list;
      for (auto [k, t] : llvm::enumerate(types)) {
        auto tt = cast<RankedTensorType>(cast<TypeAttr>(t).getValue());
        Buffer b;
        b.kind = Buffer::Arg;
        b.argIndex = argTypes.size();
        b.shape.assign(tt.getShape().begin(), tt.getShape().end());
        b.elem = tt.getElementType();
        list.push_back(newBuffer(b));
        argTypes.push_back(MemRefType::get(tt.getShape(), b.elem));
        argNames.push_back(name + "[" + std::to_string(k) + "]");
      }
      seqBufs[arg] = list;
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return graph.emitError()
             << "graph input '" << name << "' has no rank (" << arg.getType()
             << "); the lowering needs static shapes";
    auto dimNames = graph.getArgAttrOfType<ArrayAttr>(idx, "train.dims");
    Shape shape;
    // A dim bound by `dims` (here or by train-bind-dims): data, not a
    // weight.
    bool bound = bool(graph.getArgAttr(idx, attrs::kBoundDims));
    for (int64_t d = 0; d < type.getRank(); ++d) {
      bound |= type.isDynamicDim(d);
      if (!type.isDynamicDim(d)) {
        shape.push_back(type.getDimSize(d));
        continue;
      }
      StringRef sym;
      if (dimNames && d < int64_t(dimNames.size()))
        if (auto s = dyn_cast<StringAttr>(dimNames[d]))
          sym = s.getValue();
      auto it = sym.empty() ? dims.end() : dims.find(sym);
      if (it == dims.end()) {
        auto diag = graph.emitError()
                    << "graph input '" << name << "' dim " << d;
        if (sym.empty())
          diag << " is dynamic and unnamed; the lowering needs static "
                  "shapes";
        else
          diag << " is the symbolic dim '" << sym
               << "': bind it with dims=" << sym << "=<size>";
        return diag;
      }
      shape.push_back(it->second);
    }
    if (!fitsInMemory(shape)) {
      auto diag = graph.emitError()
                  << "graph input '" << name << "' would have shape [";
      llvm::interleaveComma(shape, diag);
      return diag << "]: more than " << (kMaxBufferBytes >> 40)
                  << " TiB, no buffer can hold it";
    }
    Buffer b;
    b.kind = Buffer::Arg;
    b.argIndex = argTypes.size();
    b.shape = shape;
    b.elem = type.getElementType();
    b.boundDims = bound;
    valueBuf[arg] = newBuffer(b);
    argTypes.push_back(MemRefType::get(shape, b.elem));
    argNames.push_back(name);
  }
  return success();
}

LogicalResult GraphLowering::lowerNode(OnnxNodeOpInterface node) {
  StringRef domain = node.getOnnxDomain();
  StringRef type = node.getOnnxOpType();
  // Shape computations first: they become constants, not calls.
  FailureOr<bool> folded = tryHostFold(domain, type);
  if (failed(folded))
    return failure();
  if (*folded)
    return success();
  // The families that lower this (domain, op_type), in order
  // (LoweringTable.cpp); one may decline a node (false) for the next.
  for (Family family : familiesOf(domain, type)) {
    FailureOr<bool> done = (this->*family)(domain, type);
    if (failed(done))
      return failure();
    if (*done)
      return success();
  }
  return err() << "no runtime implementation (supported: docs/Lowering.md)";
}

LogicalResult GraphLowering::run() {
  // The casts a pass inserted carry the names the exporter would give them,
  // so the calls (and their diagnostics and profiles) name their node.
  nameUnnamedCasts(graph);
  if (failed(bindArgs()))
    return failure();
  planFiniteChecks();
  Block &body = graph.getBody().front();
  for (Operation &op : body) {
    if (fusedAway.count(&op))
      continue;
    current = &op;
    auto nameAttr = op.getAttrOfType<StringAttr>("train.name");
    nodeName = nameAttr ? nameAttr.str() : "";
    if (isa<NoneOp>(op))
      continue;
    if (auto init = dyn_cast<InitializerOp>(op)) {
      auto value = dyn_cast_or_null<ElementsAttr>(init.getValue());
      if (!value || init.getExternal())
        return op.emitError() << "initializer '" << init.getName()
                              << "' has no inline value (external data is "
                                 "not supported by the lowering yet)";
      hostConst[init.getResult()] = value;
      continue;
    }
    if (auto ret = dyn_cast<ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto rn = graph.getResultAttrOfType<StringAttr>(i, "train.name");
        std::string name = rn ? rn.str() : ("result" + std::to_string(i));
        current = &op;
        nodeName = name;
        auto b = valueBuf.find(v);
        if (b == valueBuf.end()) {
          auto c = hostConst.find(v);
          if (c == hostConst.end())
            return op.emitError()
                   << "graph output '" << name << "' has no buffer";
          auto id = in(i);
          if (failed(id))
            return failure();
          results.push_back(*id);
        } else {
          results.push_back(b->second);
        }
        resultNames.push_back(name);
      }
      continue;
    }
    auto node = dyn_cast<OnnxNodeOpInterface>(op);
    if (!node)
      return op.emitError()
             << "op " << op.getName() << " cannot be lowered to runtime calls";
    auto check = finiteChecks.find(&op);
    if (failed(check != finiteChecks.end() ? lowerFiniteCheck(check->second)
                                           : lowerNode(node)))
      return failure();
    // The temporaries the node made hold its outputs: named after them.
    if (auto outs = op.getAttrOfType<ArrayAttr>(attrs::kOutputNames))
      for (auto [res, name] : llvm::zip(op.getResults(), outs)) {
        auto b = valueBuf.find(res);
        auto s = dyn_cast<StringAttr>(name);
        if (b != valueBuf.end() && s && bufs[b->second].kind == Buffer::Temp &&
            bufs[b->second].name.empty())
          bufs[b->second].name = s.str();
      }
  }

  if (narrowInputs)
    narrowDataInputs();
  return success();
}

} // namespace amp::lowering
