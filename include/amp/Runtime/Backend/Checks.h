//===- Checks.h - argument checks of the runtime's kernels ------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The descriptor and argument checks of the runtime's kernels and the shape
// helpers they use, private to the runtime: the CPU kernels (lib/Runtime)
// report a bad argument with them, and the CUDA backend (kernels/) calls the
// same checks to decide whether a call is one it runs or one it hands to
// the CPU code (onHost) for the exact result or error message. Many return
// the geometry they checked (a Window, a GatherND map, the sizes of an
// LSTM). Implemented in lib/Runtime; part of the AmpRuntimeBackend target.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_BACKEND_CHECKS_H
#define AMP_RUNTIME_BACKEND_CHECKS_H

#include "amp/Runtime/Backend/Backend.h"
#include "amp/Runtime/Math/Elementwise.h"
#include "amp/Runtime/Math/Geometry.h"
#include "amp/Runtime/Math/Recurrent.h"

#include <cstdint>
#include <string>
#include <vector>

namespace amprt {

using Shape = std::vector<int64_t>;

inline bool isLowOrF32(int32_t dt) {
  return dt == AMPRT_F32 || dt == AMPRT_F16 || dt == AMPRT_BF16;
}
inline bool isInteger(int32_t dt) {
  return dt == AMPRT_I64 || dt == AMPRT_I32 || dt == AMPRT_I8 || dt == AMPRT_U8;
}

inline Shape shapeOf(const amprt_tensor *t) {
  return Shape(t->shape, t->shape + t->rank);
}
int64_t numel(const amprt_tensor *t);
int64_t numel(const Shape &s);
std::string shapeStr(const Shape &s);
inline std::string shapeStr(const amprt_tensor *t) {
  return shapeStr(shapeOf(t));
}

/// Checks a descriptor: non-null (unless optional and null), valid dtype,
/// rank in range, non-negative dims, data present when numel > 0.
amprt_status checkTensor(amprt_context *ctx, const char *kernel,
                         const char *what, const amprt_tensor *t,
                         bool optional = false);
/// checkTensor + dtype in {f32, f16, bf16}.
amprt_status checkFloat(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t,
                        bool optional = false);
/// checkTensor + dtype == dt.
amprt_status checkDtype(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t, int32_t dt,
                        bool optional = false);
amprt_status checkShape(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t,
                        const Shape &expected);
amprt_status checkNumel(amprt_context *ctx, const char *kernel,
                        const char *what, const amprt_tensor *t,
                        int64_t expected);
/// Pad's output shape from x's and `pads`, checking the mode and that a
/// dim padded by reflect/edge/wrap is not empty.
amprt_status padShape(amprt_context *ctx, const char *kernel,
                      const amprt_tensor *x, const int64_t *pads, int64_t npads,
                      int32_t mode, Shape &out);

/// Reads a one-element tensor as double (any dtype).
double scalarOf(const amprt_tensor *t);
/// Writes a one-element tensor from a double (any dtype).
void setScalar(const amprt_tensor *t, double v);

//===----------------------------------------------------------------------===//
// Elementwise, shape and data movement
//===----------------------------------------------------------------------===//

/// Numpy broadcasting of `shapes` into one shape; false if incompatible.
bool broadcastShapes(const std::vector<Shape> &shapes, Shape &out);

/// Strides (in elements) of `in` seen through the broadcast to `out`
/// (0 on broadcast dims), aligned to out's rank.
Shape broadcastStrides(const Shape &in, const Shape &out);

/// Row-major element strides of a shape.
Shape stridesOf(const Shape &s);

/// Transpose: y's shape `so` and, per y dim, the element stride into x
/// (perm NULL reverses the dims). Fails on a bad permutation.
amprt_status transposeGeometry(amprt_context *ctx, const char *k,
                               const amprt_tensor *x, const int64_t *perm,
                               int64_t nperm, Shape &so, Shape &st);

/// ONNX Slice against shape sx: the sliced shape `so`, the element strides
/// of its dims in sx (step included) and the offset of its first element.
amprt_status sliceGeometry(amprt_context *ctx, const char *k, const Shape &sx,
                           const int64_t *starts, const int64_t *ends,
                           const int64_t *axes, const int64_t *steps, int64_t n,
                           Shape &so, Shape &st, int64_t &base);
/// Concat's checks: the axis (normalized into `a`) and y's shape `so`.
amprt_status concatShape(amprt_context *ctx, const char *k,
                         const amprt_tensor *inputs, int64_t n, int64_t axis,
                         const amprt_tensor *y, int64_t &a, Shape &so);
/// Dropout's optional scalars: ratio a one-element float, training a
/// one-element bool.
amprt_status checkDropoutScalars(amprt_context *ctx, const char *k,
                                 const amprt_tensor *ratio,
                                 const amprt_tensor *training);
/// Their values (NULL: absent, so ratio 0.5 and training false) into the
/// ratio, checked to lie in [0, 1), and the training flag.
amprt_status dropoutValues(amprt_context *ctx, const char *k,
                           const double *ratio, const double *training,
                           float &r, bool &train);

/// Gather: index dtype i64 or i32.
amprt_status checkIndices(amprt_context *ctx, const char *k,
                          const amprt_tensor *idx);
/// Gather geometry for data shape `sd`: outer (dims before the axis), len
/// (the axis), inner (dims after) and the output shape; with `values`, also
/// reads the indices (host memory) and fails on one outside [-len, len).
amprt_status gatherShape(amprt_context *ctx, const char *k, const Shape &sd,
                         const amprt_tensor *idx, int64_t axis, int64_t &a,
                         int64_t &outer, int64_t &len, int64_t &inner,
                         Shape &so, bool values = true);

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// The geometry of matmul / fused_matmul (numpy matmul with transposes of
/// the last two dims): a as [ba.., M, K] and b as [bb.., K, N] after their
/// transposes (a 1-D a is a row and a 1-D b a column, neither transposed),
/// and bo the broadcast of their batch dims ba and bb.
struct MatmulGeometry {
  int64_t M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  Shape ba, bb, bo;
};
/// matmul's checks (Gemm.cpp): float operands of rank >= 1, equal inner
/// dims, broadcasting batch dims, y of the product's shape.
amprt_status checkMatmul(amprt_context *ctx, const char *k,
                         const amprt_tensor *a, const amprt_tensor *b,
                         const amprt_tensor *y, bool transA, bool transB,
                         MatmulGeometry &g);

/// gemm's geometry: y[M, N] = op(a)[M, K] op(b)[K, N] (+ c broadcast to
/// [M, N] with strides cStrides, empty without c).
struct GemmGeometry {
  int64_t M = 0, N = 0, K = 0;
  Shape cStrides;
};
/// gemm's and gemm_relu's checks (Gemm.cpp): float operands; a [M, K]
/// ([K, M] with trans_a) or, without trans_a, [.., K] whose leading dims
/// are the rows (a linear layer on [batch, seq, features]); b 2-D with the
/// same K; y of a's leading dims and N; c (optional, rank <= 2)
/// broadcasting to [M, N].
amprt_status checkGemm(amprt_context *ctx, const char *k, const amprt_tensor *a,
                       const amprt_tensor *b, const amprt_tensor *c,
                       const amprt_tensor *y, int32_t transA, int32_t transB,
                       GemmGeometry &g);

/// gemm_act_grad's checks: checkGemm's for a, b and dx (no c), x a float
/// tensor of dx's shape, act 0 (relu), 1 (gelu) or 2 (fast_gelu), whose
/// activation `act` gets.
amprt_status checkGemmActGrad(amprt_context *ctx, const amprt_tensor *a,
                              const amprt_tensor *b, const amprt_tensor *x,
                              const amprt_tensor *dx, int32_t transA,
                              int32_t transB, int32_t actCode, Act &act,
                              GemmGeometry &g);

/// An operand of attention as the kernel reads or writes it: the element
/// offset, logical dims and element strides into its buffer (a contiguous
/// operand: 0, its shape, its packed strides).
struct AttentionView {
  int64_t offset = 0;
  Shape dims, strides;
  /// The element offset of (batch index `i` over the leading dims `lead`,
  /// row 0, column 0).
  int64_t batchOffset(const Shape &lead, int64_t i) const;
};
/// attention's geometry: `batch` products over the leading dims `lead`
/// of q [.., sq, d], k, v [.., sk, dv]; the bias's element strides seen
/// through its broadcast to [lead.., sq, sk] (empty: no bias); the views
/// of the operands (q, k, v, y, then attention_grad's dy, dq, dk, dv).
struct AttentionGeometry {
  Shape lead;
  int64_t batch = 0, sq = 0, sk = 0, d = 0, dv = 0;
  Shape biasStrides;
  AttentionView view[8];
};
/// attention's checks (Attention.cpp): q, k, v, y float of one dtype; their
/// views (Ops.def's `views`, or their shapes) inside their buffers, y's
/// elements distinct; logical rank >= 3 with equal leading dims, k's and
/// v's dims against q's, y of [.., sq, dv], bias float broadcasting to
/// [.., sq, sk], lse f32 [.., sq]; lse may be NULL when `lseOptional`.
amprt_status checkAttention(amprt_context *ctx, const char *k,
                            const amprt_tensor *q, const amprt_tensor *key,
                            const amprt_tensor *v, const amprt_tensor *bias,
                            const amprt_tensor *y, const amprt_tensor *lse,
                            bool kTrans, bool lseOptional, const int64_t *views,
                            int64_t nviews, AttentionGeometry &g);
/// attention_grad's checks: attention's, then dy of y's logical dims and
/// dq, dk, dv of q's, k's and v's, all of q's dtype, each output's elements
/// distinct.
amprt_status checkAttentionGrad(amprt_context *ctx, const amprt_tensor *q,
                                const amprt_tensor *key, const amprt_tensor *v,
                                const amprt_tensor *bias, const amprt_tensor *y,
                                const amprt_tensor *lse, const amprt_tensor *dy,
                                const amprt_tensor *dq, const amprt_tensor *dk,
                                const amprt_tensor *dv, bool kTrans,
                                const int64_t *views, int64_t nviews,
                                AttentionGeometry &g);

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

/// random_fill's arguments: y of a dtype it draws (f32/f16/bf16/f64,
/// i64/i32 with classes >= 1, bool).
amprt_status checkRandomFill(amprt_context *ctx, const char *kernel,
                             const amprt_tensor *y, int64_t classes);
/// The generators' arguments (Random.cpp): y a float tensor (bernoulli's
/// also integer or bool, of p's shape), a finite range / mean and scale.
amprt_status checkRandomUniform(amprt_context *ctx, const amprt_tensor *y,
                                double low, double high);
amprt_status checkRandomNormal(amprt_context *ctx, const amprt_tensor *y,
                               double mean, double scale);
/// Everything but p's values (each must lie in [0, 1]).
amprt_status checkBernoulli(amprt_context *ctx, const amprt_tensor *p,
                            const amprt_tensor *y);

//===----------------------------------------------------------------------===//
// Axes, normalization, pools and resize
//===----------------------------------------------------------------------===//

/// x as (outer, len, inner) around `axis` (normalized into `a`): element
/// (o, i, j) at (o * len + i) * inner + j.
amprt_status splitAtAxis(amprt_context *ctx, const char *kernel,
                         const amprt_tensor *x, int64_t axis, int64_t &a,
                         int64_t &outer, int64_t &len, int64_t &inner);
/// Normalizes a possibly negative axis into [0, rank).
amprt_status normAxis(amprt_context *ctx, const char *kernel, int64_t axis,
                      int64_t rank, int64_t &out);

/// The argument checks of the normalization and pooling kernels
/// (Normalization.cpp, Pool.cpp), shared with the CUDA backend. They return
/// the geometry: BatchNorm's x as [N, C, S], LayerNorm's as [outer, inner],
/// MaxPool's window and output shape.
amprt_status checkBatchNormTraining(
    amprt_context *ctx, const amprt_tensor *x, const amprt_tensor *scale,
    const amprt_tensor *bias, const amprt_tensor *running_mean,
    const amprt_tensor *running_var, const amprt_tensor *y,
    const amprt_tensor *running_mean_out, const amprt_tensor *running_var_out,
    const amprt_tensor *saved_mean, const amprt_tensor *saved_inv_std,
    int64_t &N, int64_t &C, int64_t &S);
amprt_status
checkBatchNormGrad(amprt_context *ctx, const amprt_tensor *dy,
                   const amprt_tensor *x, const amprt_tensor *scale,
                   const amprt_tensor *saved_mean,
                   const amprt_tensor *saved_inv_std, const amprt_tensor *dx,
                   const amprt_tensor *dscale, const amprt_tensor *dbias,
                   int64_t &N, int64_t &C, int64_t &S);
amprt_status checkLayerNorm(amprt_context *ctx, const amprt_tensor *x,
                            const amprt_tensor *scale, const amprt_tensor *bias,
                            int64_t axis, const amprt_tensor *y,
                            const amprt_tensor *mean,
                            const amprt_tensor *inv_std, int64_t &outer,
                            int64_t &inner);
amprt_status
checkLayerNormGrad(amprt_context *ctx, const amprt_tensor *dy,
                   const amprt_tensor *x, const amprt_tensor *scale,
                   const amprt_tensor *mean, const amprt_tensor *inv_std,
                   int64_t axis, const amprt_tensor *dx,
                   const amprt_tensor *dscale, const amprt_tensor *dbias,
                   int64_t &outer, int64_t &inner);
amprt_status checkMaxPool(amprt_context *ctx, const amprt_tensor *x,
                          const amprt_tensor *y, const amprt_tensor *indices,
                          const amprt_window *win, Window &g, Shape &so);
/// Everything but the index values (checked while scattering).
amprt_status checkMaxPoolGrad(amprt_context *ctx, const amprt_tensor *dy,
                              const amprt_tensor *indices,
                              const amprt_tensor *dx);

/// average_pool (grad false: x, y) and average_pool_grad (grad true: x is
/// dx, y is dy): dtypes, the window, y's shape.
amprt_status checkAveragePool(amprt_context *ctx, bool grad,
                              const amprt_tensor *x, const amprt_tensor *y,
                              const amprt_window *win, Window &g);
/// global_average_pool(_grad) likewise: x of rank >= 3 as [N * C = NC, S],
/// y of shape [N, C, 1, ...].
amprt_status checkGlobalPool(amprt_context *ctx, bool grad,
                             const amprt_tensor *x, const amprt_tensor *y,
                             int64_t &NC, int64_t &S);
/// rms_norm's and rms_norm_grad's arguments (Normalization.cpp); x as
/// [outer, inner].
amprt_status checkRmsNorm(amprt_context *ctx, const amprt_tensor *x,
                          const amprt_tensor *scale, int64_t axis,
                          const amprt_tensor *y, const amprt_tensor *inv_std,
                          int64_t &outer, int64_t &inner);
amprt_status checkRmsNormGrad(amprt_context *ctx, const amprt_tensor *dy,
                              const amprt_tensor *x, const amprt_tensor *scale,
                              const amprt_tensor *inv_std, int64_t axis,
                              const amprt_tensor *dx,
                              const amprt_tensor *dscale, int64_t &outer,
                              int64_t &inner);

/// y's shape for a window of spatial rank sr: N, channels, then the last
/// sr of (Do, Ho, Wo); channels last when the window is.
inline Shape windowShape(const Window &g, int32_t sr, int64_t channels) {
  Shape s = {g.N};
  if (!g.channelsLast)
    s.push_back(channels);
  int64_t o[3] = {g.Do, g.Ho, g.Wo};
  s.insert(s.end(), o + 3 - sr, o + 3);
  if (g.channelsLast)
    s.push_back(channels);
  return s;
}
/// Whether `win` asks for channels last (amprt_window::layout).
inline bool channelsLast(const amprt_window *win) {
  return win && win->layout == AMPRT_LAYOUT_CHANNELS_LAST;
}
/// A convolution weight's kernel dims ([M, C/g, k...] channels first, [M,
/// k..., C/g] channels last) and its channels per group.
inline const int64_t *weightKernel(const amprt_tensor *w,
                                   const amprt_window *win) {
  return w->shape + (channelsLast(win) ? 1 : 2);
}
inline int64_t weightChannels(const amprt_tensor *w, const amprt_window *win) {
  return w->shape[channelsLast(win) ? w->rank - 1 : 1];
}
/// Fills `g` from x's shape, a kernel shape (kernel dims of `win` when
/// non-zero must agree with `kernel`) and `win` (its layout says where x
/// keeps its channels; a layout that is neither is refused); ceil selects
/// ceil mode.
amprt_status makeWindow(amprt_context *ctx, const char *k,
                        const amprt_tensor *x, const int64_t *kernel,
                        const amprt_window *win, Window &g);

/// resize / resize_grad: the shapes (x's and y's rank equal, an empty x
/// only for an empty y), the dtypes, scales (f32, one per dim) and modes.
amprt_status checkResize(amprt_context *ctx, const char *kernel,
                         const amprt_tensor *x, const amprt_tensor *scales,
                         const ResizeModes &modes, const amprt_tensor *y);

//===----------------------------------------------------------------------===//
// Selection, gathers and scatters
//===----------------------------------------------------------------------===//

/// top_k: x float, k within the axis (normalized in place), values (x's
/// dtype) and indices (i64) of x's shape with the axis k long.
amprt_status checkTopK(amprt_context *ctx, const amprt_tensor *x, int64_t k,
                       int64_t &axis, const amprt_tensor *values,
                       const amprt_tensor *indices, int64_t &outer,
                       int64_t &len, int64_t &inner);

/// arg_max / arg_min: x float, integer or bool, y i64 of x's shape with the
/// axis kept as 1 or dropped, a non-empty axis; x as (outer, len, inner).
amprt_status checkArgExtreme(amprt_context *ctx, const char *k,
                             const amprt_tensor *x, int64_t axis,
                             int32_t keepdims, const amprt_tensor *y,
                             int64_t &outer, int64_t &len, int64_t &inner);

/// GatherElements' geometry checks (not the index values): indices of
/// data's rank and within its dims off the axis, y of the indices' shape.
/// `axis` is normalized in place.
amprt_status checkGatherElementsShape(amprt_context *ctx, const char *k,
                                      const amprt_tensor *data,
                                      const amprt_tensor *indices,
                                      int64_t &axis, const amprt_tensor *y);
ElementsMap elementsMap(const amprt_tensor *data, const amprt_tensor *indices,
                        int64_t axis);

/// Trilu: x of rank >= 2 (rows x cols matrices), y of x's shape and dtype.
amprt_status checkTrilu(amprt_context *ctx, const amprt_tensor *x,
                        const amprt_tensor *y, int64_t &rows, int64_t &cols);
/// GatherND's checks but the index values (each within [-d, d) of its dim);
/// `yName` names y in messages (ScatterND checks its updates here).
amprt_status gatherNDShape(amprt_context *ctx, const char *k,
                           const amprt_tensor *data,
                           const amprt_tensor *indices, int64_t batch_dims,
                           const amprt_tensor *y, NDMap &m,
                           const char *yName = "y");
/// scatter_elements' checks but the index values: dtypes, shapes (the
/// updates' that of the indices), the reduction (0..4; 1..4 floats only).
amprt_status checkScatterElements(amprt_context *ctx, const amprt_tensor *data,
                                  const amprt_tensor *indices,
                                  const amprt_tensor *updates, int64_t &axis,
                                  int32_t reduction, const amprt_tensor *y);

/// scatter_nd's checks but the index values: dtypes, y of data's shape, the
/// updates of the shape gather_nd would give (batch_dims 0), the reduction
/// (0..4; 1..4 for f32, f16, bf16, i64 and i32 only).
amprt_status checkScatterND(amprt_context *ctx, const amprt_tensor *data,
                            const amprt_tensor *indices,
                            const amprt_tensor *updates, int32_t reduction,
                            const amprt_tensor *y, NDMap &m);

/// CumSum: x and y of one shape and dtype (f32, f16, bf16, i64 or i32); x
/// as (outer, len, inner) around the axis.
amprt_status checkCumSum(amprt_context *ctx, const char *k,
                         const amprt_tensor *x, int64_t axis,
                         const amprt_tensor *y, int64_t &outer, int64_t &len,
                         int64_t &inner);

//===----------------------------------------------------------------------===//
// Optimizers and loss scaling
//===----------------------------------------------------------------------===//

/// The arguments of multi_tensor_unscale_check (MultiTensor.cpp).
amprt_status checkUnscaleCheck(amprt_context *ctx, const amprt_tensor *ins,
                               int64_t n, const amprt_tensor *inv_scale,
                               const amprt_tensor *all_finite);
/// The arguments of unscale_gate (`accumulate` false; `y` the output) and
/// unscale_gate_accumulate (`y` the buffer updated in place).
/// unscale_check_accumulate's arguments: x and buffer float of one element
/// count, inv_scale a float scalar, all_finite a bool flag, overwrite and
/// updated optional flags.
amprt_status checkUnscaleCheckAccumulate(
    amprt_context *ctx, const amprt_tensor *buffer, const amprt_tensor *x,
    const amprt_tensor *inv_scale, const amprt_tensor *all_finite,
    const amprt_tensor *overwrite, const amprt_tensor *updated);
amprt_status checkUnscaleGate(amprt_context *ctx, const char *k,
                              const amprt_tensor *x,
                              const amprt_tensor *inv_scale,
                              const amprt_tensor *gate, const amprt_tensor *y,
                              bool accumulate, const amprt_tensor *overwrite,
                              const amprt_tensor *updated);

/// sgd's arguments (Optimizer.cpp): the group (momentum_bufs with a
/// momentum), lr, the optional step, update and updated, nesterov's terms.
amprt_status checkSgd(amprt_context *ctx, int64_t n, const amprt_tensor *params,
                      const amprt_tensor *grads,
                      const amprt_tensor *momentum_bufs, const amprt_tensor *lr,
                      const amprt_tensor *step, float momentum, float dampening,
                      int32_t nesterov, const amprt_tensor *update,
                      const amprt_tensor *updated);
/// adamw's arguments: the group with m1 and m2, lr, step, update, updated
/// and the mode (0, 1 or 2).
amprt_status checkAdamw(amprt_context *ctx, int64_t n,
                        const amprt_tensor *params, const amprt_tensor *grads,
                        const amprt_tensor *m1, const amprt_tensor *m2,
                        const amprt_tensor *lr, const amprt_tensor *step,
                        int32_t mode, const amprt_tensor *update,
                        const amprt_tensor *updated);
/// loss_scaler_update's arguments (LossScaler.cpp): scale f32 [1], the
/// tracker i64 or i32 [1], the flag bool [1], and the factors' ranges.
amprt_status checkLossScalerUpdate(amprt_context *ctx,
                                   const amprt_tensor *scale,
                                   const amprt_tensor *growth_tracker,
                                   const amprt_tensor *all_finite,
                                   float growth_factor, float backoff_factor,
                                   int64_t growth_interval, float min_scale,
                                   float max_scale);

/// abs_max_finite's arguments (Compare.cpp): x float, y f32 [1].
amprt_status checkAbsMaxFinite(amprt_context *ctx, const amprt_tensor *x,
                               const amprt_tensor *y);
/// compare_stats's arguments (Compare.cpp): x float, ref f32 of x's element
/// count, ref_max f32 [1], stats f64 [kCompareStats], a finite nonzero
/// scale, factor absent or f32 [1].
amprt_status checkCompareStats(amprt_context *ctx, const amprt_tensor *x,
                               const amprt_tensor *ref,
                               const amprt_tensor *ref_max, float scale,
                               const amprt_tensor *stats,
                               const amprt_tensor *factor);

//===----------------------------------------------------------------------===//
// Recurrent layers
//===----------------------------------------------------------------------===//

/// lstm's and lstm_grad's arguments (every output optional).
amprt_status checkLstm(amprt_context *ctx, const amprt_tensor *x,
                       const amprt_tensor *w, const amprt_tensor *r,
                       const amprt_tensor *b, const amprt_tensor *h0,
                       const amprt_tensor *c0, int32_t direction,
                       const amprt_tensor *y, const amprt_tensor *y_h,
                       const amprt_tensor *y_c, const amprt_tensor *all_c,
                       const amprt_tensor *gates, RnnDims &d);
amprt_status checkLstmGrad(
    amprt_context *ctx, const amprt_tensor *x, const amprt_tensor *w,
    const amprt_tensor *r, const amprt_tensor *b, const amprt_tensor *h0,
    const amprt_tensor *c0, const amprt_tensor *y, const amprt_tensor *all_c,
    const amprt_tensor *gates, const amprt_tensor *dy, const amprt_tensor *dy_h,
    const amprt_tensor *dy_c, int32_t direction, const amprt_tensor *dx,
    const amprt_tensor *dw, const amprt_tensor *dr, const amprt_tensor *db,
    const amprt_tensor *dh0, const amprt_tensor *dc0, RnnDims &d);

/// gru's and gru_grad's arguments (every output optional).
amprt_status checkGru(amprt_context *ctx, const amprt_tensor *x,
                      const amprt_tensor *w, const amprt_tensor *r,
                      const amprt_tensor *b, const amprt_tensor *h0,
                      int32_t direction, const amprt_tensor *y,
                      const amprt_tensor *y_h, const amprt_tensor *gates,
                      RnnDims &d);
amprt_status checkGruGrad(amprt_context *ctx, const amprt_tensor *x,
                          const amprt_tensor *w, const amprt_tensor *r,
                          const amprt_tensor *b, const amprt_tensor *h0,
                          const amprt_tensor *y, const amprt_tensor *gates,
                          const amprt_tensor *dy, const amprt_tensor *dy_h,
                          int32_t direction, const amprt_tensor *dx,
                          const amprt_tensor *dw, const amprt_tensor *dr,
                          const amprt_tensor *db, const amprt_tensor *dh0,
                          RnnDims &d);

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// The group a context's collectives act on: its communicator's size and
/// rank, or a group of one (size 1, rank 0) without one.
int32_t groupSize(const amprt_context *ctx);
int32_t groupRank(const amprt_context *ctx);

/// A tensor a reduction takes (f32, f16, bf16, f64, i64, i32; bool with MIN
/// and MAX) under `op` (an amprt_reduce_op; AVG for float dtypes only).
amprt_status checkReduction(amprt_context *ctx, const char *k, const char *what,
                            const amprt_tensor *t, int32_t op);
/// all_reduce: x reducible under op, y of x's dtype and shape.
amprt_status checkAllReduce(amprt_context *ctx, const amprt_tensor *x,
                            const amprt_tensor *y, int32_t op);
/// all_reduce_many: n >= 0 pairs, each as all_reduce checks it.
amprt_status checkAllReduceMany(amprt_context *ctx, int64_t n,
                                const amprt_tensor *xs, const amprt_tensor *ys,
                                int32_t op);
/// broadcast: x any dtype, root in [0, size).
amprt_status checkBroadcast(amprt_context *ctx, const amprt_tensor *x,
                            int32_t root);
/// all_gather: x any dtype, y of x's dtype with size times its elements.
amprt_status checkAllGather(amprt_context *ctx, const amprt_tensor *x,
                            const amprt_tensor *y);
/// reduce_scatter: x reducible under op, y of x's dtype with a size-th of
/// its elements.
amprt_status checkReduceScatter(amprt_context *ctx, const amprt_tensor *x,
                                const amprt_tensor *y, int32_t op);

} // namespace amprt

#endif // AMP_RUNTIME_BACKEND_CHECKS_H
