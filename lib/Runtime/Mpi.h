//===- Mpi.h - the "mpi" communicator engine --------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Runtime: the MPI calls of the communicators (Comm.cpp) and
// of the CPU collectives (Collective.cpp), on host buffers. Mpi.cpp is the
// one file that includes mpi.h; in a build without MPI (no AMPRT_HAVE_MPI)
// its functions fail with the package to install, so nothing else changes.
// Counts are in elements of a Wire type; a count over the communicator's
// chunk (INT_MAX: MPI counts are int) is moved in several calls.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_MPI_H
#define AMP_LIB_RUNTIME_MPI_H

#include "amp/Runtime/Backend/Backend.h"
#include "amp/Runtime/Backend/Comm.h"

#include <cstdint>
#include <string>

namespace amprt {
namespace mpi {

/// Whether this build has MPI.
bool built();

/// What a build without MPI says.
extern const char *const kNoMpi;

/// The element types on the wire: the reducible ones, and raw words of 1,
/// 2, 4 and 8 bytes for the collectives that only move data.
enum class Wire { F32, F64, I64, I32, B1, B2, B4, B8 };

/// Sets up comm's MPI part: initializes MPI when the program did not
/// (MPI_THREAD_FUNNELED), duplicates MPI_COMM_WORLD with MPI_ERRORS_RETURN
/// and fills rank, size, localRank, localSize and chunk. Every rank calls
/// it. On failure the message goes to `err`.
amprt_status open(amprt_comm *comm, std::string &err);
/// Frees comm's MPI part; finalizes MPI when open initialized it and this
/// was the last communicator.
amprt_status close(amprt_comm *comm, std::string &err);
/// MPI_Abort on comm's group (MPI_COMM_WORLD when comm has none); exits
/// with `code` when MPI is not running.
[[noreturn]] void abort(amprt_comm *comm, int32_t code);

/// The collectives over ctx->comm (which must be set), failing with the
/// MPI error text in ctx under the kernel name `k`. `op` is SUM, MIN or MAX
/// (AVG is the caller's SUM and division). A NULL `send` is in place.
amprt_status allReduce(amprt_context *ctx, const char *k, const void *send,
                       void *recv, int64_t count, Wire w, int32_t op);
amprt_status broadcast(amprt_context *ctx, const char *k, void *buf,
                       int64_t count, Wire w, int32_t root);
/// recv (size * count elements) = every rank's send (count) in rank order.
amprt_status allGather(amprt_context *ctx, const char *k, const void *send,
                       void *recv, int64_t count, Wire w);
/// recv (count) = this rank's part of op over send (size * count).
amprt_status reduceScatter(amprt_context *ctx, const char *k, const void *send,
                           void *recv, int64_t count, Wire w, int32_t op);
amprt_status barrier(amprt_context *ctx, const char *k);

} // namespace mpi
} // namespace amprt

#endif // AMP_LIB_RUNTIME_MPI_H
