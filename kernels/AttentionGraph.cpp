//===- AttentionGraph.cpp - cuDNN frontend graphs of attention ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The fused scaled dot-product attention graphs of Attention.cu, built with
// the cuDNN frontend (header-only C++ API over cuDNN's graph API): one node,
// graph::Graph::sdpa or sdpa_backward, io f16/bf16, intermediate and
// compute f32. sdpa computes softmax(attn_scale * q k^T + bias) v and, when
// asked, its Stats: max + log(sum exp(s - max)) per row in natural-log
// units, Attention.cpp's lse. Built only with AMPRT_HAVE_CUDNN_FRONTEND
// (kernels/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "AttentionGraph.h"

#include <cudnn_frontend.h>

#include <vector>

using namespace amprt::cuda::attention;

namespace fe = cudnn_frontend;

struct amprt::cuda::attention::Plan {
  std::shared_ptr<fe::graph::Graph> graph;
  int64_t workspace = 0;
};

namespace {

using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;
using Dims = std::vector<int64_t>;

/// Operand i's strides.
Dims operandStrides(const Problem &p, Operand i) {
  return {p.stride[i][0], p.stride[i][1], p.stride[i][2], p.stride[i][3]};
}

TensorPtr input(fe::graph::Graph &g, const char *name, int64_t uid,
                const Dims &dims, const Dims &strides) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(dims)
                      .set_stride(strides));
}

void output(const TensorPtr &t, int64_t uid, const Dims &dims,
            const Dims &strides) {
  t->set_output(true).set_uid(uid).set_dim(dims).set_stride(strides);
}

} // namespace

std::shared_ptr<Plan> amprt::cuda::attention::buildPlan(cudnnHandle_t h,
                                                        const Problem &p,
                                                        bool backward) {
  try {
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(p.f16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    Dims qd = {p.b, p.h, p.sq, p.d}, kd = {p.b, p.h, p.sk, p.d},
         vd = {p.b, p.h, p.sk, p.dv}, od = {p.b, p.h, p.sq, p.dv},
         sd = {p.b, p.h, p.sq, 1};
    Dims ss = {p.h * p.sq, p.sq, 1, 1};
    TensorPtr q = input(*g, "q", kQ, qd, operandStrides(p, opQ));
    TensorPtr k = input(*g, "k", kK, kd, operandStrides(p, opK));
    TensorPtr v = input(*g, "v", kV, vd, operandStrides(p, opV));
    TensorPtr bias;
    if (p.bias)
      bias = input(*g, "bias", kBias, {p.bb, p.bh, p.sq, p.sk},
                   {p.bstride[0], p.bstride[1], p.bstride[2], p.bstride[3]});
    if (!backward) {
      auto opts = fe::graph::SDPA_attributes()
                      .set_name("attention")
                      .set_generate_stats(p.stats)
                      .set_attn_scale(p.scale);
      if (bias)
        opts.set_bias(bias);
      auto [o, stats] = g->sdpa(q, k, v, opts);
      output(o, kO, od, operandStrides(p, opO));
      if (p.stats) {
        output(stats, kStats, sd, ss);
        stats->set_data_type(fe::DataType_t::FLOAT);
      }
    } else {
      TensorPtr o = input(*g, "y", kO, od, operandStrides(p, opO));
      TensorPtr dO = input(*g, "dy", kDO, od, operandStrides(p, opDO));
      TensorPtr stats = input(*g, "lse", kStats, sd, ss);
      stats->set_data_type(fe::DataType_t::FLOAT);
      auto opts = fe::graph::SDPA_backward_attributes()
                      .set_name("attention_grad")
                      .set_attn_scale(p.scale);
      if (bias)
        opts.set_bias(bias);
      auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dO, stats, opts);
      output(dq, kDQ, qd, operandStrides(p, opDQ));
      output(dk, kDK, kd, operandStrides(p, opDK));
      output(dv, kDV, vd, operandStrides(p, opDV));
    }
    // validate, build_operation_graph, create_execution_plans (heuristics
    // mode A), check_support, build_plans.
    if (!g->build(h, {fe::HeurMode_t::A}).is_good())
      return nullptr;
    auto plan = std::make_shared<Plan>();
    if (!g->get_workspace_size(plan->workspace).is_good() ||
        plan->workspace < 0)
      return nullptr;
    plan->graph = std::move(g);
    return plan;
  } catch (...) {
    return nullptr; // the frontend's exceptions: the host runs the call
  }
}

int64_t amprt::cuda::attention::planWorkspace(const Plan &plan) {
  return plan.workspace;
}

std::string
amprt::cuda::attention::runPlan(const Plan &plan, cudnnHandle_t h,
                                std::unordered_map<int64_t, void *> &pointers,
                                void *workspace) {
  try {
    fe::error_t e = plan.graph->execute(h, pointers, workspace);
    if (e.is_good())
      return std::string();
    std::string why = e.get_message();
    return why.empty()
               ? std::string("error ") + std::to_string(int(e.get_code()))
               : why;
  } catch (const std::exception &x) {
    return x.what();
  }
}
