//===- OneDnn.cpp - the CPU fast path's GEMMs through oneDNN --------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Matmul primitives are cached per geometry, dtype, alpha and thread count
// (a primitive's blocking is chosen for the threads it was made for; a
// small product runs on one thread, threadsFor), the
// CPU analogue of the CUDA backend's cuBLASLt plan cache. Transposed
// operands and broadcast batch dims are strides of the memory descriptors,
// never copies. A geometry oneDNN only has its reference implementation
// for is remembered and left to the caller's loops.
//
//===----------------------------------------------------------------------===//

#include "OneDnn.h"
#include "Internal.h"

#ifdef AMPRT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#endif

using namespace amprt;

#ifndef AMPRT_HAVE_ONEDNN

std::string amprt::oneDnnDescribe() {
  return "no oneDNN in this build (install libdnnl-dev), blocked loops";
}
bool amprt::oneDnnGemm() { return false; }
bool amprt::oneDnnBf16() { return false; }
bool amprt::oneDnnSgemm(bool, bool, int64_t, int64_t, int64_t, float,
                        const float *, int64_t, const float *, int64_t, float,
                        float *, int64_t) {
  return false;
}
bool amprt::oneDnnMatmul(const MatmulGeometry &, const void *, const void *,
                         int32_t, float, float *) {
  return false;
}

#else

namespace {

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

/// The threads for a product of `flops`: one below about 4 MFLOP (a few
/// microseconds of one core, about what waking the pool costs; on a busy
/// machine a parallel region can wait a whole scheduler slice for a
/// descheduled thread), else the pool's.
int threadsFor(double flops) { return flops < 4e6 ? 1 : cpuThreads(); }

/// oneDNN's OpenMP regions take the calling thread's thread count: set
/// for the scope of a call and put back after it, so that an embedding
/// program's own OpenMP regions on this thread keep theirs.
class ScopedThreads {
public:
  explicit ScopedThreads(int threads) {
#ifdef _OPENMP
    previous = omp_get_max_threads();
    omp_set_num_threads(threads);
#endif
  }
  ~ScopedThreads() {
#ifdef _OPENMP
    omp_set_num_threads(previous);
#endif
  }
  ScopedThreads(const ScopedThreads &) = delete;
  ScopedThreads &operator=(const ScopedThreads &) = delete;

private:
  int previous = 1;
};

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream &stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

const char *isaName(dnnl_cpu_isa_t isa) {
  auto has = [&](dnnl_cpu_isa_t want) { return (isa & want) == want; };
  if (has(dnnl_cpu_isa_avx512_core_amx))
    return "avx512_core_amx";
  if (has(dnnl_cpu_isa_avx512_core_bf16))
    return "avx512_core_bf16";
  if (has(dnnl_cpu_isa_avx512_core_vnni))
    return "avx512_core_vnni";
  if (has(dnnl_cpu_isa_avx512_core))
    return "avx512_core";
  if (has(dnnl_cpu_isa_avx2))
    return "avx2";
  return "sse41";
}

/// A matmul primitive for one geometry; `usable` false when oneDNN offers
/// only its reference implementation.
struct Plan {
  bool usable = false;
  dnnl::memory::desc a, b, y, scratchpad;
  dnnl::matmul primitive;
};

/// Dims and strides of op(x) = [batch.., rows, cols] for x stored
/// contiguously as [batch.., rows, cols], or as [batch.., cols, rows] when
/// transposed.
dnnl::memory::desc operandDesc(const Shape &batch, int64_t rows, int64_t cols,
                               bool trans, dt type) {
  size_t nd = batch.size() + 2;
  dims d(nd), s(nd);
  for (size_t i = 0; i < batch.size(); ++i)
    d[i] = batch[i];
  d[nd - 2] = rows;
  d[nd - 1] = cols;
  s[nd - 2] = trans ? 1 : cols;
  s[nd - 1] = trans ? rows : 1;
  int64_t stride = rows * cols;
  for (size_t i = batch.size(); i-- > 0;) {
    s[i] = stride;
    stride *= batch[i];
  }
  return dnnl::memory::desc(d, type, s);
}

Shape padBatch(const Shape &b, size_t rank) {
  Shape out(rank - b.size(), 1);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::string planKey(const MatmulGeometry &g, int32_t dtype, float alpha,
                    int threads) {
  std::string key;
  auto add = [&](int64_t v) {
    key += std::to_string(v);
    key += ',';
  };
  add(g.M), add(g.N), add(g.K), add(g.transA), add(g.transB), add(dtype);
  add(threads);
  uint32_t alphaBits;
  std::memcpy(&alphaBits, &alpha, sizeof(alphaBits));
  add(alphaBits);
  for (const Shape *s : {&g.ba, &g.bb, &g.bo}) {
    key += '|';
    for (int64_t v : *s)
      add(v);
  }
  return key;
}

std::shared_ptr<Plan> makePlan(const MatmulGeometry &g, int32_t dtype,
                               float alpha) {
  auto plan = std::make_shared<Plan>();
  dt type = dtype == AMPRT_BF16 ? dt::bf16 : dt::f32;
  size_t rank = g.bo.size();
  plan->a = operandDesc(padBatch(g.ba, rank), g.M, g.K, g.transA, type);
  plan->b = operandDesc(padBatch(g.bb, rank), g.K, g.N, g.transB, type);
  plan->y = operandDesc(g.bo, g.M, g.N, false, dt::f32);
  dnnl::primitive_attr attr;
  // The caller's scratchpad: a library-managed one belongs to the
  // primitive, and the plans are shared by every thread of the process
  // (Debian's oneDNN is built without DNNL_ENABLE_CONCURRENT_EXEC), so two
  // contexts on two threads running one plan would share it.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.f) {
    dnnl::post_ops ops;
#if DNNL_VERSION_MAJOR >= 3
    ops.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.f);
#else
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, alpha, 0.f);
#endif
    attr.set_post_ops(ops);
  }
  try {
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc pd(engine(), plan->a, plan->b, plan->y, attr);
#else
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(plan->a, plan->b, plan->y), attr, engine());
#endif
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
      return plan;
    plan->primitive = dnnl::matmul(pd);
    plan->scratchpad = pd.scratchpad_desc();
    plan->usable = true;
  } catch (const dnnl::error &) {
    // Unimplemented for this geometry: the caller's loops compute it.
  }
  return plan;
}

/// The cached plan (shared: a plan in use outlives its eviction).
std::shared_ptr<const Plan> planFor(const MatmulGeometry &g, int32_t dtype,
                                    float alpha, int threads) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const Plan>> plans;
  std::string key = planKey(g, dtype, alpha, threads);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it != plans.end())
    return it->second;
  // A bound for programs whose shapes keep changing.
  if (plans.size() >= 4096)
    plans.clear();
  return plans[key] = makePlan(g, dtype, alpha);
}

} // namespace

std::string amprt::oneDnnDescribe() {
  const dnnl_version_t *v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
         "." + std::to_string(v->patch) + " (" +
         isaName(dnnl_get_effective_cpu_isa()) + ")";
}

bool amprt::oneDnnGemm() { return !cpuReference(); }

bool amprt::oneDnnBf16() {
  dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

bool amprt::oneDnnSgemm(bool transA, bool transB, int64_t M, int64_t N,
                        int64_t K, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C,
                        int64_t ldc) {
  ScopedThreads scope(threadsFor(2.0 * double(M) * double(N) * double(K)));
  return dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M, N, K, alpha, A,
                    lda, B, ldb, beta, C, ldc) == dnnl_success;
}

bool amprt::oneDnnMatmul(const MatmulGeometry &g, const void *a, const void *b,
                         int32_t dtype, float alpha, float *y) {
  int threads = threadsFor(2.0 * double(g.M) * double(g.N) * double(g.K) *
                           double(numel(g.bo)));
  ScopedThreads scope(threads);
  std::shared_ptr<const Plan> plan = planFor(g, dtype, alpha, threads);
  if (!plan->usable)
    return false;
  // This thread's scratchpad, grown to what the plan needs.
  thread_local std::vector<char> scratch;
  try {
    size_t need = plan->scratchpad.get_size();
    if (scratch.size() < need)
      scratch.resize(need);
    dnnl::memory ma(plan->a, engine(), const_cast<void *>(a));
    dnnl::memory mb(plan->b, engine(), const_cast<void *>(b));
    dnnl::memory my(plan->y, engine(), y);
    dnnl::memory ms(plan->scratchpad, engine(), scratch.data());
    plan->primitive.execute(stream(), {{DNNL_ARG_SRC, ma},
                                       {DNNL_ARG_WEIGHTS, mb},
                                       {DNNL_ARG_DST, my},
                                       {DNNL_ARG_SCRATCHPAD, ms}});
    stream().wait();
  } catch (const dnnl::error &) {
    return false;
  }
  return true;
}

#endif // AMPRT_HAVE_ONEDNN
