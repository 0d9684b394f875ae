/*===- Window.h - output extent of a pooling/convolution window -*- C -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The one formula for how many windows a pooling or convolution makes along
// a spatial dim, which the lowering uses to shape y and the window kernels
// use to check it (Conv.cpp's makeWindow). Plain C, header only.
//
//===----------------------------------------------------------------------===*/

#ifndef AMP_RUNTIME_WINDOW_H
#define AMP_RUNTIME_WINDOW_H

#include <stdint.h>

/* Windows along one dim, ONNX's formula: e = the padded input less the
   dilated window (negative when the window is larger), floor(e / s) + 1,
   or with ceil_mode ceil(e / s) + 1 less a last window that would start
   past the input and the begin padding (`limit` = input + begin pad).
   PyTorch's AvgPool2d(k, ceil_mode=True) over a smaller input (Hugging
   Face's EfficientNet pooler) has e < 0 and one window. Below 1: none. */
static inline int64_t amprt_window_count(int64_t e, int64_t s, int ceil_mode,
                                         int64_t limit) {
  int64_t o;
  if (!ceil_mode)
    return e < 0 ? 0 : e / s + 1;
  o = (e >= 0 ? (e + s - 1) / s : -(-e / s)) + 1;
  if ((o - 1) * s >= limit)
    --o;
  return o;
}

#endif /* AMP_RUNTIME_WINDOW_H */
