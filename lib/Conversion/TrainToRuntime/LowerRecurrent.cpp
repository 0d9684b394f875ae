//===- LowerRecurrent.cpp - LSTM, GRU and their ORT training forms --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX LSTM / GRU (inference), com.microsoft LSTMTraining / GRUTraining
// (which also return what the gradient reads: every cell state, the gates
// after their activations) and LSTMGrad / GRUGrad, as the runtime's lstm,
// gru, lstm_grad and gru_grad calls. What the runtime does not implement is
// an error naming the node: layout 1, sequence_lens, peepholes, clip,
// input_forget and other activations than the defaults.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

namespace amp::lowering {

FailureOr<bool> GraphLowering::lowerRecurrent(StringRef domain,
                                              StringRef type) {
  bool onnx = domain.empty() || domain == "ai.onnx";
  bool ms = domain == "com.microsoft";
  bool lstm = (onnx && type == "LSTM") || (ms && type == "LSTMTraining") ||
              (ms && type == "LSTMGrad");
  bool gru = (onnx && type == "GRU") || (ms && type == "GRUTraining") ||
             (ms && type == "GRUGrad");
  if (!lstm && !gru)
    return false;
  bool grad = type.ends_with("Grad");

  std::string dir = attrStr("direction", "forward");
  int32_t direction = dir == "forward"         ? 0
                      : dir == "reverse"       ? 1
                      : dir == "bidirectional" ? 2
                                               : -1;
  if (direction < 0)
    return err() << "unknown direction '" << dir << "'";
  if (attrInt("layout", 0) != 0)
    return err() << "layout 1 (batch first) is not supported";
  if (attrInt("input_forget", 0) != 0)
    return err() << "input_forget is not supported";
  if (attrFloat("clip", 0.0) != 0.0)
    return err() << "clip is not supported";
  if (auto acts = attrStrs("activations")) {
    SmallVector<StringRef> dflt =
        lstm ? SmallVector<StringRef>{"Sigmoid", "Tanh", "Tanh"}
             : SmallVector<StringRef>{"Sigmoid", "Tanh"};
    for (auto [i, a] : llvm::enumerate(*acts))
      if (!StringRef(a).equals_insensitive(dflt[i % dflt.size()]))
        return err() << "activation '" << a
                     << "' is not supported (the defaults are)";
  }
  // Inputs: X, W, R, B, sequence_lens, initial_h, initial_c (LSTM), P;
  // ORT's LSTMGrad has no B: X, W, R, sequence_lens, initial_h, ....
  bool noBias = lstm && grad;
  unsigned sl = noBias ? 3 : 4;
  if (has(sl))
    return err() << "sequence_lens is not supported";
  if (lstm && !grad && has(7))
    return err() << "peepholes are not supported";
  auto x = in(0), w = in(1), r = in(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  Shape sx = shapeOf(*x), sw = shapeOf(*w);
  int64_t G = lstm ? 4 : 3;
  if (sx.size() != 3 || sw.size() != 3 || sw[1] % G)
    return err() << "X and W must be [S, B, I] and [D, " << G << "H, I]";
  int64_t S = sx[0], B = sx[1], H = sw[1] / G, D = direction == 2 ? 2 : 1;
  if (int64_t hs = attrInt("hidden_size", H); hs != H)
    return err() << "hidden_size " << hs << " disagrees with W (" << H << ")";
  SmallVector<TArg> ts = {{"x", {*x}}, {"w", {*w}}, {"r", {*r}}};
  if ((!noBias && failed(optionalIn(ts, "b", 3))) ||
      failed(optionalIn(ts, "initial_h", sl + 1)) ||
      (lstm && failed(optionalIn(ts, "initial_c", sl + 2))))
    return failure();
  Shape seq = {S, D, B, H}, last = {D, B, H}, gates = {S, D, B, G * H};
  SmallVector<std::pair<StringRef, Attribute>> attrs = {
      {"direction", i32(direction)}};
  // ORT leaves the training outputs (all_c, the gates) without a type: X's
  // element type.
  Type elem = bufs[*x].elem;
  auto optionalOut = [&](SmallVectorImpl<TArg> &ts, StringRef name, unsigned i,
                         ArrayRef<int64_t> shape) {
    if (!resultUsed(i))
      return success();
    auto b = out(i, shape, elem);
    if (failed(b))
      return failure();
    ts.push_back({name.str(), {*b}});
    return success();
  };
  if (gru)
    attrs.push_back(
        {"linear_before_reset", i32(attrInt("linear_before_reset", 0))});

  if (!grad) {
    if (failed(optionalOut(ts, "y", 0, seq)) ||
        failed(optionalOut(ts, "y_h", 1, last)))
      return failure();
    if (lstm && (failed(optionalOut(ts, "y_c", 2, last)) ||
                 failed(optionalOut(ts, "all_c", 3, seq)) ||
                 failed(optionalOut(ts, "gates", 4, gates))))
      return failure();
    if (gru && failed(optionalOut(ts, "gates", 2, gates)))
      return failure();
    return handled(call(lstm ? "lstm" : "gru", ts, attrs));
  }
  // LSTMGrad: ..., initial_c, Y, all_c, iofc, dY, dY_h, dY_c (6..11);
  // GRUGrad: ..., initial_h, Y, zrh, dY, dY_h (6..9).
  unsigned at = 6;
  auto y = in(at);
  if (failed(y))
    return failure();
  ts.push_back({"y", {*y}});
  if (lstm) {
    auto c = in(at + 1), g = in(at + 2);
    if (failed(c) || failed(g))
      return failure();
    ts.push_back({"all_c", {*c}});
    ts.push_back({"gates", {*g}});
    at += 3;
  } else {
    auto g = in(at + 1);
    if (failed(g))
      return failure();
    ts.push_back({"gates", {*g}});
    at += 2;
  }
  if (failed(optionalIn(ts, "dy", at)) ||
      failed(optionalIn(ts, "dy_h", at + 1)) ||
      (lstm && failed(optionalIn(ts, "dy_c", at + 2))))
    return failure();
  if (failed(optionalOut(ts, "dx", 0, sx)) ||
      failed(optionalOut(ts, "dw", 1, sw)) ||
      failed(optionalOut(ts, "dr", 2, shapeOf(*r))) ||
      failed(optionalOut(ts, "db", 3, {D, 2 * G * H})) ||
      failed(optionalOut(ts, "d_initial_h", 4, last)) ||
      (lstm && failed(optionalOut(ts, "d_initial_c", 5, last))))
    return failure();
  return handled(call(lstm ? "lstm_grad" : "gru_grad", ts, attrs));
}

void GraphLowering::registerRecurrent(FamilyTable &t) {
  t.add(kOnnxDomain, {"LSTM", "GRU"}, &GraphLowering::lowerRecurrent);
  t.add(kMicrosoftDomain,
        {"LSTMTraining", "LSTMGrad", "GRUTraining", "GRUGrad"},
        &GraphLowering::lowerRecurrent);
}

} // namespace amp::lowering
