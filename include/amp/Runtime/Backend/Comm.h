//===- Comm.h - the runtime's communicators and their engines ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// What an amprt_comm is, private to the runtime (lib/Runtime) and its CUDA
// backend (kernels/), not part of the ABI: the group (rank, size, the ranks
// of this node), the MPI engine's state, which every communicator has (an
// "nccl" communicator bootstraps over it, and a CPU context reduces over
// it), and the NCCL engine's state (kernels/Nccl.cu). The MPI calls the
// collectives make are lib/Runtime's alone (lib/Runtime/Mpi.h); kernels/
// reaches MPI only through commBroadcastBytes and commAllTrue. The
// AmpRuntimeBackend target.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_BACKEND_COMM_H
#define AMP_RUNTIME_BACKEND_COMM_H

#include "amp/Runtime/Runtime.h"

#include <cstdint>
#include <string>

struct amprt_comm {
  /// "mpi" or "nccl" (amprt_comm_engine).
  const char *engine = "mpi";
  int32_t rank = 0;
  int32_t size = 1;
  /// This rank among the ranks of its node (MPI_COMM_TYPE_SHARED) and
  /// their number: an "nccl" communicator's GPU is localRank modulo the
  /// devices it sees.
  int32_t localRank = 0;
  int32_t localSize = 1;
  /// The most elements one MPI call moves: INT_MAX (MPI counts are int),
  /// or AMPRT_COMM_CHUNK from the environment (tests use a small one to run
  /// the split calls). Larger tensors are moved in pieces.
  int64_t chunk = 0;
  /// lib/Runtime/Mpi.cpp's state (the duplicated MPI_COMM_WORLD).
  void *mpi = nullptr;
  /// kernels/Nccl.cu's state ("nccl" only): the NCCL communicator.
  void *nccl = nullptr;
  /// The CUDA device of the NCCL communicator (-1 for "mpi").
  int32_t device = -1;
};

namespace amprt {

/// Broadcasts `bytes` bytes at `buf` (host memory) from rank `root` over
/// the communicator's MPI group: how an engine that bootstraps over MPI
/// shares its setup (NCCL's unique id). Every rank calls it. On failure the
/// message goes to `err`. lib/Runtime/Mpi.cpp.
amprt_status commBroadcastBytes(amprt_comm *comm, void *buf, size_t bytes,
                                int32_t root, std::string &err);

/// Whether every rank of the communicator's MPI group passed `mine` true
/// (a MIN reduction): ranks agree before a step that would leave the others
/// waiting when one of them fails it. Every rank calls it. lib/Runtime/Mpi.cpp.
amprt_status commAllTrue(amprt_comm *comm, bool mine, bool &all,
                         std::string &err);

/// The NCCL engine (kernels/Nccl.cu, in builds with AMPRT_HAVE_NCCL): picks
/// the rank's GPU, makes the unique id on rank 0, broadcasts it over the
/// communicator's MPI group and initializes comm->nccl. Every rank calls
/// it after the MPI part is set up. On failure the message goes to `err`.
amprt_status ncclOpen(amprt_comm *comm, std::string &err);
/// Frees comm->nccl (a no-op when it is NULL).
void ncclClose(amprt_comm *comm);
/// Whether a CUDA device answers (the "nccl" engine needs one).
bool ncclUsable(std::string &why);

} // namespace amprt

#endif // AMP_RUNTIME_BACKEND_COMM_H
