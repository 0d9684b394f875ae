//===- LowerLoss.cpp - losses and their gradients
//--------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// SoftmaxCrossEntropyLoss (ONNX) and its com.microsoft gradient, and
// Deeploy's MSELoss / MSELossGrad.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

namespace amp::lowering {

FailureOr<bool> GraphLowering::lowerLoss(StringRef domain, StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";

  if (onnx && (type == "SoftmaxCrossEntropyLoss" ||
               type == "NegativeLogLikelihoodLoss")) {
    // NegativeLogLikelihoodLoss is the same loss on inputs that are
    // log-probabilities already (no log-softmax, no log_prob output).
    bool nll = type == "NegativeLogLikelihoodLoss";
    auto s = in(0), l = in(1);
    if (failed(s) || failed(l))
      return failure();
    SmallVector<TArg> ts = {{nll ? "input" : "scores", {*s}}, {"labels", {*l}}};
    if (failed(optionalIn(ts, "weight", 2)))
      return failure();
    std::string red = attrStr("reduction", "mean");
    if (red != "none" && red != "sum" && red != "mean")
      return err() << "reduction '" << red << "' is not one of none, sum, mean";
    int64_t r = red == "none" ? 0 : red == "sum" ? 1 : 2;
    auto loss = out(0, r == 0 ? shapeOf(*l) : Shape());
    if (failed(loss))
      return failure();
    ts.push_back({"loss", {*loss}});
    if (!nll && failed(optionalOut(ts, "log_prob", 1, shapeOf(*s))))
      return failure();
    auto ign = attrOf<IntegerAttr>("ignore_index");
    return handled(call(nll ? "nll_loss" : "softmax_cross_entropy_loss", ts,
                        {{"reduction", i32(r)},
                         {"has_ignore_index", i32(ign ? 1 : 0)},
                         {"ignore_index", i64(ign ? ign.getInt() : 0)}}));
  }
  if ((ms || onnx) && type == "SoftmaxCrossEntropyLossGrad") {
    // ORT's form: (dloss, log_prob, labels[, weight]). Deeploy's training
    // graphs use (log_prob, labels): the loss gradient seed is 1.
    bool seeded = current->getNumOperands() >= 3;
    unsigned base = seeded ? 1 : 0;
    auto lp = in(base), l = in(base + 1);
    if (failed(lp) || failed(l))
      return failure();
    int d;
    if (seeded) {
      auto dl = in(0);
      if (failed(dl))
        return failure();
      d = *dl;
    } else {
      d = constBuffer({{}, Float32Type::get(ctx), {1.0}});
    }
    SmallVector<TArg> ts = {
        {"dloss", {d}}, {"log_prob", {*lp}}, {"labels", {*l}}};
    if (failed(optionalIn(ts, "weight", base + 2)))
      return failure();
    auto dx = out(0, shapeOf(*lp));
    if (failed(dx))
      return failure();
    ts.push_back({"dx", {*dx}});
    std::string red = attrStr("reduction", "mean");
    auto ign = attrOf<IntegerAttr>("ignore_index");
    return handled(call("softmax_cross_entropy_loss_grad", ts,
                        {{"reduction", i32(red == "none"  ? 0
                                           : red == "sum" ? 1
                                                          : 2)},
                         {"has_ignore_index", i32(ign ? 1 : 0)},
                         {"ignore_index", i64(ign ? ign.getInt() : 0)}}));
  }
  // Deeploy's training graphs: MSELoss(x, target) (mean), MSELossGrad(x,
  // target) with seed 1, and per-parameter SGD(param, grad) with an `lr`
  // attribute whose output is the updated parameter.
  if (onnx && (type == "MSELoss" || type == "MSELossGrad")) {
    auto x = in(0), t = in(1);
    if (failed(x) || failed(t))
      return failure();
    if (shapeOf(*x) != shapeOf(*t))
      return err() << "input and target shapes differ";
    if (type == "MSELoss") {
      auto loss = out(0, {});
      if (failed(loss))
        return failure();
      return handled(
          call("mse_loss", {{"x", {*x}}, {"target", {*t}}, {"loss", {*loss}}}));
    }
    auto dx = out(0, shapeOf(*x));
    if (failed(dx))
      return failure();
    return handled(
        call("mse_loss_grad", {{"x", {*x}}, {"target", {*t}}, {"dx", {*dx}}}));
  }
  return false;
}

void GraphLowering::registerLoss(FamilyTable &t) {
  t.add(kOnnxDomain,
        {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
         "SoftmaxCrossEntropyLossGrad", "MSELoss", "MSELossGrad"},
        &GraphLowering::lowerLoss);
  t.add(kMicrosoftDomain, {"SoftmaxCrossEntropyLossGrad"},
        &GraphLowering::lowerLoss);
}

} // namespace amp::lowering
