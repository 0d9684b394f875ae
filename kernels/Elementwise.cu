//===- Elementwise.cu - arithmetic, activations, sum, where, fill ---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Elementwise.cpp's kernels: the float binary ops and
// comparisons with numpy broadcasting (integer add/sub/mul/min/max too;
// integer div/mod/fmod/pow stay on the CPU, which reports a division by
// zero), the logical ops, the unary float ops and activation gradients,
// isnan/isinf/logical_not, sum, scale, where, fill, random_fill and
// identity (a device copy). The element formulas are the CPU kernels' own
// (amp/Runtime/Math/Elementwise.h), in f32 with one rounding into the output
// dtype; the transcendental functions are CUDA's (a few ulp from glibc's).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "amp/Runtime/Math/Elementwise.h"
#include "amp/Runtime/Math/Random.h"

#include <algorithm>
#include <cmath>

using namespace amprt;
using namespace amprt::cuda;

namespace {

constexpr int kThreads = 256;

//===----------------------------------------------------------------------===//
// Binary float ops with broadcasting
//===----------------------------------------------------------------------===//

/// True when `s` (leading 1s dropped) is the trailing dims of `out`: its
/// element i broadcasts to every out element o with o % numel(s) == i.
bool isSuffixOf(const Shape &s, const Shape &out) {
  size_t lead = 0;
  while (lead < s.size() && s[lead] == 1)
    ++lead;
  size_t n = s.size() - lead;
  if (n > out.size())
    return false;
  for (size_t i = 0; i < n; ++i)
    if (s[lead + i] != out[out.size() - n + i])
      return false;
  return true;
}

/// mode 0: same shapes; 1: b is one element; 2: general broadcast; 3: b is
/// a suffix of a's shape (a bias row); 4: a is a suffix of b's shape.
__global__ void binaryKernel(Bin op, int mode, Bcast bc, const void *a,
                             int32_t da, const void *b, int32_t db, void *y,
                             int32_t dy, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t oa = i, ob = i;
    if (mode == 1) {
      ob = 0;
    } else if (mode == 3) {
      ob = i % bc.dims[0];
    } else if (mode == 4) {
      oa = i % bc.dims[0];
    } else if (mode == 2) {
      int64_t off[2];
      bcastOffsets<2>(bc, i, off);
      oa = off[0];
      ob = off[1];
    }
    storeF(y, dy, i, binaryF(op, loadF(a, da, oa), loadF(b, db, ob)));
  }
}

/// binaryF as a packetMapKernel operation (a and b of y's shape).
struct BinF {
  Bin op;
  __device__ float operator()(float a, float b) const {
    return binaryF(op, a, b);
  }
};

/// binaryF with b one element in device memory (mode 1).
struct BinScalarF {
  Bin op;
  const void *b;
  int32_t db;
  struct Bound {
    Bin op;
    float b;
    __device__ float operator()(float a) const { return binaryF(op, a, b); }
  };
  __device__ Bound bind() const { return {op, loadF(b, db, 0)}; }
};

/// binaryI for add/sub/mul/min/max (div and mod stay on the CPU, which
/// reports a division by zero).
template <typename I>
__global__ void intBinaryKernel(Bin op, Bcast bc, const I *a, const I *b, I *y,
                                int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    bcastOffsets<2>(bc, i, off);
    y[i] = binaryI<I>(op, a[off[0]], b[off[1]]);
  }
}

/// Integer add/sub/mul/min/max with a, b and y of one dtype (i64 or i32):
/// the scalar bookkeeping of loss scaling (the growth tracker) stays on the
/// device instead of waiting for it and migrating its page to the host.
bool intBinaryOnDevice(amprt_context *ctx, Bin op, T a, T b, T y,
                       const Shape &so) {
  if (a->dtype != b->dtype || a->dtype != y->dtype ||
      (a->dtype != AMPRT_I64 && a->dtype != AMPRT_I32) || op == Bin::Div ||
      op == Bin::Mod || op == Bin::Fmod || op == Bin::Pow)
    return false;
  int64_t n = numel(so);
  if (n == 0)
    return true;
  Bcast bc = makeBcast(so, {shapeOf(a), shapeOf(b)});
  unsigned grid = gridFor(n, kThreads, 4);
  if (a->dtype == AMPRT_I64)
    intBinaryKernel<<<grid, kThreads, 0, stream(ctx)>>>(
        op, bc, static_cast<const int64_t *>(a->data),
        static_cast<const int64_t *>(b->data), static_cast<int64_t *>(y->data),
        n);
  else
    intBinaryKernel<<<grid, kThreads, 0, stream(ctx)>>>(
        op, bc, static_cast<const int32_t *>(a->data),
        static_cast<const int32_t *>(b->data), static_cast<int32_t *>(y->data),
        n);
  return true;
}

template <Bin Op, amprt_status (*Cpu)(amprt_context *, T, T, T)>
amprt_status cudaBinary(amprt_context *ctx, T a, T b, T y) {
  static const char *names[] = {"add",  "sub", "mul", "div", "mod",
                                "fmod", "pow", "min", "max"};
  const char *k = names[int(Op)];
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkTensor(ctx, k, "a", a) || checkTensor(ctx, k, "b", b) ||
        checkTensor(ctx, k, "y", y) ||
        !broadcastShapes({shapeOf(a), shapeOf(b)}, so) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, [&] { return Cpu(ctx, a, b, y); });
    if (!isLowOrF32(a->dtype) || !isLowOrF32(b->dtype) ||
        !isLowOrF32(y->dtype)) {
      if (!intBinaryOnDevice(ctx, Op, a, b, y, so))
        return onHost(ctx, [&] { return Cpu(ctx, a, b, y); });
      AMPRT_CUDA_LAUNCHED(ctx, k);
      return AMPRT_OK;
    }
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    Shape sa = shapeOf(a), sb = shapeOf(b);
    int mode = sa == so && sb == so             ? 0
               : sa == so && numel(sb) == 1     ? 1
               : sa == so && isSuffixOf(sb, so) ? 3
               : sb == so && isSuffixOf(sa, so) ? 4
                                                : 2;
    bool same = a->dtype == b->dtype && a->dtype == y->dtype;
    if (same && mode == 0 &&
        launchPacketMap<2>(stream(ctx), y->dtype, a->data, b->data, y->data, n,
                           BinF{Op})) {
      AMPRT_CUDA_LAUNCHED(ctx, k);
      return AMPRT_OK;
    }
    if (same && mode == 1 &&
        launchPacketMap<1>(stream(ctx), y->dtype, a->data, nullptr, y->data, n,
                           BinScalarF{Op, b->data, b->dtype})) {
      AMPRT_CUDA_LAUNCHED(ctx, k);
      return AMPRT_OK;
    }
    Bcast bc;
    if (mode == 2)
      bc = makeBcast(so, {sa, sb});
    else if (mode >= 3)
      bc.dims[0] = numel(mode == 3 ? sb : sa); // the suffix's length
    binaryKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        Op, mode, bc, a->data, a->dtype, b->data, b->dtype, y->data, y->dtype,
        n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Comparisons (bool out)
//===----------------------------------------------------------------------===//

/// Floats (f32/f16/bf16 mixed) as f32; i64/i32/bool of one dtype as
/// integers (Elementwise.cpp's compare).
__global__ void compareKernel(Cmp op, Bcast bc, const void *a, int32_t da,
                              const void *b, int32_t db, uint8_t *y, int64_t n,
                              bool ints) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    bcastOffsets<2>(bc, i, off);
    y[i] = ints ? compareOp(op, readI(a, da, off[0]), readI(b, db, off[1]))
                : compareOp(op, loadF(a, da, off[0]), loadF(b, db, off[1]));
  }
}

template <Cmp Op, amprt_status (*Cpu)(amprt_context *, T, T, T)>
amprt_status cudaCompare(amprt_context *ctx, T a, T b, T y) {
  static const char *names[] = {
      "less",          "greater",          "equal",
      "less_or_equal", "greater_or_equal", "logical_and",
      "logical_or",    "logical_xor"};
  const char *k = names[int(Op)];
  // The logical ops take bools only (Elementwise.cpp's logical()).
  bool logical = Op == Cmp::And || Op == Cmp::Or || Op == Cmp::Xor;
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkTensor(ctx, k, "a", a) || checkTensor(ctx, k, "b", b) ||
        checkDtype(ctx, k, "y", y, AMPRT_BOOL) ||
        !broadcastShapes({shapeOf(a), shapeOf(b)}, so) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, [&] { return Cpu(ctx, a, b, y); });
    bool floats = !logical && isLowOrF32(a->dtype) && isLowOrF32(b->dtype);
    bool ints = a->dtype == b->dtype &&
                (logical ? a->dtype == AMPRT_BOOL
                         : (a->dtype == AMPRT_I64 || a->dtype == AMPRT_I32 ||
                            a->dtype == AMPRT_BOOL));
    if (!floats && !ints)
      return onHost(ctx, [&] { return Cpu(ctx, a, b, y); });
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    compareKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        Op, makeBcast(so, {shapeOf(a), shapeOf(b)}), a->data, a->dtype, b->data,
        b->dtype, static_cast<uint8_t *>(y->data), n, ints);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// isnan, isinf, logical_not
//===----------------------------------------------------------------------===//

enum class Cls : int { IsNan, IsInf, Not };

__global__ void classifyKernel(Cls op, const void *x, int32_t dx, uint8_t *y,
                               int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (op == Cls::Not) {
      y[i] = !static_cast<const uint8_t *>(x)[i];
      continue;
    }
    float v = loadF(x, dx, i);
    y[i] = op == Cls::IsNan ? isnan(v) : isinf(v);
  }
}

template <Cls Op, amprt_status (*Cpu)(amprt_context *, T, T)>
amprt_status cudaClassify(amprt_context *ctx, T x, T y) {
  static const char *names[] = {"isnan", "isinf", "logical_not"};
  const char *k = names[int(Op)];
  return guard(ctx, k, [&]() -> amprt_status {
    if ((Op == Cls::Not ? checkDtype(ctx, k, "x", x, AMPRT_BOOL)
                        : checkFloat(ctx, k, "x", x)) ||
        checkDtype(ctx, k, "y", y, AMPRT_BOOL) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, [&] { return Cpu(ctx, x, y); });
    int64_t n = numel(x);
    if (n == 0)
      return AMPRT_OK;
    classifyKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        Op, x->data, x->dtype, static_cast<uint8_t *>(y->data), n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// Activations and their gradients (activation, activationGrad)
//===----------------------------------------------------------------------===//

__global__ void actKernel(Act act, float alpha, const void *x, int32_t dx,
                          void *y, int32_t dy, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(y, dy, i, activation(act, loadF(x, dx, i), alpha));
}

__global__ void actGradKernel(Act act, float alpha, const void *g, int32_t dg,
                              const void *x, int32_t dx, void *out,
                              int32_t dout, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(out, dout, i,
           activationGrad(act, loadF(g, dg, i), loadF(x, dx, i), alpha));
}

/// activation and activationGrad as packetMapKernel operations.
struct ActF {
  Act act;
  float alpha;
  __device__ float operator()(float v) const {
    return activation(act, v, alpha);
  }
};
struct GradF {
  Act act;
  float alpha;
  __device__ float operator()(float g, float v) const {
    return activationGrad(act, g, v, alpha);
  }
};

const char *actName(Act a, bool grad) {
  static const char *names[] = {
      "relu",      "gelu", "neg",        "abs",        "sigmoid",
      "tanh",      "exp",  "log",        "sqrt",       "reciprocal",
      "fast_gelu", "sign", "leaky_relu", "quick_gelu", "erf",
      "sin",       "cos",  "floor",      "ceil",       "round"};
  static const char *grads[] = {"relu_grad",
                                "gelu_grad",
                                "",
                                "",
                                "sigmoid_grad",
                                "tanh_grad",
                                "",
                                "",
                                "",
                                "",
                                "fast_gelu_grad",
                                "",
                                "leaky_relu_grad",
                                "quick_gelu_grad",
                                "",
                                "",
                                "",
                                "",
                                "",
                                ""};
  return (grad ? grads : names)[int(a)];
}

/// y = act(x) on the device; `cpu` when the call is one to leave to the
/// CPU code (it reports a bad argument).
template <typename Cpu>
amprt_status unaryOnDevice(amprt_context *ctx, Act act, float alpha, T x, T y,
                           Cpu &&cpu) {
  const char *k = actName(act, false);
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, cpu);
    int64_t n = numel(x);
    if (n == 0)
      return AMPRT_OK;
    if (x->dtype != y->dtype ||
        !launchPacketMap<1>(stream(ctx), x->dtype, x->data, nullptr, y->data, n,
                            ActF{act, alpha}))
      actKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          act, alpha, x->data, x->dtype, y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

template <typename Cpu>
amprt_status gradOnDevice(amprt_context *ctx, Act act, float alpha, T dy, T x,
                          T dx, Cpu &&cpu) {
  const char *k = actName(act, true);
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkFloat(ctx, k, "dy", dy) || checkFloat(ctx, k, "x", x) ||
        checkFloat(ctx, k, "dx", dx) ||
        checkShape(ctx, k, "x", x, shapeOf(dy)) ||
        checkShape(ctx, k, "dx", dx, shapeOf(dy)))
      return onHost(ctx, cpu);
    int64_t n = numel(dy);
    if (n == 0)
      return AMPRT_OK;
    if (dy->dtype != x->dtype || dy->dtype != dx->dtype ||
        !launchPacketMap<2>(stream(ctx), dx->dtype, dy->data, x->data, dx->data,
                            n, GradF{act, alpha}))
      actGradKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
          act, alpha, dy->data, dy->dtype, x->data, x->dtype, dx->data,
          dx->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

template <Act A, amprt_status (*Cpu)(amprt_context *, T, T)>
amprt_status cudaUnary(amprt_context *ctx, T x, T y) {
  return unaryOnDevice(ctx, A, 0.f, x, y, [&] { return Cpu(ctx, x, y); });
}

template <Act A, amprt_status (*Cpu)(amprt_context *, T, T, T)>
amprt_status cudaGrad(amprt_context *ctx, T dy, T x, T dx) {
  return gradOnDevice(ctx, A, 0.f, dy, x, dx,
                      [&] { return Cpu(ctx, dy, x, dx); });
}

template <Act A, amprt_status (*Cpu)(amprt_context *, T, float, T)>
amprt_status cudaSlope(amprt_context *ctx, T x, float alpha, T y) {
  return unaryOnDevice(ctx, A, alpha, x, y,
                       [&] { return Cpu(ctx, x, alpha, y); });
}

template <Act A, amprt_status (*Cpu)(amprt_context *, T, T, float, T)>
amprt_status cudaSlopeGrad(amprt_context *ctx, T dy, T x, float alpha, T dx) {
  return gradOnDevice(ctx, A, alpha, dy, x, dx,
                      [&] { return Cpu(ctx, dy, x, alpha, dx); });
}

//===----------------------------------------------------------------------===//
// sum, scale, where
//===----------------------------------------------------------------------===//

/// One input of sum: data, dtype and its broadcast strides into y.
struct SumInput {
  const void *data;
  int32_t dtype;
  bool dense; // y's shape: the offset is y's
  int64_t st[AMPRT_MAX_RANK];
};

/// y = sum of the inputs in order, in f32, one rounding (amprt_sum).
/// Up to this many inputs travel in the kernel's parameters; more go
/// through a table in device memory.
constexpr int kSumInline = 16;
struct SumTable {
  SumInput in[kSumInline];
};

__global__ void sumKernel(SumTable inline_, const SumInput *table, int64_t nin,
                          Bcast bc, bool allDense, void *y, int32_t dy,
                          int64_t n) {
  const SumInput *in = table ? table : inline_.in;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t idx[AMPRT_MAX_RANK];
    int64_t r = o;
    for (int d = allDense ? -1 : bc.rank - 1; d >= 0; --d) {
      idx[d] = r % bc.dims[d];
      r /= bc.dims[d];
    }
    float acc = 0.f;
    for (int64_t j = 0; j < nin; ++j) {
      int64_t off = o;
      if (!in[j].dense) {
        off = 0;
        for (int d = 0; d < bc.rank; ++d)
          off += idx[d] * in[j].st[d];
      }
      acc += loadF(in[j].data, in[j].dtype, off);
    }
    storeF(y, dy, o, acc);
  }
}

amprt_status cudaSum(amprt_context *ctx, T inputs, int64_t nin, T y) {
  const char *k = "sum";
  return guard(ctx, k, [&]() -> amprt_status {
    auto cpu = [&] { return amprt_sum(ctx, inputs, nin, y); };
    if (nin < 1 || !inputs || checkFloat(ctx, k, "y", y))
      return onHost(ctx, cpu);
    std::vector<Shape> shapes;
    for (int64_t i = 0; i < nin; ++i) {
      if (checkFloat(ctx, k, "an input", &inputs[i]))
        return onHost(ctx, cpu);
      shapes.push_back(shapeOf(&inputs[i]));
    }
    Shape so;
    if (!broadcastShapes(shapes, so) || checkShape(ctx, k, "y", y, so))
      return onHost(ctx, cpu);
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    std::vector<SumInput> table(static_cast<size_t>(nin));
    bool allDense = true;
    for (int64_t i = 0; i < nin; ++i) {
      Shape st = broadcastStrides(shapes[size_t(i)], so);
      SumInput &e = table[size_t(i)];
      e = {};
      e.data = inputs[i].data;
      e.dtype = inputs[i].dtype;
      e.dense = shapes[size_t(i)] == so;
      allDense &= e.dense;
      for (size_t d = 0; d < st.size(); ++d)
        e.st[d] = st[d];
    }
    Scratch dev;
    SumTable inline_ = {};
    if (nin <= kSumInline)
      std::copy(table.begin(), table.end(), inline_.in);
    else
      AMPRT_TRY(
          upload(ctx, k, table.data(), table.size() * sizeof(SumInput), dev));
    Bcast bc = makeBcast(so, {});
    sumKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        inline_, static_cast<const SumInput *>(dev.p), nin, bc, allDense,
        y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

/// amprt_scale: y = x * s or x / s, s read on the device (scalarOf's
/// value, rounded to f32).
__global__ void scaleKernel(const void *x, int32_t dx, const void *s,
                            int32_t ds, int32_t down, void *y, int32_t dy,
                            int64_t n) {
  float f = float(readD(s, ds, 0));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = loadF(x, dx, i);
    storeF(y, dy, i, down ? v / f : v * f);
  }
}

amprt_status cudaScale(amprt_context *ctx, T x, T s, int32_t down, T y) {
  const char *k = "scale";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "s", s) || checkNumel(ctx, k, "s", s, 1) ||
        checkFloat(ctx, k, "x", x) || checkFloat(ctx, k, "y", y) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, [&] { return amprt_scale(ctx, x, s, down, y); });
    int64_t n = numel(x);
    if (n == 0)
      return AMPRT_OK;
    scaleKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        x->data, x->dtype, s->data, s->dtype, down, y->data, y->dtype, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

template <typename E>
__global__ void whereKernel(Bcast bc, const uint8_t *c, const E *a, const E *b,
                            E *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[3];
    bcastOffsets<3>(bc, i, off);
    y[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

amprt_status cudaWhere(amprt_context *ctx, T cond, T a, T b, T y) {
  const char *k = "where";
  return guard(ctx, k, [&]() -> amprt_status {
    Shape so;
    if (checkDtype(ctx, k, "cond", cond, AMPRT_BOOL) ||
        checkTensor(ctx, k, "a", a) || checkDtype(ctx, k, "b", b, a->dtype) ||
        checkDtype(ctx, k, "y", y, a->dtype) ||
        !broadcastShapes({shapeOf(cond), shapeOf(a), shapeOf(b)}, so) ||
        checkShape(ctx, k, "y", y, so))
      return onHost(ctx, [&] { return amprt_where(ctx, cond, a, b, y); });
    int64_t n = numel(so);
    if (n == 0)
      return AMPRT_OK;
    Bcast bc = makeBcast(so, {shapeOf(cond), shapeOf(a), shapeOf(b)});
    auto *c = static_cast<const uint8_t *>(cond->data);
    unsigned grid = gridFor(n, kThreads, 4);
    cudaStream_t st = stream(ctx);
    byElementSize(amprt_dtype_size(a->dtype), [&](auto e) {
      using E = decltype(e);
      whereKernel<<<grid, kThreads, 0, st>>>(
          bc, c, static_cast<const E *>(a->data),
          static_cast<const E *>(b->data), static_cast<E *>(y->data), n);
    });
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

//===----------------------------------------------------------------------===//
// fill, random_fill, identity
//===----------------------------------------------------------------------===//

__global__ void fillKernel(void *y, int32_t es, uint64_t pattern, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    switch (es) {
    case 8:
      static_cast<uint64_t *>(y)[i] = pattern;
      break;
    case 4:
      static_cast<uint32_t *>(y)[i] = uint32_t(pattern);
      break;
    case 2:
      static_cast<uint16_t *>(y)[i] = uint16_t(pattern);
      break;
    default:
      static_cast<uint8_t *>(y)[i] = uint8_t(pattern);
    }
  }
}

amprt_status cudaFill(amprt_context *ctx, T y, double value) {
  const char *k = "fill";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "y", y))
      return onHost(ctx, [&] { return amprt_fill(ctx, y, value); });
    int64_t n = numel(y);
    if (n == 0)
      return AMPRT_OK;
    // The element's bytes, computed on the host as the CPU kernel does:
    // f16/bf16 with one rounding from double, the rest as setScalar.
    uint64_t pattern = 0;
    if (y->dtype == AMPRT_F16)
      pattern = f32ToF16(f64ToF32Odd(value));
    else if (y->dtype == AMPRT_BF16)
      pattern = f32ToBf16(f64ToF32Odd(value));
    else {
      amprt_tensor one = {&pattern, y->dtype, 0, nullptr};
      setScalar(&one, value);
    }
    int32_t es = int32_t(amprt_dtype_size(y->dtype));
    fillKernel<<<gridFor(n, kThreads, 4), kThreads, 0, stream(ctx)>>>(
        y->data, es, pattern, n);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

/// D: y's dtype fixed at compile time, or -1 to read it from `dt`. The
/// stream's seed is seed + step * the random offset (64-bit wrap-around,
/// as the CPU's), the offset read when the kernel runs.
template <int32_t D>
__global__ void randomFillKernel(void *y, int32_t dt, uint64_t seed,
                                 uint64_t step, const uint64_t *offset,
                                 int64_t classes, int64_t n) {
  if (step)
    seed += step * *offset;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeRandom(y, D < 0 ? dt : D, i, seed, classes);
}

/// random_fill on the device: the CPU kernel's bits (storeRandom is shared;
/// the f64 arithmetic is IEEE on both).
amprt_status cudaRandomFill(amprt_context *ctx, T y, uint64_t seed,
                            uint64_t seed_step, int64_t classes) {
  const char *k = "random_fill";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkRandomFill(ctx, k, y, classes))
      return onHost(ctx, [&] {
        return amprt_random_fill(ctx, y, seed, seed_step, classes);
      });
    int64_t n = numel(y);
    if (n == 0)
      return AMPRT_OK;
    unsigned grid = gridFor(n, kThreads, 4);
    cudaStream_t st = stream(ctx);
    const uint64_t *off = randomOffset(ctx);
    switch (y->dtype) {
    case AMPRT_F32:
      randomFillKernel<AMPRT_F32><<<grid, kThreads, 0, st>>>(
          y->data, y->dtype, seed, seed_step, off, classes, n);
      break;
    case AMPRT_I64:
      randomFillKernel<AMPRT_I64><<<grid, kThreads, 0, st>>>(
          y->data, y->dtype, seed, seed_step, off, classes, n);
      break;
    case AMPRT_I32:
      randomFillKernel<AMPRT_I32><<<grid, kThreads, 0, st>>>(
          y->data, y->dtype, seed, seed_step, off, classes, n);
      break;
    default: // f16, bf16, f64, bool: the dtype is read per element
      randomFillKernel<-1><<<grid, kThreads, 0, st>>>(
          y->data, y->dtype, seed, seed_step, off, classes, n);
    }
    AMPRT_CUDA_LAUNCHED(ctx, k);
    return AMPRT_OK;
  });
}

amprt_status cudaIdentity(amprt_context *ctx, T x, T y) {
  const char *k = "identity";
  return guard(ctx, k, [&]() -> amprt_status {
    if (checkTensor(ctx, k, "x", x) || checkDtype(ctx, k, "y", y, x->dtype) ||
        checkShape(ctx, k, "y", y, shapeOf(x)))
      return onHost(ctx, [&] { return amprt_identity(ctx, x, y); });
    return copyBytes(ctx, k, y->data, x->data,
                     size_t(numel(x)) * amprt_dtype_size(x->dtype));
  });
}

} // namespace

void amprt::cuda::registerElementwise(KernelTable &t) {
  t.add = cudaBinary<Bin::Add, amprt_add>;
  t.sub = cudaBinary<Bin::Sub, amprt_sub>;
  t.mul = cudaBinary<Bin::Mul, amprt_mul>;
  t.div = cudaBinary<Bin::Div, amprt_div>;
  t.mod = cudaBinary<Bin::Mod, amprt_mod>;
  t.pow = cudaBinary<Bin::Pow, amprt_pow>;
  t.min = cudaBinary<Bin::Min, amprt_min>;
  t.max = cudaBinary<Bin::Max, amprt_max>;
  t.less = cudaCompare<Cmp::Less, amprt_less>;
  t.greater = cudaCompare<Cmp::Greater, amprt_greater>;
  t.less_or_equal = cudaCompare<Cmp::LessEq, amprt_less_or_equal>;
  t.greater_or_equal = cudaCompare<Cmp::GreaterEq, amprt_greater_or_equal>;
  t.logical_and = cudaCompare<Cmp::And, amprt_logical_and>;
  t.logical_or = cudaCompare<Cmp::Or, amprt_logical_or>;
  t.logical_xor = cudaCompare<Cmp::Xor, amprt_logical_xor>;
  t.equal = cudaCompare<Cmp::Equal, amprt_equal>;
  t.isnan = cudaClassify<Cls::IsNan, amprt_isnan>;
  t.isinf = cudaClassify<Cls::IsInf, amprt_isinf>;
  t.logical_not = cudaClassify<Cls::Not, amprt_logical_not>;
  t.relu = cudaUnary<Act::Relu, amprt_relu>;
  t.gelu = cudaUnary<Act::Gelu, amprt_gelu>;
  t.neg = cudaUnary<Act::Neg, amprt_neg>;
  t.abs = cudaUnary<Act::Abs, amprt_abs>;
  t.sigmoid = cudaUnary<Act::Sigmoid, amprt_sigmoid>;
  t.tanh = cudaUnary<Act::Tanh, amprt_tanh>;
  t.exp = cudaUnary<Act::Exp, amprt_exp>;
  t.log = cudaUnary<Act::Log, amprt_log>;
  t.sqrt = cudaUnary<Act::Sqrt, amprt_sqrt>;
  t.reciprocal = cudaUnary<Act::Recip, amprt_reciprocal>;
  t.fast_gelu = cudaUnary<Act::FastGelu, amprt_fast_gelu>;
  t.relu_grad = cudaGrad<Act::Relu, amprt_relu_grad>;
  t.gelu_grad = cudaGrad<Act::Gelu, amprt_gelu_grad>;
  t.sigmoid_grad = cudaGrad<Act::Sigmoid, amprt_sigmoid_grad>;
  t.tanh_grad = cudaGrad<Act::Tanh, amprt_tanh_grad>;
  t.fast_gelu_grad = cudaGrad<Act::FastGelu, amprt_fast_gelu_grad>;
  t.sign = cudaUnary<Act::Sign, amprt_sign>;
  t.erf = cudaUnary<Act::Erf, amprt_erf>;
  t.sin = cudaUnary<Act::Sin, amprt_sin>;
  t.cos = cudaUnary<Act::Cos, amprt_cos>;
  t.floor = cudaUnary<Act::Floor, amprt_floor>;
  t.ceil = cudaUnary<Act::Ceil, amprt_ceil>;
  t.round = cudaUnary<Act::Round, amprt_round>;
  t.leaky_relu = cudaSlope<Act::Leaky, amprt_leaky_relu>;
  t.leaky_relu_grad = cudaSlopeGrad<Act::Leaky, amprt_leaky_relu_grad>;
  t.quick_gelu = cudaSlope<Act::QuickGelu, amprt_quick_gelu>;
  t.quick_gelu_grad = cudaSlopeGrad<Act::QuickGelu, amprt_quick_gelu_grad>;
  t.sum = cudaSum;
  t.scale = cudaScale;
  t.where = cudaWhere;
  t.fill = cudaFill;
  t.random_fill = cudaRandomFill;
  t.identity = cudaIdentity;
}
