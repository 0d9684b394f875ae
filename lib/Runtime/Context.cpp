//===- Context.cpp - contexts, backends, errors, copies -------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A context binds a backend (its allocator, copies and kernel overrides) and
// keeps the last error message; what it allocates is counted in Memory.cpp.
// Backends are chosen by name at run time; the CPU backend is always present,
// the CUDA backend (kernels/) is registered when the library is built with it
// (AMPRT_HAVE_CUDA) and answers only when a device is present
// (docs/RuntimeABI.md, "CUDA backend").
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace amprt;

amprt_status amprt_context::fail(amprt_status status, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  error = buf;
  return status;
}

namespace {

thread_local std::string createError;

void *cpuAlloc(amprt_context *, size_t bytes) {
  // 64-byte alignment for vector loads; size rounded up as aligned_alloc
  // requires, and never 0 so every allocation is unique.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  return std::aligned_alloc(64, rounded);
}
void cpuRelease(amprt_context *, void *p) { std::free(p); }
amprt_status cpuCopy(amprt_context *, void *dst, const void *src, size_t bytes,
                     int32_t) {
  if (bytes)
    std::memmove(dst, src, bytes);
  return AMPRT_OK;
}
amprt_status cpuSet(amprt_context *, void *dst, int value, size_t bytes) {
  if (bytes)
    std::memset(dst, value, bytes);
  return AMPRT_OK;
}
amprt_status cpuSync(amprt_context *) { return AMPRT_OK; }
void cpuMemInfo(amprt_context *, uint64_t *freeBytes, uint64_t *total) {
  long page = sysconf(_SC_PAGESIZE), phys = sysconf(_SC_PHYS_PAGES);
  *total = page > 0 && phys > 0 ? uint64_t(phys) * uint64_t(page) : 0;
  // Linux's MemAvailable: free memory plus what the kernel can reclaim
  // (the page cache); sysconf's free pages alone leave the cache out.
  *freeBytes = 0;
  if (FILE *f = std::fopen("/proc/meminfo", "r")) {
    char line[128];
    unsigned long long kib;
    while (std::fgets(line, sizeof(line), f))
      if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
        *freeBytes = uint64_t(kib) * 1024;
        break;
      }
    std::fclose(f);
  }
  long avail = sysconf(_SC_AVPHYS_PAGES);
  if (!*freeBytes && page > 0 && avail > 0)
    *freeBytes = uint64_t(avail) * uint64_t(page);
}

// The CPU backend overrides nothing: every entry is the reference kernel.
const KernelTable cpuKernels = {};
const Backend cpu = {"cpu",   cpuAlloc, cpuRelease,  cpuCopy,
                     cpuSet,  cpuSync,  &cpuKernels, nullptr,
                     nullptr, nullptr,  cpuMemInfo,  nullptr};

#ifdef AMPRT_HAVE_CUDA
constexpr const char *kBackends = "cpu, cuda";
#else
constexpr const char *kBackends = "cpu";
#endif

} // namespace

const Backend *amprt::cpuBackend() { return &cpu; }

void amprt::setLastError(const std::string &message) { createError = message; }

extern "C" {

int32_t amprt_abi_version(void) { return AMPRT_ABI_VERSION; }

amprt_status amprt_context_create(const char *backend, amprt_context **out) {
  createError.clear();
  if (!out) {
    createError = "amprt_context_create: out is NULL";
    return AMPRT_ERR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  const Backend *b = nullptr;
  bool best = !backend || !*backend;
#ifdef AMPRT_HAVE_CUDA
  // "cuda", or the best available one: the CUDA backend when a device
  // answers.
  if (best || std::strcmp(backend, "cuda") == 0) {
    std::string why;
    b = cudaBackend(why);
    if (!b && !best) {
      createError =
          "amprt_context_create: backend 'cuda' is not available: " + why;
      return AMPRT_ERR_BACKEND;
    }
  }
#endif
  if (!b && (best || std::strcmp(backend, "cpu") == 0))
    b = cpuBackend();
  if (!b) {
    createError = std::string("amprt_context_create: unknown backend '") +
                  backend + "' (this build has: " + kBackends + ")";
    return AMPRT_ERR_BACKEND;
  }
  auto *ctx = new (std::nothrow) amprt_context();
  if (!ctx) {
    createError = "amprt_context_create: out of memory";
    return AMPRT_ERR_OUT_OF_MEMORY;
  }
  ctx->backend = b;
  if (b->open) {
    amprt_status st = b->open(ctx);
    if (st != AMPRT_OK) {
      createError = "amprt_context_create: backend '" + std::string(b->name) +
                    "': " + ctx->error;
      delete ctx;
      return st;
    }
  }
  ctx->profile = profileCreate(b);
  *out = ctx;
  return AMPRT_OK;
}

amprt_status amprt_context_destroy(amprt_context *ctx) {
  if (ctx)
    profileDestroy(ctx);
  if (ctx && ctx->backend && ctx->backend->close)
    ctx->backend->close(ctx);
  delete ctx;
  return AMPRT_OK;
}

const char *amprt_backend_name(const amprt_context *ctx) {
  return ctx && ctx->backend ? ctx->backend->name : "";
}

const char *amprt_last_error(const amprt_context *ctx) {
  return ctx ? ctx->error.c_str() : createError.c_str();
}

amprt_status amprt_memcpy(amprt_context *ctx, void *dst, const void *src,
                          size_t bytes, int32_t kind) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (kind < AMPRT_HOST_TO_HOST || kind > AMPRT_DEVICE_TO_DEVICE)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_memcpy: invalid kind %d", kind);
  if (bytes && (!dst || !src))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_memcpy: NULL pointer with %zu bytes", bytes);
  if (kind != AMPRT_DEVICE_TO_DEVICE)
    AMPRT_TRY(ctx->refuseWhileRecording(
        "amprt_memcpy", "a copy to or from the host waits for the device "
                        "(amprt_memcpy_async does not)"));
  return ctx->backend->copy(ctx, dst, src, bytes, kind);
}

amprt_status amprt_memset(amprt_context *ctx, void *dst, int value,
                          size_t bytes) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (bytes && !dst)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "amprt_memset: NULL pointer with %zu bytes", bytes);
  return ctx->backend->set(ctx, dst, value, bytes);
}

amprt_status amprt_synchronize(amprt_context *ctx) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  AMPRT_TRY(ctx->refuseWhileRecording("amprt_synchronize",
                                      "it waits for the device"));
  return ctx->backend->sync(ctx);
}

amprt_status amprt_set_random_offset(amprt_context *ctx, uint64_t offset) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (const QueueOps *q = ctx->backend->queue)
    return q->randomOffset(ctx, offset, /*advance=*/false);
  ctx->randomOffset = offset;
  return AMPRT_OK;
}

} // extern "C"
