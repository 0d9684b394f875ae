//===- Collective.cu - the collectives of a CUDA context ------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend's all_reduce, all_reduce_many, broadcast, all_gather and
// reduce_scatter. Each checks its arguments with the CPU kernels' checks
// (lib/Runtime/Collective.cpp) and hands a bad call to the CPU code for its
// status and message. Then, by the context's communicator:
//  * none (a group of one): y = x as a device copy on the stream;
//  * "nccl" (AMPRT_HAVE_NCCL): NCCL on the context's stream, f16 and bf16
//    as ncclFloat16 / ncclBfloat16 (NCCL accumulates them itself, rounding
//    as it goes), all_reduce_many as one group (ncclGroupStart/End), AVG as
//    ncclSum and a division by the group size on the device;
//  * "mpi": the CPU code through onHost, on the managed memory (MPI reads
//    and writes it from the host once the stream is drained).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#ifdef AMPRT_HAVE_NCCL
#include <nccl.h>
#endif

using namespace amprt;
using namespace amprt::cuda;

namespace {

size_t bytesOf(T t) { return size_t(numel(t)) * amprt_dtype_size(t->dtype); }

#ifdef AMPRT_HAVE_NCCL

ncclComm_t ncclOf(amprt_context *ctx) {
  return ctx->comm ? static_cast<ncclComm_t>(ctx->comm->nccl) : nullptr;
}

ncclDataType_t ncclType(int32_t dt) {
  switch (dt) {
  case AMPRT_F16:
    return ncclFloat16;
  case AMPRT_BF16:
    return ncclBfloat16;
  case AMPRT_F64:
    return ncclFloat64;
  case AMPRT_I64:
    return ncclInt64;
  case AMPRT_I32:
    return ncclInt32;
  case AMPRT_BOOL:
    return ncclUint8; // MIN and MAX only: all and any
  default:
    return ncclFloat32;
  }
}

ncclRedOp_t ncclOp(int32_t op) {
  switch (op) {
  case AMPRT_REDUCE_MIN:
    return ncclMin;
  case AMPRT_REDUCE_MAX:
    return ncclMax;
  default:
    return ncclSum; // AVG: the sum, divided below
  }
}

amprt_status ncclFailed(amprt_context *ctx, const char *k, const char *call,
                        ncclResult_t r) {
  const char *detail = ncclGetLastError(ncclOf(ctx));
  return ctx->fail(AMPRT_ERR_BACKEND, "%s: %s failed: %s%s%s", k, call,
                   ncclGetErrorString(r), detail && *detail ? ": " : "",
                   detail ? detail : "");
}

#define AMPRT_NCCL(ctx, k, name, call)                                         \
  do {                                                                         \
    ncclResult_t amprt_nccl_r_ = (call);                                       \
    if (amprt_nccl_r_ != ncclSuccess)                                          \
      return ncclFailed((ctx), (k), (name), amprt_nccl_r_);                    \
  } while (0)

/// y[i] /= size in the tensor's float type (f32 arithmetic for f16/bf16,
/// one rounding; f64 in f64).
__global__ void divideKernel(void *y, int32_t dt, int64_t n, int32_t size) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (dt == AMPRT_F64) {
      auto *p = static_cast<double *>(y);
      p[i] = p[i] / double(size);
    } else {
      storeF(y, dt, i, loadF(y, dt, i) / float(size));
    }
  }
}

amprt_status divide(amprt_context *ctx, const char *k, T y) {
  int64_t n = numel(y);
  if (n == 0)
    return AMPRT_OK;
  divideKernel<<<gridFor(n, 256, 4), 256, 0, stream(ctx)>>>(y->data, y->dtype,
                                                            n, groupSize(ctx));
  AMPRT_CUDA_LAUNCHED(ctx, k);
  return AMPRT_OK;
}

#else

/// Without NCCL no communicator runs on the device.
void *ncclOf(amprt_context *) { return nullptr; }

#endif // AMPRT_HAVE_NCCL

/// Whether the CPU code runs the call: a bad argument (for its status and
/// message), or a communicator without NCCL ("mpi": MPI on the host).
bool onCpu(amprt_context *ctx, amprt_status checked) {
  return checked != AMPRT_OK || (ctx->comm && !ncclOf(ctx));
}

#define AMPRT_ON_HOST(name, ctx, ...)                                          \
  onHost((ctx), [&] { return amprt_##name((ctx), __VA_ARGS__); })

/// all_reduce (`scatter` false) and reduce_scatter, checked: a group of one
/// copies x into y; NCCL reduces on the stream, then AVG divides y.
amprt_status reduceOnDevice(amprt_context *ctx, const char *k, T x, T y,
                            int32_t op, bool scatter) {
  if (!ctx->comm)
    return copyBytes(ctx, k, y->data, x->data, bytesOf(x));
#ifdef AMPRT_HAVE_NCCL
  ncclResult_t r = scatter
                       ? ncclReduceScatter(x->data, y->data, size_t(numel(y)),
                                           ncclType(x->dtype), ncclOp(op),
                                           ncclOf(ctx), stream(ctx))
                       : ncclAllReduce(x->data, y->data, size_t(numel(x)),
                                       ncclType(x->dtype), ncclOp(op),
                                       ncclOf(ctx), stream(ctx));
  if (r != ncclSuccess)
    return ncclFailed(ctx, k, scatter ? "ncclReduceScatter" : "ncclAllReduce",
                      r);
  if (op == AMPRT_REDUCE_AVG)
    return divide(ctx, k, y);
#endif
  return AMPRT_OK;
}

amprt_status allReduce(amprt_context *ctx, T x, T y, int32_t op) {
  if (onCpu(ctx, checkAllReduce(ctx, x, y, op)))
    return AMPRT_ON_HOST(all_reduce, ctx, x, y, op);
  return reduceOnDevice(ctx, "all_reduce", x, y, op, /*scatter=*/false);
}

amprt_status allReduceMany(amprt_context *ctx, int64_t n, T xs, T ys,
                           int32_t op) {
  const char *k = "all_reduce_many";
  if (onCpu(ctx, checkAllReduceMany(ctx, n, xs, ys, op)))
    return AMPRT_ON_HOST(all_reduce_many, ctx, n, xs, ys, op);
  if (!ctx->comm) {
    for (int64_t i = 0; i < n; ++i)
      AMPRT_TRY(copyBytes(ctx, k, ys[i].data, xs[i].data, bytesOf(&xs[i])));
    return AMPRT_OK;
  }
#ifdef AMPRT_HAVE_NCCL
  // One group: NCCL fuses the small reductions into few launches.
  AMPRT_NCCL(ctx, k, "ncclGroupStart", ncclGroupStart());
  ncclResult_t first = ncclSuccess;
  for (int64_t i = 0; i < n; ++i) {
    ncclResult_t r = ncclAllReduce(xs[i].data, ys[i].data,
                                   size_t(numel(&xs[i])), ncclType(xs[i].dtype),
                                   ncclOp(op), ncclOf(ctx), stream(ctx));
    if (first == ncclSuccess)
      first = r;
  }
  ncclResult_t end = ncclGroupEnd();
  if (first != ncclSuccess)
    return ncclFailed(ctx, k, "ncclAllReduce", first);
  if (end != ncclSuccess)
    return ncclFailed(ctx, k, "ncclGroupEnd", end);
  if (op == AMPRT_REDUCE_AVG)
    for (int64_t i = 0; i < n; ++i)
      AMPRT_TRY(divide(ctx, k, &ys[i]));
#endif
  return AMPRT_OK;
}

amprt_status broadcast(amprt_context *ctx, T x, int32_t root) {
  if (onCpu(ctx, checkBroadcast(ctx, x, root)))
    return AMPRT_ON_HOST(broadcast, ctx, x, root);
  if (!ctx->comm)
    return AMPRT_OK;
#ifdef AMPRT_HAVE_NCCL
  // Bytes: broadcast moves any dtype unchanged.
  AMPRT_NCCL(ctx, "broadcast", "ncclBroadcast",
             ncclBroadcast(x->data, x->data, bytesOf(x), ncclUint8, root,
                           ncclOf(ctx), stream(ctx)));
#endif
  return AMPRT_OK;
}

amprt_status allGather(amprt_context *ctx, T x, T y) {
  const char *k = "all_gather";
  if (onCpu(ctx, checkAllGather(ctx, x, y)))
    return AMPRT_ON_HOST(all_gather, ctx, x, y);
  if (!ctx->comm)
    return copyBytes(ctx, k, y->data, x->data, bytesOf(x));
#ifdef AMPRT_HAVE_NCCL
  AMPRT_NCCL(ctx, k, "ncclAllGather",
             ncclAllGather(x->data, y->data, bytesOf(x), ncclUint8, ncclOf(ctx),
                           stream(ctx)));
#endif
  return AMPRT_OK;
}

amprt_status reduceScatter(amprt_context *ctx, T x, T y, int32_t op) {
  if (onCpu(ctx, checkReduceScatter(ctx, x, y, op)))
    return AMPRT_ON_HOST(reduce_scatter, ctx, x, y, op);
  return reduceOnDevice(ctx, "reduce_scatter", x, y, op, /*scatter=*/true);
}

} // namespace

void amprt::cuda::registerCollective(KernelTable &t) {
  t.all_reduce = allReduce;
  t.all_reduce_many = allReduceMany;
  t.broadcast = broadcast;
  t.all_gather = allGather;
  t.reduce_scatter = reduceScatter;
}
