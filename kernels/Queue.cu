//===- Queue.cu - steps without waiting on the CUDA backend ---------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The "cuda" backend's QueueOps (runtime ABI 9, "Steps without waiting";
// the argument checks and the fence numbers are lib/Runtime/Queue.cpp's):
//
//  * the random offset lives in device memory (amprt_context::
//    deviceRandomOffset, managed) and moves by a queued one-thread kernel,
//    so a recorded graph advances it at each launch and every random kernel
//    reads it when it runs;
//  * a deferred data check (AMPRT_CHECKS_DEFERRED) records the first
//    failure in a pinned, mapped record (Common.cuh's DeferredCheck) that
//    the host reads after each wait: amprt_synchronize (and onHost's wait),
//    an amprt_memcpy to or from the host, amprt_fence_wait;
//  * host memory is page-locked, amprt_memcpy_async a cudaMemcpyAsync;
//  * fences are a ring of kFences events: fence n is recorded in slot
//    n % kFences, which afterwards holds n or a later fence, and waiting
//    for a later one also waits for n;
//  * graphs are CUDA graphs captured from the context's stream
//    (cudaStreamCaptureModeThreadLocal: a call that would wait or allocate
//    is refused before it reaches CUDA, see Backend.h's onHost and
//    refuseWhileRecording).
//
// A graph's memory. The kernels' stream-ordered scratch (Scratch,
// cudaMallocAsync) recorded in a graph becomes graph memory: each call adds
// and gives back its scratch in the context's memory account while it is
// recorded, as when it runs, so the account does not drift; the graph then
// holds the memory of its allocations from its upload until it is
// destroyed. That share is measured once, as the growth of the device's
// graph memory (cudaGraphMemAttrUsedMemCurrent) across the graph's upload
// in amprt_graph_end, counted in the context's memory (in_use, peak) while
// the graph lives, and given back, with the memory trimmed, by
// amprt_graph_destroy.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <atomic>
#include <cstring>
#include <new>
#include <string>

using namespace amprt;
using namespace amprt::cuda;

/// A recorded graph (Runtime.h's opaque amprt_graph).
struct amprt_graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  /// Device memory its allocations hold, counted in the context's memory.
  uint64_t bytes = 0;
  /// The pinned host tables its copies read (upload() while recording).
  std::vector<void *> tables;
};

namespace {

/// Graph memory of the device now (0 when the query fails).
uint64_t graphMemoryUsed(int device) {
  unsigned long long v = 0;
  if (cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent,
                                     &v) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

/// Frees a graph whose launches are done.
void freeGraph(amprt_context *ctx, amprt_graph *g) {
  if (g->exec)
    cudaGraphExecDestroy(g->exec);
  if (g->graph)
    cudaGraphDestroy(g->graph);
  for (void *p : g->tables)
    cudaFreeHost(p);
  ctx->memory.give(g->bytes);
  delete g;
}

/// Frees the graphs amprt_graph_destroy left while a recording was open;
/// the stream must be idle.
void freeDoomed(amprt_context *ctx) {
  State &s = state(ctx);
  for (amprt_graph *g : s.doomedGraphs)
    freeGraph(ctx, g);
  if (!s.doomedGraphs.empty())
    cudaDeviceGraphMemTrim(s.device);
  s.doomedGraphs.clear();
  cudaGetLastError();
}

/// *offset = value, or += value.
__global__ void randomOffsetKernel(uint64_t *offset, uint64_t value,
                                   bool advance) {
  *offset = advance ? *offset + value : value;
}

amprt_status cudaRandomOffset(amprt_context *ctx, uint64_t value,
                              bool advance) {
  const char *k =
      advance ? "amprt_advance_random_offset" : "amprt_set_random_offset";
  randomOffsetKernel<<<1, 1, 0, stream(ctx)>>>(ctx->deviceRandomOffset, value,
                                               advance);
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

/// The kernels read ctx->dataChecks (set by the generic code) at each call.
/// Immediate checks wait, which a recording cannot hold.
amprt_status cudaDataChecks(amprt_context *ctx, int32_t mode) {
  if (mode == AMPRT_CHECKS_IMMEDIATE)
    return ctx->refuseWhileRecording(
        "amprt_set_data_checks", "immediate data checks wait for the device");
  return AMPRT_OK;
}

/// Page-locked (portable: every device copies from it without staging).
void *cudaHostAllocate(amprt_context *, size_t bytes) {
  void *p = nullptr;
  if (cudaHostAlloc(&p, bytes ? bytes : 64, cudaHostAllocPortable) !=
      cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void cudaHostRelease(amprt_context *, void *p) {
  if (cudaFreeHost(p) != cudaSuccess)
    cudaGetLastError();
}

amprt_status cudaCopyAsync(amprt_context *ctx, void *dst, const void *src,
                           size_t bytes, int32_t) {
  AMPRT_CUDA(ctx, "amprt_memcpy_async",
             cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream(ctx)));
  return AMPRT_OK;
}

amprt_status cudaFenceRecord(amprt_context *ctx, uint64_t fence) {
  State &s = state(ctx);
  size_t slot = size_t(fence % kFences);
  AMPRT_CUDA(ctx, "amprt_fence_record",
             cudaEventRecord(s.fences[slot], s.stream));
  s.fenceHeld[slot] = fence;
  return AMPRT_OK;
}

amprt_status cudaFenceWait(amprt_context *ctx, uint64_t fence) {
  const char *k = "amprt_fence_wait";
  State &s = state(ctx);
  size_t slot = size_t(fence % kFences);
  // The slot holds this fence or one recorded after it, which the device
  // passes later.
  if (s.fenceHeld[slot] < fence)
    return ctx->fail(AMPRT_ERR_INTERNAL, "%s: fence %llu has no event", k,
                     (unsigned long long)fence);
  if (cudaEventQuery(s.fences[slot]) == cudaErrorNotReady)
    ++ctx->waits.fence_waits;
  cudaGetLastError(); // not ready is no error
  AMPRT_CUDA(ctx, k, cudaEventSynchronize(s.fences[slot]));
  return reportDeferred(ctx);
}

amprt_status cudaGraphBegin(amprt_context *ctx) {
  State &s = state(ctx);
  cudaGetLastError(); // an earlier error is no failure of the recording
  AMPRT_CUDA(
      ctx, "amprt_graph_begin",
      cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
  return AMPRT_OK;
}

amprt_status cudaGraphEnd(amprt_context *ctx, bool failed, amprt_graph **out) {
  const char *k = "amprt_graph_end";
  State &s = state(ctx);
  *out = nullptr;
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(s.stream, &g);
  std::vector<void *> tables;
  tables.swap(s.recordedTables);
  cudaGraphExec_t exec = nullptr;
  // Nothing recorded ran: drop it all, and any error the recording left.
  auto drop = [&] {
    if (exec)
      cudaGraphExecDestroy(exec);
    if (g)
      cudaGraphDestroy(g);
    for (void *p : tables)
      cudaFreeHost(p);
    cudaGetLastError();
  };
  if (!s.doomedGraphs.empty() && cudaStreamSynchronize(s.stream) == cudaSuccess)
    freeDoomed(ctx);
  if (failed) { // the generic code words the refusal
    drop();
    return AMPRT_ERR_UNSUPPORTED;
  }
  if (e != cudaSuccess || !g) {
    drop();
    return ctx->fail(AMPRT_ERR_BACKEND,
                     "%s: no graph: the recording failed on the device "
                     "(cudaStreamEndCapture: %s, %s)",
                     k, cudaGetErrorName(e), cudaGetErrorString(e));
  }
  // Every call's scratch is freed in the graph; AutoFreeOnLaunch covers
  // an allocation that was not.
  e = cudaGraphInstantiate(&exec, g, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  if (e != cudaSuccess) {
    drop();
    return cudaFail(ctx, k, "cudaGraphInstantiate", e);
  }
  // The graph's memory is mapped when it is uploaded (see the header).
  uint64_t before = graphMemoryUsed(s.device);
  e = cudaGraphUpload(exec, s.stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(s.stream);
  if (e != cudaSuccess) {
    drop();
    return cudaFail(ctx, k, "cudaGraphUpload", e);
  }
  uint64_t after = graphMemoryUsed(s.device);
  uint64_t held = after > before ? after - before : 0;
  // The graph's memory counts against the context's limit as an
  // allocation would (amprt_set_memory_limit).
  if (!ctx->memory.admits(held)) {
    drop();
    cudaDeviceGraphMemTrim(s.device);
    cudaGetLastError();
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY,
                     "%s: the graph holds %llu bytes of device memory, past "
                     "the context's limit (%llu bytes, %llu in use)",
                     k, (unsigned long long)held,
                     (unsigned long long)ctx->memory.limit,
                     (unsigned long long)ctx->memory.inUse);
  }
  auto *graph = new (std::nothrow) amprt_graph;
  if (!graph) {
    drop();
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY, "%s: out of memory", k);
  }
  graph->graph = g;
  graph->exec = exec;
  graph->bytes = held;
  graph->tables = std::move(tables);
  ctx->memory.add(graph->bytes);
  *out = graph;
  return AMPRT_OK;
}

amprt_status cudaGraphRun(amprt_context *ctx, amprt_graph *graph) {
  AMPRT_CUDA(ctx, "amprt_graph_launch",
             cudaGraphLaunch(graph->exec, stream(ctx)));
  return AMPRT_OK;
}

/// Waits for the graph's launches and frees it. While a recording is open
/// the wait cannot happen: the graph is freed when the recording ends.
void cudaGraphFree(amprt_context *ctx, amprt_graph *graph) {
  State &s = state(ctx);
  if (ctx->capturing) {
    s.doomedGraphs.push_back(graph);
    return;
  }
  cudaStreamSynchronize(s.stream);
  freeGraph(ctx, graph);
  // The device keeps freed graph memory for later graphs; give it back.
  cudaDeviceGraphMemTrim(s.device);
  cudaGetLastError();
}

} // namespace

const QueueOps *amprt::cuda::cudaQueueOps() {
  static const QueueOps ops = {
      cudaRandomOffset, cudaDataChecks,  cudaHostAllocate, cudaHostRelease,
      cudaCopyAsync,    cudaFenceRecord, cudaFenceWait,    cudaGraphBegin,
      cudaGraphEnd,     cudaGraphRun,    cudaGraphFree};
  return &ops;
}

amprt_status amprt::cuda::openQueue(amprt_context *ctx) {
  const char *k = "cuda";
  State &s = state(ctx);
  void *rec = nullptr;
  AMPRT_CUDA(ctx, k,
             cudaHostAlloc(&rec, sizeof(DeferredCheck),
                           cudaHostAllocMapped | cudaHostAllocPortable));
  s.deferred = static_cast<DeferredCheck *>(rec);
  std::memset(rec, 0, sizeof(DeferredCheck));
  void *onDevice = nullptr;
  AMPRT_CUDA(ctx, k, cudaHostGetDevicePointer(&onDevice, rec, 0));
  s.deferredOnDevice = static_cast<DeferredCheck *>(onDevice);
  for (cudaEvent_t &ev : s.fences)
    AMPRT_CUDA(ctx, k, cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  return AMPRT_OK;
}

void amprt::cuda::closeQueue(amprt_context *ctx) {
  State &s = state(ctx);
  if (s.stream && ctx->capturing) { // destroyed while recording: drop it
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(s.stream, &g) == cudaSuccess && g)
      cudaGraphDestroy(g);
    ctx->capturing = false;
  }
  if (s.stream)
    cudaStreamSynchronize(s.stream);
  freeDoomed(ctx);
  for (void *p : s.recordedTables)
    cudaFreeHost(p);
  s.recordedTables.clear();
  for (cudaEvent_t &ev : s.fences) {
    if (ev)
      cudaEventDestroy(ev);
    ev = nullptr;
  }
  cudaFreeHost(s.deferred);
  s.deferred = s.deferredOnDevice = nullptr;
  cudaGetLastError();
}

amprt_status amprt::cuda::clearStatus(amprt_context *ctx, const char *k) {
  AMPRT_CUDA(ctx, k,
             cudaMemsetAsync(state(ctx).devStatus, 0x7f, sizeof(int64_t),
                             stream(ctx)));
  return AMPRT_OK;
}

amprt_status amprt::cuda::reportDeferred(amprt_context *ctx) {
  volatile DeferredCheck *r = state(ctx).deferred;
  if (!r || !r->set)
    return AMPRT_OK;
  std::atomic_thread_fence(std::memory_order_acquire);
  int32_t message = r->message;
  const char *k = r->kernel ? r->kernel : "a kernel";
  long long v = r->value, at = r->at, bound = r->bound;
  double real = r->real;
  unsigned long long offset = r->offset;
  r->set = 0; // reported once, then forgotten
  amprt_status bad = describeDeferred(ctx, message, k, v, at, bound, real);
  // The offset the call ran at (Runtime.h, amprt_data_checks).
  ctx->error += " [random offset " + std::to_string(offset) + "]";
  return bad;
}

amprt_status amprt::cuda::describeDeferred(amprt_context *ctx, int32_t message,
                                           const char *k, long long v,
                                           long long at, long long bound,
                                           double real) {
  amprt_status bad = AMPRT_ERR_INVALID_ARGUMENT;
  switch (message) {
  case kLabelOutside:
    return ctx->fail(bad, "%s: label %lld at %lld outside [0, %lld)", k, v, at,
                     bound);
  case kIndexOutside:
    return ctx->fail(bad, "%s: index %lld at %lld outside [-%lld, %lld)", k, v,
                     at, bound, bound);
  case kTupleIndexOutside:
    return ctx->fail(bad, "%s: index %lld of tuple %lld outside [-%lld, %lld)",
                     k, v, at, bound, bound);
  case kPoolIndexOutside:
    return ctx->fail(bad, "%s: indices[%lld] = %lld outside dx (%lld elements)",
                     k, at, v, bound);
  case kProbabilityOutside:
    return ctx->fail(bad, "%s: p[%lld] = %g is outside [0, 1]", k, at, real);
  case kRatioOutside:
    return ctx->fail(bad, "%s: ratio %g outside [0, 1)", k, real);
  default:
    return ctx->fail(AMPRT_ERR_INTERNAL, "%s: data check %d failed", k,
                     int(message));
  }
}
