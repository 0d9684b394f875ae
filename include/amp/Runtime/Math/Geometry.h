//===- Geometry.h - where an output element of a kernel reads ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Index geometry shared by the CPU kernels (lib/Runtime) and the CUDA kernels
// (kernels/): the index a padded dim reads, the taps and weights of a
// resized axis, the traversal of a pooling window, where GatherElements and
// GatherND read and which elements Trilu keeps. Plain integer and scalar
// float arithmetic (AMPRT_HD), so both backends visit the same elements in
// the same order and weigh them alike.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_GEOMETRY_H
#define AMP_RUNTIME_MATH_GEOMETRY_H

#include "amp/Runtime/Math/HostDevice.h"
#include "amp/Runtime/Runtime.h"

#include <cmath>
#include <cstdint>

namespace amprt {

//===----------------------------------------------------------------------===//
// Pad and Resize (Shape.cpp, Resize.cpp; kernels/Shape.cu, kernels/Resize.cu)
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Windows of the pools (Pool.cpp, Conv.cpp; kernels/Pool.cu)
//===----------------------------------------------------------------------===//

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
  /// Channels innermost (AMPRT_LAYOUT_CHANNELS_LAST): x [N, D, H, W, C].
  bool channelsLast = false;
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

//===----------------------------------------------------------------------===//
// Gathers (Select.cpp; kernels/Select.cu)
//===----------------------------------------------------------------------===//

/// Where GatherElements reads: the indices' dims, data's strides.
struct ElementsMap {
  int32_t rank, axis;
  int64_t len; // data's extent along the axis
  int64_t ishape[AMPRT_MAX_RANK], dstride[AMPRT_MAX_RANK];
};
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

} // namespace amprt

#endif // AMP_RUNTIME_MATH_GEOMETRY_H
