//===- CpuSetup.h - the CPU backend's threads and arithmetic --*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run's --threads and --cpu-reference, applied to the runtime's
// process-wide CPU configuration (ABI 4, amprt_cpu_set_threads /
// amprt_cpu_set_path) before any context is made.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_CPUSETUP_H
#define AMP_DRIVER_CPUSETUP_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace amp::driver {

/// Sets the CPU backend's thread count and arithmetic path. `threads` 0
/// means the CPUs this process may run on, shared among the ranks a
/// launcher started on this node (mpirun's OMPI_COMM_WORLD_LOCAL_SIZE,
/// MPICH's MPI_LOCALNRANKS) unless the launcher already bound each rank
/// to its own CPUs; the environment's AMPRT_NUM_THREADS, when set, is
/// that default instead. `reference` selects the plain reference loops
/// (also AMPRT_CPU_REFERENCE=1). Returns what is in force, for the log
/// ("fast: oneDNN 2.6.3 (avx512_core_bf16), 2 threads").
llvm::Expected<std::string> configureCpu(int64_t threads, bool reference);

} // namespace amp::driver

#endif // AMP_DRIVER_CPUSETUP_H
