//===- Random.cpp - RandomUniform(Like), RandomNormal(Like), Bernoulli ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX's random generators on the counter-based stream of ElementAccess.h:
// element i of a call is a function of (seed, the context's random offset,
// i) alone, so a value does not depend on the backend, the thread count or
// the calls before it. Stochastic depth ("drop path": RandomUniformLike,
// Add, Floor) and noise layers lower to these.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cmath>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

amprt_status checkFloatOut(amprt_context *ctx, const char *k, T y) {
  AMPRT_TRY(checkTensor(ctx, k, "y", y));
  if (!isLowOrF32(y->dtype) && y->dtype != AMPRT_F64)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: y has dtype %s, expected f32, f16, bf16 or f64", k,
                     amprt_dtype_name(y->dtype));
  return AMPRT_OK;
}

/// A generator's draw: y (a float tensor) gets f(key, i) rounded once per
/// element, key the stream of (seed, the context's random offset).
template <typename F>
amprt_status generate(amprt_context *ctx, const char *k, T y, uint64_t seed,
                      F &&f) {
  AMPRT_TRY(checkFloatOut(ctx, k, y));
  uint64_t key = streamKey(seed, ctx->randomOffset);
  int64_t n = numel(y);
  for (int64_t i = 0; i < n; ++i)
    writeD(y->data, y->dtype, i, f(key, uint64_t(i)));
  return AMPRT_OK;
}

} // namespace

extern "C" {

amprt_status amprt_random_uniform(amprt_context *ctx, T y, uint64_t seed,
                                  double low, double high) {
  AMPRT_DISPATCH(random_uniform, ctx, y, seed, low, high);
  const char *k = "random_uniform";
  return guard(ctx, k, [&]() -> amprt_status {
    if (!(std::isfinite(low) && std::isfinite(high) && low <= high))
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: low %g and high %g are not a finite range", k, low,
                       high);
    return generate(ctx, k, y, seed, [&](uint64_t key, uint64_t i) {
      return low + (high - low) * uniform53At(key, i);
    });
  });
}

amprt_status amprt_random_normal(amprt_context *ctx, T y, uint64_t seed,
                                 double mean, double scale) {
  AMPRT_DISPATCH(random_normal, ctx, y, seed, mean, scale);
  const char *k = "random_normal";
  return guard(ctx, k, [&]() -> amprt_status {
    if (!(std::isfinite(mean) && std::isfinite(scale)))
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: mean %g and scale %g must be finite", k, mean,
                       scale);
    // Box-Muller on draws 2i and 2i + 1: 1 - u is in (0, 1], so the
    // logarithm is finite.
    return generate(ctx, k, y, seed, [&](uint64_t key, uint64_t i) {
      double u = uniform53At(key, 2 * i), v = uniform53At(key, 2 * i + 1);
      return mean + scale * std::sqrt(-2.0 * std::log(1.0 - u)) *
                        std::cos(6.283185307179586 * v);
    });
  });
}

amprt_status amprt_bernoulli(amprt_context *ctx, T p, T y, uint64_t seed) {
  AMPRT_DISPATCH(bernoulli, ctx, p, y, seed);
  return guard(ctx, "bernoulli", [&]() -> amprt_status {
    const char *k = "bernoulli";
    AMPRT_TRY(checkFloat(ctx, k, "p", p));
    AMPRT_TRY(checkTensor(ctx, k, "y", y));
    if (!isLowOrF32(y->dtype) && y->dtype != AMPRT_F64 &&
        y->dtype != AMPRT_BOOL && !isInteger(y->dtype))
      return ctx->fail(AMPRT_ERR_DTYPE, "%s: y has dtype %s", k,
                       amprt_dtype_name(y->dtype));
    AMPRT_TRY(checkShape(ctx, k, "y", y, shapeOf(p)));
    F32In ip(p);
    int64_t n = numel(p);
    for (int64_t i = 0; i < n; ++i)
      if (!(ip.p[i] >= 0.f && ip.p[i] <= 1.f))
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: p[%lld] = %g is outside [0, 1]", k,
                         (long long)i, double(ip.p[i]));
    uint64_t key = streamKey(seed, ctx->randomOffset);
    for (int64_t i = 0; i < n; ++i)
      writeD(y->data, y->dtype, i, uniform24At(key, i) < ip.p[i] ? 1.0 : 0.0);
    return AMPRT_OK;
  });
}

} // extern "C"
