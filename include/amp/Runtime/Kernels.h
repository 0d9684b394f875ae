/*===- Kernels.h - amp runtime kernel declarations (from Ops.def) -*- C -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Declares `amprt_status amprt_<name>(...)` for every entry of Ops.def.
//
//===----------------------------------------------------------------------===*/

#ifndef AMP_RUNTIME_KERNELS_H
#define AMP_RUNTIME_KERNELS_H

#include "amp/Runtime/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMPRT_KERNEL(name, kind, params)                                       \
  AMPRT_API amprt_status amprt_##name params;
#include "amp/Runtime/Ops.def"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AMP_RUNTIME_KERNELS_H */
