//===- Common.cuh - shared pieces of the CUDA backend ----------*- CUDA -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to kernels/: the per-context state (stream, cuBLASLt, cuDNN,
// workspace), error reporting for CUDA calls, packets of float elements,
// warp and block sums, broadcasting maps, and the overrides each .cu file
// contributes to the kernel table.
//
// Every override follows one pattern: check the descriptors with the
// runtime's argument checks (amp/Runtime/Backend/Checks.h, the CPU kernels'
// own); when the call is not one the GPU path handles (a bad argument, a
// dtype or layout left to the CPU), hand it to the CPU code with onHost()
// (amp/Runtime/Backend/Backend.h), which gives the exact CPU result or error
// message. The element arithmetic (conversions, activations, optimizer
// updates, recurrent cells, index geometry) is the CPU code's own, from
// amp/Runtime/Math, compiled for the device; the kernels are compiled with
// -fmad=false so its f32 expressions round as they do on the host.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_KERNELS_COMMON_CUH
#define AMP_KERNELS_COMMON_CUH

#include "amp/Runtime/Backend/Backend.h"
#include "amp/Runtime/Backend/Checks.h"
#include "amp/Runtime/Backend/Comm.h"
#include "amp/Runtime/Math/ElementAccess.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifdef AMPRT_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace amprt {
namespace cuda {

using T = const amprt_tensor *;

/// The messages of the data checks (the CPU code's words), by number: what
/// a deferred check (AMPRT_CHECKS_DEFERRED) records for the host to print.
enum CheckMessage : int32_t {
  kLabelOutside,       // "label V at AT outside [0, BOUND)"
  kIndexOutside,       // "index V at AT outside [-BOUND, BOUND)"
  kTupleIndexOutside,  // "index V of tuple AT outside [-BOUND, BOUND)"
  kPoolIndexOutside,   // "indices[AT] = V outside dx (BOUND elements)"
  kProbabilityOutside, // "p[AT] = REAL is outside [0, 1]"
  kRatioOutside,       // "ratio REAL outside [0, 1)"
};

/// The first data check that failed in AMPRT_CHECKS_DEFERRED mode since the
/// host last looked (Queue.cu's reportDeferred, after each wait): pinned
/// host memory that one device thread at a time writes (the recording
/// kernels run one after another on the context's stream), `set` last.
struct DeferredCheck {
  int32_t set;        // 1: a failure is recorded
  int32_t message;    // CheckMessage
  const char *kernel; // the call's name (a string literal of the host)
  int64_t value, at, bound;
  double real;
  /// The random offset when the failing kernel ran (read from `offsetAt`,
  /// the context's device offset, which the host sets once): a training
  /// loop that keeps the offset at the step index names the step.
  uint64_t offset;
  const uint64_t *offsetAt;
};

/// Fence slots of a context: fence n is recorded in event n % kFences.
constexpr int kFences = 64;

/// What a CUDA context owns (amprt_context::state).
struct State {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  /// cuBLASLt / cuDNN workspace (device memory).
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// A device word kernels use to report a data-dependent error (the first
  /// bad index), and its pinned host copy.
  int64_t *devStatus = nullptr;
  int64_t *hostStatus = nullptr;
  /// Pinned host slots for readScalars (kMaxScalars of 8 bytes).
  uint64_t *hostScalars = nullptr;
  /// AMPRT_CHECKS_DEFERRED's record of the first failure (pinned and
  /// mapped: the host's pointer, and the kernels').
  DeferredCheck *deferred = nullptr;
  DeferredCheck *deferredOnDevice = nullptr;
  /// amprt_fence_record's events (no timing), and the fence each holds.
  cudaEvent_t fences[kFences] = {};
  uint64_t fenceHeld[kFences] = {};
  /// The pinned copies of the host tables that upload() queued while
  /// recording a graph: its copies read them at every launch, so they
  /// live as long as the graph (Queue.cu moves them into it).
  std::vector<void *> recordedTables;
  /// Graphs amprt_graph_destroy got while a recording was open (it cannot
  /// wait for their launches then): freed when the recording ends.
  std::vector<amprt_graph *> doomedGraphs;
  /// AMPRT_CUDA_ALLOW_TF32=1: f32 GEMMs may use TF32 Tensor Cores.
  bool allowTf32 = false;
  /// AMPRT_CUDA_INDEX64=1 (for tests): the strided copies take their 64-bit
  /// index path even for tensors that fit 32-bit offsets.
  bool forceIndex64 = false;
  /// AMPRT_CUDNN_FIND=1: a convolution problem's algorithm is the fastest
  /// that cuDNN measures on the first call (cudnnFind*AlgorithmEx, as
  /// PyTorch's cudnn.benchmark), instead of the heuristics' first that runs.
  bool cudnnFind = false;
  /// Gemm.cu's cuBLASLt plans (descriptors, layouts and the heuristic's
  /// algorithm) by problem: a GEMM seen before skips the descriptor set-up
  /// and the heuristic query, host work that can outlast a small product.
  /// Type-erased so that this header needs no Gemm.cu type.
  std::map<std::string, std::shared_ptr<void>> gemmPlans;
#ifdef AMPRT_HAVE_CUDNN
  cudnnHandle_t cudnn = nullptr; // created on first use
  /// The cuDNN algorithm that ran each convolution problem (Conv.cu's key:
  /// direction, dtype, geometry): later calls skip the heuristics.
  std::map<std::string, int> convAlgos;
  /// Attention.cu's cuDNN frontend graphs by problem, built on first use;
  /// null for a problem cuDNN turned down (it runs on the host).
  /// Type-erased, as gemmPlans; released before the handle.
  std::map<std::string, std::shared_ptr<void>> attentionPlans;
#endif
};

inline State &state(amprt_context *ctx) {
  return *static_cast<State *>(ctx->state);
}
inline cudaStream_t stream(amprt_context *ctx) { return state(ctx).stream; }

/// Waits for all the work queued on the context's stream, counted as a
/// drain (amprt_queue_stats).
inline cudaError_t drain(amprt_context *ctx) {
  ++ctx->waits.drains;
  return cudaStreamSynchronize(stream(ctx));
}

/// Records a failed CUDA runtime call, and clears the thread's last error
/// (a failed call sets it too) so that the next launch check does not
/// report it again; an error that sticks to the device stays.
inline amprt_status cudaFail(amprt_context *ctx, const char *k,
                             const char *what, cudaError_t e) {
  cudaGetLastError();
  return ctx->fail(AMPRT_ERR_BACKEND, "%s: %s failed: %s (%s)", k, what,
                   cudaGetErrorName(e), cudaGetErrorString(e));
}

#define AMPRT_CUDA(ctx, k, call)                                               \
  do {                                                                         \
    cudaError_t amprt_cuda_e_ = (call);                                        \
    if (amprt_cuda_e_ != cudaSuccess)                                          \
      return ::amprt::cuda::cudaFail((ctx), (k), #call, amprt_cuda_e_);        \
  } while (0)

/// Checks the launch that just happened.
#define AMPRT_CUDA_LAUNCHED(ctx, k) AMPRT_CUDA(ctx, k, cudaGetLastError())

/// Value of the sentinel that devStatus holds when nothing went wrong
/// (cudaMemsetAsync with 0x7f).
constexpr int64_t kNoError = 0x7f7f7f7f7f7f7f7fLL;

//===----------------------------------------------------------------------===//
// Data checks: immediate (the call waits and fails) or deferred (the device
// records the first failure, the next wait reports it)
//===----------------------------------------------------------------------===//

/// True when the context's data checks are deferred: a call that checks
/// its data queues the check and returns without waiting.
inline bool deferChecks(amprt_context *ctx) {
  return ctx->dataChecks == AMPRT_CHECKS_DEFERRED;
}

/// Resets devStatus before a kernel that may report an error.
amprt_status clearStatus(amprt_context *ctx, const char *k);
/// Waits for the stream and returns devStatus (kNoError when clean). Only
/// for immediate checks: while recording a graph it refuses the call.
amprt_status readStatus(amprt_context *ctx, const char *k, int64_t &out);
/// The message of a deferred failure, as the immediate check words it.
amprt_status describeDeferred(amprt_context *ctx, int32_t message,
                              const char *k, long long v, long long at,
                              long long bound, double real);

/// Writes failure `c` of call `kernel` into `rec` unless it holds one (the
/// first failure wins). One thread of one kernel at a time.
__device__ __forceinline__ void
recordFailure(DeferredCheck *rec, const char *kernel, const DeferredCheck &c) {
  volatile DeferredCheck *r = rec;
  if (r->set)
    return;
  r->message = c.message;
  r->kernel = kernel;
  r->value = c.value;
  r->at = c.at;
  r->bound = c.bound;
  r->real = c.real;
  r->offset = r->offsetAt ? *r->offsetAt : 0;
  __threadfence_system();
  r->set = 1;
}

/// One thread, queued after a check: when the check failed (*status, the
/// first bad position, is not kNoError; status NULL: describe decides),
/// describe(bad, c) words the failure from the data as the check saw it,
/// and it is recorded.
template <typename Describe>
__global__ void deferKernel(const int64_t *status, DeferredCheck *rec,
                            const char *kernel, Describe describe) {
  int64_t bad = status ? *status : 0;
  DeferredCheck c = {};
  if ((status && bad == kNoError) || !describe(bad, c))
    return;
  recordFailure(rec, kernel, c);
}

/// Queues deferKernel for the check whose kernels wrote devStatus (or, with
/// fromStatus false, one that `describe` makes alone).
template <typename Describe>
amprt_status deferCheck(amprt_context *ctx, const char *k, Describe describe,
                        bool fromStatus = true) {
  State &s = state(ctx);
  deferKernel<<<1, 1, 0, s.stream>>>(fromStatus ? s.devStatus : nullptr,
                                     s.deferredOnDevice, k, describe);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// After the kernels of a call that wrote the first bad position to
/// devStatus: immediate checks wait and give it (kNoError: none); deferred
/// ones queue its record (deferCheck) and give kNoError.
template <typename Describe>
amprt_status statusOrDefer(amprt_context *ctx, const char *k, Describe describe,
                           int64_t &bad) {
  if (!deferChecks(ctx))
    return readStatus(ctx, k, bad);
  bad = kNoError;
  return deferCheck(ctx, k, describe);
}

/// Reports the failure that a deferred check recorded, once the stream is
/// idle up to it (after a wait), and forgets it; AMPRT_OK when none.
amprt_status reportDeferred(amprt_context *ctx);

/// The outcome of a check of index values.
struct IndexCheck {
  /// False: an immediate check found a bad index (the CPU code reports it).
  bool ok = true;
  /// Deferred checks: the call's status word (devStatus), which the kernels
  /// that index with the values read, to write nothing when one is bad
  /// (checkFailed); NULL otherwise.
  const int64_t *failed = nullptr;
};

/// True when the deferred check of this call found bad data (`failed`:
/// IndexCheck::failed).
__device__ __forceinline__ bool checkFailed(const int64_t *failed) {
  return failed && *failed != kNoError;
}

/// Index value e of an i64 or i32 tensor.
__device__ __forceinline__ int64_t indexValue(const void *idx, int32_t dt,
                                              int64_t e) {
  return dt == AMPRT_I64 ? static_cast<const int64_t *>(idx)[e]
                         : static_cast<const int32_t *>(idx)[e];
}

/// The most tensors one readScalars call reads.
constexpr int kMaxScalars = 8;

/// Copies the first element of each tensor in `ts` (NULL: skipped, its
/// value left as is) to the host, waits for the stream and stores it as a
/// double (readD) in `out`: dropout's immediate check of its ratio. While
/// recording a graph it refuses the call.
amprt_status readScalars(amprt_context *ctx, const char *k,
                         std::initializer_list<T> ts, double *out);

/// Checks every index of `indices` (i64 or i32) against [-len, len) on the
/// device. Immediate checks wait (check.ok false: one is out of range);
/// deferred ones record the first bad one as "index V at AT outside [-len,
/// len)" and set check.failed.
amprt_status indicesInRange(amprt_context *ctx, const char *k, T indices,
                            int64_t len, IndexCheck &check);

/// The context's random offset on the device (amprt_set_random_offset,
/// amprt_advance_random_offset): random kernels read it when they run, so
/// a recorded graph draws anew after each advance.
inline const uint64_t *randomOffset(amprt_context *ctx) {
  return ctx->deviceRandomOffset;
}

/// ABI 9's queue calls (Queue.cu), and what cudaOpen / cudaClose set up
/// for them: the deferred-check record, the fence events, the random
/// offset.
const QueueOps *cudaQueueOps();
amprt_status openQueue(amprt_context *ctx);
void closeQueue(amprt_context *ctx);

/// Stream-ordered scratch memory, released when the object dies (after the
/// kernels queued before the release).
/// It counts in the context's memory (amprt_memory_stats) while it lives,
/// and is refused past the context's limit.
struct Scratch {
  amprt_context *ctx = nullptr;
  void *p = nullptr;
  size_t counted = 0;
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() {
    if (p)
      cudaFreeAsync(p, stream(ctx));
    if (ctx)
      ctx->memory.give(counted);
  }
  amprt_status get(amprt_context *c, const char *k, size_t bytes) {
    ctx = c;
    size_t n = bytes ? bytes : 16;
    if (!c->memory.admits(n))
      return c->fail(AMPRT_ERR_OUT_OF_MEMORY,
                     "%s: %zu bytes of scratch would pass the context's "
                     "memory limit (%llu bytes)",
                     k, n, (unsigned long long)c->memory.limit);
    cudaError_t e = cudaMallocAsync(&p, n, stream(c));
    if (e != cudaSuccess) {
      p = nullptr;
      if (e == cudaErrorMemoryAllocation)
        ++c->memory.refused;
      return cudaFail(c, k, "cudaMallocAsync", e);
    }
    c->memory.add(n);
    counted = n;
    return AMPRT_OK;
  }
};

/// y[i] = acc[i] rounded once into y's float dtype, for numel(y) elements
/// (kernels that accumulate in an f32 scratch).
amprt_status storeFromF32(amprt_context *ctx, const char *k, const float *acc,
                          T y);

/// A zeroed f32 buffer of dx's size that kernels add into (atomics), then
/// rounded once into dx: dx itself when it is f32.
struct F32Accumulator {
  Scratch tmp;
  float *p = nullptr;
  amprt_status begin(amprt_context *ctx, const char *k, T dx) {
    size_t bytes = size_t(numel(dx)) * sizeof(float);
    p = static_cast<float *>(dx->data);
    if (dx->dtype != AMPRT_F32) {
      AMPRT_TRY(tmp.get(ctx, k, bytes));
      p = static_cast<float *>(tmp.p);
    }
    AMPRT_CUDA(ctx, k, cudaMemsetAsync(p, 0, bytes, stream(ctx)));
    return AMPRT_OK;
  }
  amprt_status finish(amprt_context *ctx, const char *k, T dx) {
    return dx->dtype == AMPRT_F32 ? AMPRT_OK : storeFromF32(ctx, k, p, dx);
  }
};

/// Device copy of `bytes` unless source and destination are one buffer.
inline amprt_status copyBytes(amprt_context *ctx, const char *k, void *dst,
                              const void *src, size_t bytes) {
  if (bytes && dst != src)
    AMPRT_CUDA(ctx, k,
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                               stream(ctx)));
  return AMPRT_OK;
}

/// Copies a host table to fresh scratch device memory on the stream (the
/// host table may die on return; while recording a graph the copy reads a
/// pinned duplicate that lives as long as the graph).
amprt_status upload(amprt_context *ctx, const char *k, const void *host,
                    size_t bytes, Scratch &dst);

/// Grid size for n elements at `threads` per block, `per` per thread.
inline unsigned gridFor(int64_t n, int threads, int per = 1) {
  int64_t b = (n + int64_t(threads) * per - 1) / (int64_t(threads) * per);
  if (b < 1)
    b = 1;
  if (b > 65535LL * 32)
    b = 65535LL * 32; // grid-stride loops cover the rest
  return unsigned(b);
}

//===----------------------------------------------------------------------===//
// Device conversions: the CPU backend's rounding (Convert.cpp)
//===----------------------------------------------------------------------===//

// f32ToF16, f16ToF32, f32ToBf16, bf16ToF32, loadF, storeF, readD, writeD,
// ... are amp/Runtime/Math/ElementAccess.h's, compiled for the device too.

/// True when the stored value is NaN or Inf (exponent bits all ones).
__device__ __forceinline__ bool nonFinite(const void *p, int32_t dt,
                                          int64_t i) {
  if (dt == AMPRT_F32)
    return (static_cast<const uint32_t *>(p)[i] & 0x7f800000u) == 0x7f800000u;
  uint16_t m = dt == AMPRT_F16 ? 0x7c00u : 0x7f80u;
  return (static_cast<const uint16_t *>(p)[i] & m) == m;
}

/// A one-element bool flag read on the device (NULL: `dflt`).
__device__ __forceinline__ bool ldFlag(const uint8_t *p, bool dflt) {
  return p ? *p != 0 : dflt;
}

//===----------------------------------------------------------------------===//
// Packets: float elements of a dtype known at compile time, moved 8 at a
// time with one aligned access per operand (the bandwidth-bound kernels)
//===----------------------------------------------------------------------===//

/// Storage of float dtype D (f32, f16 or bf16).
template <int32_t D>
using StorageOf =
    typename std::conditional<D == AMPRT_F32, float, uint16_t>::type;

template <int32_t D> __device__ __forceinline__ float widen(StorageOf<D> s) {
  if constexpr (D == AMPRT_F32)
    return s;
  else if constexpr (D == AMPRT_F16)
    return f16ToF32(s);
  else
    return bf16ToF32(s);
}

/// One rounding into D (ElementAccess.h's, so the CPU's bits).
template <int32_t D> __device__ __forceinline__ StorageOf<D> narrow(float v) {
  if constexpr (D == AMPRT_F32)
    return v;
  else if constexpr (D == AMPRT_F16)
    return f32ToF16(v);
  else
    return f32ToBf16(v);
}

constexpr int kPacket = 8;

/// kPacket consecutive elements of dtype D (32 bytes of f32, 16 of f16).
template <int32_t D> struct alignas(sizeof(StorageOf<D>) * kPacket) Packet {
  StorageOf<D> v[kPacket];
};

/// True when p may be read or written as Packets of dtype dt.
inline bool packetAligned(const void *p, int32_t dt) {
  return reinterpret_cast<uintptr_t>(p) % (amprt_dtype_size(dt) * kPacket) == 0;
}

/// Calls F(dtype constant) for a float dtype (f32, f16, bf16); false for
/// any other.
template <typename F> bool byFloatDtype(int32_t dt, F &&f) {
  switch (dt) {
  case AMPRT_F32:
    f(std::integral_constant<int32_t, AMPRT_F32>());
    return true;
  case AMPRT_F16:
    f(std::integral_constant<int32_t, AMPRT_F16>());
    return true;
  case AMPRT_BF16:
    f(std::integral_constant<int32_t, AMPRT_BF16>());
    return true;
  default:
    return false;
  }
}

/// An operation whose scalars lie in device memory has bind(), which reads
/// them once per thread and returns the operation to apply.
template <typename Op, typename = void> struct HasBind : std::false_type {};
template <typename Op>
struct HasBind<Op, std::void_t<decltype(std::declval<const Op &>().bind())>>
    : std::true_type {};
template <typename Op> __device__ __forceinline__ auto bound(const Op &op) {
  if constexpr (HasBind<Op>::value)
    return op.bind();
  else
    return op;
}

/// A bound operation may say, with readsSecond(), that it ignores x1 (an
/// accumulator it overwrites): x1 is then not read, and op gets 0 for it.
template <typename Op, typename = void>
struct HasReadsSecond : std::false_type {};
template <typename Op>
struct HasReadsSecond<
    Op, std::void_t<decltype(std::declval<const Op &>().readsSecond())>>
    : std::true_type {};
template <typename Op>
__device__ __forceinline__ bool readsSecond(const Op &op) {
  if constexpr (HasReadsSecond<Op>::value)
    return op.readsSecond();
  else
    return true;
}

/// y = op(x0) (NX == 1) or op(x0, x1) (NX == 2) element by element, x0 of
/// dtype D0, x1 of D1, y of DY, every pointer packetAligned: one packet per
/// thread per trip of a grid-stride loop, then the n % kPacket last
/// elements one by one. `op` takes and returns f32. y may be x0 or x1.
template <int32_t D0, int32_t D1, int32_t DY, int NX, typename Op>
__global__ void packetMapKernel(const void *x0, const void *x1, void *y,
                                int64_t n, Op unbound) {
  auto op = bound(unbound);
  bool read1 = NX == 2 && readsSecond(op);
  int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t packets = n / kPacket;
  auto *p0 = static_cast<const Packet<D0> *>(x0);
  auto *p1 = static_cast<const Packet<D1> *>(x1);
  auto *py = static_cast<Packet<DY> *>(y);
  for (int64_t p = tid; p < packets; p += stride) {
    Packet<D0> a = p0[p];
    Packet<D1> b = {};
    if (read1)
      b = p1[p];
    Packet<DY> out;
#pragma unroll
    for (int j = 0; j < kPacket; ++j) {
      if constexpr (NX == 2)
        out.v[j] = narrow<DY>(op(widen<D0>(a.v[j]), widen<D1>(b.v[j])));
      else
        out.v[j] = narrow<DY>(op(widen<D0>(a.v[j])));
    }
    py[p] = out;
  }
  auto *s0 = static_cast<const StorageOf<D0> *>(x0);
  auto *s1 = static_cast<const StorageOf<D1> *>(x1);
  auto *sy = static_cast<StorageOf<DY> *>(y);
  for (int64_t i = packets * kPacket + tid; i < n; i += stride) {
    if constexpr (NX == 2)
      sy[i] = narrow<DY>(op(widen<D0>(s0[i]), read1 ? widen<D1>(s1[i]) : 0.f));
    else
      sy[i] = narrow<DY>(op(widen<D0>(s0[i])));
  }
}

/// Grid of a packetMapKernel over n elements.
inline unsigned packetGrid(int64_t n) {
  return gridFor((n + kPacket - 1) / kPacket, 256);
}

/// Launches packetMapKernel with every operand of dtype dt when all are
/// packetAligned; false (nothing launched) otherwise.
template <int NX, typename Op>
bool launchPacketMap(cudaStream_t st, int32_t dt, const void *x0,
                     const void *x1, void *y, int64_t n, Op op) {
  if (!packetAligned(x0, dt) || !packetAligned(y, dt) ||
      (NX == 2 && !packetAligned(x1, dt)))
    return false;
  return byFloatDtype(dt, [&](auto d) {
    constexpr int32_t D = decltype(d)::value;
    packetMapKernel<D, D, D, NX>
        <<<packetGrid(n), 256, 0, st>>>(x0, x1, y, n, op);
  });
}

//===----------------------------------------------------------------------===//
// Reductions inside a warp / a block
//===----------------------------------------------------------------------===//

template <typename V> __device__ __forceinline__ V warpSum(V v) {
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// The row kernels (softmax, the cross-entropy loss): one warp per row,
/// kWarps warps per block.
constexpr int kWarps = 8;
inline unsigned rowGrid(int64_t rows) { return gridFor(rows, kWarps); }

/// Sum of v over the block (blockDim.x a multiple of 32, at most 1024),
/// returned to every thread; `part` is 32 elements of shared memory. The
/// order is fixed by the launch shape, so results repeat run to run.
template <typename V> __device__ __forceinline__ V blockSum(V v, V *part) {
  v = warpSum(v);
  __syncthreads(); // part may still be read by a previous call
  if (threadIdx.x % 32 == 0)
    part[threadIdx.x / 32] = v;
  __syncthreads();
  V t = 0;
  for (int i = 0; i < int(blockDim.x / 32); ++i)
    t += part[i];
  return t;
}

//===----------------------------------------------------------------------===//
// Broadcasting (numpy) index maps, passed by value to kernels
//===----------------------------------------------------------------------===//

struct Bcast {
  int32_t rank = 0;
  int64_t dims[AMPRT_MAX_RANK] = {};
  int64_t st[3][AMPRT_MAX_RANK] = {}; // element strides of up to 3 inputs
};

/// Offsets of output element o into each of the first K inputs.
template <int K>
__device__ __forceinline__ void bcastOffsets(const Bcast &b, int64_t o,
                                             int64_t (&off)[K]) {
  for (int j = 0; j < K; ++j)
    off[j] = 0;
  for (int d = b.rank - 1; d >= 0; --d) {
    int64_t n = b.dims[d];
    int64_t i = o % n;
    o /= n;
    for (int j = 0; j < K; ++j)
      off[j] += i * b.st[j][d];
  }
}

/// Fills a Bcast for output shape `out` and the given input shapes.
Bcast makeBcast(const Shape &out, std::initializer_list<Shape> ins);

/// C[M, N] = op(A) op(B) + beta C for row-major f32 matrices with leading
/// dimensions in elements, K > 0, on cuBLASLt (f32 compute; TF32 only with
/// AMPRT_CUDA_ALLOW_TF32): the products of the recurrent kernels (Gemm.cu).
amprt_status sgemmRows(amprt_context *ctx, const char *k, bool transA,
                       bool transB, int64_t M, int64_t N, int64_t K,
                       const float *A, int64_t lda, const float *B, int64_t ldb,
                       float *C, int64_t ldc, float beta);

/// reduce_sum (mean false) or reduce_mean of float x over the dims marked in
/// `red` into y (its elements in the order of x's kept dims), double sums
/// (Reduce.cu; the arguments already checked).
amprt_status reduceFloat(amprt_context *ctx, const char *k, T x,
                         const std::vector<bool> &red, T y, bool mean);

//===----------------------------------------------------------------------===//
// The overrides, by file
//===----------------------------------------------------------------------===//

/// Each file sets the entries it implements.
void registerConvert(KernelTable &t);       // Convert.cu
void registerElementwise(KernelTable &t);   // Elementwise.cu
void registerGemm(KernelTable &t);          // Gemm.cu
void registerMultiTensor(KernelTable &t);   // MultiTensor.cu
void registerLossScaler(KernelTable &t);    // LossScaler.cu
void registerOptimizer(KernelTable &t);     // Optimizer.cu
void registerSoftmax(KernelTable &t);       // Softmax.cu
void registerLoss(KernelTable &t);          // Loss.cu
void registerReduce(KernelTable &t);        // Reduce.cu
void registerConv(KernelTable &t);          // Conv.cu (cuDNN)
void registerShape(KernelTable &t);         // Shape.cu
void registerNormalization(KernelTable &t); // Normalization.cu
void registerPool(KernelTable &t);          // Pool.cu
void registerResize(KernelTable &t);        // Resize.cu
void registerRandom(KernelTable &t);        // Random.cu
void registerSelect(KernelTable &t);        // Select.cu
void registerRecurrent(KernelTable &t);     // Recurrent.cu
void registerCollective(KernelTable &t);    // Collective.cu (NCCL)
void registerCompare(KernelTable &t);       // Compare.cu
void registerAttention(KernelTable &t);     // Attention.cu (cuDNN frontend)

} // namespace cuda
} // namespace amprt

#endif // AMP_KERNELS_COMMON_CUH
