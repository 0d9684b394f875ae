//===- Loss.cu - softmax cross-entropy loss and its gradient --------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The CUDA versions of Loss.cpp's softmax_cross_entropy_loss and its
// gradient (any [N, C, d...] layout; weights, ignore_index, none/sum/mean):
// one warp per row, the log-sum-exp and the reductions in double as
// Loss.cpp computes them; only the order of the sums differs (a tree instead
// of a sequence). mse_loss and nll_loss run on the CPU.
//
// Labels are checked on the device: the first out-of-range one is reported
// through the context's status word. Immediate data checks wait for the
// stream at the end of the call; deferred ones (AMPRT_CHECKS_DEFERRED) queue
// the record of a bad label, its value read by the device, for the next
// wait to report.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"

#include <cmath>

using namespace amprt;
using namespace amprt::cuda;

namespace {

//===----------------------------------------------------------------------===//
// softmax_cross_entropy_loss (+ grad)
//===----------------------------------------------------------------------===//

struct Sce {
  int64_t N, C, D;
  const void *labels;
  int32_t labelDt;
  const void *weight; // NULL: 1
  int32_t weightDt;
  int32_t hasIgnore;
  int64_t ignore;
};

__device__ __forceinline__ int64_t labelAt(const Sce &s, int64_t i) {
  return s.labelDt == AMPRT_I64 ? static_cast<const int64_t *>(s.labels)[i]
                                : static_cast<const int32_t *>(s.labels)[i];
}

/// Weight of row i's label; false (and the first bad row recorded) for an
/// out-of-range label, false for an ignored one.
__device__ __forceinline__ bool rowWeight(const Sce &s, int64_t i, int64_t &lab,
                                          double &w, int64_t *status) {
  lab = labelAt(s, i);
  if (s.hasIgnore && lab == s.ignore)
    return false;
  if (lab < 0 || lab >= s.C) {
    atomicMin(reinterpret_cast<unsigned long long *>(status),
              (unsigned long long)i);
    return false;
  }
  w = s.weight ? double(loadF(s.weight, s.weightDt, lab)) : 1.0;
  return true;
}

/// One warp per (n, d) row: log-softmax over C (stride D) and the row's
/// loss and weight (0 when ignored).
__global__ void sceRowsKernel(Sce s, const void *scores, int32_t ds,
                              void *logProb, int32_t dlp, double *rowLoss,
                              double *rowW, int64_t *status) {
  int lane = threadIdx.x % 32;
  int64_t rows = s.N * s.D;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rows;
       r += int64_t(gridDim.x) * kWarps) {
    int64_t n = r / s.D, d = r % s.D;
    int64_t base = n * s.C * s.D + d;
    float mx = -INFINITY;
    for (int64_t c = lane; c < s.C; c += 32)
      mx = fmaxf(mx, loadF(scores, ds, base + c * s.D));
    mx = warpMax(mx);
    double sum = 0;
    for (int64_t c = lane; c < s.C; c += 32)
      sum += exp(double(loadF(scores, ds, base + c * s.D)) - mx);
    sum = warpSum(sum);
    double ls = log(sum);
    if (logProb)
      for (int64_t c = lane; c < s.C; c += 32)
        storeF(logProb, dlp, base + c * s.D,
               float(double(loadF(scores, ds, base + c * s.D)) - mx - ls));
    if (lane == 0) {
      int64_t lab;
      double w = 0, l = 0;
      if (rowWeight(s, r, lab, w, status)) {
        float lp = float(double(loadF(scores, ds, base + lab * s.D)) - mx - ls);
        l = -w * lp;
      } else {
        w = 0;
      }
      rowLoss[r] = l;
      rowW[r] = w;
    }
  }
}

/// One block: the sums of the rows' losses and weights (double), then the
/// loss as Loss.cpp writes it.
__global__ void sceReduceKernel(const double *rowLoss, const double *rowW,
                                int64_t rows, int32_t reduction, void *loss,
                                int32_t dl) {
  __shared__ double sl[32], sw[32];
  double l = 0, w = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    l += rowLoss[i];
    w += rowW[i];
  }
  l = warpSum(l);
  w = warpSum(w);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    sl[warp] = l;
    sw[warp] = w;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0, wsum = 0;
    for (int i = 0; i < int(blockDim.x / 32); ++i) {
      total += sl[i];
      wsum += sw[i];
    }
    if (reduction == 1)
      storeF(loss, dl, 0, float(total));
    else
      storeF(loss, dl, 0, float(wsum != 0 ? total / wsum : 0));
  }
}

__global__ void sceNoneKernel(const double *rowLoss, int64_t rows, void *loss,
                              int32_t dl) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += int64_t(gridDim.x) * blockDim.x)
    storeF(loss, dl, i, float(rowLoss[i]));
}

/// Loss.cpp's sceCheck; non-OK means "let the CPU report it".
amprt_status sceCheck(amprt_context *ctx, const char *k, T scores, T labels,
                      T weight, int32_t reduction, Sce &s, Shape &lossNone) {
  if (scores->rank < 2)
    return AMPRT_ERR_SHAPE;
  AMPRT_TRY(checkTensor(ctx, k, "labels", labels));
  if (labels->dtype != AMPRT_I64 && labels->dtype != AMPRT_I32)
    return AMPRT_ERR_DTYPE;
  if (reduction < 0 || reduction > 2)
    return AMPRT_ERR_INVALID_ARGUMENT;
  s.N = scores->shape[0];
  s.C = scores->shape[1];
  s.D = 1;
  lossNone = {s.N};
  for (int32_t i = 2; i < scores->rank; ++i) {
    s.D *= scores->shape[i];
    lossNone.push_back(scores->shape[i]);
  }
  AMPRT_TRY(checkShape(ctx, k, "labels", labels, lossNone));
  AMPRT_TRY(checkFloat(ctx, k, "weight", weight, true));
  if (weight)
    AMPRT_TRY(checkShape(ctx, k, "weight", weight, {s.C}));
  s.labels = labels->data;
  s.labelDt = labels->dtype;
  s.weight = weight ? weight->data : nullptr;
  s.weightDt = weight ? weight->dtype : 0;
  return AMPRT_OK;
}

/// Loss.cpp's words for the bad label of row `bad`.
struct LabelOutside {
  const void *labels;
  int32_t dt;
  int64_t C;
  __device__ bool operator()(int64_t bad, DeferredCheck &c) const {
    c.message = kLabelOutside;
    c.value = indexValue(labels, dt, bad);
    c.at = bad;
    c.bound = C;
    return true;
  }
};

/// Reports a bad label as Loss.cpp does: waits for the call's kernels
/// (immediate checks) or queues its record (deferred).
amprt_status labelStatus(amprt_context *ctx, const char *k, T labels,
                         int64_t C) {
  int64_t bad;
  AMPRT_TRY(
      statusOrDefer(ctx, k, LabelOutside{labels->data, labels->dtype, C}, bad));
  if (bad == kNoError)
    return AMPRT_OK;
  // The stream is idle: the host may read the managed labels.
  int64_t lab = labels->dtype == AMPRT_I64
                    ? static_cast<const int64_t *>(labels->data)[bad]
                    : static_cast<const int32_t *>(labels->data)[bad];
  return ctx->fail(AMPRT_ERR_INVALID_ARGUMENT,
                   "%s: label %lld at %lld outside [0, %lld)", k,
                   (long long)lab, (long long)bad, (long long)C);
}

amprt_status cudaSce(amprt_context *ctx, T scores, T labels, T weight,
                     int32_t reduction, int32_t has_ignore_index,
                     int64_t ignore_index, T loss, T log_prob) {
  const char *k = "softmax_cross_entropy_loss";
  return guard(ctx, k, [&]() -> amprt_status {
    Sce s = {};
    Shape lossNone;
    if (checkFloat(ctx, k, "scores", scores) ||
        sceCheck(ctx, k, scores, labels, weight, reduction, s, lossNone) ||
        checkFloat(ctx, k, "loss", loss) ||
        (reduction == 0 ? checkShape(ctx, k, "loss", loss, lossNone)
                        : checkNumel(ctx, k, "loss", loss, 1)) ||
        checkFloat(ctx, k, "log_prob", log_prob, true) ||
        (log_prob && checkShape(ctx, k, "log_prob", log_prob, shapeOf(scores))))
      return onHost(ctx, [&] {
        return amprt_softmax_cross_entropy_loss(ctx, scores, labels, weight,
                                                reduction, has_ignore_index,
                                                ignore_index, loss, log_prob);
      });
    s.hasIgnore = has_ignore_index;
    s.ignore = ignore_index;
    int64_t rows = s.N * s.D;
    Scratch per;
    AMPRT_TRY(per.get(ctx, k, size_t(2 * rows) * sizeof(double)));
    auto *rowLoss = static_cast<double *>(per.p), *rowW = rowLoss + rows;
    AMPRT_TRY(clearStatus(ctx, k));
    if (rows > 0 && s.C > 0) {
      sceRowsKernel<<<rowGrid(rows), 32 * kWarps, 0, stream(ctx)>>>(
          s, scores->data, scores->dtype, log_prob ? log_prob->data : nullptr,
          log_prob ? log_prob->dtype : 0, rowLoss, rowW, state(ctx).devStatus);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    } else if (rows > 0) {
      // C = 0: every label is out of range; let the CPU say so.
      return onHost(ctx, [&] {
        return amprt_softmax_cross_entropy_loss(ctx, scores, labels, weight,
                                                reduction, has_ignore_index,
                                                ignore_index, loss, log_prob);
      });
    }
    if (reduction == 0) {
      if (rows > 0) {
        sceNoneKernel<<<gridFor(rows, 256), 256, 0, stream(ctx)>>>(
            rowLoss, rows, loss->data, loss->dtype);
        AMPRT_CUDA_LAUNCHED(ctx, k);
      }
    } else {
      sceReduceKernel<<<1, 1024, 0, stream(ctx)>>>(
          rowLoss, rowW, rows, reduction, loss->data, loss->dtype);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return labelStatus(ctx, k, labels, s.C);
  });
}

/// One block: the total weight of the counted labels (for mean).
__global__ void sceWeightKernel(Sce s, double *wsum, int64_t *status) {
  __shared__ double sw[32];
  double w = 0;
  for (int64_t i = threadIdx.x; i < s.N * s.D; i += blockDim.x) {
    int64_t lab;
    double wi;
    if (rowWeight(s, i, lab, wi, status))
      w += wi;
  }
  w = warpSum(w);
  if (threadIdx.x % 32 == 0)
    sw[threadIdx.x / 32] = w;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0;
    for (int i = 0; i < int(blockDim.x / 32); ++i)
      t += sw[i];
    *wsum = t;
  }
}

__global__ void sceGradKernel(Sce s, const void *dloss, int32_t ddl,
                              int32_t reduction, const void *logProb,
                              int32_t dlp, const double *wsumP, void *dx,
                              int32_t ddx) {
  int64_t n = s.N * s.C * s.D;
  double wsum = *wsumP;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < n;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t d = o % s.D, c = (o / s.D) % s.C, nn = o / (s.C * s.D);
    int64_t i = nn * s.D + d;
    int64_t lab = labelAt(s, i);
    bool ignored = s.hasIgnore && lab == s.ignore;
    double f = 0;
    if (!ignored && lab >= 0 && lab < s.C) {
      double w = s.weight ? double(loadF(s.weight, s.weightDt, lab)) : 1.0;
      double g = reduction == 0 ? double(loadF(dloss, ddl, i))
                                : double(loadF(dloss, ddl, 0));
      f = reduction == 2 ? (wsum != 0 ? g * w / wsum : 0) : g * w;
    }
    double p = exp(double(loadF(logProb, dlp, o)));
    storeF(dx, ddx, o, float(f * (p - (c == lab ? 1.0 : 0.0))));
  }
}

amprt_status cudaSceGrad(amprt_context *ctx, T dloss, T log_prob, T labels,
                         T weight, int32_t reduction, int32_t has_ignore_index,
                         int64_t ignore_index, T dx) {
  const char *k = "softmax_cross_entropy_loss_grad";
  return guard(ctx, k, [&]() -> amprt_status {
    Sce s = {};
    Shape lossNone;
    if (checkFloat(ctx, k, "log_prob", log_prob) ||
        sceCheck(ctx, k, log_prob, labels, weight, reduction, s, lossNone) ||
        checkFloat(ctx, k, "dloss", dloss) ||
        (reduction == 0 ? checkShape(ctx, k, "dloss", dloss, lossNone)
                        : checkNumel(ctx, k, "dloss", dloss, 1)) ||
        checkFloat(ctx, k, "dx", dx) ||
        checkShape(ctx, k, "dx", dx, shapeOf(log_prob)))
      return onHost(ctx, [&] {
        return amprt_softmax_cross_entropy_loss_grad(
            ctx, dloss, log_prob, labels, weight, reduction, has_ignore_index,
            ignore_index, dx);
      });
    s.hasIgnore = has_ignore_index;
    s.ignore = ignore_index;
    Scratch wsum;
    AMPRT_TRY(wsum.get(ctx, k, sizeof(double)));
    AMPRT_TRY(clearStatus(ctx, k));
    sceWeightKernel<<<1, 1024, 0, stream(ctx)>>>(
        s, static_cast<double *>(wsum.p), state(ctx).devStatus);
    AMPRT_CUDA_LAUNCHED(ctx, k);
    int64_t n = numel(log_prob);
    if (n > 0) {
      sceGradKernel<<<gridFor(n, 256, 4), 256, 0, stream(ctx)>>>(
          s, dloss->data, dloss->dtype, reduction, log_prob->data,
          log_prob->dtype, static_cast<const double *>(wsum.p), dx->data,
          dx->dtype);
      AMPRT_CUDA_LAUNCHED(ctx, k);
    }
    return labelStatus(ctx, k, labels, s.C);
  });
}

} // namespace

void amprt::cuda::registerLoss(KernelTable &t) {
  t.softmax_cross_entropy_loss = cudaSce;
  t.softmax_cross_entropy_loss_grad = cudaSceGrad;
}
