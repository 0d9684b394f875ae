//===- TensorRange.cpp - what a tensor holds, read back -------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/TensorRange.h"
#include "amp/Runtime/Math/ElementAccess.h"

#include "llvm/Support/Format.h"

#include <cmath>
#include <vector>

using namespace amp;
using namespace amp::driver;

bool amp::driver::isFloatTensor(const amprt_tensor &t) {
  return t.dtype == AMPRT_F32 || t.dtype == AMPRT_F16 ||
         t.dtype == AMPRT_BF16 || t.dtype == AMPRT_F64;
}

int64_t amp::driver::numElements(const amprt_tensor &t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t.rank; ++d)
    n *= t.shape[d];
  return n;
}

void amp::driver::readFloats(amprt_context *ctx, const amprt_tensor &t,
                             std::vector<float> &out,
                             std::vector<char> &scratch) {
  int64_t n = numElements(t);
  out.resize(size_t(n));
  if (t.dtype == AMPRT_F32) {
    amprt_memcpy(ctx, out.data(), t.data, size_t(n) * 4, AMPRT_DEVICE_TO_HOST);
    return;
  }
  scratch.resize(size_t(n) * amprt_dtype_size(t.dtype));
  amprt_memcpy(ctx, scratch.data(), t.data, scratch.size(),
               AMPRT_DEVICE_TO_HOST);
  for (int64_t i = 0; i < n; ++i)
    out[i] = t.dtype == AMPRT_F64
                 ? float(reinterpret_cast<const double *>(scratch.data())[i])
                 : ::amprt::loadF(scratch.data(), t.dtype, i);
}

void amp::driver::writeFloats(amprt_context *ctx, const amprt_tensor &t,
                              const std::vector<float> &values, float scale,
                              std::vector<char> &scratch) {
  scratch.resize(values.size() * amprt_dtype_size(t.dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    float v = values[i] * scale;
    if (t.dtype == AMPRT_F64)
      reinterpret_cast<double *>(scratch.data())[i] = v;
    else
      ::amprt::storeF(scratch.data(), t.dtype, int64_t(i), v);
  }
  amprt_memcpy(ctx, t.data, scratch.data(), scratch.size(),
               AMPRT_HOST_TO_DEVICE);
}

namespace {
/// The range of the n values load(i) yields.
template <typename Load>
TensorRange rangeOfValues(int64_t n, double threshold, Load load) {
  TensorRange r;
  r.count = n;
  for (int64_t i = 0; i < n; ++i) {
    double v = load(i);
    if (std::isnan(v)) {
      ++r.nan;
    } else if (std::isinf(v)) {
      ++r.inf;
    } else {
      double a = std::fabs(v);
      r.maxAbs = std::max(r.maxAbs, a);
      if (a > 0) {
        ++r.nonzero;
        r.below += a < threshold;
        r.minNonzero = std::min(r.minNonzero, a);
      }
    }
  }
  return r;
}

/// The spacing of consecutive values of a binary float type with
/// `mantissa` stored bits and smallest normal exponent `minExp` at |x|.
double spacingAt(double x, int mantissa, int minExp) {
  int e = x == 0 ? minExp : std::max(std::ilogb(x), minExp);
  return std::ldexp(1.0, e - mantissa);
}
} // namespace

TensorRange amp::driver::rangeOf(amprt_context *ctx, const amprt_tensor &t,
                                 double threshold) {
  int64_t n = numElements(t);
  if (!isFloatTensor(t) || n == 0 || !t.data) {
    TensorRange r;
    r.count = n;
    return r;
  }
  std::vector<char> host(size_t(n) * amprt_dtype_size(t.dtype));
  amprt_memcpy(ctx, host.data(), t.data, host.size(), AMPRT_DEVICE_TO_HOST);
  return rangeOfValues(n, threshold, [&](int64_t i) {
    return t.dtype == AMPRT_F64
               ? reinterpret_cast<const double *>(host.data())[i]
               : double(::amprt::loadF(host.data(), t.dtype, i));
  });
}

TensorRange amp::driver::rangeOf(llvm::ArrayRef<float> values,
                                 double threshold) {
  return rangeOfValues(int64_t(values.size()), threshold,
                       [&](int64_t i) { return double(values[i]); });
}

Resolution amp::driver::resolutionOf(llvm::ArrayRef<float> values) {
  Resolution r;
  double sum = 0;
  int64_t finite = 0;
  for (float v : values)
    if (std::isfinite(v)) {
      sum += v;
      ++finite;
    }
  if (finite == 0)
    return r;
  double mean = sum / double(finite);
  // Half the spacing at the mean: a value nearer the mean than that rounds
  // to the mean's neighbourhood (fp16: 10 stored bits, normal from 2^-14;
  // bf16: 7, from 2^-126).
  double halfF16 = spacingAt(std::fabs(mean), 10, -14) / 2;
  double halfBF16 = spacingAt(std::fabs(mean), 7, -126) / 2;
  for (float v : values) {
    if (!std::isfinite(v) || double(v) == mean)
      continue;
    double d = std::fabs(double(v) - mean);
    ++r.varied;
    r.unresolvedF16 += d < halfF16;
    r.unresolvedBF16 += d < halfBF16;
  }
  return r;
}

void amp::driver::printRange(llvm::raw_ostream &os, const amprt_tensor &t,
                             const TensorRange &r) {
  os << amprt_dtype_name(t.dtype) << " [";
  for (int32_t d = 0; d < t.rank; ++d)
    os << (d ? ", " : "") << t.shape[d];
  os << "]";
  if (!isFloatTensor(t))
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
