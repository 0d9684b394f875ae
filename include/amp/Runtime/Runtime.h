/*===- Runtime.h - amp runtime C ABI: types, context, memory -----*- C -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The runtime ABI that lowered training modules call. Plain C, no MLIR.
// Conventions (docs/RuntimeABI.md has the full text):
//  * every function returns an amprt_status; AMPRT_OK is 0;
//  * on failure the context keeps a message, read with amprt_last_error(ctx);
//  * tensors are described by amprt_tensor (contiguous, row-major); the
//    runtime never keeps a pointer to a descriptor or its shape after the call
//    returns, and never owns the data of a tensor it is given;
//  * kernels are declared from amp/Runtime/Ops.def (amp/Runtime/Kernels.h).
//
//===----------------------------------------------------------------------===*/

#ifndef AMP_RUNTIME_RUNTIME_H
#define AMP_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define AMPRT_API __declspec(dllexport)
#else
#define AMPRT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// ABI version: bumped on any incompatible change of a signature or struct.
#define AMPRT_ABI_VERSION 10

/// Largest tensor rank the runtime accepts.
#define AMPRT_MAX_RANK 8

typedef enum amprt_status {
  AMPRT_OK = 0,
  AMPRT_ERR_INVALID_ARGUMENT = 1, /* null pointer, bad attribute value */
  AMPRT_ERR_DTYPE = 2,            /* dtype not accepted by this function */
  AMPRT_ERR_SHAPE = 3,            /* shapes do not agree */
  AMPRT_ERR_UNSUPPORTED = 4,      /* valid, but not implemented (yet) */
  AMPRT_ERR_OUT_OF_MEMORY = 5,
  AMPRT_ERR_BACKEND = 6, /* unknown backend, device failure */
  AMPRT_ERR_INTERNAL = 7
} amprt_status;

/// Element types. The values are part of the ABI.
typedef enum amprt_dtype {
  AMPRT_F32 = 0,
  AMPRT_F16 = 1,  /* IEEE binary16 */
  AMPRT_BF16 = 2, /* bfloat16: the top 16 bits of an IEEE binary32 */
  AMPRT_F64 = 3,
  AMPRT_I64 = 4,
  AMPRT_I32 = 5,
  AMPRT_I8 = 6,
  AMPRT_U8 = 7,
  AMPRT_BOOL = 8, /* one byte, 0 or 1 */
  AMPRT_NUM_DTYPES = 9
} amprt_dtype;

/// A tensor: `data` points at numel * size(dtype) bytes, contiguous,
/// row-major. `shape` has `rank` entries (may be NULL when rank is 0: a
/// scalar). The caller owns both; descriptors are only read during the call.
typedef struct amprt_tensor {
  void *data;
  int32_t dtype; /* amprt_dtype */
  int32_t rank;
  const int64_t *shape;
} amprt_tensor;

/// Where a windowed kernel's tensors keep their channels (ABI 10); the
/// values are part of the ABI.
typedef enum amprt_layout {
  /// ONNX's order: x, y [N, C, spatial...]; a convolution's weight [M,
  /// C/group, kernel...].
  AMPRT_LAYOUT_CHANNELS_FIRST = 0,
  /// Channels innermost (NHWC): x, y [N, spatial..., C]; a convolution's
  /// weight [M, kernel..., C/group] (conv_transpose's [C, kernel...,
  /// M/group]); max_pool's indices flat into x as it is stored.
  AMPRT_LAYOUT_CHANNELS_LAST = 1
} amprt_layout;

/// Window attributes of Conv, ConvGrad and the pools (ONNX attribute names).
/// Only the first `spatial_rank` entries of each array are read; pads holds
/// the begin pads then the end pads (ONNX order: x1_begin, x2_begin, ...,
/// x1_end, x2_end, ...). auto_pad must have been resolved into pads.
typedef struct amprt_window {
  int32_t spatial_rank; /* 1, 2 or 3 */
  int32_t ceil_mode;    /* pools: 0 floor, 1 ceil (output shape check only) */
  int32_t count_include_pad; /* AveragePool */
  int32_t layout;            /* amprt_layout (ABI 10; was reserved, 0) */
  int64_t group;             /* Conv */
  int64_t kernel[3];
  int64_t strides[3];
  int64_t pads[6];
  int64_t dilations[3];
} amprt_window;

/// Opaque per-backend context: owns the last error message, the backend's
/// allocator and streams, and names the communicator its collectives use.
/// One context must not be used by two threads at once.
typedef struct amprt_context amprt_context;

typedef enum amprt_memcpy_kind {
  AMPRT_HOST_TO_HOST = 0,
  AMPRT_HOST_TO_DEVICE = 1,
  AMPRT_DEVICE_TO_HOST = 2,
  AMPRT_DEVICE_TO_DEVICE = 3
} amprt_memcpy_kind;

/// ABI version the library was built with (AMPRT_ABI_VERSION).
AMPRT_API int32_t amprt_abi_version(void);

/// Creates a context for `backend` ("cpu"; "cuda" once built). NULL or ""
/// picks the best available one. On failure *out is NULL and the message is
/// read with amprt_last_error(NULL).
AMPRT_API amprt_status amprt_context_create(const char *backend,
                                            amprt_context **out);
AMPRT_API amprt_status amprt_context_destroy(amprt_context *ctx);

/// Name of the context's backend ("cpu").
AMPRT_API const char *amprt_backend_name(const amprt_context *ctx);

/// Message of the last failed call on `ctx` ("" after a success). With
/// ctx == NULL: the last failure of amprt_context_create on this thread.
/// The string lives until the next call on the same context.
AMPRT_API const char *amprt_last_error(const amprt_context *ctx);

/// Device memory of the context's backend (host memory for "cpu"), aligned
/// to 64 bytes. amprt_malloc of 0 bytes gives a valid, unique pointer.
AMPRT_API amprt_status amprt_malloc(amprt_context *ctx, size_t bytes,
                                    void **out);
AMPRT_API amprt_status amprt_free(amprt_context *ctx, void *ptr);

/// The device memory a context holds (ABI 7): every amprt_malloc buffer
/// and the backend's own workspace and scratch (the CUDA backend's
/// cuBLASLt/cuDNN workspace and its kernels' stream-ordered temporaries,
/// counted while they live on the host's timeline), not the memory the
/// device's driver and libraries keep for themselves. The CPU backend's
/// per-thread conversion scratch is not the context's and is not counted.
typedef struct amprt_memory_stats {
  uint64_t in_use;       /* bytes held now */
  uint64_t peak;         /* the most held since creation or the last reset */
  uint64_t limit;        /* amprt_set_memory_limit's bytes; 0: none */
  uint64_t refused;      /* allocations refused: by the limit, the device or the
                            host (a kernel's own memory) */
  uint64_t device_free;  /* the device's free memory now (CPU: available
                            physical memory) */
  uint64_t device_total; /* the device's memory (CPU: physical memory) */
} amprt_memory_stats;
AMPRT_API amprt_status amprt_memory_stats_get(amprt_context *ctx,
                                              amprt_memory_stats *out);
/// Starts the peak again from what the context holds now.
AMPRT_API amprt_status amprt_memory_reset_peak(amprt_context *ctx);
/// An allocation that would take the context past `bytes` fails with
/// AMPRT_ERR_OUT_OF_MEMORY, as if the device had no more (0: no limit):
/// what a run would need on a smaller device, found on a larger one.
AMPRT_API amprt_status amprt_set_memory_limit(amprt_context *ctx,
                                              uint64_t bytes);
/// Copies `bytes` after the work queued on the context. A DEVICE_TO_DEVICE
/// copy may be queued like a kernel; the other kinds are complete on return
/// (the host may read `dst` and reuse `src`).
AMPRT_API amprt_status amprt_memcpy(amprt_context *ctx, void *dst,
                                    const void *src, size_t bytes,
                                    int32_t kind /* amprt_memcpy_kind */);
AMPRT_API amprt_status amprt_memset(amprt_context *ctx, void *dst, int value,
                                    size_t bytes);
/// Waits for all work queued on the context (a no-op on the CPU).
AMPRT_API amprt_status amprt_synchronize(amprt_context *ctx);

/// The random kernels (dropout, random_uniform, random_normal, bernoulli)
/// draw from a counter-based stream keyed by their seed and this offset
/// (0 when the context is made). A training loop sets it to the step index
/// before each step: every step draws new masks, and a run resumed at step
/// k draws what the uninterrupted run drew there.
AMPRT_API amprt_status amprt_set_random_offset(amprt_context *ctx,
                                               uint64_t offset);

/* ---- Steps without waiting (ABI 9) -------------------------------------

   What a training loop needs to queue step after step with no host
   synchronization: the random offset moved on the device, data checks that
   report later, copies that do not wait, fences the host waits on without
   draining the queue, and graphs: a step recorded once and launched again.
   docs/RuntimeABI.md, "Steps without waiting". On the CPU every call is
   done when it returns, so these are plain calls there (no graphs). */

/// Adds `delta` to the random offset after the work queued so far (on a
/// device, a queued kernel: a recorded graph moves the offset itself each
/// time it is launched). amprt_set_random_offset sets it outright.
AMPRT_API amprt_status amprt_advance_random_offset(amprt_context *ctx,
                                                   uint64_t delta);

/// How kernels report what is wrong with their data rather than their
/// arguments (a label or index out of range, a dropout ratio outside [0,
/// 1)), which a device knows only once the kernel ran. The values are part
/// of the ABI.
typedef enum amprt_data_checks {
  /// The call waits for the kernel and fails itself (the default).
  AMPRT_CHECKS_IMMEDIATE = 0,
  /// The call returns once queued; the first failure is returned, with
  /// its kernel's message, by the next call that waits for the device
  /// (amprt_synchronize, amprt_fence_wait, an amprt_memcpy that is not
  /// device to device, a kernel call that runs on the host, which waits
  /// first) and then forgotten; its message ends with " [random offset
  /// N]", the offset the failing call ran at (a loop that keeps the offset
  /// at the step index reads the step there). What the failing kernel
  /// wrote is undefined.
  AMPRT_CHECKS_DEFERRED = 1
} amprt_data_checks;
/// Selects the mode (amprt_data_checks). The CPU knows at once: its calls
/// fail themselves in either mode.
AMPRT_API amprt_status amprt_set_data_checks(amprt_context *ctx, int32_t mode);

/// Host memory the device copies to and from without staging (CUDA:
/// page-locked), for amprt_memcpy_async; at least 64-byte aligned, not
/// counted in amprt_memory_stats. Freed with amprt_host_free.
AMPRT_API amprt_status amprt_host_alloc(amprt_context *ctx, size_t bytes,
                                        void **out);
AMPRT_API amprt_status amprt_host_free(amprt_context *ctx, void *ptr);

/// Queues a copy after the work queued on the context and returns (the CPU:
/// done on return). Host memory must come from amprt_host_alloc. Until a
/// fence recorded after the copy has passed, the host must not read `dst`
/// of a copy to the host nor change `src` of a copy from it.
AMPRT_API amprt_status amprt_memcpy_async(amprt_context *ctx, void *dst,
                                          const void *src, size_t bytes,
                                          int32_t kind /* amprt_memcpy_kind */);

/// A fence is a point in the context's queue: amprt_fence_record names the
/// point after the work queued so far (numbers grow from 1), and
/// amprt_fence_wait blocks the host until the device has passed it, while
/// the work queued after it keeps the device busy. Waiting for a number
/// not recorded yet is an error. On the CPU every fence has passed when it
/// is recorded.
AMPRT_API amprt_status amprt_fence_record(amprt_context *ctx, uint64_t *fence);
AMPRT_API amprt_status amprt_fence_wait(amprt_context *ctx, uint64_t fence);

/// What the host waited for since the context was made: how a loop tells
/// a step that keeps the device busy from one that empties its queue.
typedef struct amprt_queue_stats {
  /// Waits for all the queued work: amprt_synchronize, copies to or from
  /// the host, kernels run on the host, immediate data checks, frees.
  uint64_t drains;
  /// amprt_fence_wait calls that found the device short of the fence and
  /// waited (the work queued after it kept running).
  uint64_t fence_waits;
  uint64_t graph_launches;
} amprt_queue_stats;
/// The counts (all 0 on the CPU, whose calls never wait for a device).
AMPRT_API amprt_status amprt_queue_stats_get(amprt_context *ctx,
                                             amprt_queue_stats *out);

/// A recorded graph of queued work (CUDA: a CUDA graph).
typedef struct amprt_graph amprt_graph;
/// Between amprt_graph_begin and amprt_graph_end, the kernels, copies and
/// fills called on the context are recorded, not run; amprt_graph_launch
/// then queues all of them as one launch, with the pointers, shapes and
/// attributes they were called with (the data behind the pointers may
/// change between launches: that is how a step takes its batch).
///
/// A call that cannot be recorded fails with AMPRT_ERR_UNSUPPORTED and a
/// message that says why: one that would run on the host (a kernel without
/// a device implementation for its arguments), wait for the device (a copy
/// to or from the host, amprt_synchronize, immediate data checks) or
/// allocate. amprt_graph_end must still be called: after such a failure it
/// fails too, makes no graph and leaves the context as it was before
/// amprt_graph_begin (nothing recorded ran). The CPU backend has no graphs:
/// amprt_graph_begin fails with AMPRT_ERR_UNSUPPORTED.
AMPRT_API amprt_status amprt_graph_begin(amprt_context *ctx);
AMPRT_API amprt_status amprt_graph_end(amprt_context *ctx, amprt_graph **out);
AMPRT_API amprt_status amprt_graph_launch(amprt_context *ctx,
                                          amprt_graph *graph);
/// Waits for the graph's launches, then frees it (NULL: nothing).
AMPRT_API amprt_status amprt_graph_destroy(amprt_context *ctx,
                                           amprt_graph *graph);

/* ---- Communicators (ABI 3): the processes that train together ---------

   A communicator is the group of ranks a launcher started (mpirun, Slurm's
   srun through it). Set on a context, it is what the collective kernels of
   Ops.def (all_reduce, broadcast, all_gather, reduce_scatter) reduce over;
   a context without one is a group of one rank (the collectives copy). All
   ranks call the collectives in the same order with the same shapes and
   dtypes. docs/RuntimeABI.md, "Communicators and collectives". */
typedef struct amprt_comm amprt_comm;

/// Reductions of all_reduce and reduce_scatter. The values are part of the
/// ABI. AVG is the sum divided by the group size.
typedef enum amprt_reduce_op {
  AMPRT_REDUCE_SUM = 0,
  AMPRT_REDUCE_AVG = 1,
  AMPRT_REDUCE_MIN = 2,
  AMPRT_REDUCE_MAX = 3
} amprt_reduce_op;

/// Creates a communicator over every rank the launcher started, with
/// `engine`: "mpi" (a duplicate of MPI_COMM_WORLD; host buffers, and the
/// managed buffers of a CUDA context read and written on the host; MPI is
/// initialized here, MPI_THREAD_FUNNELED, unless the program did: then the
/// thread that creates the first communicator makes the collective calls)
/// or "nccl" (device buffers of CUDA contexts on the GPU of the rank's
/// place on its node, which it makes current on the calling thread: create
/// the CUDA context after it, on that thread; the unique id is broadcast
/// over MPI, and a CPU context reduces over that MPI group). NULL or ""
/// picks "nccl" for a CUDA build with NCCL and a device, else "mpi". Every
/// rank calls it. Fails (message from amprt_last_error(NULL)) when this
/// build has no such engine, or MPI was finalized in this process.
AMPRT_API amprt_status amprt_comm_create(const char *engine, amprt_comm **out);
/// Frees the communicator (MPI is finalized when amprt_comm_create
/// initialized it and this is its last communicator).
AMPRT_API amprt_status amprt_comm_destroy(amprt_comm *comm);
/// This process's rank, in [0, size) (0 for NULL: a group of one).
AMPRT_API int32_t amprt_comm_rank(const amprt_comm *comm);
/// The number of ranks (1 for NULL).
AMPRT_API int32_t amprt_comm_size(const amprt_comm *comm);
/// "mpi" or "nccl" ("" for NULL).
AMPRT_API const char *amprt_comm_engine(const amprt_comm *comm);
/// Whether this build can create a communicator with `engine` ("mpi";
/// "nccl" also needs a CUDA device; NULL or "": any): 1 or 0.
AMPRT_API int32_t amprt_comm_available(const char *engine);
/// Ends every rank's process with `code`: what a rank that failed calls so
/// that no other rank waits for it forever (MPI_Abort, after a line on
/// stderr naming the rank; exit(code) when MPI is not running). comm may be
/// NULL (MPI_COMM_WORLD). Does not return.
AMPRT_API void amprt_comm_abort(amprt_comm *comm, int32_t code);
/// The communicator the context's collectives use (NULL: none, a group of
/// one). The context does not own it; it must outlive its use. A CUDA
/// context refuses an "nccl" communicator of another device.
AMPRT_API amprt_status amprt_context_set_comm(amprt_context *ctx,
                                              amprt_comm *comm);
/// Waits for the context's queued work, then until every rank of its
/// communicator has called amprt_barrier (returns at once without one).
AMPRT_API amprt_status amprt_barrier(amprt_context *ctx);

/* ---- The CPU backend's threads and arithmetic (ABI 4) -----------------

   Process-wide: every CPU context (and a device context's host fallbacks)
   shares one thread pool and one choice of arithmetic. */

/// The CPU backend's arithmetic. FAST: GEMMs, batched GEMMs and the
/// convolutions' GEMMs through oneDNN when the library was built with it
/// (f32, and bf16 operands with f32 accumulation on CPUs with AVX-512 BF16
/// or AMX). REFERENCE: the runtime's own blocked GEMM loops, the numerics
/// reference the fast path is tested against (docs/RuntimeABI.md, "CPU
/// backend"). Every other kernel is the same on both, on the thread pool. The
/// environment variable AMPRT_CPU_REFERENCE=1 selects REFERENCE when the
/// library loads.
typedef enum amprt_cpu_path {
  AMPRT_CPU_FAST = 0,
  AMPRT_CPU_REFERENCE = 1
} amprt_cpu_path;

/// The number of threads the CPU kernels use, 1 to 4096; 0 is the
/// default the library starts with: the environment variable
/// AMPRT_NUM_THREADS when set, else the CPUs this process may run on (its
/// affinity mask). Fails for a count outside [0, 4096].
AMPRT_API amprt_status amprt_cpu_set_threads(int32_t threads);
/// The thread count in force (at least 1).
AMPRT_API int32_t amprt_cpu_threads(void);
/// Selects the arithmetic (amprt_cpu_path). Fails for an unknown value.
AMPRT_API amprt_status amprt_cpu_set_path(int32_t path);
/// The arithmetic in force (amprt_cpu_path).
AMPRT_API int32_t amprt_cpu_path_in_force(void);
/// One line for logs: the path, the library and ISA it dispatches to,
/// the threads ("fast: oneDNN 2.6.3 (avx512_core_bf16), 2 threads").
/// The string lives until the next call.
AMPRT_API const char *amprt_cpu_describe(void);

/// Size in bytes of one element; 0 for an unknown dtype.
AMPRT_API size_t amprt_dtype_size(int32_t dtype);
/// "f32", "f16", ...; "invalid" for an unknown dtype.
AMPRT_API const char *amprt_dtype_name(int32_t dtype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AMP_RUNTIME_RUNTIME_H */
