//===- Optimizer.cpp - fused FP32 optimizers gated by a device flag -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Each kernel updates n FP32 master weights and their states in place in one
// call. The `update` flag is a bool tensor read where it lives: false (an
// overflow found by multi_tensor_unscale) leaves every weight and state
// bit-identical, without the host ever seeing the flag. Gradients may be
// f32, f16 or bf16; the math is f32, each element's update
// amp/Runtime/Math/Optimizer.h's (which the CUDA kernels run too).
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Math/Optimizer.h"
#include "Internal.h"

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// Checks n parameter tensors against their gradients and states.
amprt_status
checkGroup(amprt_context *ctx, const char *k, int64_t n, T params, T grads,
           std::initializer_list<std::pair<const char *, T>> states) {
  if (n < 0 || (n > 0 && (!params || !grads)))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: params/grads missing for n = %lld", k, (long long)n);
  for (auto &s : states)
    if (n > 0 && !s.second)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: %s missing", k,
                       s.first);
  for (int64_t i = 0; i < n; ++i) {
    AMPRT_TRY(checkDtype(ctx, k, "params[i]", &params[i], AMPRT_F32));
    AMPRT_TRY(checkFloat(ctx, k, "grads[i]", &grads[i]));
    Shape sp = shapeOf(&params[i]);
    if (shapeOf(&grads[i]) != sp)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: grads[%lld] has shape %s, params[%lld] %s", k,
                       (long long)i, shapeStr(&grads[i]).c_str(), (long long)i,
                       shapeStr(sp).c_str());
    for (auto &s : states) {
      AMPRT_TRY(checkDtype(ctx, k, s.first, &s.second[i], AMPRT_F32));
      if (shapeOf(&s.second[i]) != sp)
        return ctx->fail(AMPRT_ERR_SHAPE,
                         "%s: %s[%lld] has shape %s, params[%lld] %s", k,
                         s.first, (long long)i, shapeStr(&s.second[i]).c_str(),
                         (long long)i, shapeStr(sp).c_str());
    }
  }
  return AMPRT_OK;
}

/// Runs step(i, g, lo, hi) over the elements [lo, hi) of parameter i, g
/// its gradient's elements from lo on in f32 (g[j - lo] is element j), the
/// elements of all n parameters split among the pool's threads (each
/// element's update reads and writes only its own). A 16-bit gradient is
/// widened block by block on the stack, never as a whole.
template <typename F>
void forEachParameter(int64_t n, T params, T grads, F &&step) {
  std::vector<int64_t> count(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    count[size_t(i)] = numel(&params[i]);
  parallelOverTensors(count, 20, [&](int64_t i, int64_t lo, int64_t hi) {
    const amprt_tensor &g = grads[i];
    if (g.dtype == AMPRT_F32)
      return step(i, static_cast<const float *>(g.data) + lo, lo, hi);
    constexpr int64_t kBlock = 1024;
    float block[kBlock];
    for (int64_t b = lo; b < hi; b += kBlock) {
      int64_t len = std::min(kBlock, hi - b);
      widenBlock(g.data, g.dtype, b, len, block);
      step(i, block, b, b + len);
    }
  });
}

/// adamwStep over elements [lo, hi) (g from lo on) with the mode a
/// compile-time constant.
template <int Mode>
void adamwRange(AdamWStep s, const float *g, float *p, float *m, float *v,
                int64_t lo, int64_t hi) {
  s.mode = Mode;
  for (int64_t j = lo; j < hi; ++j)
    adamwStep(s, g[j - lo], p[j], m[j], v[j]);
}

/// A one-element tensor of dtype dt.
amprt_status checkScalar(amprt_context *ctx, const char *k, const char *what,
                         T t, int32_t dt, bool optional = false) {
  AMPRT_TRY(checkDtype(ctx, k, what, t, dt, optional));
  if (t)
    AMPRT_TRY(checkNumel(ctx, k, what, t, 1));
  return AMPRT_OK;
}

/// Reads the gate: no tensor means "update".
bool gate(T update) {
  return !update || *static_cast<const uint8_t *>(update->data) != 0;
}

float *f32(T t) { return static_cast<float *>(t->data); }
int64_t i64(T t) { return *static_cast<const int64_t *>(t->data); }

} // namespace

amprt_status amprt::checkSgd(amprt_context *ctx, int64_t n, T params, T grads,
                             T momentum_bufs, T lr, T step, float momentum,
                             float dampening, int32_t nesterov, T update,
                             T updated) {
  const char *k = "sgd";
  if (momentum != 0.f)
    AMPRT_TRY(checkGroup(ctx, k, n, params, grads,
                         {{"momentum_bufs", momentum_bufs}}));
  else
    AMPRT_TRY(checkGroup(ctx, k, n, params, grads, {}));
  AMPRT_TRY(checkScalar(ctx, k, "lr", lr, AMPRT_F32));
  AMPRT_TRY(checkScalar(ctx, k, "step", step, AMPRT_I64, true));
  AMPRT_TRY(checkScalar(ctx, k, "update", update, AMPRT_BOOL, true));
  AMPRT_TRY(checkScalar(ctx, k, "updated", updated, AMPRT_BOOL, true));
  if (nesterov && (momentum <= 0.f || dampening != 0.f))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: nesterov needs momentum > 0 and dampening 0", k);
  return AMPRT_OK;
}

amprt_status amprt::checkAdamw(amprt_context *ctx, int64_t n, T params, T grads,
                               T m1, T m2, T lr, T step, int32_t mode, T update,
                               T updated) {
  const char *k = "adamw";
  AMPRT_TRY(checkGroup(ctx, k, n, params, grads, {{"m1", m1}, {"m2", m2}}));
  AMPRT_TRY(checkScalar(ctx, k, "lr", lr, AMPRT_F32));
  AMPRT_TRY(checkScalar(ctx, k, "step", step, AMPRT_I64));
  AMPRT_TRY(checkScalar(ctx, k, "update", update, AMPRT_BOOL, true));
  AMPRT_TRY(checkScalar(ctx, k, "updated", updated, AMPRT_BOOL, true));
  if (mode < 0 || mode > 2)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: mode %d (0 PyTorch AdamW, 1 HuggingFace AdamW, 2 "
                     "PyTorch Adam)",
                     k, mode);
  return AMPRT_OK;
}

extern "C" {

amprt_status amprt_sgd(amprt_context *ctx, int64_t n, T params, T grads,
                       T momentum_bufs, T lr, T step, float momentum,
                       float dampening, float weight_decay, int32_t nesterov,
                       T update, T updated) {
  AMPRT_DISPATCH(sgd, ctx, n, params, grads, momentum_bufs, lr, step, momentum,
                 dampening, weight_decay, nesterov, update, updated);
  return guard(ctx, "sgd", [&]() -> amprt_status {
    AMPRT_TRY(checkSgd(ctx, n, params, grads, momentum_bufs, lr, step, momentum,
                       dampening, nesterov, update, updated));
    bool apply = gate(update);
    if (updated)
      *static_cast<uint8_t *>(updated->data) = apply;
    if (!apply)
      return AMPRT_OK;
    SgdStep s = {*f32(lr),     momentum,      dampening,
                 weight_decay, nesterov != 0, step && i64(step) == 0};
    forEachParameter(
        n, params, grads,
        [&](int64_t i, const float *g, int64_t lo, int64_t hi) {
          float *p = f32(&params[i]);
          float *buf = momentum != 0.f ? f32(&momentum_bufs[i]) : nullptr;
          for (int64_t j = lo; j < hi; ++j)
            p[j] = sgdStep(s, p[j], g[j - lo], buf ? buf + j : nullptr);
        });
    if (step)
      ++*static_cast<int64_t *>(step->data);
    return AMPRT_OK;
  });
}

amprt_status amprt_adamw(amprt_context *ctx, int64_t n, T params, T grads, T m1,
                         T m2, T lr, T step, float beta1, float beta2,
                         float epsilon, float weight_decay, int32_t mode,
                         int32_t correct_bias, T update, T updated) {
  AMPRT_DISPATCH(adamw, ctx, n, params, grads, m1, m2, lr, step, beta1, beta2,
                 epsilon, weight_decay, mode, correct_bias, update, updated);
  return guard(ctx, "adamw", [&]() -> amprt_status {
    AMPRT_TRY(checkAdamw(ctx, n, params, grads, m1, m2, lr, step, mode, update,
                         updated));
    bool apply = gate(update);
    if (updated)
      *static_cast<uint8_t *>(updated->data) = apply;
    if (!apply)
      return AMPRT_OK;
    AdamWStep s = adamwScalars(*f32(lr), i64(step), beta1, beta2, epsilon,
                               weight_decay, mode, correct_bias);
    forEachParameter(n, params, grads,
                     [&](int64_t i, const float *g, int64_t lo, int64_t hi) {
                       float *p = f32(&params[i]), *m = f32(&m1[i]),
                             *v = f32(&m2[i]);
                       // One loop per mode, the mode a constant in each, so
                       // that the loops have no branch and vectorize.
                       switch (s.mode) {
                       case 0:
                         return adamwRange<0>(s, g, p, m, v, lo, hi);
                       case 1:
                         return adamwRange<1>(s, g, p, m, v, lo, hi);
                       default:
                         return adamwRange<2>(s, g, p, m, v, lo, hi);
                       }
                     });
    return AMPRT_OK;
  });
}

amprt_status amprt_onnx_adam(amprt_context *ctx, int64_t n, T r, T t, T x, T g,
                             T v, T h, float alpha, float beta, float epsilon,
                             float norm_coefficient,
                             float norm_coefficient_post, T update) {
  AMPRT_DISPATCH(onnx_adam, ctx, n, r, t, x, g, v, h, alpha, beta, epsilon,
                 norm_coefficient, norm_coefficient_post, update);
  return guard(ctx, "onnx_adam", [&]() -> amprt_status {
    const char *k = "onnx_adam";
    AMPRT_TRY(checkGroup(ctx, k, n, x, g, {{"v", v}, {"h", h}}));
    AMPRT_TRY(checkScalar(ctx, k, "r", r, AMPRT_F32));
    AMPRT_TRY(checkScalar(ctx, k, "t", t, AMPRT_I64));
    AMPRT_TRY(checkScalar(ctx, k, "update", update, AMPRT_BOOL, true));
    if (!gate(update))
      return AMPRT_OK;
    float rate = onnxAdamRate(*f32(r), i64(t), alpha, beta);
    forEachParameter(
        n, x, g, [&](int64_t i, const float *gi, int64_t lo, int64_t hi) {
          float *px = f32(&x[i]), *pv = f32(&v[i]), *ph = f32(&h[i]);
          for (int64_t j = lo; j < hi; ++j)
            onnxAdamStep(rate, alpha, beta, epsilon, norm_coefficient,
                         norm_coefficient_post, gi[j - lo], px[j], pv[j],
                         ph[j]);
        });
    return AMPRT_OK;
  });
}

amprt_status amprt_onnx_adagrad(amprt_context *ctx, int64_t n, T r, T t, T x,
                                T g, T h, float decay_factor, float epsilon,
                                float norm_coefficient, T update) {
  AMPRT_DISPATCH(onnx_adagrad, ctx, n, r, t, x, g, h, decay_factor, epsilon,
                 norm_coefficient, update);
  return guard(ctx, "onnx_adagrad", [&]() -> amprt_status {
    const char *k = "onnx_adagrad";
    AMPRT_TRY(checkGroup(ctx, k, n, x, g, {{"h", h}}));
    AMPRT_TRY(checkScalar(ctx, k, "r", r, AMPRT_F32));
    AMPRT_TRY(checkScalar(ctx, k, "t", t, AMPRT_I64));
    AMPRT_TRY(checkScalar(ctx, k, "update", update, AMPRT_BOOL, true));
    if (!gate(update))
      return AMPRT_OK;
    float rate = onnxAdagradRate(*f32(r), i64(t), decay_factor);
    forEachParameter(n, x, g,
                     [&](int64_t i, const float *gi, int64_t lo, int64_t hi) {
                       float *px = f32(&x[i]), *ph = f32(&h[i]);
                       for (int64_t j = lo; j < hi; ++j)
                         onnxAdagradStep(rate, epsilon, norm_coefficient,
                                         gi[j - lo], px[j], ph[j]);
                     });
    return AMPRT_OK;
  });
}

amprt_status amprt_onnx_momentum(amprt_context *ctx, int64_t n, T r, T t, T x,
                                 T g, T v, float alpha, float beta,
                                 float norm_coefficient, int32_t mode,
                                 T update) {
  AMPRT_DISPATCH(onnx_momentum, ctx, n, r, t, x, g, v, alpha, beta,
                 norm_coefficient, mode, update);
  return guard(ctx, "onnx_momentum", [&]() -> amprt_status {
    const char *k = "onnx_momentum";
    AMPRT_TRY(checkGroup(ctx, k, n, x, g, {{"v", v}}));
    AMPRT_TRY(checkScalar(ctx, k, "r", r, AMPRT_F32));
    AMPRT_TRY(checkScalar(ctx, k, "t", t, AMPRT_I64));
    AMPRT_TRY(checkScalar(ctx, k, "update", update, AMPRT_BOOL, true));
    if (mode != 0 && mode != 1)
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: mode %d (0 standard, 1 nesterov)", k, mode);
    if (!gate(update))
      return AMPRT_OK;
    float rate = *f32(r);
    float b = i64(t) > 0 ? beta : 1.f;
    forEachParameter(n, x, g,
                     [&](int64_t i, const float *gi, int64_t lo, int64_t hi) {
                       float *px = f32(&x[i]), *pv = f32(&v[i]);
                       for (int64_t j = lo; j < hi; ++j)
                         onnxMomentumStep(rate, alpha, b, norm_coefficient,
                                          mode, gi[j - lo], px[j], pv[j]);
                     });
    return AMPRT_OK;
  });
}

} // extern "C"
