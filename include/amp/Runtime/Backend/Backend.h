//===- Backend.h - the runtime's backends and contexts ----------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The interface between the runtime's C ABI and its backends, private to
// the runtime (lib/Runtime) and its CUDA backend (kernels/), not part of the
// ABI: the kernel table a backend fills, the backend struct, the context,
// and how a kernel call runs: guard() for its errors, AMPRT_DISPATCH to the
// context's backend, onHost() back to the CPU code. Defined in lib/Runtime
// (Context.cpp, Profile.cpp) but for cudaBackend (kernels/Backend.cu); the
// AmpRuntimeBackend target.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_BACKEND_BACKEND_H
#define AMP_RUNTIME_BACKEND_BACKEND_H

#include "amp/Runtime/Kernels.h"

#include <cstdint>
#include <new>
#include <string>
#include <unordered_map>

namespace amprt {

/// One pointer per Ops.def entry. A backend that implements a kernel sets
/// its entry; a NULL entry means "the CPU implementation".
struct KernelTable {
#define AMPRT_KERNEL(name, kind, params) amprt_status(*name) params;
#include "amp/Runtime/Ops.def"
};

/// What a backend with a queue of its own does for the calls of "Steps
/// without waiting" (ABI 9, Queue.cpp). A backend without one (the CPU)
/// runs every call when it is made: its copies are done on return, every
/// fence has passed, and it has no graphs. Every entry is set.
struct QueueOps {
  /// Sets the random offset (advance: adds to it) after the queued work.
  amprt_status (*randomOffset)(amprt_context *ctx, uint64_t value,
                               bool advance);
  /// amprt_data_checks: how the kernels report bad data from now on.
  amprt_status (*dataChecks)(amprt_context *ctx, int32_t mode);
  void *(*hostAlloc)(amprt_context *ctx, size_t bytes);
  void (*hostFree)(amprt_context *ctx, void *ptr);
  amprt_status (*copyAsync)(amprt_context *ctx, void *dst, const void *src,
                            size_t bytes, int32_t kind);
  /// Records fence number `fence` (the generic code numbers them).
  amprt_status (*fenceRecord)(amprt_context *ctx, uint64_t fence);
  /// Waits until the device passed `fence` (recorded, never passed yet
  /// as far as the generic code knows), then reports a deferred failure.
  amprt_status (*fenceWait)(amprt_context *ctx, uint64_t fence);
  amprt_status (*graphBegin)(amprt_context *ctx);
  /// Ends the recording; `failed`: a call was refused while recording, so
  /// no graph is made (*out NULL) and the recording is dropped.
  amprt_status (*graphEnd)(amprt_context *ctx, bool failed, amprt_graph **out);
  amprt_status (*graphLaunch)(amprt_context *ctx, amprt_graph *graph);
  void (*graphDestroy)(amprt_context *ctx, amprt_graph *graph);
};

/// A backend: its memory functions and its kernel overrides. Every function
/// gets the context, whose `state` holds what the backend set up in `open`
/// (a stream, library handles). `open` and `close` may be NULL.
struct Backend {
  const char *name;
  void *(*alloc)(amprt_context *ctx, size_t bytes);
  void (*release)(amprt_context *ctx, void *ptr);
  amprt_status (*copy)(amprt_context *ctx, void *dst, const void *src,
                       size_t bytes, int32_t kind);
  amprt_status (*set)(amprt_context *ctx, void *dst, int value, size_t bytes);
  /// Waits for the queued work; on failure records a message in ctx.
  amprt_status (*sync)(amprt_context *ctx);
  const KernelTable *kernels;
  amprt_status (*open)(amprt_context *ctx);
  void (*close)(amprt_context *ctx);
  /// Accepts or refuses a communicator for the context (its collectives'
  /// engine and device must suit the backend); on refusal records a message
  /// in ctx. NULL: every communicator is accepted.
  amprt_status (*acceptComm)(amprt_context *ctx, const amprt_comm *comm);
  /// The memory of the context's device: free and total bytes (the CPU:
  /// available and installed physical memory).
  void (*memInfo)(amprt_context *ctx, uint64_t *free, uint64_t *total);
  /// ABI 9's queue (NULL: none; every call runs when it is made).
  const QueueOps *queue;
};

/// What a context holds of its device's memory (amprt_memory_stats,
/// Memory.cpp): every amprt_malloc buffer and the backend's own workspace
/// and stream-ordered scratch, against an optional limit. An allocation
/// asks admits() first and is add()ed once it succeeded, so a failed one
/// never reaches the peak.
struct MemoryAccount {
  uint64_t inUse = 0, peak = 0;
  uint64_t limit = 0; ///< 0: none
  /// Allocations refused: by the limit, the device or the host.
  uint64_t refused = 0;
  /// The size each live amprt_malloc buffer was counted with.
  std::unordered_map<const void *, uint64_t> sizes;
  /// Whether `bytes` more stay within the limit; a refusal is counted.
  bool admits(uint64_t bytes) {
    if (limit && (inUse > limit || bytes > limit - inUse)) {
      ++refused;
      return false;
    }
    return true;
  }
  /// Counts `bytes` in, once they are allocated.
  void add(uint64_t bytes) {
    inUse += bytes;
    if (inUse > peak)
      peak = inUse;
  }
  void give(uint64_t bytes) { inUse -= bytes < inUse ? bytes : inUse; }
};

const Backend *cpuBackend();

/// Sets the message amprt_last_error(NULL) returns on this thread: the
/// failures of the calls that have no context (amprt_context_create,
/// amprt_comm_create and amprt_comm_destroy). Context.cpp.
void setLastError(const std::string &message);

/// The CUDA backend (kernels/Backend.cu), only in builds with CUDA
/// (AMPRT_HAVE_CUDA): NULL with the reason in `why` when no device answers.
const Backend *cudaBackend(std::string &why);

struct Profile;

} // namespace amprt

struct amprt_context {
  const amprt::Backend *backend = nullptr;
  /// Backend-owned per-context state (NULL for the CPU).
  void *state = nullptr;
  std::string error;
  /// AMPRT_PROFILE=1 on a device context (Profile.cpp), else NULL.
  amprt::Profile *profile = nullptr;
  /// amprt_set_random_offset: moves every random kernel's stream. A
  /// backend with a queue keeps it on the device instead
  /// (deviceRandomOffset, memory the host reads once the queue is idle).
  uint64_t randomOffset = 0;
  uint64_t *deviceRandomOffset = nullptr;
  /// The random offset the queued work has reached: what a kernel running
  /// on the host (after the queue drained) draws with.
  uint64_t currentRandomOffset() const {
    return deviceRandomOffset ? *deviceRandomOffset : randomOffset;
  }
  /// amprt_set_data_checks (amprt_data_checks).
  int32_t dataChecks = AMPRT_CHECKS_IMMEDIATE;
  /// Between amprt_graph_begin and amprt_graph_end; `captureRefused` once a
  /// call could not be recorded (the recording makes no graph then).
  bool capturing = false;
  bool captureRefused = false;
  /// The kernel AMPRT_DISPATCH is running (for onHost's refusal).
  const char *currentKernel = nullptr;
  /// The last fence number given out (amprt_fence_record) and the last one
  /// known to have passed.
  uint64_t fencesRecorded = 0, fencesPassed = 0;
  /// amprt_queue_stats: counted by the backend where it waits (drains,
  /// fence waits) and by Queue.cpp (launches).
  amprt_queue_stats waits = {0, 0, 0};
  /// amprt_context_set_comm: what the collectives reduce over (not owned;
  /// NULL: a group of one rank).
  amprt_comm *comm = nullptr;
  /// The device memory the context holds (amprt_memory_stats).
  amprt::MemoryAccount memory;
  /// Records a failure and returns its status.
  amprt_status fail(amprt_status status, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
  /// While recording a graph: refuses `what` (AMPRT_ERR_UNSUPPORTED, "<what>
  /// cannot be recorded in a graph: <why>") and marks the recording
  /// failed; otherwise AMPRT_OK.
  amprt_status refuseWhileRecording(const char *what, const char *why);
};

namespace amprt {

/// Runs a kernel body: checks ctx, clears the error, turns exceptions into
/// statuses (the runtime is built with exceptions so allocation failures are
/// reported, never fatal).
template <typename F>
amprt_status guard(amprt_context *ctx, const char *kernel, F &&body) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    ++ctx->memory.refused;
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY, "%s: out of memory", kernel);
  } catch (...) {
    return ctx->fail(AMPRT_ERR_INTERNAL, "%s: internal error", kernel);
  }
}

/// Per-kernel profile of a device context, switched on by the environment
/// variable AMPRT_PROFILE (not "0"): every kernel call is timed between two
/// waits for the device, calls that ran (partly) on the host are counted,
/// and the table goes to stderr when the context is destroyed
/// (AMPRT_PROFILE_SKIP=N leaves out the first N calls). Serializes the
/// device: for finding slow or host-bound kernels, not for timings.
Profile *profileCreate(const Backend *b);
void profileDestroy(amprt_context *ctx);
void profileHostCall(amprt_context *ctx);
amprt_status profileCall(amprt_context *ctx, const char *kernel,
                         amprt_status (*call)(void *), void *arg);
template <typename F>
amprt_status profiled(amprt_context *ctx, const char *kernel, F &f) {
  return profileCall(
      ctx, kernel, [](void *p) { return (*static_cast<F *>(p))(); }, &f);
}

/// Runs `cpuCall` (a public amprt_ kernel) on the CPU for a context of
/// another backend: waits for the device first (its memory is managed, so
/// the host may touch it once the queued work is done) and binds the CPU
/// backend for the duration, so kernels the CPU code calls stay on the CPU.
/// The one place where a device context falls back to the host.
template <typename F> amprt_status onHost(amprt_context *ctx, F &&cpuCall) {
  const Backend *b = ctx->backend;
  ctx->error.clear();
  if (ctx->capturing)
    return ctx->refuseWhileRecording(
        ctx->currentKernel ? ctx->currentKernel : "a kernel",
        "it would run on the host (no device kernel for these arguments)");
  if (ctx->profile)
    profileHostCall(ctx);
  amprt_status st = b->sync(ctx);
  if (st != AMPRT_OK)
    return st;
  ctx->backend = cpuBackend();
  st = cpuCall();
  ctx->backend = b;
  return st;
}

/// Forwards to the context backend's own kernel when it has one; a kernel
/// it does not override runs the CPU code through onHost.
#define AMPRT_DISPATCH(name, ctx, ...)                                         \
  do {                                                                         \
    if ((ctx) && (ctx)->backend && (ctx)->backend != amprt::cpuBackend()) {    \
      auto amprt_run_ = [&]() -> amprt_status {                                \
        (ctx)->currentKernel = #name;                                          \
        if ((ctx)->backend->kernels && (ctx)->backend->kernels->name)          \
          return (ctx)->backend->kernels->name((ctx), __VA_ARGS__);            \
        return amprt::onHost(                                                  \
            (ctx), [&] { return amprt_##name((ctx), __VA_ARGS__); });          \
      };                                                                       \
      return (ctx)->profile ? amprt::profiled((ctx), #name, amprt_run_)        \
                            : amprt_run_();                                    \
    }                                                                          \
  } while (0)

#define AMPRT_TRY(expr)                                                        \
  do {                                                                         \
    amprt_status amprt_try_status_ = (expr);                                   \
    if (amprt_try_status_ != AMPRT_OK)                                         \
      return amprt_try_status_;                                                \
  } while (0)

} // namespace amprt

#endif // AMP_RUNTIME_BACKEND_BACKEND_H
