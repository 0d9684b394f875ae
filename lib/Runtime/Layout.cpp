//===- Layout.cpp - channels-last windows through channels-first kernels --===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's windowed kernels (Conv.cpp, Pool.cpp) compute channels
// first. A call whose window is channels last (amprt_window::layout, ABI
// 10) runs them on channels-first copies: each input [N, spatial..., C] is
// copied to [N, C, spatial...], each output written channels first and
// copied back. A convolution's weight [M, kernel..., C/g] moves by the same
// permutation (its last dim to position 1). The result is the
// channels-first kernel's, bit for bit: the reference that the CUDA
// backend's native channels-last kernels (cuDNN's NHWC convolutions) are
// checked against. On the CPU the copies cost what they cost; the lowering
// asks for channels last only where a device gains from it
// (docs/Lowering.md, "Channels last").
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <memory>

using namespace amprt;

namespace {

/// One tensor's channels-first stand-in.
struct FirstCopy {
  const amprt_tensor **slot; // the caller's pointer, repointed
  const amprt_tensor *last;  // the caller's tensor, channels last
  Shape shape;               // channels-first shape
  std::unique_ptr<char[]> bytes;
  amprt_tensor t;
};

/// The strides that read a tensor of shape `from` in the order of `perm`
/// (out dim i is from's dim perm[i]), and that order's shape.
void permuted(const Shape &from, const Shape &perm, Shape &so, Shape &st) {
  Shape fs = stridesOf(from);
  so.resize(perm.size());
  st.resize(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    so[i] = from[size_t(perm[i])];
    st[i] = fs[size_t(perm[i])];
  }
}

/// (0, r - 1, 1, ..., r - 2): channels last to first; and its inverse.
Shape toFirst(size_t r) {
  Shape p = {0, int64_t(r) - 1};
  for (size_t i = 1; i + 1 < r; ++i)
    p.push_back(int64_t(i));
  return p;
}
Shape toLast(size_t r) {
  Shape p = {0};
  for (size_t i = 2; i < r; ++i)
    p.push_back(int64_t(i));
  p.push_back(1);
  return p;
}

void makeCopy(FirstCopy &c, const amprt_tensor **slot) {
  c.slot = slot;
  c.last = *slot;
  Shape so, st;
  permuted(shapeOf(c.last), toFirst(size_t(c.last->rank)), so, st);
  c.shape = so;
  c.bytes.reset(new char[size_t(std::max<int64_t>(numel(c.last), 1)) *
                         amprt_dtype_size(c.last->dtype)]);
  c.t = {c.bytes.get(), c.last->dtype, c.last->rank, c.shape.data()};
  *slot = &c.t;
}

} // namespace

amprt_status amprt::viaChannelsFirst(
    amprt_context *ctx, const char *k, const amprt_window *win,
    std::initializer_list<NamedTensor> ins,
    std::initializer_list<NamedTensor> outs,
    const std::function<amprt_status(const amprt_window *)> &body,
    const amprt_tensor **indices) {
  if (!channelsLast(win))
    return body(win);
  // Each tensor is read or written here before the body's checks: it must
  // be one (its shape and data).
  for (auto group : {ins, outs})
    for (const NamedTensor &t : group)
      AMPRT_TRY(checkTensor(ctx, k, t.first, *t.second, /*optional=*/true));
  std::vector<FirstCopy> copies(ins.size() + outs.size());
  size_t n = 0;
  auto moved = [](const amprt_tensor *t) { return t && t->rank >= 3; };
  for (const NamedTensor &t : ins) {
    const amprt_tensor **slot = t.second;
    if (!moved(*slot))
      continue;
    FirstCopy &c = copies[n++];
    makeCopy(c, slot);
    Shape so, st;
    permuted(shapeOf(c.last), toFirst(size_t(c.last->rank)), so, st);
    gatherStrided(c.last, &c.t, so, st, 0);
  }
  size_t firstOut = n;
  for (const NamedTensor &t : outs)
    if (moved(*t.second))
      makeCopy(copies[n++], t.second);
  amprt_window first = *win;
  first.layout = AMPRT_LAYOUT_CHANNELS_FIRST;
  amprt_status st = body(&first);
  for (size_t i = 0; i < n; ++i)
    *copies[i].slot = copies[i].last;
  if (st != AMPRT_OK)
    return st;
  for (size_t i = firstOut; i < n; ++i) {
    FirstCopy &c = copies[i];
    if (indices && c.slot == indices && n > 0 && firstOut > 0) {
      // Flat indices into ins[0] channels first, (n, c, s) -> (n, s, c).
      const Shape &xs = copies[0].shape;
      int64_t C = xs[1], S = 1;
      for (size_t d = 2; d < xs.size(); ++d)
        S *= xs[d];
      auto *idx = reinterpret_cast<int64_t *>(c.bytes.get());
      for (int64_t e = 0, m = numel(&c.t); e < m; ++e) {
        int64_t v = idx[e];
        if (v < 0 || C * S == 0)
          continue;
        int64_t img = v / (C * S), ch = (v / S) % C, sp = v % S;
        idx[e] = (img * S + sp) * C + ch;
      }
    }
    Shape so, strides;
    permuted(c.shape, toLast(c.shape.size()), so, strides);
    gatherStrided(&c.t, c.last, so, strides, 0);
  }
  return AMPRT_OK;
}
