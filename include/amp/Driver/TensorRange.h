//===- TensorRange.h - what a tensor holds, read back ------------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The magnitudes and non-finite counts of one runtime tensor, read back
// from wherever it lives: what --localize-nonfinite prints and
// --collect-ranges records.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_TENSORRANGE_H
#define AMP_DRIVER_TENSORRANGE_H

#include "amp/Runtime/Runtime.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace amp::driver {

/// What a tensor holds: its element count, its NaNs and infinities, and the
/// largest and smallest nonzero magnitude of its finite values; with a
/// threshold, how many nonzero finite values lie below it.
struct TensorRange {
  int64_t count = 0, nan = 0, inf = 0, nonzero = 0, below = 0;
  double maxAbs = 0, minNonzero = std::numeric_limits<double>::infinity();
  bool finite() const { return nan == 0 && inf == 0; }
};
/// The range of tensor `t` (read back from the device; integer and bool
/// tensors are finite and counted only). `below` counts the nonzero finite
/// values with |x| < `threshold`.
TensorRange rangeOf(amprt_context *ctx, const amprt_tensor &t,
                    double threshold = 0);
/// The range of `values` (as rangeOf of a tensor holding them).
TensorRange rangeOf(llvm::ArrayRef<float> values, double threshold = 0);

/// What a low type resolves of a value: of its finite elements that differ
/// from their mean m, how many lie within half of fp16's (bf16's) spacing
/// at m of it, so that the type holds them as about m. A base plus a small
/// change (a merged weight, a norm scale near 1) has most of them there:
/// the change is lost to rounding.
struct Resolution {
  int64_t varied = 0, unresolvedF16 = 0, unresolvedBF16 = 0;
};
Resolution resolutionOf(llvm::ArrayRef<float> values);

/// Whether `t` holds floating-point values.
bool isFloatTensor(const amprt_tensor &t);
/// The elements of float tensor `t` as floats, into `out` (read back from
/// the device; `scratch` holds the bytes on the way).
void readFloats(amprt_context *ctx, const amprt_tensor &t,
                std::vector<float> &out, std::vector<char> &scratch);
/// Writes `values` times `scale` into float tensor `t`, each rounded to its
/// dtype.
void writeFloats(amprt_context *ctx, const amprt_tensor &t,
                 const std::vector<float> &values, float scale,
                 std::vector<char> &scratch);
/// The element count of `t`.
int64_t numElements(const amprt_tensor &t);
/// "f16 [2, 2]: 1 inf of 4; finite |x| in [0.0015, 6.1e+04]".
void printRange(llvm::raw_ostream &os, const amprt_tensor &t,
                const TensorRange &r);

} // namespace amp::driver

#endif // AMP_DRIVER_TENSORRANGE_H
