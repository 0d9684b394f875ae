//===- Internal.h - shared helpers of the runtime's CPU backend -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Runtime: the context and backend structs, error reporting,
// descriptor checks, f16/bf16 conversion, f32 views of float tensors and a
// broadcasting walker. Nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_INTERNAL_H
#define AMP_LIB_RUNTIME_INTERNAL_H

#include "ElementAccess.h"
#include "amp/Runtime/Kernels.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

namespace amprt {

/// One pointer per Ops.def entry. A backend that implements a kernel sets
/// its entry; a NULL entry means "the CPU implementation".
struct KernelTable {
#define AMPRT_KERNEL(name, kind, params) amprt_status(*name) params;
#include "amp/Runtime/Ops.def"
};

/// A backend: its memory functions and its kernel overrides. Every function
/// gets the context, whose `state` holds what the backend set up in `open`
/// (a stream, library handles). `open` and `close` may be NULL.
struct Backend {
  const char *name;
  void *(*alloc)(amprt_context *ctx, size_t bytes);
  void (*release)(amprt_context *ctx, void *ptr);
  amprt_status (*copy)(amprt_context *ctx, void *dst, const void *src,
                       size_t bytes, int32_t kind);
  amprt_status (*set)(amprt_context *ctx, void *dst, int value, size_t bytes);
  /// Waits for the queued work; on failure records a message in ctx.
  amprt_status (*sync)(amprt_context *ctx);
  const KernelTable *kernels;
  amprt_status (*open)(amprt_context *ctx);
  void (*close)(amprt_context *ctx);
};

const Backend *cpuBackend();

/// The CUDA backend (kernels/Backend.cu), only in builds with CUDA
/// (AMPRT_HAVE_CUDA): NULL with the reason in `why` when no device answers.
const Backend *cudaBackend(std::string &why);

} // namespace amprt

namespace amprt {
struct Profile;
} // namespace amprt

struct amprt_context {
  const amprt::Backend *backend = nullptr;
  /// Backend-owned per-context state (NULL for the CPU).
  void *state = nullptr;
  std::string error;
  /// AMPRT_PROFILE=1 on a device context (Profile.cpp), else NULL.
  amprt::Profile *profile = nullptr;
  /// amprt_set_random_offset: moves every random kernel's stream.
  uint64_t randomOffset = 0;
  /// Records a failure and returns its status.
  amprt_status fail(amprt_status status, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
};

namespace amprt {

/// Runs a kernel body: checks ctx, clears the error, turns exceptions into
/// statuses (the runtime is built with exceptions so allocation failures are
/// reported, never fatal).
template <typename F>
amprt_status guard(amprt_context *ctx, const char *kernel, F &&body) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY, "%s: out of memory", kernel);
  } catch (...) {
    return ctx->fail(AMPRT_ERR_INTERNAL, "%s: internal error", kernel);
  }
}

/// Per-kernel profile of a device context, switched on by the environment
/// variable AMPRT_PROFILE (not "0"): every kernel call is timed between two
/// waits for the device, calls that ran (partly) on the host are counted,
/// and the table goes to stderr when the context is destroyed
/// (AMPRT_PROFILE_SKIP=N leaves out the first N calls). Serializes the
/// device: for finding slow or host-bound kernels, not for timings.
Profile *profileCreate(const Backend *b);
void profileDestroy(amprt_context *ctx);
void profileHostCall(amprt_context *ctx);
amprt_status profileCall(amprt_context *ctx, const char *kernel,
                         amprt_status (*call)(void *), void *arg);
template <typename F>
amprt_status profiled(amprt_context *ctx, const char *kernel, F &f) {
  return profileCall(
      ctx, kernel, [](void *p) { return (*static_cast<F *>(p))(); }, &f);
}

/// Runs `cpuCall` (a public amprt_ kernel) on the CPU for a context of
/// another backend: waits for the device first (its memory is managed, so
/// the host may touch it once the queued work is done) and binds the CPU
/// backend for the duration, so kernels the CPU code calls stay on the CPU.
/// The one place where a device context falls back to the host.
template <typename F> amprt_status onHost(amprt_context *ctx, F &&cpuCall) {
  const Backend *b = ctx->backend;
  ctx->error.clear();
  if (ctx->profile)
    profileHostCall(ctx);
  amprt_status st = b->sync(ctx);
  if (st != AMPRT_OK)
    return st;
  ctx->backend = cpuBackend();
  st = cpuCall();
  ctx->backend = b;
  return st;
}

/// Forwards to the context backend's own kernel when it has one; a kernel
/// it does not override runs the CPU code through onHost.
#define AMPRT_DISPATCH(name, ctx, ...)                                         \
  do {                                                                         \
    if ((ctx) && (ctx)->backend && (ctx)->backend != amprt::cpuBackend()) {    \
      auto amprt_run_ = [&]() -> amprt_status {                                \
        if ((ctx)->backend->kernels && (ctx)->backend->kernels->name)          \
          return (ctx)->backend->kernels->name((ctx), __VA_ARGS__);            \
        return amprt::onHost(                                                  \
            (ctx), [&] { return amprt_##name((ctx), __VA_ARGS__); });          \
      };                                                                       \
      return (ctx)->profile ? amprt::profiled((ctx), #name, amprt_run_)        \
                            : amprt_run_();                                    \
    }                                                                          \
  } while (0)

#define AMPRT_TRY(expr)                                                        \
  do {                                                                         \
    amprt_status amprt_try_status_ = (expr);                                   \
    if (amprt_try_status_ != AMPRT_OK)                                         \
      return amprt_try_status_;                                                \
  } while (0)

using Shape = std::vector<int64_t>;

inline bool isLowOrF32(int32_t dt) {
  return dt == AMPRT_F32 || dt == AMPRT_F16 || dt == AMPRT_BF16;
}
inline bool isInteger(int32_t dt) {
  return dt == AMPRT_I64 || dt == AMPRT_I32 || dt == AMPRT_I8 || dt == AMPRT_U8;
}

inline Shape shapeOf(const amprt_tensor *t) {
  return Shape(t->shape, t->shape + t->rank);
}
int64_t numel(const amprt_tensor *t);
int64_t numel(const Shape &s);
std::string shapeStr(const Shape &s);
inline std::string shapeStr(const amprt_tensor *t) {
  return shapeStr(shapeOf(t));
}

/// Checks a descriptor: non-null (unless optional and null), valid dtype,
/// rank in range, non-negative dims, data present when numel > 0.
amprt_status checkTensor(amprt_context *ctx, const char *kernel,
                         const char *what, const amprt_tensor *t,
                         bool optional = false);
/// checkTensor + dtype in {f32, f16, bf16}.
amprt_status checkFloat(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t,
                        bool optional = false);
/// checkTensor + dtype == dt.
amprt_status checkDtype(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t, int32_t dt,
                        bool optional = false);
amprt_status checkShape(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t,
                        const Shape &expected);
amprt_status checkNumel(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t,
                        int64_t expected);
/// Pad's output shape from x's and `pads`, checking the mode and that a
/// dim padded by reflect/edge/wrap is not empty.
amprt_status padShape(amprt_context *ctx, const char *kernel,
                      const amprt_tensor *x, const int64_t *pads, int64_t npads,
                      int32_t mode, Shape &out);

/// The index of x that output index s - begin (here `s`) of a padded dim of
/// length n reads: s itself inside [0, n); else -1 (constant mode, the pad
/// value), the mirrored index (reflect), the nearest (edge) or s mod n
/// (wrap). n > 0 unless the mode is constant.
AMPRT_HD inline int64_t padIndex(int64_t s, int64_t n, int32_t mode) {
  if (s >= 0 && s < n)
    return s;
  switch (mode) {
  case 0:
    return -1;
  case 2:
    return s < 0 ? 0 : n - 1;
  case 3:
    return ((s % n) + n) % n;
  default: {
    if (n == 1)
      return 0;
    int64_t p = 2 * (n - 1), r = ((s % p) + p) % p;
    return r < n ? r : p - r;
  }
  }
}

struct ResizeModes;
/// resize / resize_grad: the shapes (x's and y's rank equal, an empty x
/// only for an empty y), the dtypes, scales (f32, one per dim) and modes.
amprt_status checkResize(amprt_context *ctx, const char *kernel,
                         const amprt_tensor *x, const amprt_tensor *scales,
                         const ResizeModes &modes, const amprt_tensor *y);

/// Resize's interpolation on one axis: modes 0 nearest, 1 linear, 2 cubic;
/// cubic's coefficient a and exclude_outside.
struct ResizeModes {
  int32_t mode, coordMode, nearestMode;
  float cubicA;
  int32_t excludeOutside;
};

/// The elements of x that output index o of a resized axis reads (nIn ->
/// nOut elements, `scale`) and their weights: nearest one; linear its two
/// neighbours (one when the weight of the second is 0); cubic the four
/// around the coordinate c (i0 - 1 .. i0 + 2 with i0 = ceil(c) - 1, ONNX's
/// Keys kernel with coefficient a), an index outside x reading the edge
/// element, or, with exclude_outside, weighing 0 with the others
/// renormalized. Nearest and linear clamp c into x, cubic does not (as
/// onnx.reference and PyTorch). A NaN coordinate (a NaN scale) reads
/// element 0.
struct ResizeTaps {
  int64_t i[4];
  float w[4];
  int n;
};
AMPRT_HD inline ResizeTaps resizeTaps(int64_t o, int64_t nIn, int64_t nOut,
                                      double scale, const ResizeModes &m) {
  double c, oc = double(o) + 0.5;
  switch (m.coordMode) {
  case 1: // asymmetric
    c = double(o) / scale;
    break;
  case 2: // align_corners
    c = nOut == 1 ? 0.0 : double(o) * double(nIn - 1) / double(nOut - 1);
    break;
  case 3: // pytorch_half_pixel
    c = nOut > 1 ? oc / scale - 0.5 : 0.0;
    break;
  case 4: // tf_half_pixel_for_nn
    c = oc / scale;
    break;
  case 5: { // half_pixel_symmetric
    double adjust = double(nOut) / (scale * double(nIn));
    c = double(nIn) * 0.5 * (1.0 - adjust) + oc / scale - 0.5;
    break;
  }
  default: // half_pixel
    c = oc / scale - 0.5;
  }
  double hi = double(nIn - 1);
  if (!(c == c))
    c = 0.0;
  ResizeTaps t = {};
  if (m.mode == 0) {
    double r = m.nearestMode == 0   ? ::ceil(c - 0.5)
               : m.nearestMode == 1 ? ::floor(c + 0.5)
               : m.nearestMode == 2 ? ::floor(c)
                                    : ::ceil(c);
    r = r < 0.0 ? 0.0 : r > hi ? hi : r;
    t.i[0] = int64_t(r);
    t.w[0] = 1.f;
    t.n = 1;
    return t;
  }
  if (m.mode == 1) {
    c = c < 0.0 ? 0.0 : c > hi ? hi : c;
    int64_t i0 = int64_t(::floor(c));
    float w = float(c - double(i0));
    t.i[0] = i0;
    t.w[0] = 1.f;
    t.n = 1;
    if (w != 0.f && i0 + 1 < nIn) {
      t.i[1] = i0 + 1;
      t.w[0] = 1.f - w;
      t.w[1] = w;
      t.n = 2;
    }
    return t;
  }
  // Cubic: the distances of the four taps from c are 1 + r, r, 1 - r,
  // 2 - r with r = c - i0 in (0, 1]. Beyond 2^52, c - i0 would round.
  double lim = 4503599627370496.0;
  c = c < -lim ? -lim : c > lim ? lim : c;
  int64_t i0 = int64_t(::ceil(c)) - 1;
  double r = c - double(i0), a = double(m.cubicA), sum = 0.0, wd[4];
  double d[4] = {1.0 + r, r, 1.0 - r, 2.0 - r};
  for (int k = 0; k < 4; ++k) {
    double x = d[k];
    wd[k] = x <= 1.0 ? ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
                     : ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    int64_t idx = i0 - 1 + k;
    bool outside = idx < 0 || idx >= nIn;
    if (outside && m.excludeOutside)
      wd[k] = 0.0;
    sum += wd[k];
    t.i[k] = idx < 0 ? 0 : idx >= nIn ? nIn - 1 : idx;
  }
  // Taps of weight 0 (all but one at an integer c, so an axis that is not
  // resized reads one element) are left out: 0 * Inf is not added.
  int64_t idx[4] = {t.i[0], t.i[1], t.i[2], t.i[3]};
  for (int k = 0; k < 4; ++k) {
    float w = float(m.excludeOutside && sum != 0.0 ? wd[k] / sum : wd[k]);
    if (w != 0.f) {
      t.i[t.n] = idx[k];
      t.w[t.n++] = w;
    }
  }
  if (t.n == 0) { // every tap excluded: nothing can be read
    t.i[0] = idx[1];
    t.w[0] = 0.f;
    t.n = 1;
  }
  return t;
}

/// Calls f(offset, weight) for each element of x that output element o of
/// resize reads (at most 4^k for k resized axes, their weights multiplied in
/// f32, the last axis' first). xs: x's element strides; yd: y's dims; xd: x's
/// dims.
template <typename F>
AMPRT_HD inline void forEachResizeTap(int64_t o, int32_t rank,
                                      const int64_t *xd, const int64_t *xs,
                                      const int64_t *yd, const float *scales,
                                      const ResizeModes &modes, F &&f) {
  int64_t base = 0, step[AMPRT_MAX_RANK][4];
  float w[AMPRT_MAX_RANK][4];
  int n[AMPRT_MAX_RANK], sel[AMPRT_MAX_RANK];
  int k = 0; // axes with more than one tap
  for (int32_t d = rank - 1; d >= 0; --d) {
    ResizeTaps t =
        resizeTaps(o % yd[d], xd[d], yd[d], double(scales[d]), modes);
    o /= yd[d];
    base += t.i[0] * xs[d];
    if (t.n == 1)
      continue;
    for (int j = 0; j < t.n; ++j) {
      step[k][j] = (t.i[j] - t.i[0]) * xs[d];
      w[k][j] = t.w[j];
    }
    n[k] = t.n;
    sel[k++] = 0;
  }
  for (;;) {
    int64_t off = base;
    float wt = 1.f;
    for (int j = 0; j < k; ++j) {
      off += step[j][sel[j]];
      wt *= w[j][sel[j]];
    }
    f(off, wt);
    int j = 0; // the next combination, axis 0 of the list fastest
    while (j < k && ++sel[j] == n[j])
      sel[j++] = 0;
    if (j == k)
      break;
  }
}

/// random_fill's arguments: y of a dtype it draws (f32/f16/bf16/f64,
/// i64/i32 with classes >= 1, bool).
amprt_status checkRandomFill(amprt_context *ctx, const char *kernel,
                             const amprt_tensor *y, int64_t classes);
/// The generators' arguments (Random.cpp): y a float tensor (bernoulli's
/// also integer or bool, of p's shape), a finite range / mean and scale.
amprt_status checkRandomUniform(amprt_context *ctx, const amprt_tensor *y,
                                double low, double high);
amprt_status checkRandomNormal(amprt_context *ctx, const amprt_tensor *y,
                               double mean, double scale);
/// Everything but p's values (each must lie in [0, 1]).
amprt_status checkBernoulli(amprt_context *ctx, const amprt_tensor *p,
                            const amprt_tensor *y);
/// x as (outer, len, inner) around `axis` (normalized into `a`): element
/// (o, i, j) at (o * len + i) * inner + j.
amprt_status splitAtAxis(amprt_context *ctx, const char *kernel,
                         const amprt_tensor *x, int64_t axis, int64_t &a,
                         int64_t &outer, int64_t &len, int64_t &inner);
/// Normalizes a possibly negative axis into [0, rank).
amprt_status normAxis(amprt_context *ctx, const char *kernel, int64_t axis,
                      int64_t rank, int64_t &out);

// Element conversions, loads and stores: ElementAccess.h (shared with the
// CUDA kernels).

/// Bulk conversions (Convert.cpp).
void toF32(const void *src, int32_t dt, float *dst, int64_t n);
void fromF32(const float *src, void *dst, int32_t dt, int64_t n);

/// An f32 view of a float tensor: the data itself for f32, else a widened
/// copy.
struct F32In {
  const float *p = nullptr;
  std::vector<float> buf;
  explicit F32In(const amprt_tensor *t) {
    if (!t)
      return;
    int64_t n = numel(t);
    if (t->dtype == AMPRT_F32) {
      p = static_cast<const float *>(t->data);
      return;
    }
    buf.resize(size_t(n));
    toF32(t->data, t->dtype, buf.data(), n);
    p = buf.data();
  }
};

/// An f32 destination for a float tensor: writes go to the tensor for f32,
/// else to a buffer rounded once into the tensor by commit(). With
/// `load`, the buffer starts with the tensor's values (in-place updates).
struct F32Out {
  float *p = nullptr;
  std::vector<float> buf;
  const amprt_tensor *t = nullptr;
  explicit F32Out(const amprt_tensor *t, bool load = false) : t(t) {
    if (!t)
      return;
    int64_t n = numel(t);
    if (t->dtype == AMPRT_F32) {
      p = static_cast<float *>(t->data);
      return;
    }
    buf.resize(size_t(n));
    if (load)
      toF32(t->data, t->dtype, buf.data(), n);
    p = buf.data();
  }
  void commit() {
    if (t && t->dtype != AMPRT_F32)
      fromF32(buf.data(), t->data, t->dtype, numel(t));
  }
};

/// Numpy broadcasting of `shapes` into one shape; false if incompatible.
bool broadcastShapes(const std::vector<Shape> &shapes, Shape &out);

/// Strides (in elements) of `in` seen through the broadcast to `out`
/// (0 on broadcast dims), aligned to out's rank.
Shape broadcastStrides(const Shape &in, const Shape &out);

/// Row-major element strides of a shape.
Shape stridesOf(const Shape &s);

/// Transpose: y's shape `so` and, per y dim, the element stride into x
/// (perm NULL reverses the dims). Fails on a bad permutation.
amprt_status transposeGeometry(amprt_context *ctx, const char *k,
                               const amprt_tensor *x, const int64_t *perm,
                               int64_t nperm, Shape &so, Shape &st);

/// ONNX Slice against shape sx: the sliced shape `so`, the element strides
/// of its dims in sx (step included) and the offset of its first element.
amprt_status sliceGeometry(amprt_context *ctx, const char *k, const Shape &sx,
                           const int64_t *starts, const int64_t *ends,
                           const int64_t *axes, const int64_t *steps, int64_t n,
                           Shape &so, Shape &st, int64_t &base);
/// Concat's checks: the axis (normalized into `a`) and y's shape `so`.
amprt_status concatShape(amprt_context *ctx, const char *k,
                         const amprt_tensor *inputs, int64_t n, int64_t axis,
                         const amprt_tensor *y, int64_t &a, Shape &so);
/// Dropout's optional scalars: ratio a one-element float, training a
/// one-element bool.
amprt_status checkDropoutScalars(amprt_context *ctx, const char *k,
                                 const amprt_tensor *ratio,
                                 const amprt_tensor *training);
/// Their values (NULL: absent, so ratio 0.5 and training false) into the
/// ratio, checked to lie in [0, 1), and the training flag.
amprt_status dropoutValues(amprt_context *ctx, const char *k,
                           const double *ratio, const double *training,
                           float &r, bool &train);

/// Gather: index dtype i64 or i32.
amprt_status checkIndices(amprt_context *ctx, const char *k,
                          const amprt_tensor *idx);
/// Index i of an i64 / i32 tensor.
int64_t indexAt(const amprt_tensor *idx, int64_t i);
/// Gather geometry for data shape `sd`: outer (dims before the axis), len
/// (the axis), inner (dims after) and the output shape; with `values`, also
/// reads the indices (host memory) and fails on one outside [-len, len).
amprt_status gatherShape(amprt_context *ctx, const char *k, const Shape &sd,
                         const amprt_tensor *idx, int64_t axis, int64_t &a,
                         int64_t &outer, int64_t &len, int64_t &inner,
                         Shape &so, bool values = true);

/// The argument checks of the normalization and pooling kernels
/// (Normalization.cpp, Pool.cpp), shared with the CUDA backend. They return
/// the geometry: BatchNorm's x as [N, C, S], LayerNorm's as [outer, inner],
/// MaxPool's window and output shape.
amprt_status checkBatchNormTraining(
    amprt_context *ctx, const amprt_tensor *x, const amprt_tensor *scale,
    const amprt_tensor *bias, const amprt_tensor *running_mean,
    const amprt_tensor *running_var, const amprt_tensor *y,
    const amprt_tensor *running_mean_out, const amprt_tensor *running_var_out,
    const amprt_tensor *saved_mean, const amprt_tensor *saved_inv_std,
    int64_t &N, int64_t &C, int64_t &S);
amprt_status
checkBatchNormGrad(amprt_context *ctx, const amprt_tensor *dy,
                   const amprt_tensor *x, const amprt_tensor *scale,
                   const amprt_tensor *saved_mean,
                   const amprt_tensor *saved_inv_std, const amprt_tensor *dx,
                   const amprt_tensor *dscale, const amprt_tensor *dbias,
                   int64_t &N, int64_t &C, int64_t &S);
amprt_status checkLayerNorm(amprt_context *ctx, const amprt_tensor *x,
                            const amprt_tensor *scale, const amprt_tensor *bias,
                            int64_t axis, const amprt_tensor *y,
                            const amprt_tensor *mean,
                            const amprt_tensor *inv_std, int64_t &outer,
                            int64_t &inner);
amprt_status
checkLayerNormGrad(amprt_context *ctx, const amprt_tensor *dy,
                   const amprt_tensor *x, const amprt_tensor *scale,
                   const amprt_tensor *mean, const amprt_tensor *inv_std,
                   int64_t axis, const amprt_tensor *dx,
                   const amprt_tensor *dscale, const amprt_tensor *dbias,
                   int64_t &outer, int64_t &inner);
struct Window;
amprt_status checkMaxPool(amprt_context *ctx, const amprt_tensor *x,
                          const amprt_tensor *y, const amprt_tensor *indices,
                          const amprt_window *win, Window &g, Shape &so);
/// Everything but the index values (checked while scattering).
amprt_status checkMaxPoolGrad(amprt_context *ctx, const amprt_tensor *dy,
                              const amprt_tensor *indices,
                              const amprt_tensor *dx);

/// average_pool (grad false: x, y) and average_pool_grad (grad true: x is
/// dx, y is dy): dtypes, the window, y's shape.
amprt_status checkAveragePool(amprt_context *ctx, bool grad,
                              const amprt_tensor *x, const amprt_tensor *y,
                              const amprt_window *win, Window &g);
/// global_average_pool(_grad) likewise: x of rank >= 3 as [N * C = NC, S],
/// y of shape [N, C, 1, ...].
amprt_status checkGlobalPool(amprt_context *ctx, bool grad,
                             const amprt_tensor *x, const amprt_tensor *y,
                             int64_t &NC, int64_t &S);
/// rms_norm's and rms_norm_grad's arguments (Normalization.cpp); x as
/// [outer, inner].
amprt_status checkRmsNorm(amprt_context *ctx, const amprt_tensor *x,
                          const amprt_tensor *scale, int64_t axis,
                          const amprt_tensor *y, const amprt_tensor *inv_std,
                          int64_t &outer, int64_t &inner);
amprt_status checkRmsNormGrad(amprt_context *ctx, const amprt_tensor *dy,
                              const amprt_tensor *x, const amprt_tensor *scale,
                              const amprt_tensor *inv_std, int64_t axis,
                              const amprt_tensor *dx,
                              const amprt_tensor *dscale, int64_t &outer,
                              int64_t &inner);

/// The arguments of multi_tensor_unscale_check (MultiTensor.cpp).
amprt_status checkUnscaleCheck(amprt_context *ctx, const amprt_tensor *ins,
                               int64_t n, const amprt_tensor *inv_scale,
                               const amprt_tensor *all_finite);
/// The arguments of unscale_gate (`accumulate` false; `y` the output) and
/// unscale_gate_accumulate (`y` the buffer updated in place).
amprt_status checkUnscaleGate(amprt_context *ctx, const char *k,
                              const amprt_tensor *x,
                              const amprt_tensor *inv_scale,
                              const amprt_tensor *gate, const amprt_tensor *y,
                              bool accumulate, const amprt_tensor *overwrite,
                              const amprt_tensor *updated);

/// Calls f(outIndex, off[0..k)) for every element of `out`, where off[j] is
/// the element offset into input j under broadcasting.
template <int K, typename F>
void forEachBroadcast(const Shape &out, const Shape (&strides)[K], F &&f) {
  int64_t rank = int64_t(out.size());
  int64_t n = numel(out);
  if (n == 0)
    return;
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t off[K] = {};
  int64_t inner = rank ? out[size_t(rank - 1)] : 1;
  int64_t istr[K];
  for (int j = 0; j < K; ++j)
    istr[j] = rank ? strides[j][size_t(rank - 1)] : 0;
  for (int64_t o = 0; o < n; o += inner) {
    int64_t cur[K];
    for (int j = 0; j < K; ++j)
      cur[j] = off[j];
    for (int64_t i = 0; i < inner; ++i) {
      f(o + i, cur);
      for (int j = 0; j < K; ++j)
        cur[j] += istr[j];
    }
    // Advance the outer index (all dims but the last).
    for (int64_t d = rank - 2; d >= 0; --d) {
      ++idx[size_t(d)];
      for (int j = 0; j < K; ++j)
        off[j] += strides[j][size_t(d)];
      if (idx[size_t(d)] < out[size_t(d)])
        break;
      for (int j = 0; j < K; ++j)
        off[j] -= strides[j][size_t(d)] * out[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
}

/// C[M,N] = alpha * A[M,K] B[K,N] + (accumulate ? C : 0), all f32
/// row-major with leading dimensions lda, ldb, ldc; f32 accumulation
/// (Gemm.cpp). Large products use two threads.
void sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
           int64_t lda, const float *B, int64_t ldb, bool accumulate, float *C,
           int64_t ldc);
/// dst[c, r] = src[r, c] for an R x C row-major src.
void transpose2d(const float *src, int64_t R, int64_t C, float *dst);

/// Runs f(begin, end) over [0, n) on up to two threads when `work` (a rough
/// flop count) makes it worth it.
void parallelFor(int64_t n, double work,
                 const std::function<void(int64_t, int64_t)> &f);

/// Window geometry of Conv and the pools: 3-D, where 2-D windows have D =
/// 1 and 1-D ones D = H = 1.
struct Window {
  int64_t N = 0, C = 0, D = 1, H = 0, W = 0; // input
  int64_t kd = 1, kh = 1, kw = 1;            // kernel
  int64_t sd = 1, sh = 1, sw = 1;            // strides
  int64_t pf = 0, pt = 0, pl = 0;            // begin pads
  int64_t pk = 0, pb = 0, pr = 0;            // end pads
  int64_t dd = 1, dh = 1, dw = 1;            // dilations
  int64_t Do = 1, Ho = 0, Wo = 0;            // output
  /// Elements of one (n, c) plane of the input and of the output; taps of
  /// one channel of the kernel.
  AMPRT_HD int64_t inPlane() const { return D * H * W; }
  AMPRT_HD int64_t outPlane() const { return Do * Ho * Wo; }
  AMPRT_HD int64_t taps() const { return kd * kh * kw; }
};

/// Calls fn((d * H + h) * W + w) for each element of the window at output
/// (od, oh, ow) that lies inside the input, in kernel order: the one
/// traversal of the pooling kernels, on the host (Pool.cpp) and on the
/// device (Pool.cu).
template <typename F>
AMPRT_HD inline void forEachTap(const Window &g, int64_t od, int64_t oh,
                                int64_t ow, F &&fn) {
  for (int64_t a = 0; a < g.kd; ++a) {
    int64_t d = od * g.sd - g.pf + a * g.dd;
    if (d < 0 || d >= g.D)
      continue;
    for (int64_t i = 0; i < g.kh; ++i) {
      int64_t h = oh * g.sh - g.pt + i * g.dh;
      if (h < 0 || h >= g.H)
        continue;
      for (int64_t j = 0; j < g.kw; ++j) {
        int64_t w = ow * g.sw - g.pl + j * g.dw;
        if (w >= 0 && w < g.W)
          fn((d * g.H + h) * g.W + w);
      }
    }
  }
}

/// Positions of one window dim that count in an average: those inside the
/// input, or inside the padded input with count_include_pad.
AMPRT_HD inline int64_t countDim(int64_t start, int64_t k, int64_t dil,
                                 int64_t n, int64_t padBegin, int64_t padEnd,
                                 bool includePad) {
  int64_t lo = includePad ? -padBegin : 0, hi = includePad ? n + padEnd : n;
  int64_t c = 0;
  for (int64_t i = 0; i < k; ++i) {
    int64_t p = start + i * dil;
    c += p >= lo && p < hi;
  }
  return c;
}

/// Number of window positions averaged at (od, oh, ow) (Pool.cpp, Pool.cu).
AMPRT_HD inline int64_t avgCount(const Window &g, int64_t od, int64_t oh,
                                 int64_t ow, bool includePad) {
  return countDim(od * g.sd - g.pf, g.kd, g.dd, g.D, g.pf, g.pk, includePad) *
         countDim(oh * g.sh - g.pt, g.kh, g.dh, g.H, g.pt, g.pb, includePad) *
         countDim(ow * g.sw - g.pl, g.kw, g.dw, g.W, g.pl, g.pr, includePad);
}

/// x's (or y's) shape for a window of spatial rank sr: N, channels, then
/// the last sr of (Do, Ho, Wo).
inline Shape windowShape(const Window &g, int32_t sr, int64_t channels) {
  Shape s = {g.N, channels};
  int64_t o[3] = {g.Do, g.Ho, g.Wo};
  s.insert(s.end(), o + 3 - sr, o + 3);
  return s;
}
/// Fills `g` from x's shape, a kernel shape (kernel dims of `win` when
/// non-zero must agree with `kernel`) and `win`; ceil selects ceil mode.
amprt_status makeWindow(amprt_context *ctx, const char *k,
                        const amprt_tensor *x, const int64_t *kernel,
                        const amprt_window *win, Window &g);

//===----------------------------------------------------------------------===//
// Selection along an axis (Select.cpp, Reduce.cpp; kernels/Select.cu)
//===----------------------------------------------------------------------===//

/// arg_max / arg_min / top_k ranking: a before b when larger (smaller);
/// NaN before any number. Integers compare exactly.
AMPRT_HD inline bool ranksBefore(float a, float b, bool largest) {
  bool na = a != a, nb = b != b;
  if (na || nb)
    return na && !nb;
  return largest ? a > b : a < b;
}
AMPRT_HD inline bool ranksBefore(int64_t a, int64_t b, bool largest) {
  return largest ? a > b : a < b;
}
AMPRT_HD inline bool ranksEqual(float a, float b) {
  return a == b || (a != a && b != b);
}
AMPRT_HD inline bool ranksEqual(int64_t a, int64_t b) { return a == b; }

/// The position along a line (elements at(base + i * inner), i < len) of
/// its first extreme element, or with `last` of its last one.
template <typename At>
AMPRT_HD inline int64_t argOfLine(int64_t base, int64_t len, int64_t inner,
                                  bool largest, bool last, At &&at) {
  int64_t best = 0;
  auto b = at(base);
  for (int64_t i = 1; i < len; ++i) {
    auto v = at(base + i * inner);
    if (ranksBefore(v, b, largest) || (last && ranksEqual(v, b))) {
      best = i;
      b = v;
    }
  }
  return best;
}

/// top_k's total order: element (u, position a) before (v, b) when u ranks
/// before v, ties by position.
AMPRT_HD inline bool topKBefore(float u, int64_t a, float v, int64_t b,
                                bool largest) {
  if (ranksBefore(u, v, largest))
    return true;
  return !ranksBefore(v, u, largest) && a < b;
}
/// top_k: x float, k within the axis (normalized in place), values (x's
/// dtype) and indices (i64) of x's shape with the axis k long.
amprt_status checkTopK(amprt_context *ctx, const amprt_tensor *x, int64_t k,
                       int64_t &axis, const amprt_tensor *values,
                       const amprt_tensor *indices, int64_t &outer,
                       int64_t &len, int64_t &inner);

/// arg_max / arg_min: x float, integer or bool, y i64 of x's shape with the
/// axis kept as 1 or dropped, a non-empty axis; x as (outer, len, inner).
amprt_status checkArgExtreme(amprt_context *ctx, const char *k,
                             const amprt_tensor *x, int64_t axis,
                             int32_t keepdims, const amprt_tensor *y,
                             int64_t &outer, int64_t &len, int64_t &inner);

/// GatherElements' geometry checks (not the index values): indices of
/// data's rank and within its dims off the axis, y of the indices' shape.
/// `axis` is normalized in place.
amprt_status checkGatherElementsShape(amprt_context *ctx, const char *k,
                                      const amprt_tensor *data,
                                      const amprt_tensor *indices,
                                      int64_t &axis, const amprt_tensor *y);
/// Where GatherElements reads: the indices' dims, data's strides.
struct ElementsMap {
  int32_t rank, axis;
  int64_t len; // data's extent along the axis
  int64_t ishape[AMPRT_MAX_RANK], dstride[AMPRT_MAX_RANK];
};
ElementsMap elementsMap(const amprt_tensor *data, const amprt_tensor *indices,
                        int64_t axis);
/// The offset in data of element i of the indices, whose value is idx (in
/// [-len, len)).
AMPRT_HD inline int64_t gatheredOffset(const ElementsMap &m, int64_t i,
                                       int64_t idx) {
  int64_t off = 0;
  for (int32_t d = m.rank - 1; d >= 0; --d) {
    int64_t c = i % m.ishape[d];
    i /= m.ishape[d];
    if (d == m.axis)
      c = idx < 0 ? idx + m.len : idx;
    off += c * m.dstride[d];
  }
  return off;
}

/// Trilu: x of rank >= 2 (rows x cols matrices), y of x's shape and dtype.
amprt_status checkTrilu(amprt_context *ctx, const amprt_tensor *x,
                        const amprt_tensor *y, int64_t &rows, int64_t &cols);
/// Whether Trilu keeps element e (its diagonal offset j - i against k).
AMPRT_HD inline bool triluKeeps(int64_t e, int64_t rows, int64_t cols,
                                int64_t k, bool upper) {
  int64_t j = e % cols, i = (e / cols) % rows;
  return upper ? j - i >= k : j - i <= k;
}

/// GatherND with b = batch_dims and kk = the indices' last dim: data [B..,
/// D_b.. D_{b+kk-1}, S..] and indices [B.., N.., kk] give y [B.., N.., S..]:
/// `batch` = prod B, `tuples` = prod N, `slab` = prod S, the indexed dims
/// and their product `inBatch` (slabs per batch entry).
struct NDMap {
  int32_t kk = 0;
  int64_t batch = 1, tuples = 1, slab = 1, inBatch = 1;
  int64_t dims[AMPRT_MAX_RANK] = {};
};
/// GatherND's checks but the index values (each within [-d, d) of its dim);
/// `yName` names y in messages (ScatterND checks its updates here).
amprt_status gatherNDShape(amprt_context *ctx, const char *k,
                           const amprt_tensor *data,
                           const amprt_tensor *indices, int64_t batch_dims,
                           const amprt_tensor *y, NDMap &m,
                           const char *yName = "y");
/// The slab (in slab units) of data that index tuple t reads; idx(e) is
/// element e of the indices (in range).
template <typename Idx>
AMPRT_HD inline int64_t ndSlabOffset(const NDMap &m, int64_t t, Idx &&idx) {
  int64_t off = 0;
  for (int32_t j = 0; j < m.kk; ++j) {
    int64_t n = m.dims[j], v = idx(t * m.kk + j);
    off = off * n + (v < 0 ? v + n : v);
  }
  return (t / m.tuples) * m.inBatch + off;
}

/// scatter_elements' checks but the index values: dtypes, shapes (the
/// updates' that of the indices), the reduction (0..4; 1..4 floats only).
amprt_status checkScatterElements(amprt_context *ctx, const amprt_tensor *data,
                                  const amprt_tensor *indices,
                                  const amprt_tensor *updates, int64_t &axis,
                                  int32_t reduction, const amprt_tensor *y);

/// scatter_nd's checks but the index values: dtypes, y of data's shape, the
/// updates of the shape gather_nd would give (batch_dims 0), the reduction
/// (0..4; 1..4 for f32, f16, bf16, i64 and i32 only).
amprt_status checkScatterND(amprt_context *ctx, const amprt_tensor *data,
                            const amprt_tensor *indices,
                            const amprt_tensor *updates, int32_t reduction,
                            const amprt_tensor *y, NDMap &m);

/// One step of a scatter reduction (1 add, 2 mul, 3 max, 4 min) of the
/// value in place, a, with the update b: f32 math, a NaN propagating
/// through max and min (the caller rounds into the dtype). ScatterElements
/// and ScatterND, CPU and CUDA.
AMPRT_HD inline float scatterCombine(int32_t reduction, float a, float b) {
  switch (reduction) {
  case 1:
    return a + b;
  case 2:
    return a * b;
  default:
    if (a != a)
      return a;
    if (b != b)
      return b;
    return reduction == 3 ? (a < b ? b : a) : (b < a ? b : a);
  }
}
/// The integer step: exact, add and mul wrapping in 64 bits (the caller
/// stores into the dtype, wrapping again).
AMPRT_HD inline int64_t scatterCombine(int32_t reduction, int64_t a,
                                       int64_t b) {
  switch (reduction) {
  case 1:
    return int64_t(uint64_t(a) + uint64_t(b));
  case 2:
    return int64_t(uint64_t(a) * uint64_t(b));
  case 3:
    return a < b ? b : a;
  default:
    return b < a ? b : a;
  }
}

/// CumSum: x and y of one shape and dtype (f32, f16, bf16, i64 or i32); x
/// as (outer, len, inner) around the axis.
amprt_status checkCumSum(amprt_context *ctx, const char *k,
                         const amprt_tensor *x, int64_t axis,
                         const amprt_tensor *y, int64_t &outer, int64_t &len,
                         int64_t &inner);
/// The running sums of one line (elements base + s * inner, s < len), in
/// order along the axis or against it; exclusive sums leave out the element
/// itself. Acc: double for floats, uint64_t (wrapping) for integers.
template <typename Acc, typename Load, typename Store>
AMPRT_HD inline void scanLine(int64_t base, int64_t len, int64_t inner,
                              bool exclusive, bool reverse, Load &&load,
                              Store &&store) {
  Acc acc = 0;
  for (int64_t s = 0; s < len; ++s) {
    int64_t i = base + (reverse ? len - 1 - s : s) * inner;
    Acc v = load(i);
    if (!exclusive)
      acc += v;
    store(i, acc);
    if (exclusive)
      acc += v;
  }
}

//===----------------------------------------------------------------------===//
// Recurrent layers (Recurrent.cpp; kernels/Recurrent.cu)
//===----------------------------------------------------------------------===//

/// The sizes of an LSTM / GRU call: sequence, batch, input, hidden,
/// directions, gates.
struct RnnDims {
  int64_t S = 0, B = 0, I = 0, H = 0, D = 0, G = 0;
};
/// The time step of the n-th step of direction `dir` (1: reversed).
AMPRT_HD inline int64_t stepAt(const RnnDims &d, int64_t n, int32_t direction,
                               int64_t dir) {
  bool reversed = direction == 1 || (direction == 2 && dir == 1);
  return reversed ? d.S - 1 - n : n;
}
/// The state ([B, H]) before the n-th step of direction dir: the previous
/// step's (in `all`, [S, D, B, H]), or the initial one (`initial`, [D, B,
/// H]; `zeros` when absent). Host and device pointers alike.
inline const float *stateBefore(const RnnDims &d, int64_t n, int32_t direction,
                                int64_t dir, const float *all,
                                const float *initial, const float *zeros) {
  if (n > 0)
    return all + (stepAt(d, n - 1, direction, dir) * d.D + dir) * d.B * d.H;
  return initial ? initial + dir * d.B * d.H : zeros;
}
/// lstm's and lstm_grad's arguments (every output optional).
amprt_status checkLstm(amprt_context *ctx, const amprt_tensor *x,
                       const amprt_tensor *w, const amprt_tensor *r,
                       const amprt_tensor *b, const amprt_tensor *h0,
                       const amprt_tensor *c0, int32_t direction,
                       const amprt_tensor *y, const amprt_tensor *y_h,
                       const amprt_tensor *y_c, const amprt_tensor *all_c,
                       const amprt_tensor *gates, RnnDims &d);
amprt_status checkLstmGrad(
    amprt_context *ctx, const amprt_tensor *x, const amprt_tensor *w,
    const amprt_tensor *r, const amprt_tensor *b, const amprt_tensor *h0,
    const amprt_tensor *c0, const amprt_tensor *y, const amprt_tensor *all_c,
    const amprt_tensor *gates, const amprt_tensor *dy, const amprt_tensor *dy_h,
    const amprt_tensor *dy_c, int32_t direction, const amprt_tensor *dx,
    const amprt_tensor *dw, const amprt_tensor *dr, const amprt_tensor *db,
    const amprt_tensor *dh0, const amprt_tensor *dc0, RnnDims &d);

/// gru's and gru_grad's arguments (every output optional).
amprt_status checkGru(amprt_context *ctx, const amprt_tensor *x,
                      const amprt_tensor *w, const amprt_tensor *r,
                      const amprt_tensor *b, const amprt_tensor *h0,
                      int32_t direction, const amprt_tensor *y,
                      const amprt_tensor *y_h, const amprt_tensor *gates,
                      RnnDims &d);
amprt_status checkGruGrad(amprt_context *ctx, const amprt_tensor *x,
                          const amprt_tensor *w, const amprt_tensor *r,
                          const amprt_tensor *b, const amprt_tensor *h0,
                          const amprt_tensor *y, const amprt_tensor *gates,
                          const amprt_tensor *dy, const amprt_tensor *dy_h,
                          int32_t direction, const amprt_tensor *dx,
                          const amprt_tensor *dw, const amprt_tensor *dr,
                          const amprt_tensor *db, const amprt_tensor *dh0,
                          RnnDims &d);

/// Reads a one-element tensor as double (any dtype).
double scalarOf(const amprt_tensor *t);
/// Writes a one-element tensor from a double (any dtype).
void setScalar(const amprt_tensor *t, double v);

} // namespace amprt

#endif // AMP_LIB_RUNTIME_INTERNAL_H
