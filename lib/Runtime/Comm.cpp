//===- Comm.cpp - communicators: the ranks that train together ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The communicator calls of the ABI (Runtime.h, "Communicators"): making
// and freeing a communicator with an engine, its rank and size, setting it
// on a context, the barrier and the abort. Every communicator has an MPI
// part (Mpi.cpp: the group, the launch, the host collectives); an "nccl"
// one also has an NCCL communicator on its GPU (kernels/Nccl.cu), which the
// CUDA backend's collectives use. The collective kernels are
// Collective.cpp's (CPU) and kernels/Collective.cu's (CUDA).
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Backend/Comm.h"
#include "Mpi.h"

#include <cstring>
#include <new>

using namespace amprt;

namespace {

bool isEngine(const char *engine, const char *name) {
  return engine && std::strcmp(engine, name) == 0;
}

/// Whether this build can make an "nccl" communicator, and why not.
bool ncclAvailable(std::string &why) {
#ifdef AMPRT_HAVE_NCCL
  return ncclUsable(why);
#else
  why = "this build has no NCCL (a CUDA build with MPI that finds nccl.h "
        "and libnccl has it)";
  return false;
#endif
}

amprt_status createFailed(amprt_status st, const std::string &why) {
  setLastError("amprt_comm_create: " + why);
  return st;
}

amprt_status create(const char *engine, amprt_comm **out) {
  std::string why;
  bool nccl;
  if (!engine || !*engine) {
    nccl = ncclAvailable(why);
  } else if (isEngine(engine, "mpi")) {
    nccl = false;
  } else if (isEngine(engine, "nccl")) {
    if (!ncclAvailable(why))
      return createFailed(AMPRT_ERR_BACKEND,
                          "engine 'nccl' is not available: " + why);
    nccl = true;
  } else {
    return createFailed(AMPRT_ERR_BACKEND, std::string("unknown engine '") +
                                               engine +
                                               "' (engines: mpi, nccl)");
  }
  if (!mpi::built())
    return createFailed(AMPRT_ERR_BACKEND, mpi::kNoMpi);
  auto *comm = new amprt_comm();
  comm->engine = nccl ? "nccl" : "mpi";
  amprt_status st = mpi::open(comm, why);
  if (st != AMPRT_OK) {
    delete comm;
    return createFailed(st, why);
  }
#ifdef AMPRT_HAVE_NCCL
  if (nccl) {
    st = ncclOpen(comm, why);
    if (st != AMPRT_OK) {
      std::string ignored;
      mpi::close(comm, ignored);
      delete comm;
      return createFailed(st, "nccl: " + why);
    }
  }
#endif
  *out = comm;
  return AMPRT_OK;
}

} // namespace

extern "C" {

amprt_status amprt_comm_create(const char *engine, amprt_comm **out) {
  setLastError("");
  if (!out)
    return createFailed(AMPRT_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  try {
    return create(engine, out);
  } catch (const std::bad_alloc &) {
    return createFailed(AMPRT_ERR_OUT_OF_MEMORY, "out of memory");
  }
}

amprt_status amprt_comm_destroy(amprt_comm *comm) {
  setLastError("");
  if (!comm)
    return AMPRT_OK;
#ifdef AMPRT_HAVE_NCCL
  ncclClose(comm);
#endif
  std::string why;
  amprt_status st = mpi::close(comm, why);
  delete comm;
  if (st != AMPRT_OK)
    setLastError("amprt_comm_destroy: " + why);
  return st;
}

int32_t amprt_comm_rank(const amprt_comm *comm) {
  return comm ? comm->rank : 0;
}

int32_t amprt_comm_size(const amprt_comm *comm) {
  return comm ? comm->size : 1;
}

const char *amprt_comm_engine(const amprt_comm *comm) {
  return comm ? comm->engine : "";
}

int32_t amprt_comm_available(const char *engine) {
  std::string why;
  if (!engine || !*engine)
    return mpi::built() ? 1 : 0;
  if (isEngine(engine, "mpi"))
    return mpi::built() ? 1 : 0;
  if (isEngine(engine, "nccl"))
    return ncclAvailable(why) ? 1 : 0;
  return 0;
}

void amprt_comm_abort(amprt_comm *comm, int32_t code) {
  mpi::abort(comm, code);
}

amprt_status amprt_context_set_comm(amprt_context *ctx, amprt_comm *comm) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  if (comm && ctx->backend->acceptComm)
    AMPRT_TRY(ctx->backend->acceptComm(ctx, comm));
  ctx->comm = comm;
  return AMPRT_OK;
}

amprt_status amprt_barrier(amprt_context *ctx) {
  if (!ctx)
    return AMPRT_ERR_INVALID_ARGUMENT;
  ctx->error.clear();
  // The context's queued work first: a barrier orders what the ranks did
  // before it.
  AMPRT_TRY(ctx->backend->sync(ctx));
  if (!ctx->comm)
    return AMPRT_OK;
  return mpi::barrier(ctx, "amprt_barrier");
}

} // extern "C"
