//===- OneDnn.h - the CPU fast path's GEMMs through oneDNN ------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Runtime. The CPU backend's GEMMs on the fast path
// (amprt_cpu_path): oneDNN's sgemm for the f32 products the kernels build
// themselves (convolutions, recurrent cells) and its matmul primitive,
// cached per shape, for Gemm/MatMul/FusedMatMul (f32, and bf16 operands
// with f32 accumulation where the CPU has AVX-512 BF16 or AMX). Built
// without oneDNN (no libdnnl-dev), oneDnnGemm() is false and the kernels
// keep their loops. docs/RuntimeABI.md, "CPU backend", says why oneDNN.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_ONEDNN_H
#define AMP_LIB_RUNTIME_ONEDNN_H

#include "amp/Runtime/Backend/Checks.h"

#include <cstdint>
#include <string>

namespace amprt {

/// "oneDNN 2.6.3 (avx512_core_bf16)", or why the fast path has no oneDNN.
std::string oneDnnDescribe();

/// Whether the GEMMs go through oneDNN now: built with it, and the fast
/// path in force.
bool oneDnnGemm();

/// Whether oneDNN runs bf16 products natively on this CPU (AVX-512 BF16 or
/// AMX); otherwise bf16 operands are widened to f32 first.
bool oneDnnBf16();

/// C = alpha op(A) op(B) + beta C, f32 row-major with leading dimensions
/// (dnnl_sgemm). False when oneDNN refused the call (the caller computes
/// it).
bool oneDnnSgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
                 float alpha, const float *A, int64_t lda, const float *B,
                 int64_t ldb, float beta, float *C, int64_t ldc);

/// y[bo.., M, N] = alpha op(a) op(b) for matmul's geometry, a and b
/// contiguous of `dtype` (AMPRT_F32 or AMPRT_BF16, both the same), y f32,
/// through a matmul primitive cached per shape. False when oneDNN has no
/// optimized implementation for it (the caller computes it).
bool oneDnnMatmul(const MatmulGeometry &g, const void *a, const void *b,
                  int32_t dtype, float alpha, float *y);

} // namespace amprt

#endif // AMP_LIB_RUNTIME_ONEDNN_H
