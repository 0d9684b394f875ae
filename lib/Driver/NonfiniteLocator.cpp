//===- NonfiniteLocator.cpp - the first call that made a non-finite value ===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/NonfiniteLocator.h"

using namespace amp;
using namespace amp::driver;

llvm::Expected<NonfiniteSource>
amp::driver::localizeNonfinite(exec::Program &prog, amprt_context *ctx) {
  NonfiniteSource src;
  // The graph's inputs first: bad data, or weights made non-finite by an
  // earlier optimizer step, are no call's doing.
  std::vector<bool> checked(prog.inputs().size(), false);
  for (size_t i = 0; i < prog.numCalls() && !src.found; ++i)
    for (const exec::Program::CallTensor &t : prog.callInfo(i).tensors) {
      if (t.input < 0 || checked[t.input])
        continue;
      checked[t.input] = true;
      TensorRange r = rangeOf(ctx, *t.tensor);
      if (!r.finite()) {
        src.found = true;
        src.input = prog.inputs()[t.input].name;
        src.inputRange = r;
        src.operands.push_back({t.param, true, false, t.tensor, r, {}});
        break;
      }
    }
  for (size_t i = 0; i < prog.numCalls(); ++i) {
    const exec::Program::CallInfo &info = prog.callInfo(i);
    if (src.found) {
      if (auto e = prog.runCall(i))
        return std::move(e);
      continue;
    }
    std::vector<NonfiniteSource::Operand> ops;
    bool inputsFinite = true;
    for (const exec::Program::CallTensor &t : info.tensors) {
      NonfiniteSource::Operand op{t.param, t.read, t.written, t.tensor, {}, {}};
      if (t.read) {
        op.before = rangeOf(ctx, *t.tensor);
        inputsFinite &= op.before.finite();
      }
      ops.push_back(op);
    }
    if (auto e = prog.runCall(i))
      return std::move(e);
    bool madeNonfinite = false;
    for (NonfiniteSource::Operand &op : ops)
      if (op.written) {
        op.after = rangeOf(ctx, *op.tensor);
        madeNonfinite |= !op.after.finite();
      }
    if (inputsFinite && madeNonfinite) {
      src.found = true;
      src.call = i;
      src.node = info.node;
      src.kernel = info.kernel;
      src.operands = std::move(ops);
    }
  }
  return src;
}

void amp::driver::printNonfiniteSource(
    llvm::raw_ostream &os, const NonfiniteSource &src,
    const llvm::StringMap<std::string> &opTypes, size_t numCalls,
    bool optimizer) {
  if (!src.found) {
    os << "amp-run:   no call made a non-finite value from finite inputs on "
          "the rerun\n";
    return;
  }
  if (!src.input.empty()) {
    os << "amp-run:   graph input '" << src.input
       << "' is non-finite before any call (bad data, or weights an earlier "
          "optimizer step made non-finite): ";
    printRange(os, *src.operands.front().tensor, src.inputRange);
    os << "\n";
    return;
  }
  llvm::StringRef node = src.node;
  auto type = opTypes.find(node);
  // ORT's gradient builder names the backward nodes <forward node>_Grad/...
  bool backward = node.contains("_Grad");
  os << "amp-run:   first non-finite value made by node '" << node << "'";
  if (type != opTypes.end())
    os << " (" << type->second << ", "
       << (optimizer  ? "optimizer"
           : backward ? "backward"
                      : "forward")
       << ")";
  os << ", call " << src.call + 1 << " of " << numCalls << " (amprt_"
     << src.kernel << "), from finite inputs:\n";
  for (const NonfiniteSource::Operand &op : src.operands) {
    if (op.read) {
      os << "amp-run:     in  " << op.param << ": ";
      printRange(os, *op.tensor, op.before);
      os << "\n";
    }
    if (op.written) {
      os << "amp-run:     out " << op.param << ": ";
      printRange(os, *op.tensor, op.after);
      os << "\n";
    }
  }
}
