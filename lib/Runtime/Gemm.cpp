//===- Gemm.cpp - Gemm, MatMul, FusedMatMul -------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The products accumulate in f32 and the result is rounded once into the
// output dtype (what cuBLASLt does with CUBLAS_COMPUTE_32F). On the fast
// path (amprt_cpu_path) they run through oneDNN (OneDnn.h): bf16 operands
// natively where the CPU has AVX-512 BF16, f16 ones widened to f32 (no x86
// CPU here has f16 arithmetic). The reference path widens f16/bf16 to f32
// and runs a cache-blocked i-k-j loop whose inner loop the compiler
// vectorizes, large products split over rows on the thread pool.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "OneDnn.h"
#include "amp/Runtime/Math/Elementwise.h"

#include <algorithm>

using namespace amprt;

void amprt::transpose2d(const float *src, int64_t R, int64_t C, float *dst) {
  const int64_t B = 32;
  for (int64_t r0 = 0; r0 < R; r0 += B)
    for (int64_t c0 = 0; c0 < C; c0 += B)
      for (int64_t r = r0; r < std::min(R, r0 + B); ++r)
        for (int64_t c = c0; c < std::min(C, c0 + B); ++c)
          dst[c * R + r] = src[r * C + c];
}

/// C[i0:i1, j0:j1] += alpha * A B over one block of K (the edges of the
/// tiles), with tile4x8's arithmetic: the products of the block summed in k
/// order from 0, then alpha times the sum added to C. So every element of C
/// is the same function of its row of A and column of B wherever it falls
/// (tile or edge, either thread's rows), and a product computed as (B^T
/// A^T)^T (FoldTransposes.cpp) gives the same bits.
static void sgemmEdge(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B,
                      int64_t ldb, float *C, int64_t ldc) {
  const int64_t JB = 64;
  for (int64_t i = i0; i < i1; ++i) {
    float *c = C + i * ldc;
    const float *a = A + i * lda;
    for (int64_t jb = j0; jb < j1; jb += JB) {
      int64_t n = std::min(JB, j1 - jb);
      float acc[JB] = {};
      for (int64_t k = 0; k < K; ++k) {
        float av = a[k];
        const float *b = B + k * ldb + jb;
        for (int64_t j = 0; j < n; ++j)
          acc[j] += av * b[j];
      }
      for (int64_t j = 0; j < n; ++j)
        c[jb + j] += alpha * acc[j];
    }
  }
}

/// A 4 x 8 tile of C kept in registers over a block of K: each loaded row
/// piece of B serves four rows of A (the plain i-k-j loop is bound by
/// loads and stores of C).
static inline void tile4x8(int64_t K, float alpha, const float *A, int64_t lda,
                           const float *B, int64_t ldb, float *C, int64_t ldc) {
  float acc[4][8] = {};
  for (int64_t k = 0; k < K; ++k) {
    const float *b = B + k * ldb;
    for (int r = 0; r < 4; ++r) {
      float a = A[r * lda + k];
      for (int j = 0; j < 8; ++j)
        acc[r][j] += a * b[j];
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 8; ++j)
      C[r * ldc + j] += alpha * acc[r][j];
}

static void sgemmRows(int64_t i0, int64_t i1, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb,
                      float *C, int64_t ldc) {
  const int64_t KB = 256;
  int64_t iTiles = i0 + (i1 - i0) / 4 * 4, jTiles = N / 8 * 8;
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    int64_t kb = std::min(KB, K - k0);
    const float *Ak = A + k0, *Bk = B + k0 * ldb;
    for (int64_t j = 0; j < jTiles; j += 8)
      for (int64_t i = i0; i < iTiles; i += 4)
        tile4x8(kb, alpha, Ak + i * lda, lda, Bk + j, ldb, C + i * ldc + j,
                ldc);
    if (jTiles < N)
      sgemmEdge(i0, iTiles, jTiles, N, kb, alpha, Ak, lda, Bk, ldb, C, ldc);
    if (iTiles < i1)
      sgemmEdge(iTiles, i1, 0, N, kb, alpha, Ak, lda, Bk, ldb, C, ldc);
  }
}

void amprt::sgemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, bool accumulate,
                  float *C, int64_t ldc) {
  if (oneDnnGemm() && K > 0 &&
      oneDnnSgemm(false, false, M, N, K, alpha, A, lda, B, ldb,
                  accumulate ? 1.f : 0.f, C, ldc))
    return;
  if (!accumulate)
    for (int64_t i = 0; i < M; ++i)
      std::fill(C + i * ldc, C + i * ldc + N, 0.f);
  if (K == 0)
    return;
  parallelFor(M, double(M) * double(N) * double(K),
              [&](int64_t i0, int64_t i1) {
                sgemmRows(i0, i1, N, K, alpha, A, lda, B, ldb, C, ldc);
              });
}

namespace {

using T = const amprt_tensor *;

/// op(X) of an R x C matrix as a row-major f32 matrix: the data itself when
/// possible, else a (transposed) copy in `buf`.
const float *asRowMajor(const float *p, int64_t R, int64_t C, bool trans,
                        std::vector<float> &buf) {
  if (!trans)
    return p;
  buf.resize(size_t(R * C));
  transpose2d(p, R, C, buf.data());
  return buf.data();
}

/// y = alpha op(a) op(b) through oneDNN (the fast path), into out (f32):
/// bf16 operands as they are when the CPU multiplies bf16, else widened.
/// False when the path is off or oneDNN has no fast kernel for it.
bool fastMatmul(const MatmulGeometry &g, T a, T b, float alpha, float *out) {
  if (!oneDnnGemm() || g.K == 0 || g.M == 0 || g.N == 0 || numel(g.bo) == 0)
    return false;
  if (a->dtype == AMPRT_BF16 && b->dtype == AMPRT_BF16 && oneDnnBf16())
    return oneDnnMatmul(g, a->data, b->data, AMPRT_BF16, alpha, out);
  F32In ia(a), ib(b);
  return oneDnnMatmul(g, ia.p, ib.p, AMPRT_F32, alpha, out);
}

amprt_status matmulImpl(amprt_context *ctx, const char *k, T a, T b, T y,
                        bool transA, bool transB, float alpha) {
  MatmulGeometry g;
  AMPRT_TRY(checkMatmul(ctx, k, a, b, y, transA, transB, g));
  {
    // A shared b and an untransposed a: one [batches * M, K] product, the
    // call gemm makes of a [.., K] operand (FuseMatMulBias.cpp relies on
    // the two giving the same bits).
    MatmulGeometry flat = g;
    if (!g.transA && numel(g.bb) == 1 && numel(g.ba) == numel(g.bo)) {
      flat.M = g.M * numel(g.bo);
      flat.ba = flat.bb = flat.bo = Shape{};
    }
    F32Out out(y);
    if (fastMatmul(flat, a, b, alpha, out.p)) {
      out.commit();
      return AMPRT_OK;
    }
  }
  int64_t M = g.M, N = g.N, K = g.K;
  transA = g.transA;
  transB = g.transB;
  const Shape &ba = g.ba, &bb = g.bb, &bo = g.bo;
  F32In ia(a), ib(b);
  F32Out out(y);
  int64_t batches = numel(bo);
  // Fold a's batch into M when b is shared and a is not transposed.
  if (!transA && numel(bb) == 1 && numel(ba) == batches) {
    std::vector<float> tb;
    const float *B =
        asRowMajor(ib.p, transB ? N : K, transB ? K : N, transB, tb);
    sgemm(batches * M, N, K, alpha, ia.p, K, B, N, false, out.p, N);
    out.commit();
    return AMPRT_OK;
  }
  Shape sta = broadcastStrides(ba, bo), stb = broadcastStrides(bb, bo);
  Shape idx(bo.size(), 0);
  std::vector<float> ta, tb;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < bo.size(); ++d) {
      oa += idx[d] * sta[d];
      ob += idx[d] * stb[d];
    }
    const float *A = asRowMajor(ia.p + oa * M * K, transA ? K : M,
                                transA ? M : K, transA, ta);
    const float *B = asRowMajor(ib.p + ob * K * N, transB ? N : K,
                                transB ? K : N, transB, tb);
    sgemm(M, N, K, alpha, A, K, B, N, false, out.p + bi * M * N, N);
    for (size_t d = bo.size(); d-- > 0;) {
      if (++idx[d] < bo[d])
        break;
      idx[d] = 0;
    }
  }
  out.commit();
  return AMPRT_OK;
}

} // namespace

amprt_status amprt::checkMatmul(amprt_context *ctx, const char *k, T a, T b,
                                T y, bool transA, bool transB,
                                MatmulGeometry &g) {
  AMPRT_TRY(checkFloat(ctx, k, "a", a));
  AMPRT_TRY(checkFloat(ctx, k, "b", b));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  if (a->rank < 1 || b->rank < 1)
    return ctx->fail(AMPRT_ERR_SHAPE, "%s: operands must have rank >= 1", k);
  Shape sa = shapeOf(a), sb = shapeOf(b);
  bool aVec = sa.size() == 1, bVec = sb.size() == 1;
  if (aVec) {
    sa.insert(sa.begin(), 1);
    transA = false;
  }
  if (bVec) {
    sb.push_back(1);
    transB = false;
  }
  int64_t M = transA ? sa[sa.size() - 1] : sa[sa.size() - 2];
  int64_t Ka = transA ? sa[sa.size() - 2] : sa[sa.size() - 1];
  int64_t Kb = transB ? sb[sb.size() - 1] : sb[sb.size() - 2];
  int64_t N = transB ? sb[sb.size() - 2] : sb[sb.size() - 1];
  if (Ka != Kb)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: inner dimensions differ: a %s, b %s (K %lld vs "
                     "%lld)",
                     k, shapeStr(a).c_str(), shapeStr(b).c_str(), (long long)Ka,
                     (long long)Kb);
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2), bo;
  if (!broadcastShapes({ba, bb}, bo))
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: batch dims of %s and %s do not broadcast", k,
                     shapeStr(a).c_str(), shapeStr(b).c_str());
  Shape so = bo;
  if (!aVec)
    so.push_back(M);
  if (!bVec)
    so.push_back(N);
  AMPRT_TRY(checkShape(ctx, k, "y", y, so));
  g.M = M;
  g.N = N;
  g.K = Ka;
  g.transA = transA;
  g.transB = transB;
  g.ba = std::move(ba);
  g.bb = std::move(bb);
  g.bo = std::move(bo);
  return AMPRT_OK;
}

amprt_status amprt::checkGemm(amprt_context *ctx, const char *k, T a, T b, T c,
                              T y, int32_t trans_a, int32_t trans_b,
                              GemmGeometry &g) {
  AMPRT_TRY(checkFloat(ctx, k, "a", a));
  AMPRT_TRY(checkFloat(ctx, k, "b", b));
  AMPRT_TRY(checkFloat(ctx, k, "c", c, /*optional=*/true));
  AMPRT_TRY(checkFloat(ctx, k, "y", y));
  if (a->rank < 2 || (trans_a && a->rank != 2) || b->rank != 2)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: a must be 2-D (or [.., K] without trans_a) and b "
                     "2-D, got %s (trans_a %d) and %s",
                     k, shapeStr(a).c_str(), trans_a, shapeStr(b).c_str());
  int64_t rows = 1;
  for (int32_t d = 0; d + 1 < a->rank; ++d)
    rows *= a->shape[d];
  g.M = trans_a ? a->shape[1] : rows;
  g.K = trans_a ? a->shape[0] : a->shape[a->rank - 1];
  int64_t Kb = trans_b ? b->shape[1] : b->shape[0];
  g.N = trans_b ? b->shape[0] : b->shape[1];
  if (g.K != Kb)
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: inner dimensions differ: a %s (trans_a %d), b "
                     "%s (trans_b %d)",
                     k, shapeStr(a).c_str(), trans_a, shapeStr(b).c_str(),
                     trans_b);
  Shape ys = trans_a ? Shape{g.M} : Shape(a->shape, a->shape + a->rank - 1);
  ys.push_back(g.N);
  AMPRT_TRY(checkShape(ctx, k, "y", y, ys));
  g.cStrides.clear();
  if (c) {
    Shape so = {g.M, g.N}, bc;
    if (c->rank > 2 || !broadcastShapes({shapeOf(c), so}, bc) || bc != so)
      return ctx->fail(AMPRT_ERR_SHAPE,
                       "%s: c of shape %s does not broadcast to %s", k,
                       shapeStr(c).c_str(), shapeStr(so).c_str());
    g.cStrides = broadcastStrides(shapeOf(c), so);
  }
  return AMPRT_OK;
}

amprt_status amprt::checkGemmActGrad(amprt_context *ctx, T a, T b, T x, T dx,
                                     int32_t trans_a, int32_t trans_b,
                                     int32_t actCode, Act &act,
                                     GemmGeometry &g) {
  const char *k = "gemm_act_grad";
  static const Act acts[] = {Act::Relu, Act::Gelu, Act::FastGelu};
  if (actCode < 0 || actCode > 2)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: act %d is not 0 (relu), 1 (gelu) or 2 (fast_gelu)", k,
                     actCode);
  act = acts[actCode];
  AMPRT_TRY(checkGemm(ctx, k, a, b, nullptr, dx, trans_a, trans_b, g));
  AMPRT_TRY(checkFloat(ctx, k, "x", x));
  return checkShape(ctx, k, "x", x, shapeOf(dx));
}

/// out[M, N] = alpha op(a) op(b) in f32, for gemm's geometry (a without
/// trans_a may be [.., K]): oneDNN's fast path, else the reference loops.
static void gemmProduct(const GemmGeometry &gg, T a, T b, int32_t trans_a,
                        int32_t trans_b, float alpha, float *out) {
  MatmulGeometry g;
  g.M = gg.M, g.N = gg.N, g.K = gg.K, g.transA = trans_a, g.transB = trans_b;
  if (fastMatmul(g, a, b, alpha, out))
    return;
  F32In ia(a), ib(b);
  std::vector<float> ta, tb;
  // Not transposed, a's leading dims are its rows.
  const float *A =
      trans_a ? asRowMajor(ia.p, a->shape[0], a->shape[1], trans_a, ta) : ia.p;
  const float *B = asRowMajor(ib.p, b->shape[0], b->shape[1], trans_b, tb);
  sgemm(gg.M, gg.N, gg.K, alpha, A, gg.K, B, gg.N, false, out, gg.N);
}

/// gemm, and (relu) gemm_relu: the relu applied to the f32 result before
/// its one rounding, which is what relu computes from the rounded value
/// (rounding keeps order and sign, and maps 0 to 0).
static amprt_status gemmImpl(amprt_context *ctx, const char *k, T a, T b, T c,
                             T y, int32_t trans_a, int32_t trans_b, float alpha,
                             float beta, bool relu) {
  return guard(ctx, k, [&]() -> amprt_status {
    GemmGeometry gg;
    AMPRT_TRY(checkGemm(ctx, k, a, b, c, y, trans_a, trans_b, gg));
    int64_t M = gg.M, N = gg.N;
    const Shape &stc = gg.cStrides;
    F32In ic(c);
    F32Out out(y);
    gemmProduct(gg, a, b, trans_a, trans_b, alpha, out.p);
    bool bias = c && beta != 0.f;
    // Row by row, each loop simple enough to vectorize: the bias (broadcast
    // along the row, a scalar, or strided), then the relu on the row while
    // it is in cache.
    if (bias || relu)
      parallelFor(M, 2.0 * double(M) * double(N), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          float *o = out.p + i * N;
          if (bias) {
            const float *cr = ic.p + i * stc[0];
            int64_t cs = stc[1];
            if (cs == 1)
              for (int64_t j = 0; j < N; ++j)
                o[j] += beta * cr[j];
            else
              for (int64_t j = 0; j < N; ++j)
                o[j] += beta * cr[j * cs];
          }
          if (relu)
            for (int64_t j = 0; j < N; ++j)
              o[j] = activation(Act::Relu, o[j], 0.f);
        }
      });
    out.commit();
    return AMPRT_OK;
  });
}

extern "C" {

amprt_status amprt_gemm(amprt_context *ctx, T a, T b, T c, T y, int32_t trans_a,
                        int32_t trans_b, float alpha, float beta) {
  AMPRT_DISPATCH(gemm, ctx, a, b, c, y, trans_a, trans_b, alpha, beta);
  return gemmImpl(ctx, "gemm", a, b, c, y, trans_a, trans_b, alpha, beta,
                  /*relu=*/false);
}

amprt_status amprt_gemm_relu(amprt_context *ctx, T a, T b, T c, T y,
                             int32_t trans_a, int32_t trans_b, float alpha,
                             float beta) {
  AMPRT_DISPATCH(gemm_relu, ctx, a, b, c, y, trans_a, trans_b, alpha, beta);
  return gemmImpl(ctx, "gemm_relu", a, b, c, y, trans_a, trans_b, alpha, beta,
                  /*relu=*/true);
}

amprt_status amprt_gemm_act_grad(amprt_context *ctx, T a, T b, T x, T dx,
                                 int32_t trans_a, int32_t trans_b, float alpha,
                                 int32_t act) {
  AMPRT_DISPATCH(gemm_act_grad, ctx, a, b, x, dx, trans_a, trans_b, alpha, act);
  const char *k = "gemm_act_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    Act fn;
    GemmGeometry gg;
    AMPRT_TRY(
        checkGemmActGrad(ctx, a, b, x, dx, trans_a, trans_b, act, fn, gg));
    int64_t M = gg.M, N = gg.N;
    // The product in f32 where dx will be (its own memory for f32).
    F32Out out(dx);
    gemmProduct(gg, a, b, trans_a, trans_b, alpha, out.p);
    // Rounded as the product's own buffer would hold it, then the
    // gradient as its kernel computes it from that value.
    F32In ix(x);
    int32_t dt = dx->dtype;
    parallelFor(
        M * N, 8.0 * double(M) * double(N), [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i)
            out.p[i] =
                activationGrad(fn, roundedTo(dt, out.p[i]), ix.p[i], 0.f);
        });
    out.commit();
    return AMPRT_OK;
  });
}

amprt_status amprt_matmul(amprt_context *ctx, T a, T b, T y) {
  AMPRT_DISPATCH(matmul, ctx, a, b, y);
  return guard(ctx, "matmul", [&] {
    return matmulImpl(ctx, "matmul", a, b, y, false, false, 1.f);
  });
}

amprt_status amprt_fused_matmul(amprt_context *ctx, T a, T b, T y,
                                int32_t trans_a, int32_t trans_b, float alpha) {
  AMPRT_DISPATCH(fused_matmul, ctx, a, b, y, trans_a, trans_b, alpha);
  return guard(ctx, "fused_matmul", [&] {
    return matmulImpl(ctx, "fused_matmul", a, b, y, trans_a, trans_b, alpha);
  });
}

} // extern "C"
