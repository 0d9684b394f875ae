//===- Queue.cpp - steps without waiting: offsets, checks, fences, graphs -===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The calls of runtime ABI 9 that let a training loop queue step after step
// without waiting for the device (docs/RuntimeABI.md, "Steps without
// waiting"): the argument checks and fence numbering here, the work in the
// backend's QueueOps. A backend without a queue (the CPU) runs every call
// when it is made: its copies are done on return, its fences have passed
// when recorded, its data checks fail the call itself, and it has no
// graphs.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdlib>

using namespace amprt;

amprt_status amprt_context::refuseWhileRecording(const char *what,
                                                 const char *why) {
  if (!capturing)
    return AMPRT_OK;
  captureRefused = true;
  return fail(AMPRT_ERR_UNSUPPORTED, "%s cannot be recorded in a graph: %s",
              what, why);
}

namespace {

amprt_status checkKind(amprt_context *ctx, const char *k, int32_t kind) {
  if (kind < AMPRT_HOST_TO_HOST || kind > AMPRT_DEVICE_TO_DEVICE)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: invalid kind %d", k,
                     kind);
  return AMPRT_OK;
}

} // namespace

extern "C" {

amprt_status amprt_advance_random_offset(amprt_context *ctx, uint64_t delta) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (const QueueOps *q = ctx->backend->queue)
    return q->randomOffset(ctx, delta, /*advance=*/true);
  ctx->randomOffset += delta;
  return AMPRT_OK;
}

amprt_status amprt_set_data_checks(amprt_context *ctx, int32_t mode) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (mode != AMPRT_CHECKS_IMMEDIATE && mode != AMPRT_CHECKS_DEFERRED)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_set_data_checks: invalid mode %d", mode);
  if (const QueueOps *q = ctx->backend->queue)
    AMPRT_TRY(q->dataChecks(ctx, mode));
  ctx->dataChecks = mode;
  return AMPRT_OK;
}

amprt_status amprt_host_alloc(amprt_context *ctx, size_t bytes, void **out) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  const char *k = "amprt_host_alloc";
  if (!out)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: out is NULL", k);
  *out = nullptr;
  AMPRT_TRY(ctx->refuseWhileRecording(k, "it allocates"));
  if (const QueueOps *q = ctx->backend->queue) {
    *out = q->hostAlloc(ctx, bytes);
  } else {
    size_t rounded = (bytes + 63) / 64 * 64;
    *out = std::aligned_alloc(64, rounded ? rounded : 64);
  }
  if (!*out)
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY, "%s: %zu bytes: out of memory", k,
                     bytes);
  return AMPRT_OK;
}

amprt_status amprt_host_free(amprt_context *ctx, void *ptr) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (!ptr)
    return AMPRT_OK;
  AMPRT_TRY(ctx->refuseWhileRecording("amprt_host_free", "it frees memory"));
  if (const QueueOps *q = ctx->backend->queue)
    q->hostFree(ctx, ptr);
  else
    std::free(ptr);
  return AMPRT_OK;
}

amprt_status amprt_memcpy_async(amprt_context *ctx, void *dst, const void *src,
                                size_t bytes, int32_t kind) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  const char *k = "amprt_memcpy_async";
  AMPRT_TRY(checkKind(ctx, k, kind));
  if (bytes && (!dst || !src))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: NULL pointer with %zu bytes", k, bytes);
  if (!bytes)
    return AMPRT_OK;
  if (const QueueOps *q = ctx->backend->queue)
    return q->copyAsync(ctx, dst, src, bytes, kind);
  return ctx->backend->copy(ctx, dst, src, bytes, kind);
}

amprt_status amprt_fence_record(amprt_context *ctx, uint64_t *fence) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  const char *k = "amprt_fence_record";
  if (!fence)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: fence is NULL", k);
  AMPRT_TRY(ctx->refuseWhileRecording(
      k, "a fence is a point of one queue, not of every launch"));
  uint64_t n = ctx->fencesRecorded + 1;
  if (const QueueOps *q = ctx->backend->queue)
    AMPRT_TRY(q->fenceRecord(ctx, n));
  else
    ctx->fencesPassed = n;
  ctx->fencesRecorded = n;
  *fence = n;
  return AMPRT_OK;
}

amprt_status amprt_fence_wait(amprt_context *ctx, uint64_t fence) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  const char *k = "amprt_fence_wait";
  if (fence == 0 || fence > ctx->fencesRecorded)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: fence %llu was not recorded (the last is %llu)", k,
                     (unsigned long long)fence,
                     (unsigned long long)ctx->fencesRecorded);
  AMPRT_TRY(ctx->refuseWhileRecording(k, "it waits for the device"));
  if (fence <= ctx->fencesPassed)
    return AMPRT_OK;
  if (const QueueOps *q = ctx->backend->queue)
    AMPRT_TRY(q->fenceWait(ctx, fence));
  ctx->fencesPassed = fence;
  return AMPRT_OK;
}

amprt_status amprt_graph_begin(amprt_context *ctx) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  const char *k = "amprt_graph_begin";
  const QueueOps *q = ctx->backend->queue;
  if (!q)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED,
                     "%s: the %s backend has no graphs (its calls run when "
                     "they are made)",
                     k, ctx->backend->name);
  if (ctx->capturing)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: already recording a graph", k);
  if (ctx->profile)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED,
                     "%s: AMPRT_PROFILE times each call apart: no graphs "
                     "while profiling",
                     k);
  if (ctx->dataChecks != AMPRT_CHECKS_DEFERRED)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED,
                     "%s: immediate data checks wait for the device: set "
                     "AMPRT_CHECKS_DEFERRED first",
                     k);
  AMPRT_TRY(q->graphBegin(ctx));
  ctx->capturing = true;
  ctx->captureRefused = false;
  return AMPRT_OK;
}

amprt_status amprt_graph_end(amprt_context *ctx, amprt_graph **out) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  // The message of a refused call stays readable until the next call.
  std::string refusal = ctx->captureRefused ? ctx->error : std::string();
  ctx->error.clear();
  const char *k = "amprt_graph_end";
  if (out)
    *out = nullptr;
  if (!ctx->capturing)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: not recording a graph",
                     k);
  bool refused = ctx->captureRefused || !out;
  ctx->capturing = false;
  ctx->captureRefused = false;
  amprt_graph *g = nullptr;
  amprt_status st = ctx->backend->queue->graphEnd(ctx, refused, &g);
  if (!out)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: out is NULL (the recording is dropped)", k);
  if (refused)
    return ctx->fail(AMPRT_ERR_UNSUPPORTED, "%s: no graph: %s", k,
                     refusal.empty() ? "a call was refused" : refusal.c_str());
  if (st != AMPRT_OK)
    return st;
  *out = g;
  return AMPRT_OK;
}

amprt_status amprt_graph_launch(amprt_context *ctx, amprt_graph *graph) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  const char *k = "amprt_graph_launch";
  if (!graph)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: graph is NULL", k);
  if (ctx->capturing || !ctx->backend->queue)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "%s: %s", k,
                     ctx->capturing ? "while recording a graph"
                                    : "this backend has no graphs");
  AMPRT_TRY(ctx->backend->queue->graphLaunch(ctx, graph));
  ++ctx->waits.graph_launches;
  return AMPRT_OK;
}

amprt_status amprt_queue_stats_get(amprt_context *ctx, amprt_queue_stats *out) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (!out)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_queue_stats_get: out is NULL");
  *out = ctx->waits;
  return AMPRT_OK;
}

amprt_status amprt_graph_destroy(amprt_context *ctx, amprt_graph *graph) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (!graph)
    return AMPRT_OK;
  if (!ctx->backend->queue)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_graph_destroy: this backend has no graphs");
  ctx->backend->queue->graphDestroy(ctx, graph);
  return AMPRT_OK;
}

} // extern "C"
