//===- Memory.cpp - device memory: allocation, accounting, limit ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amprt_malloc and amprt_free through the context's backend, and what the
// context holds: every buffer counted with its size while it lives, the
// peak, and a limit past which an allocation fails as on a full device
// (amprt_memory_stats; the CUDA backend counts its workspace and scratch
// into the same account, kernels/Common.cuh). docs/RuntimeABI.md, "Memory".
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

using namespace amprt;

extern "C" {

amprt_status amprt_malloc(amprt_context *ctx, size_t bytes, void **out) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (!out)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT, "amprt_malloc: out is NULL");
  *out = nullptr;
  AMPRT_TRY(ctx->refuseWhileRecording("amprt_malloc", "it allocates"));
  MemoryAccount &m = ctx->memory;
  if (!m.admits(bytes))
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY,
                     "amprt_malloc: %zu bytes would pass the context's memory "
                     "limit (%llu bytes, %llu in use)",
                     bytes, (unsigned long long)m.limit,
                     (unsigned long long)m.inUse);
  void *p = ctx->backend->alloc(ctx, bytes);
  if (!p) {
    ++m.refused;
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY,
                     "amprt_malloc: cannot allocate %zu bytes", bytes);
  }
  try {
    m.sizes[p] = bytes;
  } catch (...) {
    ctx->backend->release(ctx, p);
    return ctx->fail(AMPRT_ERR_OUT_OF_MEMORY, "amprt_malloc: out of memory");
  }
  m.add(bytes);
  *out = p;
  return AMPRT_OK;
}

amprt_status amprt_free(amprt_context *ctx, void *ptr) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (!ptr)
    return AMPRT_OK;
  AMPRT_TRY(ctx->refuseWhileRecording(
      "amprt_free", "it waits for the work that may use the memory"));
  auto it = ctx->memory.sizes.find(ptr);
  if (it != ctx->memory.sizes.end()) {
    ctx->memory.give(it->second);
    ctx->memory.sizes.erase(it);
  }
  ctx->backend->release(ctx, ptr);
  return AMPRT_OK;
}

amprt_status amprt_memory_stats_get(amprt_context *ctx,
                                    amprt_memory_stats *out) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (!out)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_memory_stats_get: out is NULL");
  const MemoryAccount &m = ctx->memory;
  *out = {};
  out->in_use = m.inUse;
  out->peak = m.peak;
  out->limit = m.limit;
  out->refused = m.refused;
  if (ctx->backend->memInfo)
    ctx->backend->memInfo(ctx, &out->device_free, &out->device_total);
  return AMPRT_OK;
}

amprt_status amprt_memory_reset_peak(amprt_context *ctx) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  ctx->memory.peak = ctx->memory.inUse;
  return AMPRT_OK;
}

amprt_status amprt_set_memory_limit(amprt_context *ctx, uint64_t bytes) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  ctx->memory.limit = bytes;
  return AMPRT_OK;
}

} // extern "C"
