//===- NonfiniteLocator.cpp - the first call that made a non-finite value ===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/NonfiniteLocator.h"
#include "amp/Runtime/Math/ElementAccess.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace amp;
using namespace amp::driver;

TensorRange amp::driver::rangeOf(amprt_context *ctx, const amprt_tensor &t) {
  TensorRange r;
  int64_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d)
    n *= t.shape[d];
  r.count = n;
  bool isFloat = t.dtype == AMPRT_F32 || t.dtype == AMPRT_F16 ||
                 t.dtype == AMPRT_BF16 || t.dtype == AMPRT_F64;
  if (!isFloat || n == 0 || !t.data)
    return r;
  std::vector<char> host(size_t(n) * amprt_dtype_size(t.dtype));
  amprt_memcpy(ctx, host.data(), t.data, host.size(), AMPRT_DEVICE_TO_HOST);
  for (int64_t i = 0; i < n; ++i) {
    double v = t.dtype == AMPRT_F64
                   ? reinterpret_cast<const double *>(host.data())[i]
                   : double(::amprt::loadF(host.data(), t.dtype, i));
    if (std::isnan(v)) {
      ++r.nan;
    } else if (std::isinf(v)) {
      ++r.inf;
    } else {
      double a = std::fabs(v);
      r.maxAbs = std::max(r.maxAbs, a);
      if (a > 0)
        r.minNonzero = std::min(r.minNonzero, a);
    }
  }
  return r;
}

void amp::driver::printRange(llvm::raw_ostream &os, const amprt_tensor &t,
                             const TensorRange &r) {
  os << amprt_dtype_name(t.dtype) << " [";
  for (int32_t d = 0; d < t.rank; ++d)
    os << (d ? ", " : "") << t.shape[d];
  os << "]";
  bool isFloat = t.dtype == AMPRT_F32 || t.dtype == AMPRT_F16 ||
                 t.dtype == AMPRT_BF16 || t.dtype == AMPRT_F64;
  if (!isFloat)
    return;
  if (!r.finite()) {
    os << ": ";
    if (r.nan)
      os << r.nan << " NaN" << (r.inf ? ", " : "");
    if (r.inf)
      os << r.inf << " inf";
    os << " of " << r.count;
  }
  if (r.nan + r.inf == r.count)
    return;
  os << (r.finite() ? ": " : "; ") << "finite |x| ";
  if (r.maxAbs == 0)
    os << "all 0";
  else
    os << "in [" << llvm::format("%.3g", r.minNonzero) << ", "
       << llvm::format("%.3g", r.maxAbs) << "]";
}

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
    const llvm::StringMap<std::string> &opTypes, size_t numCalls) {
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
    os << " (" << type->second << ", " << (backward ? "backward" : "forward")
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
