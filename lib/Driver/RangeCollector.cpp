//===- RangeCollector.cpp - value ranges over fp32 steps ------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/RangeCollector.h"
#include "amp/Driver/TensorRange.h"

#include <algorithm>

using namespace amp;
using namespace amp::driver;

bool amp::driver::isGradientName(llvm::StringRef name) {
  // <x>_grad and its accumulation buffer; the intermediates of a node's
  // gradient subgraph, <node>_Grad/<value>.
  return name.contains("_grad") || name.contains("_Grad/");
}

llvm::Error RangeCollector::runStep(exec::Program &prog, amprt_context *ctx) {
  for (size_t i = 0; i < prog.numCalls(); ++i) {
    if (auto e = prog.runCall(i))
      return e;
    for (const exec::Program::CallTensor &t : prog.callInfo(i).tensors) {
      if (!t.written || t.value.empty() || !isFloatTensor(*t.tensor))
        continue;
      bool gradient = isGradientName(t.value);
      double threshold =
          train::kFp16SmallestNormal / (gradient ? lossScale : 1.0);
      // f64 values as they are; the others read once, as floats, for the
      // range and what fp16 and bf16 resolve of them.
      TensorRange r;
      Resolution res;
      if (t.tensor->dtype == AMPRT_F64) {
        r = rangeOf(ctx, *t.tensor, threshold);
      } else {
        readFloats(ctx, *t.tensor, values, scratch);
        r = rangeOf(values, threshold);
        res = resolutionOf(values);
      }
      Seen &s = seen[t.value];
      // A value written by several calls (a gradient summed in place, a
      // buffer reused): its last write in a step is what its readers see,
      // and every write is a value the low type would have to hold.
      s.gradient = gradient;
      s.maxAbs = std::max(s.maxAbs, r.maxAbs);
      if (r.nonzero)
        s.minNonzero =
            s.nonzero ? std::min(s.minNonzero, r.minNonzero) : r.minNonzero;
      s.count += r.count;
      s.nonzero += r.nonzero;
      s.below += r.below;
      s.varied += res.varied;
      s.unresolvedF16 += res.unresolvedF16;
      s.unresolvedBF16 += res.unresolvedBF16;
    }
  }
  ++steps;
  return llvm::Error::success();
}

train::AMPRanges RangeCollector::ranges() const {
  train::AMPRanges out;
  out.steps = steps;
  out.lossScale = lossScale;
  for (const auto &e : seen) {
    const Seen &s = e.getValue();
    train::AMPValueRange &v = out.values[e.getKey()];
    v.maxAbs = s.maxAbs;
    v.minNonzero = s.minNonzero;
    v.belowNormal = s.nonzero ? double(s.below) / double(s.nonzero) : 0.0;
    v.count = s.count;
    if (s.varied) {
      v.unresolvedFp16 = double(s.unresolvedF16) / double(s.varied);
      v.unresolvedBf16 = double(s.unresolvedBF16) / double(s.varied);
    }
    v.gradient = s.gradient;
  }
  return out;
}
