//===- Collective.cpp - all_reduce, broadcast, all_gather, reduce_scatter -===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The collective kernels of Ops.def on the CPU, over the context's
// communicator (amprt_context_set_comm) through MPI (Mpi.h); a context
// without one is a group of one rank, where every collective copies (or,
// for broadcast, does nothing), so a lowered program with collectives runs
// unchanged in one process. Reductions take f32, f64, i64 and i32 as they
// are, f16 and bf16 widened to f32 (MPI has no 16-bit float): reduced in
// f32 and rounded once, and bool with MIN and MAX (all and any: the
// all-finite flag of a step). AVG is the SUM divided by the group size in
// the reduction's type (floats only). all_reduce_many packs its tensors into
// one staging buffer per wire type (f32 for f32, f16 and bf16; f64; i64;
// i32; bytes for bool): one MPI call per type present, in that order on
// every rank.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Mpi.h"
#include "amp/Runtime/Backend/Comm.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace amprt;

namespace {

using T = const amprt_tensor *;

bool reducible(int32_t dt) {
  return isLowOrF32(dt) || dt == AMPRT_F64 || dt == AMPRT_I64 ||
         dt == AMPRT_I32 || dt == AMPRT_BOOL;
}
bool floating(int32_t dt) { return isLowOrF32(dt) || dt == AMPRT_F64; }

size_t bytesOf(T t) { return size_t(numel(t)) * amprt_dtype_size(t->dtype); }

/// y = x for a group of one (nothing when they are one buffer).
void copyData(T x, T y) {
  size_t bytes = bytesOf(x);
  if (bytes && x->data != y->data)
    std::memmove(y->data, x->data, bytes);
}

/// The type a reduction of dtype dt moves (f16 and bf16 widened to f32;
/// bool as bytes, whose MIN and MAX are "all" and "any").
mpi::Wire reduceWire(int32_t dt) {
  switch (dt) {
  case AMPRT_F64:
    return mpi::Wire::F64;
  case AMPRT_I64:
    return mpi::Wire::I64;
  case AMPRT_I32:
    return mpi::Wire::I32;
  case AMPRT_BOOL:
    return mpi::Wire::B1;
  default:
    return mpi::Wire::F32;
  }
}
size_t wireBytes(mpi::Wire w) {
  switch (w) {
  case mpi::Wire::F64:
  case mpi::Wire::I64:
    return 8;
  case mpi::Wire::B1:
    return 1;
  default:
    return 4;
  }
}

/// The raw words a data-moving collective sends for dtype dt.
mpi::Wire rawWire(int32_t dt) {
  switch (amprt_dtype_size(dt)) {
  case 1:
    return mpi::Wire::B1;
  case 2:
    return mpi::Wire::B2;
  case 4:
    return mpi::Wire::B4;
  default:
    return mpi::Wire::B8;
  }
}

/// What MPI reduces with: AVG is a SUM, divided afterwards.
int32_t wireOp(int32_t op) {
  return op == AMPRT_REDUCE_AVG ? int32_t(AMPRT_REDUCE_SUM) : op;
}

/// AVG's division by the group size, in the reduction's float type.
void divideBy(void *p, mpi::Wire w, int64_t n, int32_t size) {
  if (w == mpi::Wire::F32) {
    auto *f = static_cast<float *>(p);
    float d = float(size);
    for (int64_t i = 0; i < n; ++i)
      f[i] = f[i] / d;
  } else if (w == mpi::Wire::F64) {
    auto *f = static_cast<double *>(p);
    double d = double(size);
    for (int64_t i = 0; i < n; ++i)
      f[i] = f[i] / d;
  }
}

/// all_reduce of one tensor over ctx->comm: in place when y is x, through
/// an f32 copy for f16 and bf16.
amprt_status reduceOne(amprt_context *ctx, const char *k, T x, T y,
                       int32_t op) {
  int64_t n = numel(x);
  mpi::Wire w = reduceWire(x->dtype);
  int32_t size = groupSize(ctx);
  if (x->dtype == AMPRT_F16 || x->dtype == AMPRT_BF16) {
    std::vector<float> buf(static_cast<size_t>(n));
    if (n)
      toF32(x->data, x->dtype, buf.data(), n);
    AMPRT_TRY(mpi::allReduce(ctx, k, nullptr, buf.data(), n, w, wireOp(op)));
    if (op == AMPRT_REDUCE_AVG)
      divideBy(buf.data(), w, n, size);
    if (n)
      fromF32(buf.data(), y->data, y->dtype, n);
    return AMPRT_OK;
  }
  const void *send = x->data == y->data ? nullptr : x->data;
  AMPRT_TRY(mpi::allReduce(ctx, k, send, y->data, n, w, wireOp(op)));
  if (op == AMPRT_REDUCE_AVG)
    divideBy(y->data, w, n, size);
  return AMPRT_OK;
}

/// all_reduce_many over ctx->comm: for each wire type present (in a fixed
/// order, the same on every rank), its tensors packed into one buffer,
/// reduced in one call and unpacked into the ys.
amprt_status reduceMany(amprt_context *ctx, const char *k, int64_t n, T xs,
                        T ys, int32_t op) {
  const mpi::Wire order[] = {mpi::Wire::F32, mpi::Wire::F64, mpi::Wire::I64,
                             mpi::Wire::I32, mpi::Wire::B1};
  int32_t size = groupSize(ctx);
  for (mpi::Wire w : order) {
    size_t eb = wireBytes(w);
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i)
      if (reduceWire(xs[i].dtype) == w)
        total += numel(&xs[i]);
    if (total == 0)
      continue;
    // 8-byte words: aligned for every wire type.
    std::vector<uint64_t> stage((size_t(total) * eb + 7) / 8);
    auto *base = reinterpret_cast<unsigned char *>(stage.data());
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      T x = &xs[i];
      int64_t m = numel(x);
      if (reduceWire(x->dtype) != w || m == 0)
        continue;
      if (w == mpi::Wire::F32)
        toF32(x->data, x->dtype, reinterpret_cast<float *>(base) + off, m);
      else
        std::memcpy(base + size_t(off) * eb, x->data, size_t(m) * eb);
      off += m;
    }
    AMPRT_TRY(mpi::allReduce(ctx, k, nullptr, base, total, w, wireOp(op)));
    if (op == AMPRT_REDUCE_AVG)
      divideBy(base, w, total, size);
    off = 0;
    for (int64_t i = 0; i < n; ++i) {
      T y = &ys[i];
      int64_t m = numel(y);
      if (reduceWire(y->dtype) != w || m == 0)
        continue;
      if (w == mpi::Wire::F32)
        fromF32(reinterpret_cast<float *>(base) + off, y->data, y->dtype, m);
      else
        std::memcpy(y->data, base + size_t(off) * eb, size_t(m) * eb);
      off += m;
    }
  }
  return AMPRT_OK;
}

/// reduce_scatter over ctx->comm: x as size parts of numel(y) elements;
/// f16 and bf16 through f32 copies.
amprt_status scatterReduced(amprt_context *ctx, const char *k, T x, T y,
                            int32_t op) {
  int64_t m = numel(y);
  mpi::Wire w = reduceWire(x->dtype);
  int32_t size = groupSize(ctx);
  if (x->dtype == AMPRT_F16 || x->dtype == AMPRT_BF16) {
    int64_t nx = numel(x);
    std::vector<float> in(static_cast<size_t>(nx)), out(static_cast<size_t>(m));
    if (nx)
      toF32(x->data, x->dtype, in.data(), nx);
    AMPRT_TRY(
        mpi::reduceScatter(ctx, k, in.data(), out.data(), m, w, wireOp(op)));
    if (op == AMPRT_REDUCE_AVG)
      divideBy(out.data(), w, m, size);
    if (m)
      fromF32(out.data(), y->data, y->dtype, m);
    return AMPRT_OK;
  }
  AMPRT_TRY(mpi::reduceScatter(ctx, k, x->data, y->data, m, w, wireOp(op)));
  if (op == AMPRT_REDUCE_AVG)
    divideBy(y->data, w, m, size);
  return AMPRT_OK;
}

/// A collective's work once checked: y = x for a group of one (no
/// communicator), else `run` over the communicator.
template <typename F>
amprt_status overGroup(amprt_context *ctx, T x, T y, F &&run) {
  if (ctx->comm)
    return run();
  copyData(x, y);
  return AMPRT_OK;
}

/// "xs[3]": the name of an array element in messages.
std::string nth(const char *array, int64_t i) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%s[%" PRId64 "]", array, i);
  return buf;
}

} // namespace

//===----------------------------------------------------------------------===//
// Argument checks (Checks.h), shared with kernels/Collective.cu
//===----------------------------------------------------------------------===//

int32_t amprt::groupSize(const amprt_context *ctx) {
  return ctx->comm ? ctx->comm->size : 1;
}

int32_t amprt::groupRank(const amprt_context *ctx) {
  return ctx->comm ? ctx->comm->rank : 0;
}

amprt_status amprt::checkReduction(amprt_context *ctx, const char *k,
                                   const char *what, T t, int32_t op) {
  AMPRT_TRY(checkTensor(ctx, k, what, t));
  if (!reducible(t->dtype))
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: %s has dtype %s, expected f32, f16, bf16, f64, i64, "
                     "i32 or bool",
                     k, what, amprt_dtype_name(t->dtype));
  if (op < AMPRT_REDUCE_SUM || op > AMPRT_REDUCE_MAX)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: op %d is not a reduction (0 SUM, 1 AVG, 2 MIN, "
                     "3 MAX)",
                     k, op);
  if (t->dtype == AMPRT_BOOL && op != AMPRT_REDUCE_MIN &&
      op != AMPRT_REDUCE_MAX)
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: %s of %s (dtype bool): bool takes MIN (true on "
                     "every rank) and MAX (true on any rank)",
                     k, op == AMPRT_REDUCE_SUM ? "SUM" : "AVG", what);
  if (op == AMPRT_REDUCE_AVG && !floating(t->dtype))
    return ctx->fail(AMPRT_ERR_DTYPE,
                     "%s: AVG of %s (dtype %s): AVG takes f32, f16, bf16 or "
                     "f64 (SUM, MIN and MAX also take integers)",
                     k, what, amprt_dtype_name(t->dtype));
  return AMPRT_OK;
}

amprt_status amprt::checkAllReduce(amprt_context *ctx, T x, T y, int32_t op) {
  const char *k = "all_reduce";
  AMPRT_TRY(checkReduction(ctx, k, "x", x, op));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
  return checkShape(ctx, k, "y", y, shapeOf(x));
}

amprt_status amprt::checkAllReduceMany(amprt_context *ctx, int64_t n, T xs,
                                       T ys, int32_t op) {
  const char *k = "all_reduce_many";
  if (n < 0 || (n > 0 && (!xs || !ys)))
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: xs/ys missing for n = %" PRId64, k, n);
  if (op < AMPRT_REDUCE_SUM || op > AMPRT_REDUCE_MAX)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: op %d is not a reduction (0 SUM, 1 AVG, 2 MIN, "
                     "3 MAX)",
                     k, op);
  for (int64_t i = 0; i < n; ++i) {
    std::string xi = nth("xs", i), yi = nth("ys", i);
    AMPRT_TRY(checkReduction(ctx, k, xi.c_str(), &xs[i], op));
    AMPRT_TRY(checkDtype(ctx, k, yi.c_str(), &ys[i], xs[i].dtype));
    AMPRT_TRY(checkShape(ctx, k, yi.c_str(), &ys[i], shapeOf(&xs[i])));
  }
  return AMPRT_OK;
}

amprt_status amprt::checkBroadcast(amprt_context *ctx, T x, int32_t root) {
  const char *k = "broadcast";
  AMPRT_TRY(checkTensor(ctx, k, "x", x));
  int32_t size = groupSize(ctx);
  if (root < 0 || root >= size)
    return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                     "%s: root %d out of range: the group has %d rank%s", k,
                     root, size, size == 1 ? "" : "s");
  return AMPRT_OK;
}

/// `whole` holds the group's parts of `part`: numel(whole) = group size x
/// numel(part).
static amprt_status checkParts(amprt_context *ctx, const char *k,
                               const char *wholeName, T whole,
                               const char *partName, T part) {
  int32_t size = groupSize(ctx);
  if (numel(whole) != size * numel(part))
    return ctx->fail(AMPRT_ERR_SHAPE,
                     "%s: %s has shape %s (%" PRId64
                     " elements), expected %" PRId64
                     " elements (group size %d x %" PRId64 " elements of %s)",
                     k, wholeName, shapeStr(whole).c_str(), numel(whole),
                     size * numel(part), size, numel(part), partName);
  return AMPRT_OK;
}

amprt_status amprt::checkAllGather(amprt_context *ctx, T x, T y) {
  const char *k = "all_gather";
  AMPRT_TRY(checkTensor(ctx, k, "x", x));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
  return checkParts(ctx, k, "y", y, "x", x);
}

amprt_status amprt::checkReduceScatter(amprt_context *ctx, T x, T y,
                                       int32_t op) {
  const char *k = "reduce_scatter";
  AMPRT_TRY(checkReduction(ctx, k, "x", x, op));
  AMPRT_TRY(checkDtype(ctx, k, "y", y, x->dtype));
  return checkParts(ctx, k, "x", x, "y", y);
}

//===----------------------------------------------------------------------===//
// The kernels
//===----------------------------------------------------------------------===//

extern "C" {

amprt_status amprt_all_reduce(amprt_context *ctx, T x, T y, int32_t op) {
  AMPRT_DISPATCH(all_reduce, ctx, x, y, op);
  return guard(ctx, "all_reduce", [&]() -> amprt_status {
    AMPRT_TRY(checkAllReduce(ctx, x, y, op));
    return overGroup(ctx, x, y,
                     [&] { return reduceOne(ctx, "all_reduce", x, y, op); });
  });
}

amprt_status amprt_all_reduce_many(amprt_context *ctx, int64_t n, T xs, T ys,
                                   int32_t op) {
  AMPRT_DISPATCH(all_reduce_many, ctx, n, xs, ys, op);
  return guard(ctx, "all_reduce_many", [&]() -> amprt_status {
    AMPRT_TRY(checkAllReduceMany(ctx, n, xs, ys, op));
    if (!ctx->comm) {
      for (int64_t i = 0; i < n; ++i)
        copyData(&xs[i], &ys[i]);
      return AMPRT_OK;
    }
    return reduceMany(ctx, "all_reduce_many", n, xs, ys, op);
  });
}

amprt_status amprt_broadcast(amprt_context *ctx, T x, int32_t root) {
  AMPRT_DISPATCH(broadcast, ctx, x, root);
  return guard(ctx, "broadcast", [&]() -> amprt_status {
    AMPRT_TRY(checkBroadcast(ctx, x, root));
    if (!ctx->comm)
      return AMPRT_OK;
    return mpi::broadcast(ctx, "broadcast", x->data, numel(x),
                          rawWire(x->dtype), root);
  });
}

amprt_status amprt_all_gather(amprt_context *ctx, T x, T y) {
  AMPRT_DISPATCH(all_gather, ctx, x, y);
  return guard(ctx, "all_gather", [&]() -> amprt_status {
    AMPRT_TRY(checkAllGather(ctx, x, y));
    return overGroup(ctx, x, y, [&] {
      return mpi::allGather(ctx, "all_gather", x->data, y->data, numel(x),
                            rawWire(x->dtype));
    });
  });
}

amprt_status amprt_reduce_scatter(amprt_context *ctx, T x, T y, int32_t op) {
  AMPRT_DISPATCH(reduce_scatter, ctx, x, y, op);
  return guard(ctx, "reduce_scatter", [&]() -> amprt_status {
    AMPRT_TRY(checkReduceScatter(ctx, x, y, op));
    return overGroup(ctx, x, y, [&] {
      return scatterReduced(ctx, "reduce_scatter", x, y, op);
    });
  });
}

} // extern "C"
