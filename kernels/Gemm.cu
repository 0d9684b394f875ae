//===- Gemm.cu - Gemm, MatMul, FusedMatMul through cuBLASLt ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Gemm.cpp's semantics on cuBLASLt. f16 x f16 and bf16 x bf16 products run
// on Tensor Cores with CUBLAS_COMPUTE_32F (f32 accumulation, f32 alpha and
// beta) and the epilogue rounds the result once into the output; any other
// mix widens the 16-bit operand to f32 (exactly) and multiplies in f32 with
// CUBLAS_COMPUTE_32F (TF32 only with AMPRT_CUDA_ALLOW_TF32=1). When the
// output dtype is not one cuBLASLt writes for those inputs (an f16 output of
// an f32 product, a bf16 output of an f16 product) the product goes to an
// f32 buffer and is rounded once into the output by a cast.
//
// Gemm's c: an f32 bias row of an f32 product goes to cuBLASLt's BIAS
// epilogue. Into an f16/bf16 y the product goes to an f32 scratch, and one
// kernel adds beta c, applies gemm_relu's relu and rounds once into y (as
// Gemm.cpp does; cuBLASLt's own epilogues round the product before adding
// the bias, and its relu turns NaN into 0). Other c of an f32 y are
// broadcast into D for the product's beta C.
//
// Row-major Y = op(A) op(B) is the column-major Y^T = op(B)^T op(A)^T, so
// b is cuBLASLt's A and a its B, with no copies. Batches: a's batch folds
// into M when b is shared and a not transposed; batch dims that are either
// full or absent on each side become one strided-batched call; other
// broadcasts (e.g. [2,1] x [1,3]) issue one call per batch.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

cudaDataType_t cudaType(int32_t dt) {
  return dt == AMPRT_F16    ? CUDA_R_16F
         : dt == AMPRT_BF16 ? CUDA_R_16BF
                            : CUDA_R_32F;
}

__global__ void toF32Kernel(const void *x, int32_t dt, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = loadF(x, dt, i);
}

/// d[i, j] = c[i * s0 + j * s1] (Gemm's broadcast c, widened to f32).
__global__ void broadcastCKernel(const void *c, int32_t dt, int64_t s0,
                                 int64_t s1, float *d, int64_t M, int64_t N) {
  int64_t n = M * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    d[i] = loadF(c, dt, (i / N) * s0 + (i % N) * s1);
}

/// y[i, j] = act(d[i, j] + beta c[i * s0 + j * s1]) rounded once into y's
/// dtype (no c: d alone; act: the relu or none). Gemm's epilogue when
/// cuBLASLt wrote the product to an f32 scratch.
__global__ void epilogueKernel(const float *d, const void *c, int32_t cdt,
                               int64_t s0, int64_t s1, float beta, bool relu,
                               void *y, int32_t ydt, int64_t M, int64_t N) {
  int64_t n = M * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = d[i];
    if (c)
      v += beta * loadF(c, cdt, (i / N) * s0 + (i % N) * s1);
    if (relu)
      v = activation(Act::Relu, v, 0.f);
    storeF(y, ydt, i, v);
  }
}

/// gemm_act_grad's epilogue: the f32 product rounded as dx's dtype holds
/// it, then the activation's gradient from it and x (Gemm.cpp's loop).
__global__ void actGradKernel(const float *d, const void *x, int32_t xdt,
                              Act act, void *dx, int32_t dt, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(dx, dt, i,
           activationGrad(act, roundedTo(dt, d[i]), loadF(x, xdt, i), 0.f));
}

/// Largest power of two (<= 256) dividing the address and every batch step.
uint32_t alignmentOf(const void *p, int64_t strideBytes) {
  uint64_t v =
      uint64_t(reinterpret_cast<uintptr_t>(p)) | uint64_t(strideBytes) | 256u;
  return uint32_t(v & (~v + 1));
}

/// One column-major operand of a cuBLASLt call.
struct Operand {
  const void *p;
  cudaDataType_t type;
  int64_t rows, cols, ld, stride; // stride in elements (0: shared)
  int64_t elem;                   // bytes per element
};

/// A cuBLASLt problem set up once: its descriptors and the algorithm the
/// heuristic chose. Kept in State::gemmPlans by planKey.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[3] = {};
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo = {};
  LtPlan() = default;
  LtPlan(const LtPlan &) = delete;
  LtPlan &operator=(const LtPlan &) = delete;
  ~LtPlan() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
    for (auto l : layouts)
      if (l)
        cublasLtMatrixLayoutDestroy(l);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

#define AMPRT_LT(ctx, k, call)                                                 \
  do {                                                                         \
    cublasStatus_t amprt_lt_s_ = (call);                                       \
    if (amprt_lt_s_ != CUBLAS_STATUS_SUCCESS)                                  \
      return (ctx)->fail(AMPRT_ERR_BACKEND, "%s: %s failed: %s", (k), #call,   \
                         cublasLtGetStatusString(amprt_lt_s_));                \
  } while (0)

/// Everything the plan of a product depends on, packed: the compute type,
/// the transposes, each operand's type, shape, leading dimension, batch
/// stride and alignment, the batch count, the workspace size and the bias
/// epilogue's alignment (0: none).
std::string planKey(cublasComputeType_t compute, bool transA, bool transB,
                    const Operand *const ops[3], const uint32_t al[3],
                    int64_t batch, uint64_t ws, uint32_t biasAlign) {
  int64_t v[] = {int64_t(compute), transA,   transB, batch,
                 int64_t(ws),      biasAlign};
  std::string key(reinterpret_cast<const char *>(v), sizeof(v));
  for (int i = 0; i < 3; ++i) {
    const Operand &o = *ops[i];
    int64_t w[] = {int64_t(o.type),          o.rows,        o.cols, o.ld,
                   batch > 1 ? o.stride : 0, int64_t(al[i])};
    key.append(reinterpret_cast<const char *>(w), sizeof(w));
  }
  return key;
}

/// Sets up `plan` for the problem: descriptors, layouts, preferences, and
/// the heuristic's first algorithm. AMPRT_ERR_UNSUPPORTED when cuBLASLt has
/// none.
amprt_status makePlan(amprt_context *ctx, const char *k, LtPlan &plan,
                      cublasComputeType_t compute, bool transA, bool transB,
                      int64_t m, int64_t n, int64_t kk,
                      const Operand *const ops[3], const uint32_t al[3],
                      int64_t batch, const void *bias) {
  State &s = state(ctx);
  AMPRT_LT(ctx, k, cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F));
  if (bias) {
    // The bias has D's type (cuBLASLt's default); the heuristic reads its
    // pointer for the alignment.
    uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    AMPRT_LT(ctx, k,
             cublasLtMatmulDescSetAttribute(
                 plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    AMPRT_LT(ctx, k,
             cublasLtMatmulDescSetAttribute(plan.desc,
                                            CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &bias, sizeof(bias)));
  }
  int32_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  AMPRT_LT(ctx, k,
           cublasLtMatmulDescSetAttribute(
               plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)));
  AMPRT_LT(ctx, k,
           cublasLtMatmulDescSetAttribute(
               plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)));
  for (int i = 0; i < 3; ++i) {
    const Operand &o = *ops[i];
    AMPRT_LT(ctx, k,
             cublasLtMatrixLayoutCreate(&plan.layouts[i], o.type,
                                        uint64_t(o.rows), uint64_t(o.cols),
                                        o.ld));
    if (batch > 1) {
      int32_t b32 = int32_t(batch);
      AMPRT_LT(ctx, k,
               cublasLtMatrixLayoutSetAttribute(
                   plan.layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b32,
                   sizeof(b32)));
      AMPRT_LT(ctx, k,
               cublasLtMatrixLayoutSetAttribute(
                   plan.layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                   &o.stride, sizeof(o.stride)));
    }
  }
  AMPRT_LT(ctx, k, cublasLtMatmulPreferenceCreate(&plan.pref));
  uint64_t ws = s.workspaceBytes;
  AMPRT_LT(ctx, k,
           cublasLtMatmulPreferenceSetAttribute(
               plan.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
               sizeof(ws)));
  cublasLtMatmulPreferenceAttributes_t alAttr[3] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 3; ++i)
    AMPRT_LT(ctx, k,
             cublasLtMatmulPreferenceSetAttribute(plan.pref, alAttr[i], &al[i],
                                                  sizeof(al[i])));
  AMPRT_LT(ctx, k,
           cublasLtMatmulPreferenceSetAttribute(
               plan.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2],
               sizeof(al[2])));
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(
      s.lt, plan.desc, plan.layouts[0], plan.layouts[1], plan.layouts[2],
      plan.layouts[2], plan.pref, 1, &result, &found);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED,
                     "%s: cuBLASLt has no algorithm for m %lld n %lld k %lld "
                     "(%s)",
                     k, (long long)m, (long long)n, (long long)kk,
                     cublasLtGetStatusString(hs));
  plan.algo = result.algo;
  return AMPRT_OK;
}

/// D = alpha op(A) op(B) + beta C (C = D when beta != 0) [+ bias, a vector
/// of D's rows in D's type, added to every column], `batch` times.
/// AMPRT_ERR_UNSUPPORTED when cuBLASLt has no algorithm for the problem.
/// The plan of each distinct problem is made once per context.
amprt_status ltMatmul(amprt_context *ctx, const char *k, bool transA,
                      bool transB, int64_t m, int64_t n, int64_t kk,
                      const Operand &A, const Operand &B, const Operand &D,
                      int64_t batch, float alpha, float beta,
                      const void *bias = nullptr) {
  State &s = state(ctx);
  cublasComputeType_t compute = A.type == CUDA_R_32F && s.allowTf32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  const Operand *const ops[3] = {&A, &B, &D};
  uint32_t al[3];
  for (int i = 0; i < 3; ++i)
    al[i] = alignmentOf(ops[i]->p, ops[i]->stride * ops[i]->elem);
  uint32_t biasAlign = bias ? alignmentOf(bias, 0) : 0;
  std::string key = planKey(compute, transA, transB, ops, al, batch,
                            s.workspaceBytes, biasAlign);
  auto it = s.gemmPlans.find(key);
  if (it == s.gemmPlans.end()) {
    auto plan = std::make_shared<LtPlan>();
    amprt_status st = makePlan(ctx, k, *plan, compute, transA, transB, m, n, kk,
                               ops, al, batch, bias);
    if (st == AMPRT_ERR_UNSUPPORTED) // remembered: the heuristic is not free
      plan.reset();
    else
      AMPRT_TRY(st);
    it = s.gemmPlans.emplace(std::move(key), std::move(plan)).first;
    if (!it->second)
      return st;
  }
  if (!it->second)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED,
                     "%s: cuBLASLt has no algorithm for m %lld n %lld k %lld",
                     k, (long long)m, (long long)n, (long long)kk);
  const LtPlan &plan = *static_cast<const LtPlan *>(it->second.get());
  if (bias) // this call's bias (the plan keeps only its alignment)
    AMPRT_LT(ctx, k,
             cublasLtMatmulDescSetAttribute(plan.desc,
                                            CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &bias, sizeof(bias)));
  AMPRT_LT(ctx, k,
           cublasLtMatmul(s.lt, plan.desc, &alpha, A.p, plan.layouts[0], B.p,
                          plan.layouts[1], &beta, D.p, plan.layouts[2],
                          const_cast<void *>(D.p), plan.layouts[2], &plan.algo,
                          s.workspace, s.workspaceBytes, s.stream));
  return AMPRT_OK;
}

/// The operands of one product, after widening: what ltMatmul reads.
struct Prepared {
  const void *a, *b;
  int32_t abDt; // F32, F16 or BF16
  void *d;      // the output buffer cuBLASLt writes
  int32_t dDt;  // its dtype
  bool narrow;  // d is an f32 scratch to round into y
  Scratch wa, wb, wd;
};

/// Widens operands when their dtypes differ (or are f32 with a 16-bit
/// partner) and picks where cuBLASLt writes.
amprt_status prepare(amprt_context *ctx, const char *k, T a, T b, T y,
                     bool needF32Out, Prepared &p) {
  int32_t da = a->dtype, db = b->dtype;
  p.abDt = da == db ? da : AMPRT_F32;
  p.a = a->data;
  p.b = b->data;
  auto widen = [&](T t, Scratch &w, const void *&out) -> amprt_status {
    int64_t n = numel(t);
    AMPRT_TRY(w.get(ctx, k, size_t(n) * 4));
    toF32Kernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        t->data, t->dtype, static_cast<float *>(w.p), n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    out = w.p;
    return AMPRT_OK;
  };
  if (p.abDt == AMPRT_F32) {
    if (da != AMPRT_F32)
      AMPRT_TRY(widen(a, p.wa, p.a));
    if (db != AMPRT_F32)
      AMPRT_TRY(widen(b, p.wb, p.b));
  }
  // cuBLASLt writes f32, or the inputs' own 16-bit type.
  bool direct = !needF32Out && (y->dtype == AMPRT_F32 || y->dtype == p.abDt);
  if (needF32Out && y->dtype == AMPRT_F32)
    direct = true;
  p.narrow = !direct;
  if (direct) {
    p.d = y->data;
    p.dDt = y->dtype;
  } else {
    AMPRT_TRY(p.wd.get(ctx, k, size_t(numel(y)) * 4));
    p.d = p.wd.p;
    p.dDt = AMPRT_F32;
  }
  return AMPRT_OK;
}

amprt_status finish(amprt_context *ctx, const char *k, T y, Prepared &p) {
  if (!p.narrow)
    return AMPRT_OK;
  return storeFromF32(ctx, k, static_cast<const float *>(p.d), y);
}

int64_t esize(int32_t dt) { return dt == AMPRT_F32 ? 4 : 2; }

/// Y[M, N] (+ batch) = alpha op(a) op(b) for row-major a (ra x ca per
/// batch) and b (rb x cb), with element batch strides.
amprt_status rowMajorProduct(amprt_context *ctx, const char *k,
                             const Prepared &p, bool transA, bool transB,
                             int64_t M, int64_t N, int64_t K, int64_t offA,
                             int64_t offB, int64_t offD, int64_t strideA,
                             int64_t strideB, int64_t batch, float alpha,
                             float beta, const void *bias = nullptr) {
  cudaDataType_t ab = cudaType(p.abDt);
  int64_t ea = esize(p.abDt), ed = esize(p.dDt);
  int64_t ra = transA ? K : M, ca = transA ? M : K;
  int64_t rb = transB ? N : K, cb = transB ? K : N;
  Operand A = {
      static_cast<const char *>(p.b) + offB * ea, ab, cb, rb, cb, strideB, ea};
  Operand B = {
      static_cast<const char *>(p.a) + offA * ea, ab, ca, ra, ca, strideA, ea};
  Operand D = {static_cast<char *>(p.d) + offD * ed,
               cudaType(p.dDt),
               N,
               M,
               N,
               M * N,
               ed};
  return ltMatmul(ctx, k, transB, transA, N, M, K, A, B, D, batch, alpha, beta,
                  bias);
}

} // namespace

amprt_status amprt::cuda::sgemmRows(amprt_context *ctx, const char *k,
                                    bool transA, bool transB, int64_t M,
                                    int64_t N, int64_t K, const float *A,
                                    int64_t lda, const float *B, int64_t ldb,
                                    float *C, int64_t ldc, float beta) {
  if (M == 0 || N == 0)
    return AMPRT_OK;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
  // row-major matrix is its transpose seen column-major.
  Operand b = {B, CUDA_R_32F, transB ? K : N, transB ? N : K, ldb, 0, 4};
  Operand a = {A, CUDA_R_32F, transA ? M : K, transA ? K : M, lda, 0, 4};
  Operand d = {C, CUDA_R_32F, N, M, ldc, 0, 4};
  return ltMatmul(ctx, k, transB, transA, N, M, K, b, a, d, 1, 1.f, beta);
}

namespace {

//===----------------------------------------------------------------------===//
// gemm
//===----------------------------------------------------------------------===//

/// gemm, and (relu) gemm_relu, whose relu applies to the f32 result before
/// its one rounding (Gemm.cpp).
amprt_status gemmImpl(amprt_context *ctx, const char *k, T a, T b, T c, T y,
                      int32_t trans_a, int32_t trans_b, float alpha, float beta,
                      bool relu) {
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return relu ? amprt_gemm_relu(ctx, a, b, c, y, trans_a, trans_b, alpha,
                                    beta)
                  : amprt_gemm(ctx, a, b, c, y, trans_a, trans_b, alpha, beta);
    };
    // a [.., K] without trans_a is [M, K] with its leading dims as rows,
    // and y [.., N] is [M, N]: the same bytes.
    GemmGeometry g;
    if (checkGemm(ctx, k, a, b, c, y, trans_a, trans_b, g) || g.K == 0)
      return onHost(ctx, cpu); // errors, and the K = 0 corner
    int64_t M = g.M, N = g.N, K = g.K;
    if (M == 0 || N == 0)
      return AMPRT_OK;
    bool withC = c && beta != 0.f;
    Shape stc = withC ? g.cStrides : Shape{0, 0};
    auto reluInPlace = [&] { return relu ? amprt_relu(ctx, y, y) : AMPRT_OK; };
    if (withC && beta == 1.f && y->dtype == AMPRT_F32 &&
        c->dtype == AMPRT_F32 && stc[0] == 0 && stc[1] == 1) {
      // An f32 bias row into an f32 y: cuBLASLt's BIAS epilogue, when it has
      // an algorithm for it. (Into f16/bf16 it adds the bias to the rounded
      // product: two roundings, not Gemm.cpp's one.)
      Prepared p;
      AMPRT_TRY(prepare(ctx, k, a, b, y, true, p));
      amprt_status st = rowMajorProduct(ctx, k, p, trans_a, trans_b, M, N, K, 0,
                                        0, 0, 0, 0, 1, alpha, 0.f, c->data);
      if (st != AMPRT_ERR_UNSUPPORTED) {
        AMPRT_TRY(st);
        return reluInPlace();
      }
      ctx->error.clear();
    }
    Prepared p;
    AMPRT_TRY(prepare(ctx, k, a, b, y, withC, p));
    if (withC && !p.narrow) {
      // An f32 y: C = D = c broadcast to [M, N]; the epilogue adds beta C.
      broadcastCKernel<<<gridFor(M * N, kThreads, 4), kThreads, 0,
                         stream(ctx)>>>(c->data, c->dtype, stc[0], stc[1],
                                        static_cast<float *>(p.d), M, N);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    amprt_status st =
        rowMajorProduct(ctx, k, p, trans_a, trans_b, M, N, K, 0, 0, 0, 0, 0, 1,
                        alpha, withC && !p.narrow ? beta : 0.f);
    if (st == AMPRT_ERR_UNSUPPORTED)
      return onHost(ctx, cpu);
    AMPRT_TRY(st);
    if (!p.narrow)
      return reluInPlace();
    // The f32 product, beta c and the relu, rounded once into y.
    epilogueKernel<<<gridFor(M * N, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        static_cast<const float *>(p.d), withC ? c->data : nullptr,
        withC ? c->dtype : AMPRT_F32, stc[0], stc[1], beta, relu, y->data,
        y->dtype, M, N);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaGemm(amprt_context *ctx, T a, T b, T c, T y, int32_t trans_a,
                      int32_t trans_b, float alpha, float beta) {
  return gemmImpl(ctx, "gemm", a, b, c, y, trans_a, trans_b, alpha, beta,
                  false);
}

amprt_status cudaGemmActGrad(amprt_context *ctx, T a, T b, T x, T dx,
                             int32_t trans_a, int32_t trans_b, float alpha,
                             int32_t act) {
  const char *k = "gemm_act_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] {
      return amprt_gemm_act_grad(ctx, a, b, x, dx, trans_a, trans_b, alpha,
                                 act);
    };
    Act fn;
    GemmGeometry g;
    if (checkGemmActGrad(ctx, a, b, x, dx, trans_a, trans_b, act, fn, g) ||
        g.K == 0)
      return onHost(ctx, cpu); // errors, and the K = 0 corner
    if (g.M == 0 || g.N == 0)
      return AMPRT_OK;
    // The product in f32 (dx itself when f32), then one epilogue pass.
    Prepared p;
    AMPRT_TRY(prepare(ctx, k, a, b, dx, /*needF32Out=*/true, p));
    amprt_status st = rowMajorProduct(ctx, k, p, trans_a, trans_b, g.M, g.N,
                                      g.K, 0, 0, 0, 0, 0, 1, alpha, 0.f);
    if (st == AMPRT_ERR_UNSUPPORTED)
      return onHost(ctx, cpu);
    AMPRT_TRY(st);
    int64_t n = g.M * g.N;
    actGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        static_cast<const float *>(p.d), x->data, x->dtype, fn, dx->data,
        dx->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaGemmRelu(amprt_context *ctx, T a, T b, T c, T y,
                          int32_t trans_a, int32_t trans_b, float alpha,
                          float beta) {
  return gemmImpl(ctx, "gemm_relu", a, b, c, y, trans_a, trans_b, alpha, beta,
                  true);
}

//===----------------------------------------------------------------------===//
// matmul, fused_matmul
//===----------------------------------------------------------------------===//

template <typename Cpu>
amprt_status matmulImpl(amprt_context *ctx, const char *k, T a, T b, T y,
                        bool transA, bool transB, float alpha, Cpu cpu) {
  MatmulGeometry g;
  if (checkMatmul(ctx, k, a, b, y, transA, transB, g) || g.K == 0)
    return onHost(ctx, cpu); // errors, and the K = 0 corner
  int64_t M = g.M, N = g.N, K = g.K, batches = numel(g.bo);
  transA = g.transA;
  transB = g.transB;
  const Shape &ba = g.ba, &bb = g.bb, &bo = g.bo;
  if (numel(y) == 0)
    return AMPRT_OK;
  Prepared p;
  AMPRT_TRY(prepare(ctx, k, a, b, y, false, p));
  int64_t na = numel(ba), nb = numel(bb);
  amprt_status st;
  if (!transA && nb == 1 && na == batches) {
    // a's batch folds into M: one product against the shared b.
    st = rowMajorProduct(ctx, k, p, false, transB, batches * M, N, K, 0, 0, 0,
                         0, 0, 1, alpha, 0.f);
  } else if ((na == 1 || na == batches) && (nb == 1 || nb == batches)) {
    st = rowMajorProduct(ctx, k, p, transA, transB, M, N, K, 0, 0, 0,
                         na == 1 ? 0 : M * K, nb == 1 ? 0 : K * N, batches,
                         alpha, 0.f);
  } else {
    // A general broadcast: one call per batch (Gemm.cpp's loop).
    Shape sta = broadcastStrides(ba, bo), stb = broadcastStrides(bb, bo);
    Shape idx(bo.size(), 0);
    st = AMPRT_OK;
    for (int64_t bi = 0; bi < batches && st == AMPRT_OK; ++bi) {
      int64_t oa = 0, ob = 0;
      for (size_t d = 0; d < bo.size(); ++d) {
        oa += idx[d] * sta[d];
        ob += idx[d] * stb[d];
      }
      st = rowMajorProduct(ctx, k, p, transA, transB, M, N, K, oa * M * K,
                           ob * K * N, bi * M * N, 0, 0, 1, alpha, 0.f);
      for (size_t d = bo.size(); d-- > 0;) {
        if (++idx[d] < bo[d])
          break;
        idx[d] = 0;
      }
    }
  }
  if (st == AMPRT_ERR_UNSUPPORTED)
    return onHost(ctx, cpu);
  AMPRT_TRY(st);
  return finish(ctx, k, y, p);
}

amprt_status cudaMatmul(amprt_context *ctx, T a, T b, T y) {
  return guard(ctx, "matmul", [&] {
    return matmulImpl(ctx, "matmul", a, b, y, false, false, 1.f,
                      [&] { return amprt_matmul(ctx, a, b, y); });
  });
}

amprt_status cudaFusedMatmul(amprt_context *ctx, T a, T b, T y, int32_t trans_a,
                             int32_t trans_b, float alpha) {
  return guard(ctx, "fused_matmul", [&] {
    return matmulImpl(
        ctx, "fused_matmul", a, b, y, trans_a, trans_b, alpha, [&] {
          return amprt_fused_matmul(ctx, a, b, y, trans_a, trans_b, alpha);
        });
  });
}

} // namespace

void amprt::cuda::registerGemm(KernelTable &t) {
  t.gemm = cudaGemm;
  t.gemm_relu = cudaGemmRelu;
  t.gemm_act_grad = cudaGemmActGrad;
  t.matmul = cudaMatmul;
  t.fused_matmul = cudaFusedMatmul;
}
