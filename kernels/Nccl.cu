//===- Nccl.cu - the "nccl" communicator engine ---------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Sets up and frees the NCCL communicator of an "nccl" amprt_comm
// (amp/Runtime/Backend/Comm.h), compiled in CUDA builds that find NCCL and
// MPI (AMPRT_HAVE_NCCL). The MPI part of the communicator exists first
// (lib/Runtime/Mpi.cpp); over it the ranks agree that each has a GPU, rank
// 0's unique id reaches every rank, and ncclCommInitRank joins them. A rank
// takes the GPU of its place on its node (local rank modulo the devices it
// sees), as one process per GPU is launched; a CUDA context made afterwards
// on the same thread uses that device. Collective.cu runs the collectives.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <nccl.h>

using namespace amprt;

// A device answers exactly when the CUDA backend does.
bool amprt::ncclUsable(std::string &why) { return cudaBackend(why) != nullptr; }

amprt_status amprt::ncclOpen(amprt_comm *comm, std::string &err) {
  // This rank's GPU, and rank 0's unique id; every rank learns whether all
  // got that far before any waits in an NCCL call.
  std::string mine;
  int count = 0, device = -1;
  ncclUniqueId id = {};
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    mine = "no CUDA device";
  } else {
    device = comm->localRank % count;
    e = cudaSetDevice(device);
    if (e != cudaSuccess)
      mine = std::string("cudaSetDevice(") + std::to_string(device) +
             "): " + cudaGetErrorString(e);
  }
  if (mine.empty() && comm->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      mine = std::string("ncclGetUniqueId: ") + ncclGetErrorString(r);
  }
  cudaGetLastError();
  bool all = false;
  AMPRT_TRY(commAllTrue(comm, mine.empty(), all, err));
  if (!all) {
    err = mine.empty() ? "another rank could not set up its GPU"
                       : "rank " + std::to_string(comm->rank) + ": " + mine;
    return AMPRT_ERR_BACKEND;
  }
  AMPRT_TRY(commBroadcastBytes(comm, &id, sizeof(id), 0, err));
  ncclComm_t nc = nullptr;
  ncclResult_t r = ncclCommInitRank(&nc, comm->size, id, comm->rank);
  if (r != ncclSuccess) {
    err = std::string("ncclCommInitRank: ") + ncclGetErrorString(r);
    return AMPRT_ERR_BACKEND;
  }
  comm->nccl = nc;
  comm->device = device;
  return AMPRT_OK;
}

void amprt::ncclClose(amprt_comm *comm) {
  if (!comm->nccl)
    return;
  ncclCommDestroy(static_cast<ncclComm_t>(comm->nccl));
  comm->nccl = nullptr;
}
