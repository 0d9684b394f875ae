//===- Mpi.cpp - the "mpi" communicator engine ----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The MPI calls of the runtime (Mpi.h), the only file that includes mpi.h.
// A communicator duplicates MPI_COMM_WORLD, so the runtime's messages never
// match the program's own, and sets MPI_ERRORS_RETURN on the duplicate: a
// failing call becomes AMPRT_ERR_BACKEND with MPI_Error_string's text in the
// context. MPI is initialized by the first communicator when the program
// did not initialize it, and then finalized with the last one. Built
// without MPI (no AMPRT_HAVE_MPI), every function fails with kNoMpi.
//
//===----------------------------------------------------------------------===//

#include "Mpi.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef AMPRT_HAVE_MPI
// The C API only: no C++ bindings (Open MPI's and MPICH's mpi.h otherwise
// pull them in).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <mutex>
#endif

using namespace amprt;

const char *const mpi::kNoMpi =
    "this build has no MPI: install libopenmpi-dev and rebuild";

#ifdef AMPRT_HAVE_MPI

namespace {

/// A communicator's MPI part (amprt_comm::mpi).
struct State {
  MPI_Comm comm = MPI_COMM_NULL;
};

/// Communicators alive, and whether the runtime initialized MPI (it then
/// finalizes it with the last one), under one lock: communicators may be
/// made and freed on several threads.
std::mutex lifetime;
int alive = 0;
bool initializedHere = false;

std::string errorText(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(buf, size_t(len));
}

MPI_Datatype typeOf(mpi::Wire w) {
  switch (w) {
  case mpi::Wire::F32:
    return MPI_FLOAT;
  case mpi::Wire::F64:
    return MPI_DOUBLE;
  case mpi::Wire::I64:
    return MPI_INT64_T;
  case mpi::Wire::I32:
    return MPI_INT32_T;
  case mpi::Wire::B1:
    return MPI_UINT8_T;
  case mpi::Wire::B2:
    return MPI_UINT16_T;
  case mpi::Wire::B4:
    return MPI_UINT32_T;
  case mpi::Wire::B8:
    break;
  }
  return MPI_UINT64_T;
}

size_t bytesOf(mpi::Wire w) {
  switch (w) {
  case mpi::Wire::B1:
    return 1;
  case mpi::Wire::B2:
    return 2;
  case mpi::Wire::F32:
  case mpi::Wire::I32:
  case mpi::Wire::B4:
    return 4;
  default:
    return 8;
  }
}

MPI_Op opOf(int32_t op) {
  switch (op) {
  case AMPRT_REDUCE_MIN:
    return MPI_MIN;
  case AMPRT_REDUCE_MAX:
    return MPI_MAX;
  default:
    return MPI_SUM;
  }
}

MPI_Comm commOf(const amprt_comm *comm) {
  return static_cast<const State *>(comm->mpi)->comm;
}

amprt_status failed(amprt_context *ctx, const char *k, const char *call,
                    int code) {
  return ctx->fail(AMPRT_ERR_BACKEND, "%s: %s failed: %s", k, call,
                   errorText(code).c_str());
}

#define AMPRT_MPI(ctx, k, name, call)                                          \
  do {                                                                         \
    int amprt_mpi_e_ = (call);                                                 \
    if (amprt_mpi_e_ != MPI_SUCCESS)                                           \
      return failed((ctx), (k), (name), amprt_mpi_e_);                         \
  } while (0)

/// AMPRT_COMM_CHUNK (elements per MPI call; tests set a small one), else
/// the largest MPI count.
int64_t chunkFromEnv() {
  const char *v = std::getenv("AMPRT_COMM_CHUNK");
  if (v && *v) {
    char *end = nullptr;
    long long n = std::strtoll(v, &end, 10);
    if (end && *end == '\0' && n > 0 && n <= INT_MAX)
      return n;
  }
  return INT_MAX;
}

char *at(void *p, int64_t elems, size_t bytes) {
  return static_cast<char *>(p) + size_t(elems) * bytes;
}
const char *at(const void *p, int64_t elems, size_t bytes) {
  return static_cast<const char *>(p) + size_t(elems) * bytes;
}

} // namespace

bool mpi::built() { return true; }

amprt_status mpi::open(amprt_comm *comm, std::string &err) {
  std::lock_guard<std::mutex> lock(lifetime);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    err = "MPI has been finalized in this process (by the program, or by "
          "amprt_comm_destroy of the last communicator) and cannot start "
          "again";
    return AMPRT_ERR_BACKEND;
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // One thread makes the MPI calls (the one that runs the collectives).
    int provided = 0;
    int e = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (e != MPI_SUCCESS) {
      err = "MPI_Init_thread failed: " + errorText(e);
      return AMPRT_ERR_BACKEND;
    }
    initializedHere = true;
  }
  auto *s = new State();
  // MPI_COMM_WORLD keeps its own error handler (by default errors are
  // fatal); the duplicate returns them.
  int e = MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
  if (e == MPI_SUCCESS)
    e = MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  if (e == MPI_SUCCESS)
    e = MPI_Comm_rank(s->comm, &rank);
  if (e == MPI_SUCCESS)
    e = MPI_Comm_size(s->comm, &size);
  // The ranks that share this node's memory: an "nccl" communicator picks
  // its GPU by its place among them.
  MPI_Comm node = MPI_COMM_NULL;
  int localRank = 0, localSize = 1;
  if (e == MPI_SUCCESS)
    e = MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                            &node);
  if (e == MPI_SUCCESS)
    e = MPI_Comm_rank(node, &localRank);
  if (e == MPI_SUCCESS)
    e = MPI_Comm_size(node, &localSize);
  if (node != MPI_COMM_NULL)
    MPI_Comm_free(&node);
  if (e != MPI_SUCCESS) {
    err = "duplicating MPI_COMM_WORLD failed: " + errorText(e);
    if (s->comm != MPI_COMM_NULL)
      MPI_Comm_free(&s->comm);
    delete s;
    return AMPRT_ERR_BACKEND;
  }
  comm->rank = rank;
  comm->size = size;
  comm->localRank = localRank;
  comm->localSize = localSize;
  comm->chunk = chunkFromEnv();
  comm->mpi = s;
  ++alive;
  return AMPRT_OK;
}

amprt_status mpi::close(amprt_comm *comm, std::string &err) {
  std::lock_guard<std::mutex> lock(lifetime);
  auto *s = static_cast<State *>(comm->mpi);
  if (!s)
    return AMPRT_OK;
  int e = MPI_Comm_free(&s->comm);
  delete s;
  comm->mpi = nullptr;
  amprt_status st = AMPRT_OK;
  if (e != MPI_SUCCESS) {
    err = "MPI_Comm_free failed: " + errorText(e);
    st = AMPRT_ERR_BACKEND;
  }
  if (--alive == 0 && initializedHere) {
    initializedHere = false;
    e = MPI_Finalize();
    if (e != MPI_SUCCESS && st == AMPRT_OK) {
      err = "MPI_Finalize failed: " + errorText(e);
      st = AMPRT_ERR_BACKEND;
    }
  }
  return st;
}

void mpi::abort(amprt_comm *comm, int32_t code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    // Name this rank in the job's output ourselves: Open MPI's own report
    // of an abort goes through its help system, which under load
    // sometimes fails ("Out of resource") and prints nothing.
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::fprintf(stderr,
                 "amprt: rank %d of %d (MPI_COMM_WORLD) aborts the job with "
                 "code %d\n",
                 rank, size, int(code));
    std::fflush(stderr);
    MPI_Abort(comm && comm->mpi ? commOf(comm) : MPI_COMM_WORLD, code);
  }
  std::exit(code);
}

amprt_status amprt::commBroadcastBytes(amprt_comm *comm, void *buf,
                                       size_t bytes, int32_t root,
                                       std::string &err) {
  if (!comm || !comm->mpi) {
    err = "the communicator has no MPI group";
    return AMPRT_ERR_INTERNAL;
  }
  if (bytes > size_t(INT_MAX)) {
    err = "commBroadcastBytes: too many bytes";
    return AMPRT_ERR_INTERNAL;
  }
  int e = MPI_Bcast(buf, int(bytes), MPI_BYTE, root, commOf(comm));
  if (e != MPI_SUCCESS) {
    err = "MPI_Bcast failed: " + errorText(e);
    return AMPRT_ERR_BACKEND;
  }
  return AMPRT_OK;
}

amprt_status amprt::commAllTrue(amprt_comm *comm, bool mine, bool &all,
                                std::string &err) {
  if (!comm || !comm->mpi) {
    err = "the communicator has no MPI group";
    return AMPRT_ERR_INTERNAL;
  }
  int v = mine ? 1 : 0;
  int e = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, commOf(comm));
  if (e != MPI_SUCCESS) {
    err = "MPI_Allreduce failed: " + errorText(e);
    return AMPRT_ERR_BACKEND;
  }
  all = v != 0;
  return AMPRT_OK;
}

amprt_status mpi::allReduce(amprt_context *ctx, const char *k, const void *send,
                            void *recv, int64_t count, Wire w, int32_t op) {
  MPI_Comm c = commOf(ctx->comm);
  size_t b = bytesOf(w);
  int64_t chunk = ctx->comm->chunk;
  for (int64_t o = 0; o < count; o += chunk) {
    int n = int(std::min(chunk, count - o));
    const void *s = send ? at(send, o, b) : MPI_IN_PLACE;
    AMPRT_MPI(ctx, k, "MPI_Allreduce",
              MPI_Allreduce(s, at(recv, o, b), n, typeOf(w), opOf(op), c));
  }
  return AMPRT_OK;
}

amprt_status mpi::broadcast(amprt_context *ctx, const char *k, void *buf,
                            int64_t count, Wire w, int32_t root) {
  MPI_Comm c = commOf(ctx->comm);
  size_t b = bytesOf(w);
  int64_t chunk = ctx->comm->chunk;
  for (int64_t o = 0; o < count; o += chunk) {
    int n = int(std::min(chunk, count - o));
    AMPRT_MPI(ctx, k, "MPI_Bcast",
              MPI_Bcast(at(buf, o, b), n, typeOf(w), root, c));
  }
  return AMPRT_OK;
}

amprt_status mpi::allGather(amprt_context *ctx, const char *k, const void *send,
                            void *recv, int64_t count, Wire w) {
  MPI_Comm c = commOf(ctx->comm);
  size_t b = bytesOf(w);
  int64_t chunk = ctx->comm->chunk;
  if (count == 0)
    return AMPRT_OK;
  if (count <= chunk) {
    AMPRT_MPI(ctx, k, "MPI_Allgather",
              MPI_Allgather(send, int(count), typeOf(w), recv, int(count),
                            typeOf(w), c));
    return AMPRT_OK;
  }
  // Too many elements for one call: each rank's part is broadcast from it
  // in pieces, straight into its place.
  int32_t rank = ctx->comm->rank, size = ctx->comm->size;
  std::memcpy(at(recv, rank * count, b), send, size_t(count) * b);
  for (int32_t r = 0; r < size; ++r)
    for (int64_t o = 0; o < count; o += chunk) {
      int n = int(std::min(chunk, count - o));
      AMPRT_MPI(ctx, k, "MPI_Bcast",
                MPI_Bcast(at(recv, r * count + o, b), n, typeOf(w), r, c));
    }
  return AMPRT_OK;
}

amprt_status mpi::reduceScatter(amprt_context *ctx, const char *k,
                                const void *send, void *recv, int64_t count,
                                Wire w, int32_t op) {
  MPI_Comm c = commOf(ctx->comm);
  size_t b = bytesOf(w);
  int64_t chunk = ctx->comm->chunk;
  if (count == 0)
    return AMPRT_OK;
  if (count <= chunk) {
    AMPRT_MPI(ctx, k, "MPI_Reduce_scatter_block",
              MPI_Reduce_scatter_block(send, recv, int(count), typeOf(w),
                                       opOf(op), c));
    return AMPRT_OK;
  }
  // In pieces: rank r's part is reduced onto rank r.
  int32_t rank = ctx->comm->rank, size = ctx->comm->size;
  for (int32_t r = 0; r < size; ++r)
    for (int64_t o = 0; o < count; o += chunk) {
      int n = int(std::min(chunk, count - o));
      AMPRT_MPI(ctx, k, "MPI_Reduce",
                MPI_Reduce(at(send, r * count + o, b),
                           r == rank ? at(recv, o, b) : nullptr, n, typeOf(w),
                           opOf(op), r, c));
    }
  return AMPRT_OK;
}

amprt_status mpi::barrier(amprt_context *ctx, const char *k) {
  AMPRT_MPI(ctx, k, "MPI_Barrier", MPI_Barrier(commOf(ctx->comm)));
  return AMPRT_OK;
}

#else // !AMPRT_HAVE_MPI

// No communicator can exist in this build (open fails), so the collectives
// below are never reached with one; they fail all the same.

bool mpi::built() { return false; }

amprt_status mpi::open(amprt_comm *, std::string &err) {
  err = kNoMpi;
  return AMPRT_ERR_BACKEND;
}

amprt_status mpi::close(amprt_comm *, std::string &) { return AMPRT_OK; }

void mpi::abort(amprt_comm *, int32_t code) { std::exit(code); }

amprt_status amprt::commBroadcastBytes(amprt_comm *, void *, size_t, int32_t,
                                       std::string &err) {
  err = mpi::kNoMpi;
  return AMPRT_ERR_BACKEND;
}

amprt_status amprt::commAllTrue(amprt_comm *, bool, bool &, std::string &err) {
  err = mpi::kNoMpi;
  return AMPRT_ERR_BACKEND;
}

namespace {
amprt_status noMpi(amprt_context *ctx, const char *k) {
  return ctx->fail(AMPRT_ERR_BACKEND, "%s: %s", k, mpi::kNoMpi);
}
} // namespace

amprt_status mpi::allReduce(amprt_context *ctx, const char *k, const void *,
                            void *, int64_t, Wire, int32_t) {
  return noMpi(ctx, k);
}
amprt_status mpi::broadcast(amprt_context *ctx, const char *k, void *, int64_t,
                            Wire, int32_t) {
  return noMpi(ctx, k);
}
amprt_status mpi::allGather(amprt_context *ctx, const char *k, const void *,
                            void *, int64_t, Wire) {
  return noMpi(ctx, k);
}
amprt_status mpi::reduceScatter(amprt_context *ctx, const char *k, const void *,
                                void *, int64_t, Wire, int32_t) {
  return noMpi(ctx, k);
}
amprt_status mpi::barrier(amprt_context *ctx, const char *k) {
  return noMpi(ctx, k);
}

#endif // AMPRT_HAVE_MPI
