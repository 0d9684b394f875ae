//===- MultiTensor.cpp - fused unscale + all-finite check -----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// One call over every gradient of a step: multiply by 1/scale and record
// whether any input holds NaN or Inf, into a bool tensor that stays on the
// device (the optimizers read it there). The check is on the inputs, before
// unscaling, as PyTorch's _amp_foreach_non_finite_check_and_unscale_ does.
//
// The lowering's form of the portable-ONNX loss-scaling graph
// (docs/Lowering.md) needs no unscaled copy of any gradient:
// multi_tensor_unscale_check tests the products g * (1/scale) as the graph
// does, and unscale_gate / unscale_gate_accumulate compute them again where
// the graph gates them (Where(all_finite, g * inv, 0)), into the gradient
// accumulator when that is the only reader.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "amp/Runtime/Math/Optimizer.h"
#include <atomic>

#include <cmath>
#include <cstring>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

/// True when every element of a float tensor is finite (bit test: the
/// exponent field is not all ones).
bool allFinite(T t) {
  int64_t n = numel(t);
  std::atomic<bool> bad{false};
  if (t->dtype == AMPRT_F32) {
    auto *p = static_cast<const uint32_t *>(t->data);
    parallelElements(n, 1, [&](int64_t lo, int64_t hi) {
      uint32_t b = 0;
      for (int64_t i = lo; i < hi; ++i)
        b |= uint32_t((p[i] & 0x7f800000u) == 0x7f800000u);
      if (b)
        bad = true;
    });
    return !bad;
  }
  auto *p = static_cast<const uint16_t *>(t->data);
  uint16_t mask = t->dtype == AMPRT_F16 ? 0x7c00u : 0x7f80u;
  parallelElements(n, 1, [&](int64_t lo, int64_t hi) {
    uint32_t b = 0;
    for (int64_t i = lo; i < hi; ++i)
      b |= uint32_t((p[i] & mask) == mask);
    if (b)
      bad = true;
  });
  return !bad;
}

amprt_status checkFlag(amprt_context *ctx, const char *k, const char *what, T t,
                       bool optional = false) {
  AMPRT_TRY(checkDtype(ctx, k, what, t, AMPRT_BOOL, optional));
  if (t)
    AMPRT_TRY(checkNumel(ctx, k, what, t, 1));
  return AMPRT_OK;
}

void writeFlag(T flag, bool finite, int32_t reset) {
  auto *p = static_cast<uint8_t *>(flag->data);
  *p = reset ? uint8_t(finite) : uint8_t(*p && finite);
}

/// Every product x[i] * s, in f32, is finite.
bool allProductsFinite(T t, float s) {
  F32In in(t);
  std::atomic<bool> bad{false};
  parallelElements(numel(t), 2, [&](int64_t lo, int64_t hi) {
    uint32_t b = 0;
    for (int64_t i = lo; i < hi; ++i)
      b |= uint32_t(nonFiniteF32(in.p[i] * s));
    if (b)
      bad = true;
  });
  return !bad;
}

amprt_status checkScalar(amprt_context *ctx, const char *k, const char *what,
                         T t) {
  AMPRT_TRY(checkFloat(ctx, k, what, t));
  return checkNumel(ctx, k, what, t, 1);
}

/// y = v or y = ow ? v : y + v with v = pass ? x * s : 0 (Math/Optimizer.h's
/// unscaleGateStep); updated (optional) set true.
void gateInto(T x, float s, bool pass, T y, bool ow, T updated) {
  F32In in(x);
  F32Out out(y, /*load=*/!ow);
  parallelElements(numel(y), 2, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      out.p[i] = unscaleGateStep(in.p[i], out.p[i], s, pass, ow);
  });
  out.commit();
  if (updated)
    *static_cast<uint8_t *>(updated->data) = 1;
}

/// unscale_gate and unscale_gate_accumulate.
amprt_status unscaleGate(amprt_context *ctx, const char *k, T x, T inv_scale,
                         T gate, T y, bool accumulate, T overwrite, T updated) {
  AMPRT_TRY(checkUnscaleGate(ctx, k, x, inv_scale, gate, y, accumulate,
                             overwrite, updated));
  bool ow = !accumulate || (overwrite && scalarOf(overwrite) != 0);
  gateInto(x, float(scalarOf(inv_scale)), scalarOf(gate) != 0, y, ow, updated);
  return AMPRT_OK;
}

} // namespace

amprt_status amprt::checkUnscaleCheck(amprt_context *ctx, T ins, int64_t n,
                                      T inv_scale, T all_finite) {
  const char *k = "multi_tensor_unscale_check";
  if (n < 0 || (n > 0 && !ins))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: ins missing for n = %lld",
                     k, (long long)n);
  AMPRT_TRY(checkScalar(ctx, k, "inv_scale", inv_scale));
  AMPRT_TRY(checkFlag(ctx, k, "all_finite", all_finite));
  for (int64_t i = 0; i < n; ++i)
    AMPRT_TRY(checkFloat(ctx, k, "ins[i]", &ins[i]));
  return AMPRT_OK;
}

amprt_status amprt::checkUnscaleGate(amprt_context *ctx, const char *k, T x,
                                     T inv_scale, T gate, T y, bool accumulate,
                                     T overwrite, T updated) {
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkScalar(ctx, k, "inv_scale", inv_scale));
  AMPRT_TRY(checkFlag(ctx, k, "gate", gate));
  const char *out = accumulate ? "buffer" : "y";
  AMPRT_TRY(checkFloat(ctx, k, out, y));
  if (accumulate) {
    AMPRT_TRY(checkNumel(ctx, k, "x", x, numel(y)));
    AMPRT_TRY(checkFlag(ctx, k, "overwrite", overwrite, true));
    AMPRT_TRY(checkFlag(ctx, k, "updated", updated, true));
  } else {
    AMPRT_TRY(checkShape(ctx, k, out, y, shapeOf(x)));
  }
  return AMPRT_OK;
}

amprt_status amprt::checkUnscaleCheckAccumulate(amprt_context *ctx, T buffer,
                                                T x, T inv_scale, T all_finite,
                                                T overwrite, T updated) {
  const char *k = "unscale_check_accumulate";
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  AMPRT_TRY(checkScalar(ctx, k, "inv_scale", inv_scale));
  AMPRT_TRY(checkFlag(ctx, k, "all_finite", all_finite));
  AMPRT_TRY(checkFloat(ctx, k, "buffer", buffer));
  AMPRT_TRY(checkNumel(ctx, k, "x", x, numel(buffer)));
  AMPRT_TRY(checkFlag(ctx, k, "overwrite", overwrite, true));
  return checkFlag(ctx, k, "updated", updated, true);
}

extern "C" {

amprt_status amprt_unscale_check_accumulate(amprt_context *ctx, T buffer, T x,
                                            T inv_scale, T all_finite,
                                            T overwrite, T updated) {
  AMPRT_DISPATCH(unscale_check_accumulate, ctx, buffer, x, inv_scale,
                 all_finite, overwrite, updated);
  return guard(ctx, "unscale_check_accumulate", [&]() -> amprt_status {
    AMPRT_TRY(checkUnscaleCheckAccumulate(ctx, buffer, x, inv_scale, all_finite,
                                          overwrite, updated));
    // multi_tensor_unscale_check's test, then unscale_gate_accumulate's
    // update with the gate open: the same products.
    float s = float(scalarOf(inv_scale));
    writeFlag(all_finite, allProductsFinite(x, s), /*reset=*/0);
    gateInto(x, s, true, buffer, overwrite && scalarOf(overwrite) != 0,
             updated);
    return AMPRT_OK;
  });
}

amprt_status amprt_multi_tensor_unscale(amprt_context *ctx, T ins, T outs,
                                        int64_t n, T inv_scale, T all_finite,
                                        int32_t reset) {
  AMPRT_DISPATCH(multi_tensor_unscale, ctx, ins, outs, n, inv_scale, all_finite,
                 reset);
  return guard(ctx, "multi_tensor_unscale", [&]() -> amprt_status {
    const char *k = "multi_tensor_unscale";
    if (n < 0 || (n > 0 && (!ins || !outs)))
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: ins/outs missing for n = %lld", k, (long long)n);
    AMPRT_TRY(checkFloat(ctx, k, "inv_scale", inv_scale));
    AMPRT_TRY(checkNumel(ctx, k, "inv_scale", inv_scale, 1));
    AMPRT_TRY(checkFlag(ctx, k, "all_finite", all_finite));
    for (int64_t i = 0; i < n; ++i) {
      AMPRT_TRY(checkFloat(ctx, k, "ins[i]", &ins[i]));
      AMPRT_TRY(checkFloat(ctx, k, "outs[i]", &outs[i]));
      if (shapeOf(&ins[i]) != shapeOf(&outs[i]))
        return ctx->fail(AMPRT_ERR_SHAPE,
                         "%s: ins[%lld] %s and outs[%lld] %s differ", k,
                         (long long)i, shapeStr(&ins[i]).c_str(), (long long)i,
                         shapeStr(&outs[i]).c_str());
    }
    float s = float(scalarOf(inv_scale));
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
      finite = allFinite(&ins[i]) && finite;
      F32In in(&ins[i]);
      F32Out out(&outs[i]);
      parallelElements(numel(&ins[i]), 1, [&](int64_t lo, int64_t hi) {
        for (int64_t j = lo; j < hi; ++j)
          out.p[j] = in.p[j] * s;
      });
      out.commit();
    }
    writeFlag(all_finite, finite, reset);
    return AMPRT_OK;
  });
}

amprt_status amprt_multi_tensor_unscale_check(amprt_context *ctx, T ins,
                                              int64_t n, T inv_scale,
                                              T all_finite, int32_t reset) {
  AMPRT_DISPATCH(multi_tensor_unscale_check, ctx, ins, n, inv_scale, all_finite,
                 reset);
  return guard(ctx, "multi_tensor_unscale_check", [&]() -> amprt_status {
    AMPRT_TRY(checkUnscaleCheck(ctx, ins, n, inv_scale, all_finite));
    float s = float(scalarOf(inv_scale));
    bool finite = true;
    for (int64_t i = 0; i < n; ++i)
      finite = allProductsFinite(&ins[i], s) && finite;
    writeFlag(all_finite, finite, reset);
    return AMPRT_OK;
  });
}

amprt_status amprt_unscale_gate(amprt_context *ctx, T x, T inv_scale, T gate,
                                T y) {
  AMPRT_DISPATCH(unscale_gate, ctx, x, inv_scale, gate, y);
  return guard(ctx, "unscale_gate", [&] {
    return unscaleGate(ctx, "unscale_gate", x, inv_scale, gate, y, false,
                       nullptr, nullptr);
  });
}

amprt_status amprt_unscale_gate_accumulate(amprt_context *ctx, T buffer, T x,
                                           T inv_scale, T gate, T overwrite,
                                           T updated) {
  AMPRT_DISPATCH(unscale_gate_accumulate, ctx, buffer, x, inv_scale, gate,
                 overwrite, updated);
  return guard(ctx, "unscale_gate_accumulate", [&] {
    return unscaleGate(ctx, "unscale_gate_accumulate", x, inv_scale, gate,
                       buffer, true, overwrite, updated);
  });
}

amprt_status amprt_multi_tensor_all_finite(amprt_context *ctx, T ins, int64_t n,
                                           T all_finite, int32_t reset) {
  AMPRT_DISPATCH(multi_tensor_all_finite, ctx, ins, n, all_finite, reset);
  return guard(ctx, "multi_tensor_all_finite", [&]() -> amprt_status {
    const char *k = "multi_tensor_all_finite";
    if (n < 0 || (n > 0 && !ins))
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: ins missing for n = %lld", k, (long long)n);
    AMPRT_TRY(checkFlag(ctx, k, "all_finite", all_finite));
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
      AMPRT_TRY(checkFloat(ctx, k, "ins[i]", &ins[i]));
      finite = allFinite(&ins[i]) && finite;
    }
    writeFlag(all_finite, finite, reset);
    return AMPRT_OK;
  });
}

amprt_status amprt_multi_tensor_zero_unless(amprt_context *ctx, T ins,
                                            int64_t n, T keep) {
  AMPRT_DISPATCH(multi_tensor_zero_unless, ctx, ins, n, keep);
  return guard(ctx, "multi_tensor_zero_unless", [&]() -> amprt_status {
    const char *k = "multi_tensor_zero_unless";
    if (n < 0 || (n > 0 && !ins))
      return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                       "%s: ins missing for n = %lld", k, (long long)n);
    AMPRT_TRY(checkFlag(ctx, k, "keep", keep));
    for (int64_t i = 0; i < n; ++i)
      AMPRT_TRY(checkTensor(ctx, k, "ins[i]", &ins[i]));
    if (*static_cast<const uint8_t *>(keep->data))
      return AMPRT_OK;
    for (int64_t i = 0; i < n; ++i)
      std::memset(ins[i].data, 0,
                  size_t(numel(&ins[i])) * amprt_dtype_size(ins[i].dtype));
    return AMPRT_OK;
  });
}

} // extern "C"
