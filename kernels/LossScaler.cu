//===- LossScaler.cu - dynamic loss scale update on the device ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA version of LossScaler.cpp: loss_scaler_update in one thread on
// the device (its lossScaleUpdate of amp/Runtime/Math/Optimizer.h), so the
// scale, the growth tracker and the finite flag never travel to the host.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Optimizer.h"

using namespace amprt;
using namespace amprt::cuda;

namespace {

__global__ void scalerKernel(float *scale, void *tracker, int32_t trackerDt,
                             const uint8_t *allFinite, float growth,
                             float backoff, int64_t interval, float minScale,
                             float maxScale) {
  int64_t t = trackerDt == AMPRT_I64
                  ? *static_cast<int64_t *>(tracker)
                  : int64_t(*static_cast<int32_t *>(tracker));
  *scale = lossScaleUpdate(*scale, t, *allFinite != 0, growth, backoff,
                           interval, minScale, maxScale);
  if (trackerDt == AMPRT_I64)
    *static_cast<int64_t *>(tracker) = t;
  else
    *static_cast<int32_t *>(tracker) = int32_t(t);
}

amprt_status cudaScalerUpdate(amprt_context *ctx, T scale, T growth_tracker,
                              T all_finite, float growth_factor,
                              float backoff_factor, int64_t growth_interval,
                              float min_scale, float max_scale) {
  const char *k = "loss_scaler_update";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkLossScalerUpdate(ctx, scale, growth_tracker, all_finite,
                              growth_factor, backoff_factor, growth_interval,
                              min_scale, max_scale))
      return onHost(ctx, [&] {
        return amprt_loss_scaler_update(ctx, scale, growth_tracker, all_finite,
                                        growth_factor, backoff_factor,
                                        growth_interval, min_scale, max_scale);
      });
    scalerKernel<<<1, 1, 0, stream(ctx)>>>(
        static_cast<float *>(scale->data), growth_tracker->data,
        growth_tracker->dtype, static_cast<const uint8_t *>(all_finite->data),
        growth_factor, backoff_factor, growth_interval, min_scale, max_scale);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

} // namespace

void amprt::cuda::registerLossScaler(KernelTable &t) {
  t.loss_scaler_update = cudaScalerUpdate;
}
