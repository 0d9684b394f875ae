//===- Backend.cu - the CUDA backend: device, memory, kernel table --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The "cuda" backend of the runtime (docs/RuntimeABI.md, "CUDA backend").
// Memory is managed (cudaMallocManaged) so that every kernel without a CUDA
// override still runs the CPU reference code on the same pointers: the
// dispatcher (AMPRT_DISPATCH / onHost in amp/Runtime/Backend/Backend.h)
// waits for the context's stream before the host touches them. Each context
// owns one non-blocking stream, a cuBLASLt handle and a workspace; kernels
// queue on the stream and return, as do device-to-device copies; the other
// amprt_memcpy kinds and amprt_synchronize wait for it, and then report
// what a deferred data check recorded (Queue.cu, with the rest of ABI 9's
// queue calls).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

void *cudaAllocManaged(amprt_context *ctx, size_t bytes) {
  // cudaMallocManaged aligns to at least 256 bytes; 0 bytes still gives a
  // unique pointer.
  void *p = nullptr;
  if (cudaMallocManaged(&p, bytes ? bytes : 256, cudaMemAttachGlobal) !=
      cudaSuccess) {
    cudaGetLastError(); // clear the sticky-free error state
    return nullptr;
  }
  // Keep the pages on the device; the CPU fallback reads them remotely or
  // migrates them on demand.
  cudaMemLocation loc = {};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = state(ctx).device;
  if (cudaMemAdvise(p, bytes ? bytes : 256, cudaMemAdviseSetPreferredLocation,
                    loc) != cudaSuccess)
    cudaGetLastError(); // advice only
  return p;
}

void cudaRelease(amprt_context *ctx, void *p) {
  if (!p)
    return;
  // Work queued on the stream may still use p.
  drain(ctx);
  cudaFree(p);
}

amprt_status cudaCopy(amprt_context *ctx, void *dst, const void *src,
                      size_t bytes, int32_t kind) {
  if (!bytes)
    return AMPRT_OK;
  // Managed and host pointers are both valid with cudaMemcpyDefault; the
  // copy is ordered after the queued kernels. A device-to-device copy is
  // queued like a kernel; any other is finished on return, so the host may
  // read what it copied out and reuse what it copied in.
  AMPRT_CUDA(ctx, "amprt_memcpy",
             cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(ctx)));
  if (kind == AMPRT_DEVICE_TO_DEVICE)
    return AMPRT_OK;
  AMPRT_CUDA(ctx, "amprt_memcpy", drain(ctx));
  return reportDeferred(ctx);
}

amprt_status cudaSet(amprt_context *ctx, void *dst, int value, size_t bytes) {
  if (!bytes)
    return AMPRT_OK;
  AMPRT_CUDA(ctx, "amprt_memset",
             cudaMemsetAsync(dst, value, bytes, stream(ctx)));
  return AMPRT_OK;
}

/// amprt_synchronize, and onHost's wait: a deferred failure is reported by
/// either.
amprt_status cudaSync(amprt_context *ctx) {
  AMPRT_CUDA(ctx, "amprt_synchronize", drain(ctx));
  return reportDeferred(ctx);
}

void cudaClose(amprt_context *ctx) {
  auto *s = static_cast<State *>(ctx->state);
  if (!s)
    return;
  cudaSetDevice(s->device);
  closeQueue(ctx); // ends a recording left open, then waits for the stream
  if (s->stream)
    cudaStreamSynchronize(s->stream);
  cudaFree(ctx->deviceRandomOffset);
  ctx->deviceRandomOffset = nullptr;
#ifdef AMPRT_HAVE_CUDNN
  s->attentionPlans.clear(); // their plans go before the handle
  if (s->cudnn)
    cudnnDestroy(s->cudnn);
#endif
  s->gemmPlans.clear(); // their descriptors go before the handle
  if (s->lt)
    cublasLtDestroy(s->lt);
  cudaFree(s->workspace);
  cudaFree(s->devStatus);
  cudaFreeHost(s->hostStatus);
  cudaFreeHost(s->hostScalars);
  if (s->stream)
    cudaStreamDestroy(s->stream);
  delete s;
  ctx->state = nullptr;
}

amprt_status cudaOpen(amprt_context *ctx) {
  const char *k = "cuda";
  auto *s = new (std::nothrow) State();
  if (!s)
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY, "%s: out of memory", k);
  ctx->state = s;
  // Device 0, or the one the calling thread has selected.
  cudaError_t e = cudaGetDevice(&s->device);
  if (e != cudaSuccess) {
    cudaClose(ctx);
    return cudaFail(ctx, k, "cudaGetDevice", e);
  }
  auto envFlag = [](const char *name) {
    const char *v = std::getenv(name);
    return v && *v && std::strcmp(v, "0") != 0;
  };
  s->allowTf32 = envFlag("AMPRT_CUDA_ALLOW_TF32");
  s->forceIndex64 = envFlag("AMPRT_CUDA_INDEX64");
  s->cudnnFind = envFlag("AMPRT_CUDNN_FIND");
  struct Step {
    const char *what;
    cudaError_t err;
  };
  Step steps[] = {
      {"cudaStreamCreateWithFlags",
       cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)},
      {"cudaMalloc(workspace)", cudaMalloc(&s->workspace, kWorkspaceBytes)},
      {"cudaMalloc(status)", cudaMalloc(&s->devStatus, sizeof(int64_t))},
      {"cudaMallocHost(status)",
       cudaMallocHost(&s->hostStatus, sizeof(int64_t))},
      {"cudaMallocHost(scalars)",
       cudaMallocHost(&s->hostScalars, kMaxScalars * sizeof(uint64_t))},
  };
  for (const Step &st : steps)
    if (st.err != cudaSuccess) {
      cudaClose(ctx);
      return cudaFail(ctx, k, st.what, st.err);
    }
  if (amprt_status st = openQueue(ctx)) {
    cudaClose(ctx);
    return st;
  }
  // The random offset lives on the device, where the queue moves it
  // (Queue.cu), in managed memory that a CPU fallback reads once the stream
  // is idle (amprt_context::currentRandomOffset).
  void *offset = cudaAllocManaged(ctx, sizeof(uint64_t));
  if (!offset) {
    cudaClose(ctx);
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY,
                     "%s: cudaMallocManaged(random offset) failed", k);
  }
  ctx->deviceRandomOffset = static_cast<uint64_t *>(offset);
  s->deferred->offsetAt = ctx->deviceRandomOffset;
  e = cudaMemsetAsync(offset, 0, sizeof(uint64_t), s->stream);
  if (e != cudaSuccess) {
    cudaClose(ctx);
    return cudaFail(ctx, k, "cudaMemsetAsync(random offset)", e);
  }
  s->workspaceBytes = kWorkspaceBytes;
  // The workspace is the context's too (amprt_memory_stats).
  ctx->memory.add(kWorkspaceBytes);
  // Scratch (Scratch, cudaMallocAsync) comes from the device's default
  // pool, which by default returns freed memory to the driver at every
  // synchronization, so each training step would allocate it afresh
  // (about 0.1 ms per buffer on an H100): keep it in the pool instead.
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, s->device) == cudaSuccess) {
    uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
  cudaGetLastError();
  cublasStatus_t b = cublasLtCreate(&s->lt);
  if (b != CUBLAS_STATUS_SUCCESS) {
    s->lt = nullptr;
    cudaClose(ctx);
    return ctx->fail(AMPRT_ERR_BACKEND, "%s: cublasLtCreate failed (%d)", k,
                     int(b));
  }
  return AMPRT_OK;
}

void cudaMemInfo(amprt_context *ctx, uint64_t *freeBytes, uint64_t *total) {
  size_t f = 0, t = 0;
  // No queued work: while recording a graph, asked in the relaxed capture
  // mode, which does not end the recording.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (ctx->capturing)
    cudaThreadExchangeStreamCaptureMode(&mode);
  cudaSetDevice(state(ctx).device);
  if (cudaMemGetInfo(&f, &t) != cudaSuccess)
    cudaGetLastError();
  if (ctx->capturing)
    cudaThreadExchangeStreamCaptureMode(&mode);
  *freeBytes = f;
  *total = t;
}

/// An "nccl" communicator's collectives run on its GPU, which must be the
/// context's; an "mpi" one runs them on the host (onHost), any device.
amprt_status cudaAcceptComm(amprt_context *ctx, const amprt_comm *comm) {
  if (comm && comm->nccl && comm->device != state(ctx).device)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_context_set_comm: the nccl communicator is on "
                     "device %d, the context on device %d",
                     int(comm->device), state(ctx).device);
  return AMPRT_OK;
}

KernelTable makeTable() {
  KernelTable t = {};
  registerConvert(t);
  registerElementwise(t);
  registerGemm(t);
  registerMultiTensor(t);
  registerLossScaler(t);
  registerOptimizer(t);
  registerSoftmax(t);
  registerLoss(t);
  registerReduce(t);
  registerConv(t);
  registerShape(t);
  registerNormalization(t);
  registerPool(t);
  registerResize(t);
  registerRandom(t);
  registerSelect(t);
  registerRecurrent(t);
  registerCollective(t);
  registerCompare(t);
  registerAttention(t);
  return t;
}

} // namespace

amprt_status amprt::cuda::readStatus(amprt_context *ctx, const char *k,
                                     int64_t &out) {
  AMPRT_TRY(ctx->refuseWhileRecording(k, "it waits for the device"));
  State &s = state(ctx);
  AMPRT_CUDA(ctx, k,
             cudaMemcpyAsync(s.hostStatus, s.devStatus, sizeof(int64_t),
                             cudaMemcpyDeviceToHost, s.stream));
  AMPRT_CUDA(ctx, k, drain(ctx));
  out = *s.hostStatus;
  return AMPRT_OK;
}

amprt_status amprt::cuda::readScalars(amprt_context *ctx, const char *k,
                                      std::initializer_list<T> ts,
                                      double *out) {
  AMPRT_TRY(ctx->refuseWhileRecording(k, "it waits for the device"));
  State &s = state(ctx);
  if (ts.size() > size_t(kMaxScalars))
    return ctx->fail(AMPRT_ERR_INTERNAL, "%s: too many scalars", k);
  int i = 0;
  bool copied = false;
  for (T t : ts) {
    if (t && numel(t) > 0) {
      AMPRT_CUDA(ctx, k,
                 cudaMemcpyAsync(s.hostScalars + i, t->data,
                                 amprt_dtype_size(t->dtype), cudaMemcpyDefault,
                                 s.stream));
      copied = true;
    }
    ++i;
  }
  if (!copied)
    return AMPRT_OK; // nothing to wait for
  AMPRT_CUDA(ctx, k, drain(ctx));
  i = 0;
  for (T t : ts) {
    if (t && numel(t) > 0)
      out[i] = readD(s.hostScalars + i, t->dtype, 0);
    ++i;
  }
  return AMPRT_OK;
}

namespace {
/// The smallest j with idx[j] outside [-len, len) goes to *status.
__global__ void checkIndicesKernel(const void *idx, int32_t di, int64_t ni,
                                   int64_t len, int64_t *status) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < ni;
       j += int64_t(gridDim.x) * blockDim.x) {
    int64_t v = indexValue(idx, di, j);
    if (v < -len || v >= len)
      atomicMin(reinterpret_cast<unsigned long long *>(status),
                static_cast<unsigned long long>(j));
  }
}

/// Gather's words for index `bad` (Shape.cpp's gatherShape, Select.cpp's
/// checkGatherElements).
struct IndexOutside {
  const void *idx;
  int32_t dt;
  int64_t len;
  __device__ bool operator()(int64_t bad, DeferredCheck &c) const {
    c.message = kIndexOutside;
    c.value = indexValue(idx, dt, bad);
    c.at = bad;
    c.bound = len;
    return true;
  }
};

} // namespace

amprt_status amprt::cuda::indicesInRange(amprt_context *ctx, const char *k,
                                         T indices, int64_t len,
                                         IndexCheck &check) {
  int64_t ni = numel(indices);
  check = IndexCheck();
  if (ni == 0)
    return AMPRT_OK;
  AMPRT_TRY(clearStatus(ctx, k));
  checkIndicesKernel<<<gridFor(ni, 256), 256, 0, stream(ctx)>>>(
      indices->data, indices->dtype, ni, len, state(ctx).devStatus);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  int64_t bad;
  AMPRT_TRY(statusOrDefer(
      ctx, k, IndexOutside{indices->data, indices->dtype, len}, bad));
  check.ok = bad == kNoError;
  if (deferChecks(ctx))
    check.failed = state(ctx).devStatus;
  return AMPRT_OK;
}

amprt_status amprt::cuda::upload(amprt_context *ctx, const char *k,
                                 const void *host, size_t bytes, Scratch &dst) {
  AMPRT_TRY(dst.get(ctx, k, bytes));
  if (!bytes)
    return AMPRT_OK;
  // From pageable memory the copy is staged before the call returns, so
  // the host table may die afterwards. A recorded copy reads its source at
  // every launch instead: it copies a pinned duplicate, allocated in the
  // relaxed capture mode (an allocation is no queued work), which the
  // graph keeps.
  const void *src = host;
  if (ctx->capturing) {
    std::vector<void *> &held = state(ctx).recordedTables;
    held.push_back(nullptr);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t e = cudaMallocHost(&held.back(), bytes);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (e != cudaSuccess) {
      held.pop_back();
      return cudaFail(ctx, k, "cudaMallocHost(recorded table)", e);
    }
    std::memcpy(held.back(), host, bytes);
    src = held.back();
  }
  AMPRT_CUDA(
      ctx, k,
      cudaMemcpyAsync(dst.p, src, bytes, cudaMemcpyHostToDevice, stream(ctx)));
  return AMPRT_OK;
}

namespace {
__global__ void fromF32Kernel(const float *acc, void *y, int32_t dt,
                              int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(y, dt, i, acc[i]);
}
} // namespace

amprt_status amprt::cuda::storeFromF32(amprt_context *ctx, const char *k,
                                       const float *acc, T y) {
  int64_t n = numel(y);
  if (n == 0)
    return AMPRT_OK;
  fromF32Kernel<<<gridFor(n, 256, 4), 256, 0, stream(ctx)>>>(acc, y->data,
                                                             y->dtype, n);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

Bcast amprt::cuda::makeBcast(const Shape &out,
                             std::initializer_list<Shape> ins) {
  Bcast b;
  b.rank = int32_t(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    b.dims[d] = out[d];
  int j = 0;
  for (const Shape &s : ins) {
    Shape st = broadcastStrides(s, out);
    for (size_t d = 0; d < st.size(); ++d)
      b.st[j][d] = st[d];
    ++j;
  }
  return b;
}

const Backend *amprt::cudaBackend(std::string &why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    why = e != cudaSuccess
              ? std::string("no CUDA device (cudaGetDeviceCount: ") +
                    cudaGetErrorString(e) + ")"
              : std::string("no CUDA device (cudaGetDeviceCount found 0)");
    cudaGetLastError();
    return nullptr;
  }
  static const KernelTable table = makeTable();
  static const Backend backend = {
      "cuda",    cudaAllocManaged, cudaRelease, cudaCopy,
      cudaSet,   cudaSync,         &table,      cudaOpen,
      cudaClose, cudaAcceptComm,   cudaMemInfo, cudaQueueOps()};
  return &backend;
}
