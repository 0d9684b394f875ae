//===- LowerOptimizer.cpp - optimizers, accumulators
//-----------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The optimizers of ai.onnx.preview.training (Adagrad, Momentum, Adam),
// com.microsoft's (AdamOptimizer, AdamWOptimizer, SGDOptimizerV2), Deeploy's
// per-parameter SGD, and InPlaceAccumulator(V2): state updated in place
// where the framework keeps it (updatedInPlace).
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

namespace amp::lowering {

FailureOr<bool> GraphLowering::lowerOptimizer(StringRef domain,
                                              StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";

  if (onnx && type == "SGD" && current->getNumOperands() == 2) {
    auto p = in(0), g = in(1);
    if (failed(p) || failed(g))
      return failure();
    if (shapeOf(*p) != shapeOf(*g))
      return err() << "parameter and gradient shapes differ";
    // In place on the parameter when it is exclusive state (its output
    // names it), so that amp-run's parameter is the one updated.
    auto y = updatedInPlace(0, 0, *p);
    if (failed(y))
      return failure();
    int lr = constBuffer({{}, Float32Type::get(ctx), {attrFloat("lr", 0.01)}});
    return handled(call("sgd",
                        {{"params", {*y}}, {"grads", {*g}}, {"lr", {lr}}},
                        {{"n", i64(1)},
                         {"momentum", f32(0)},
                         {"dampening", f32(0)},
                         {"weight_decay", f32(0)},
                         {"nesterov", i32(0)}}));
  }
  if (domain == "ai.onnx.preview.training" &&
      (type == "Adam" || type == "Adagrad" || type == "Momentum")) {
    // (R, T, X..., G..., then one state list for Momentum (V) and Adagrad
    // (H), two for Adam (V, H)) -> (X_new..., state_new...): n tensors per
    // list. The kernels update X and the states in place; the outputs name
    // them (copies where an input is read elsewhere too).
    unsigned lists = type == "Adam" ? 4 : 3;
    unsigned total = current->getNumOperands();
    if (total < 2 + lists || (total - 2) % lists != 0)
      return err() << (total - 2) << " tensor inputs are not " << lists
                   << " lists of equal length (X, G and the state)";
    unsigned n = (total - 2) / lists;
    if (current->getNumResults() != (lists - 1) * n)
      return err() << current->getNumResults() << " outputs, expected "
                   << (lists - 1) * n;
    auto r = in(0), t = in(1);
    if (failed(r) || failed(t))
      return failure();
    if (numel(shapeOf(*r)) != 1 || numel(shapeOf(*t)) != 1)
      return err() << "R and T must be scalars";
    // The loss-scaling pass keeps X and the states on overflow with
    // Where(flag, new, old) per output. When each used output is read only
    // by such a gate, all with one flag, the kernel's `update` flag does
    // the same in place (a skipped step writes nothing: bit-identical
    // state) and the gates name the state buffers.
    auto keepOf = [&](unsigned res) {
      unsigned l = res / n, k = res % n;
      return 2 + (l == 0 ? 0 : l + 1) * n + k;
    };
    Value flag;
    SmallVector<Operation *> gates;
    bool gated = true;
    for (unsigned res = 0; gated && res < current->getNumResults(); ++res) {
      Value v = current->getResult(res);
      if (v.use_empty())
        continue;
      Operation *u = v.hasOneUse() ? *v.user_begin() : nullptr;
      gated = u && isa<WhereOp>(u) && u->getOperand(1) == v &&
              u->getOperand(2) == current->getOperand(keepOf(res)) &&
              (!flag || u->getOperand(0) == flag);
      if (gated) {
        flag = u->getOperand(0);
        gates.push_back(u);
      }
    }
    gated &= !gates.empty();
    // With the gates, a state input is exclusive when the node and its
    // gate are its only readers.
    auto stateInPlace = [&](unsigned input, int buf) -> bool {
      if (!gated || bufs[buf].kind != Buffer::Arg)
        return false;
      for (Operation *user : current->getOperand(input).getUsers())
        if (user != current && !llvm::is_contained(gates, user))
          return false;
      return true;
    };
    // Input list l (0 = X, 1 = G, 2.. = states) element k; the output of
    // list l (X and the states, G has none) is result (l ? l - 1 : 0) * n.
    SmallVector<int, 1> bufsOf[4];
    for (unsigned l = 0; l < lists; ++l)
      for (unsigned k = 0; k < n; ++k) {
        unsigned input = 2 + l * n + k;
        auto b = in(input);
        if (failed(b))
          return failure();
        if (l && shapeOf(*b) != shapeOf(bufsOf[0][k]))
          return err() << "input " << input << " has another shape than X"
                       << k + 1;
        if (l != 1) {
          unsigned res = (l ? l - 1 : 0) * n + k;
          if (stateInPlace(input, *b)) {
            Value v = current->getResult(res);
            for (Operation *gate : gates)
              if (gate->getOperand(1) == v)
                valueBuf[gate->getResult(0)] = *b;
          } else if (gated) {
            return err() << "input " << input << " is read elsewhere too: "
                         << "the overflow gate cannot skip its update in "
                            "place";
          } else {
            auto u = updatedInPlace(res, input, *b);
            if (failed(u))
              return failure();
            b = u;
          }
        }
        bufsOf[l].push_back(*b);
      }
    SmallVector<TArg> ts = {
        {"r", {*r}}, {"t", {*t}}, {"x", bufsOf[0]}, {"g", bufsOf[1]}};
    if (gated) {
      std::optional<int> f = bufferOf(flag);
      if (!f)
        return err() << "the overflow flag has no buffer";
      ts.push_back({"update", {*f}});
      fusedAway.insert(gates.begin(), gates.end());
    }
    if (type == "Adam") {
      ts.push_back({"v", bufsOf[2]});
      ts.push_back({"h", bufsOf[3]});
      return handled(
          call("onnx_adam", ts,
               {{"n", i64(n)},
                {"alpha", f32(attrFloat("alpha", 0.9))},
                {"beta", f32(attrFloat("beta", 0.999))},
                {"epsilon", f32(attrFloat("epsilon", 1e-6))},
                {"norm_coefficient", f32(attrFloat("norm_coefficient", 0))},
                {"norm_coefficient_post",
                 f32(attrFloat("norm_coefficient_post", 0))}}));
    }
    if (type == "Adagrad") {
      ts.push_back({"h", bufsOf[2]});
      return handled(
          call("onnx_adagrad", ts,
               {{"n", i64(n)},
                {"decay_factor", f32(attrFloat("decay_factor", 0))},
                {"epsilon", f32(attrFloat("epsilon", 1e-6))},
                {"norm_coefficient", f32(attrFloat("norm_coefficient", 0))}}));
    }
    for (StringRef a : {"alpha", "beta", "norm_coefficient", "mode"})
      if (!nodeAttr(a))
        return err() << "attribute '" << a << "' is required";
    std::string mode = attrStr("mode", "");
    if (mode != "standard" && mode != "nesterov")
      return err() << "mode '" << mode << "' is not standard or nesterov";
    ts.push_back({"v", bufsOf[2]});
    return handled(
        call("onnx_momentum", ts,
             {{"n", i64(n)},
              {"alpha", f32(attrFloat("alpha", 0))},
              {"beta", f32(attrFloat("beta", 0))},
              {"norm_coefficient", f32(attrFloat("norm_coefficient", 0))},
              {"mode", i32(mode == "nesterov")}}));
  }
  if (ms && type == "InPlaceAccumulator") {
    // Version 1, as ONNX Runtime's kernel (on-device training build): adds
    // the value when the signal (input 2) is true or absent, otherwise
    // writes the value itself; the output is the new sum. That is
    // inplace_accumulate with overwrite = NOT signal, in place on the buffer.
    auto buf = in(0), v = in(1);
    if (failed(buf) || failed(v))
      return failure();
    SmallVector<TArg> ts = {{"buffer", {*buf}}, {"value", {*v}}};
    if (has(2)) {
      auto signal = in(2);
      if (failed(signal))
        return failure();
      if (bufs[*signal].kind == Buffer::Arg)
        accumulateSignals.insert(bufs[*signal].argIndex);
      Buffer t;
      t.shape = bufs[*signal].shape;
      t.elem = bufs[*signal].elem;
      int overwrite = newBuffer(t);
      if (failed(call("logical_not", {{"x", {*signal}}, {"y", {overwrite}}})))
        return failure();
      ts.push_back({"overwrite", {overwrite}});
    }
    if (resultUsed(0))
      valueBuf[current->getResult(0)] = *buf;
    return handled(call("inplace_accumulate", ts));
  }
  if (ms && type == "InPlaceAccumulatorV2") {
    auto buf = in(0), v = in(1);
    if (failed(buf) || failed(v))
      return failure();
    SmallVector<TArg> ts = {{"buffer", {*buf}}, {"value", {*v}}};
    if (failed(optionalIn(ts, "overwrite", 2)))
      return failure();
    // ORT's output 0 is the `updated` flag; Deeploy's graphs type it as the
    // accumulated buffer itself (same shape, no flag): alias it then.
    auto r0 = dyn_cast<ShapedType>(current->getResult(0).getType());
    bool isBuffer = r0 && r0.hasRank() && numel(shapeOf(*buf)) > 1 &&
                    r0.getShape() == ArrayRef<int64_t>(shapeOf(*buf));
    if (isBuffer)
      valueBuf[current->getResult(0)] = *buf;
    else if (failed(optionalOut(ts, "updated", 0, {1})))
      return failure();
    if (resultUsed(1))
      valueBuf[current->getResult(1)] = *buf; // the buffer, updated in place
    return handled(call("inplace_accumulate", ts));
  }
  if (ms && type == "AdamOptimizer") {
    // ORTTrainer's per-tensor Adam (training_api's 2022 optimizer_graph):
    // outputs step + 1, the new moments and the new weight. It is the adamw
    // kernel on one tensor: weight_decay_mode 0 adds lambda * w to the
    // update, which is decoupled decay (our mode 0), 1 is HuggingFace's
    // (our mode 1), as ORT's CUDA kernel reads the attribute (its CPU
    // kernel ignores it). Input 6 is the update signal when it is a bool
    // (where that graph has it), mixed-precision weights otherwise.
    auto lr = in(0), step = in(1), w = in(2), g = in(3), m1 = in(4), m2 = in(5);
    if (failed(lr) || failed(step) || failed(w) || failed(g) || failed(m1) ||
        failed(m2))
      return failure();
    int64_t wdMode = attrInt("weight_decay_mode", 0);
    if (wdMode != 0 && wdMode != 1)
      return err() << "weight_decay_mode " << wdMode
                   << " is not supported (0 or 1)";
    unsigned signal = 9;
    if (has(6)) {
      auto t = dyn_cast<ShapedType>(current->getOperand(6).getType());
      if (!t || !t.getElementType().isInteger(1))
        return err() << "input 6 (mixed-precision weights) is not supported: "
                        "the update is on the fp32 weights";
      signal = 6;
    }
    if (has(7) || has(8))
      return err() << "inputs 7 and 8 (loss scale, global gradient norm) are "
                      "not supported: unscale and clip before the optimizer";
    if (resultUsed(4) || resultUsed(5))
      return err() << "outputs 4 and 5 (gradient, mixed-precision weights) "
                      "are not supported";
    // Weight and moments are updated in place (in copies when shared).
    auto nw = updatedInPlace(3, 2, *w), nm1 = updatedInPlace(1, 4, *m1),
         nm2 = updatedInPlace(2, 5, *m2);
    if (failed(nw) || failed(nm1) || failed(nm2))
      return failure();
    if (resultUsed(0)) {
      auto ns = out(0, shapeOf(*step));
      if (failed(ns))
        return failure();
      int one = constBuffer({shapeOf(*step), bufs[*step].elem, {1.0}});
      if (failed(call("add", {{"a", {*step}}, {"b", {one}}, {"y", {*ns}}})))
        return failure();
    }
    SmallVector<TArg> ts = {{"params", {*nw}}, {"grads", {*g}},
                            {"m1", {*nm1}},    {"m2", {*nm2}},
                            {"lr", {*lr}},     {"step", {*step}}};
    if (signal == 6 && has(9)) {
      // Both the graph's signal and one at the schema's position (where the
      // loss-scaling pass puts its all-finite flag): update when both are
      // true, a AND b = where(a, b, a).
      auto a = in(6), b = in(9);
      if (failed(a) || failed(b))
        return failure();
      int both = newBufferLike(*a);
      if (failed(
              call("where",
                   {{"cond", {*a}}, {"a", {*b}}, {"b", {*a}}, {"y", {both}}})))
        return failure();
      ts.push_back({"update", {both}});
    } else if (failed(optionalIn(ts, "update", signal))) {
      return failure();
    }
    return handled(
        call("adamw", ts,
             {{"n", i64(1)},
              {"beta1", f32(attrFloat("alpha", 0.9))},
              {"beta2", f32(attrFloat("beta", 0.999))},
              {"epsilon", f32(attrFloat("epsilon", 1e-8))},
              {"weight_decay", f32(attrFloat("lambda", 0))},
              {"mode", i32(wdMode)},
              {"correct_bias", i32(attrInt("do_bias_correction", 1))}}));
  }
  if (ms && type == "AdamWOptimizer") {
    auto lr = in(0), step = in(1);
    if (failed(lr) || failed(step))
      return failure();
    SmallVector<int, 1> lists[4];
    for (unsigned i = 0; i < 4; ++i) {
      auto it = seqBufs.find(current->getOperand(2 + i));
      if (it == seqBufs.end())
        return err() << "input " << 2 + i << " must be a sequence graph input";
      lists[i].assign(it->second.begin(), it->second.end());
    }
    size_t n = lists[0].size();
    for (auto &l : lists)
      if (l.size() != n)
        return err() << "the weight, gradient and moment sequences differ "
                        "in length";
    for (unsigned i = 1; i < 4; ++i)
      if (resultUsed(i))
        return err() << "output " << i
                     << " (updated sequence) is not supported: the update "
                        "is in place on the inputs";
    SmallVector<TArg> ts = {{"params", lists[0]}, {"grads", lists[1]},
                            {"m1", lists[2]},     {"m2", lists[3]},
                            {"lr", {*lr}},        {"step", {*step}}};
    if (failed(optionalIn(ts, "update", 6)) ||
        failed(optionalOut(ts, "updated", 0, {1})))
      return failure();
    return handled(call("adamw", ts,
                        {{"n", i64(n)},
                         {"beta1", f32(attrFloat("alpha", 0.9))},
                         {"beta2", f32(attrFloat("beta", 0.999))},
                         {"epsilon", f32(attrFloat("epsilon", 1e-8))},
                         {"weight_decay", f32(attrFloat("weight_decay", 1e-2))},
                         {"mode", i32(attrInt("adam_mode", 0))},
                         {"correct_bias", i32(attrInt("correct_bias", 1))}}));
  }
  if (ms && type == "SGDOptimizerV2") {
    // generate_artifacts' SGD: (learning_rate, weights, gradients,
    // update_signal?) -> update_completed; W -= lr G, in place.
    auto lr = in(0);
    if (failed(lr))
      return failure();
    SmallVector<int, 1> lists[2];
    for (unsigned i = 0; i < 2; ++i) {
      auto it = seqBufs.find(current->getOperand(1 + i));
      if (it == seqBufs.end())
        return err() << "input " << 1 + i << " must be a sequence graph input";
      lists[i].assign(it->second.begin(), it->second.end());
    }
    if (lists[0].size() != lists[1].size())
      return err() << "the weight and gradient sequences differ in length";
    if (resultUsed(1))
      return err() << "output 1 (updated weights) is not supported: the "
                      "update is in place on the inputs";
    SmallVector<TArg> ts = {
        {"params", lists[0]}, {"grads", lists[1]}, {"lr", {*lr}}};
    if (failed(optionalIn(ts, "update", 3)) ||
        failed(optionalOut(ts, "updated", 0, {1})))
      return failure();
    return handled(call("sgd", ts,
                        {{"n", i64(lists[0].size())},
                         {"momentum", f32(0)},
                         {"dampening", f32(0)},
                         {"weight_decay", f32(0)},
                         {"nesterov", i32(0)}}));
  }
  return false;
}

FailureOr<int> GraphLowering::updatedInPlace(unsigned res, unsigned input,
                                             int buf) {
  if (isExclusiveState(input, buf)) {
    if (resultUsed(res))
      valueBuf[current->getResult(res)] = buf;
    return buf;
  }
  // A copy nothing reads would lose the update.
  if (!resultUsed(res)) {
    err() << "input " << input
          << " is read elsewhere too, so it would be updated in a copy, but "
             "output "
          << res << " that would hold the copy is unused";
    return failure();
  }
  FailureOr<int> copy = out(res, shapeOf(buf));
  if (failed(copy) || failed(call("identity", {{"x", {buf}}, {"y", {*copy}}})))
    return failure();
  return copy;
}

void GraphLowering::registerOptimizer(FamilyTable &t) {
  t.add(kOnnxDomain, {"SGD"}, &GraphLowering::lowerOptimizer);
  t.add(kPreviewTrainingDomain, {"Adam", "Adagrad", "Momentum"},
        &GraphLowering::lowerOptimizer);
  t.add(kMicrosoftDomain,
        {"InPlaceAccumulator", "InPlaceAccumulatorV2", "AdamOptimizer",
         "AdamWOptimizer", "SGDOptimizerV2"},
        &GraphLowering::lowerOptimizer);
}

} // namespace amp::lowering
