//===- CpuSetup.cpp - the CPU backend's threads and arithmetic ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/CpuSetup.h"

#include "amp/Runtime/Runtime.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstdlib>
#include <thread>

using namespace amp::driver;

namespace {

/// The ranks a launcher started on this node (1 without one).
int64_t localRanks() {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *v = std::getenv(var)) {
      int64_t n = 0;
      if (!llvm::StringRef(v).getAsInteger(10, n) && n > 0)
        return n;
    }
  return 1;
}

} // namespace

llvm::Expected<std::string> amp::driver::configureCpu(int64_t threads,
                                                      bool reference) {
  if (threads < 0 || threads > 4096)
    return llvm::createStringError(
        "--threads takes a count from 0 (the machine's) to 4096, not " +
        llvm::Twine(threads));
  if (threads == 0 && !std::getenv("AMPRT_NUM_THREADS")) {
    // The runtime's default is the CPUs this process may run on; when a
    // launcher bound the rank to fewer than the machine has, that is its
    // share, else the ranks on this node share them.
    if (amprt_cpu_set_threads(0) != AMPRT_OK)
      return llvm::createStringError(amprt_last_error(nullptr));
    int64_t mine = amprt_cpu_threads();
    int64_t machine = std::max(1u, std::thread::hardware_concurrency());
    if (mine >= machine)
      threads = std::max<int64_t>(1, mine / localRanks());
  }
  if (threads > 0 && amprt_cpu_set_threads(int32_t(threads)) != AMPRT_OK)
    return llvm::createStringError(amprt_last_error(nullptr));
  if (reference && amprt_cpu_set_path(AMPRT_CPU_REFERENCE) != AMPRT_OK)
    return llvm::createStringError(amprt_last_error(nullptr));
  return std::string(amprt_cpu_describe());
}
