//===- Profile.cpp - AMPRT_PROFILE: per-kernel time and host fallbacks ----===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// With AMPRT_PROFILE set (and not "0"), a device context times every kernel
// call between two waits for its device and counts the calls that ran on
// the host (a kernel the backend does not implement, or a case it hands to
// the CPU code). The table, slowest kernels first, goes to stderr when the
// context is destroyed. AMPRT_PROFILE_SKIP=N leaves the first N calls out
// (a training step's worth: the first step loads kernels and picks
// algorithms). The waits serialize the device, so the numbers say where a
// step's time goes, not how fast the step runs without them.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

using namespace amprt;

namespace amprt {

struct Profile {
  struct Entry {
    uint64_t calls = 0, hostCalls = 0;
    double seconds = 0;
  };
  std::map<std::string, Entry> kernels;
  const char *current = nullptr; // the kernel being timed, if any
  int depth = 0;
  uint64_t skip = 0; // calls still to leave out
};

} // namespace amprt

Profile *amprt::profileCreate(const Backend *b) {
  const char *v = std::getenv("AMPRT_PROFILE");
  if (!v || !*v || std::strcmp(v, "0") == 0 || b == cpuBackend())
    return nullptr;
  auto *p = new Profile();
  if (const char *s = std::getenv("AMPRT_PROFILE_SKIP"))
    p->skip = std::strtoull(s, nullptr, 10);
  return p;
}

void amprt::profileHostCall(amprt_context *ctx) {
  Profile &p = *ctx->profile;
  if (p.current)
    ++p.kernels[p.current].hostCalls;
}

amprt_status amprt::profileCall(amprt_context *ctx, const char *kernel,
                                amprt_status (*call)(void *), void *arg) {
  Profile &p = *ctx->profile;
  if (p.depth > 0) // a kernel that calls another: time the outer one only
    return call(arg);
  if (p.skip > 0) {
    --p.skip;
    return call(arg);
  }
  // A failed wait reports an earlier asynchronous fault: it is the
  // caller's error, not a time.
  if (amprt_status st = ctx->backend->sync(ctx))
    return st;
  auto t0 = std::chrono::steady_clock::now();
  p.current = kernel;
  ++p.depth;
  amprt_status st = call(arg);
  --p.depth;
  amprt_status done = ctx->backend->sync(ctx);
  p.current = nullptr;
  if (st == AMPRT_OK && done != AMPRT_OK)
    return done;
  Profile::Entry &e = p.kernels[kernel];
  ++e.calls;
  e.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return st;
}

void amprt::profileDestroy(amprt_context *ctx) {
  Profile *p = ctx->profile;
  if (!p)
    return;
  ctx->profile = nullptr;
  std::vector<std::pair<std::string, Profile::Entry>> rows(p->kernels.begin(),
                                                           p->kernels.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  });
  double total = 0;
  for (const auto &r : rows)
    total += r.second.seconds;
  std::fprintf(stderr,
               "amprt profile (%s backend): %.3f ms in kernel calls\n"
               "  %-34s %9s %9s %11s %9s %6s\n",
               ctx->backend->name, total * 1e3, "kernel", "calls", "on host",
               "total ms", "mean us", "share");
  for (const auto &[name, e] : rows)
    std::fprintf(stderr, "  %-34s %9llu %9llu %11.3f %9.1f %5.1f%%\n",
                 name.c_str(), (unsigned long long)e.calls,
                 (unsigned long long)e.hostCalls, e.seconds * 1e3,
                 e.calls ? e.seconds / double(e.calls) * 1e6 : 0.0,
                 total > 0 ? 100.0 * e.seconds / total : 0.0);
  delete p;
}
