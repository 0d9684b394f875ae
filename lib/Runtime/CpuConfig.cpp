//===- CpuConfig.cpp - the CPU backend's threads and arithmetic -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// One thread pool for the whole CPU backend: OpenMP's, the pool oneDNN
// itself runs on (Debian's libdnnl is built with DNNL_RUNTIME_OMP on GCC's
// libgomp, the runtime this library is compiled against), so the GEMMs and
// the runtime's own loops never bring two pools of spinning threads to the
// same cores. parallelFor splits [0, n) into one contiguous piece per
// thread; the kernels that use it compute each element from its own
// inputs (or reduce in a fixed order inside a piece), so their results do
// not depend on the thread count.
//
// The arithmetic path (amprt_cpu_path) and the thread count are
// process-wide: the environment variables AMPRT_CPU_REFERENCE and
// AMPRT_NUM_THREADS set them when the library loads, the ABI 4 functions
// after.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "OneDnn.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include <sched.h>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace amprt;

namespace {

/// The CPUs this process may run on (a launcher's binding included).
int machineThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

/// The most threads the pool is given (a count past what any machine has
/// is a mistake, and OpenMP would end the process failing to make them).
constexpr int kMaxThreads = 4096;

/// AMPRT_NUM_THREADS when set to a count in [1, kMaxThreads], else the
/// machine's.
int threadsFromEnvironment() {
  if (const char *v = std::getenv("AMPRT_NUM_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && n > 0 && n <= kMaxThreads)
      return int(n);
  }
  return machineThreads();
}

bool referenceFromEnvironment() {
  const char *v = std::getenv("AMPRT_CPU_REFERENCE");
  return v && *v && std::string(v) != "0";
}

std::atomic<int> threads{threadsFromEnvironment()};
std::atomic<bool> reference{referenceFromEnvironment()};
thread_local std::string description;

} // namespace

int amprt::cpuThreads() { return threads.load(std::memory_order_relaxed); }

bool amprt::cpuReference() { return reference.load(std::memory_order_relaxed); }

void amprt::parallelFor(int64_t n, double work,
                        const std::function<void(int64_t, int64_t)> &f) {
  int64_t t = std::min<int64_t>(cpuThreads(), n);
  // Below about 2e6 operations the fork and join cost more than they save:
  // the pool's threads sleep after a short spin, and waking one takes tens
  // of microseconds (more on a busy machine, where it may wait for a
  // scheduler slice).
  if (t < 2 || work < 2e6) {
    f(0, n);
    return;
  }
#ifdef _OPENMP
  // An exception must not leave an OpenMP region: the first one is kept
  // and rethrown on the calling thread (guard() turns it into a status).
  std::exception_ptr error;
#pragma omp parallel num_threads(int(t))
  {
    int64_t i = omp_get_thread_num(), m = omp_get_num_threads();
    try {
      int64_t lo = n * i / m, hi = n * (i + 1) / m;
      if (lo < hi)
        f(lo, hi);
    } catch (...) {
#pragma omp critical(amprt_parallel_for_error)
      if (!error)
        error = std::current_exception();
    }
  }
  if (error)
    std::rethrow_exception(error);
#else
  std::exception_ptr errors[2];
  int64_t mid = n / 2;
  std::thread other([&] {
    try {
      f(mid, n);
    } catch (...) {
      errors[1] = std::current_exception();
    }
  });
  try {
    f(0, mid);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  other.join();
  for (auto &e : errors)
    if (e)
      std::rethrow_exception(e);
#endif
}

void amprt::parallelOverTensors(
    const std::vector<int64_t> &count, double cost,
    const std::function<void(int64_t, int64_t, int64_t)> &f) {
  std::vector<int64_t> start(count.size() + 1, 0);
  for (size_t i = 0; i < count.size(); ++i)
    start[i + 1] = start[i] + count[i];
  int64_t total = start.back();
  parallelFor(total, double(total) * cost, [&](int64_t lo, int64_t hi) {
    // The tensor element lo falls in (past any empty ones before it).
    size_t i = size_t(std::upper_bound(start.begin(), start.end(), lo) -
                      start.begin()) -
               1;
    for (; lo < hi && i < count.size(); ++i) {
      int64_t end = std::min(hi, start[i + 1]);
      if (end > lo)
        f(int64_t(i), lo - start[i], end - start[i]);
      lo = std::max(lo, end);
    }
  });
}

extern "C" {

amprt_status amprt_cpu_set_threads(int32_t n) {
  if (n < 0 || n > kMaxThreads) {
    setLastError("amprt_cpu_set_threads: thread count " + std::to_string(n) +
                 " outside [0, " + std::to_string(kMaxThreads) + "]");
    return AMPRT_ERR_INVALID_ARGUMENT;
  }
  threads.store(n == 0 ? threadsFromEnvironment() : int(n));
  return AMPRT_OK;
}

int32_t amprt_cpu_threads(void) { return cpuThreads(); }

amprt_status amprt_cpu_set_path(int32_t path) {
  if (path != AMPRT_CPU_FAST && path != AMPRT_CPU_REFERENCE) {
    setLastError("amprt_cpu_set_path: unknown path " + std::to_string(path) +
                 " (0 fast, 1 reference)");
    return AMPRT_ERR_INVALID_ARGUMENT;
  }
  reference.store(path == AMPRT_CPU_REFERENCE);
  return AMPRT_OK;
}

int32_t amprt_cpu_path_in_force(void) {
  return cpuReference() ? AMPRT_CPU_REFERENCE : AMPRT_CPU_FAST;
}

const char *amprt_cpu_describe(void) {
  int t = cpuThreads();
  std::string threadsText =
      std::to_string(t) + (t == 1 ? " thread" : " threads");
  if (cpuReference())
    description = "reference loops, " + threadsText;
  else
    description = "fast: " + oneDnnDescribe() + ", " + threadsText;
  return description.c_str();
}

} // extern "C"
