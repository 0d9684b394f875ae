//===- PlannedCalls.cpp - the planned calls as data, for the rewrites -----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The rewrites of the planned calls (AliasReshapes.cpp, ReuseInputs.cpp,
// ScheduleCalls.cpp) read and make calls by parameter name, and must know
// which buffers some call writes after the call that produced them: a read
// moved across such a write, or a second view of such a buffer, would see
// another value.
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace amp::lowering;

bool amp::lowering::isElementwiseFloat(StringRef kernel) {
  static const llvm::StringSet<> kernels = {
      // unary float ops
      "neg", "abs", "relu", "sigmoid", "tanh", "exp", "log", "sqrt",
      "reciprocal", "gelu", "fast_gelu", "sign", "erf", "sin", "cos", "floor",
      "ceil", "round",
      // activation gradients
      "relu_grad", "sigmoid_grad", "tanh_grad", "gelu_grad", "fast_gelu_grad",
      // binary float ops
      "add", "sub", "mul", "div", "pow", "min", "max", "mod", "fmod",
      // n-ary
      "sum"};
#ifndef NDEBUG
  for (const auto &k : kernels)
    assert(amprt::lookupKernel(k.getKey()) && "not an Ops.def kernel");
#endif
  return kernels.contains(kernel);
}

int PlannedProgram::tensorSlot(const PlannedCall &c, StringRef name) {
  int i = 0;
  for (const KernelParam &p : c.sig->params) {
    if (p.kind != ParamKind::Tensor)
      continue;
    if (p.name == name)
      return i;
    ++i;
  }
  return -1;
}

llvm::DenseSet<int> PlannedProgram::buffersWrittenInPlace() const {
  llvm::DenseSet<int> written;
  for (const PlannedCall &c : calls) {
    unsigned slot = 0;
    llvm::SmallDenseSet<int, 8> seen;
    for (const KernelParam &p : c.sig->params) {
      if (p.kind != ParamKind::Tensor)
        continue;
      const auto &list = c.tensors[slot++];
      if (amprt::isInPlaceParam(c.sig->name, p.name))
        written.insert(list.begin(), list.end());
      // One buffer in two parameters of one call: an output aliasing an
      // input ("may alias"), so that buffer is written more than once.
      for (int b : list)
        if (!seen.insert(b).second)
          written.insert(b);
    }
  }
  return written;
}

PlannedProgram::CallUses PlannedProgram::callUses() const {
  CallUses u;
  u.written = buffersWrittenInPlace();
  u.outputs.insert(results.begin(), results.end());
  for (auto [ci, c] : llvm::enumerate(calls))
    for (auto [si, list] : llvm::enumerate(c.tensors))
      for (int b : list)
        u.uses[b].push_back({int(ci), int(si)});
  return u;
}

void PlannedProgram::spliceCalls(const llvm::DenseSet<int> &drop,
                                 const CallReplacements &replace) {
  SmallVector<PlannedCall> out;
  out.reserve(calls.size());
  for (auto [ci, c] : llvm::enumerate(calls)) {
    if (drop.contains(int(ci)))
      continue;
    auto r = replace.find(int(ci));
    if (r == replace.end())
      out.push_back(std::move(c));
    else
      out.append(r->second.begin(), r->second.end());
  }
  calls = std::move(out);
}

PlannedCall PlannedProgram::plannedCall(StringRef kernel,
                                        ArrayRef<TArg> tensors,
                                        NamedAttrList attrs, Location loc) {
  const KernelSignature *sig = amprt::lookupKernel(kernel);
  assert(sig && "kernel missing from Ops.def");
  PlannedCall pc{sig, {}, std::move(attrs), loc};
  for (const KernelParam &p : sig->params) {
    if (p.kind == ParamKind::Context)
      continue;
    if (p.kind != ParamKind::Tensor) {
      assert(pc.attrs.get(p.name) && "no value for a non-tensor parameter");
      continue;
    }
    SmallVector<int, 1> list;
    for (const TArg &t : tensors)
      if (t.name == p.name)
        list = t.bufs;
    pc.tensors.push_back(list);
  }
#ifndef NDEBUG
  for (const TArg &t : tensors)
    assert(sig->find(t.name) && "no such tensor parameter");
#endif
  return pc;
}
