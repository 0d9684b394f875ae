//===- LossScaler.cpp - dynamic loss scale update -------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// PyTorch GradScaler's _amp_update_scale_ on tensors, with bounds: the state
// (scale, growth tracker) and the finite flag stay where they are, so a step
// never waits for the host. The update is Math/Optimizer.h's
// lossScaleUpdate, which the CUDA kernel runs too.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "amp/Runtime/Math/Optimizer.h"

using namespace amprt;

amprt_status amprt::checkLossScalerUpdate(
    amprt_context *ctx, const amprt_tensor *scale,
    const amprt_tensor *growth_tracker, const amprt_tensor *all_finite,
    float growth_factor, float backoff_factor, int64_t growth_interval,
    float min_scale, float max_scale) {
  const char *k = "loss_scaler_update";
  AMPRT_TRY(checkDtype(ctx, k, "scale", scale, AMPRT_F32));
  AMPRT_TRY(checkNumel(ctx, k, "scale", scale, 1));
  AMPRT_TRY(checkTensor(ctx, k, "growth_tracker", growth_tracker));
  if (growth_tracker->dtype != AMPRT_I64 && growth_tracker->dtype != AMPRT_I32)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: growth_tracker has dtype %s, expected i64 or i32", k,
                     amprt_dtype_name(growth_tracker->dtype));
  AMPRT_TRY(checkNumel(ctx, k, "growth_tracker", growth_tracker, 1));
  AMPRT_TRY(checkDtype(ctx, k, "all_finite", all_finite, AMPRT_BOOL));
  AMPRT_TRY(checkNumel(ctx, k, "all_finite", all_finite, 1));
  if (!(growth_factor > 1.f) || !(backoff_factor > 0.f) ||
      !(backoff_factor < 1.f) || growth_interval < 1 || !(min_scale > 0.f) ||
      !(max_scale >= min_scale))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: need growth_factor > 1, 0 < backoff_factor < 1, "
                     "growth_interval >= 1, 0 < min_scale <= max_scale "
                     "(got %g, %g, %lld, %g, %g)",
                     k, double(growth_factor), double(backoff_factor),
                     (long long)growth_interval, double(min_scale),
                     double(max_scale));
  return AMPRT_OK;
}

extern "C" amprt_status
amprt_loss_scaler_update(amprt_context *ctx, const amprt_tensor *scale,
                         const amprt_tensor *growth_tracker,
                         const amprt_tensor *all_finite, float growth_factor,
                         float backoff_factor, int64_t growth_interval,
                         float min_scale, float max_scale) {
  AMPRT_DISPATCH(loss_scaler_update, ctx, scale, growth_tracker, all_finite,
                 growth_factor, backoff_factor, growth_interval, min_scale,
                 max_scale);
  return guard(ctx, "loss_scaler_update", [&]() -> amprt_status {
    AMPRT_TRY(checkLossScalerUpdate(ctx, scale, growth_tracker, all_finite,
                                    growth_factor, backoff_factor,
                                    growth_interval, min_scale, max_scale));
    float &s = *static_cast<float *>(scale->data);
    int64_t tracker = int64_t(scalarOf(growth_tracker));
    bool finite = *static_cast<const uint8_t *>(all_finite->data) != 0;
    s = lossScaleUpdate(s, tracker, finite, growth_factor, backoff_factor,
                        growth_interval, min_scale, max_scale);
    setScalar(growth_tracker, double(tracker));
    return AMPRT_OK;
  });
}
