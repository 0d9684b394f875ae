//===- Random.cpp - RandomUniform(Like), RandomNormal(Like), Bernoulli ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX's random generators on the counter-based stream of Math/Random.h:
// element i of a call is a function of (seed, the context's random offset,
// i) alone, so a value does not depend on the backend, the thread count or
// the calls before it. Stochastic depth ("drop path": RandomUniformLike,
// Add, Floor) and noise layers lower to these.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Random.h"
#include "Internal.h"

#include <cmath>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// A generator's draw: y (a float tensor) gets f(key, i) rounded once per
/// element, key the stream of (seed, the context's random offset).
template <typename F>
void generate(amprt_context *ctx, T y, uint64_t seed, F &&f) {
  uint64_t key = streamKey(seed, ctx->currentRandomOffset());
  int64_t n = numel(y);
  for (int64_t i = 0; i < n; ++i)
    writeD(y->data, y->dtype, i, f(key, uint64_t(i)));
}

amprt_status checkFloatOut(amprt_context *ctx, const char *k, T y) {
  AMPRT_TRY(checkTensor(ctx, k, "y", y));
  if (!isLowOrF32(y->dtype) && y->dtype != AMPRT_F64)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: y has dtype %s, expected f32, f16, bf16 or f64", k,
                     amprt_dtype_name(y->dtype));
  return AMPRT_OK;
}

} // namespace

amprt_status amprt::checkRandomUniform(amprt_context *ctx, T y, double low,
                                       double high) {
  const char *k = "random_uniform";
  if (!(std::isfinite(low) && std::isfinite(high) && low <= high))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: low %g and high %g are not a finite range", k, low,
                     high);
  return checkFloatOut(ctx, k, y);
}

amprt_status amprt::checkRandomNormal(amprt_context *ctx, T y, double mean,
                                      double scale) {
  const char *k = "random_normal";
  if (!(std::isfinite(mean) && std::isfinite(scale)))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: mean %g and scale %g must be finite", k, mean, scale);
  return checkFloatOut(ctx, k, y);
}

amprt_status amprt::checkBernoulli(amprt_context *ctx, T p, T y) {
  const char *k = "bernoulli";
  AMPRT_TRY(checkFloat(ctx, k, "p", p));
  AMPRT_TRY(checkTensor(ctx, k, "y", y));
  if (!isLowOrF32(y->dtype) && y->dtype != AMPRT_F64 &&
      y->dtype != AMPRT_BOOL && !isInteger(y->dtype))
    return ctx->fail(AMPRT_ERR_DTYPE, "%s: y has dtype %s", k,
                     amprt_dtype_name(y->dtype));
  return checkShape(ctx, k, "y", y, shapeOf(p));
}

extern "C" {

amprt_status amprt_random_uniform(amprt_context *ctx, T y, uint64_t seed,
                                  double low, double high) {
  AMPRT_DISPATCH(random_uniform, ctx, y, seed, low, high);
  return guard(ctx, "random_uniform", [&]() -> amprt_status {
    AMPRT_TRY(checkRandomUniform(ctx, y, low, high));
    generate(ctx, y, seed, [&](uint64_t key, uint64_t i) {
      return uniformAt(key, i, low, high);
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_random_normal(amprt_context *ctx, T y, uint64_t seed,
                                 double mean, double scale) {
  AMPRT_DISPATCH(random_normal, ctx, y, seed, mean, scale);
  return guard(ctx, "random_normal", [&]() -> amprt_status {
    AMPRT_TRY(checkRandomNormal(ctx, y, mean, scale));
    generate(ctx, y, seed, [&](uint64_t key, uint64_t i) {
      return normalAt(key, i, mean, scale);
    });
    return AMPRT_OK;
  });
}

amprt_status amprt_bernoulli(amprt_context *ctx, T p, T y, uint64_t seed) {
  AMPRT_DISPATCH(bernoulli, ctx, p, y, seed);
  return guard(ctx, "bernoulli", [&]() -> amprt_status {
    const char *k = "bernoulli";
    AMPRT_TRY(checkBernoulli(ctx, p, y));
    F32In ip(p);
    int64_t n = numel(p);
    for (int64_t i = 0; i < n; ++i)
      if (!(ip.p[i] >= 0.f && ip.p[i] <= 1.f))
        return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                         "%s: p[%lld] = %g is outside [0, 1]", k, (long long)i,
                         double(ip.p[i]));
    uint64_t key = streamKey(seed, ctx->currentRandomOffset());
    for (int64_t i = 0; i < n; ++i)
      writeD(y->data, y->dtype, i, bernoulliAt(key, i, ip.p[i]));
    return AMPRT_OK;
  });
}

} // extern "C"
