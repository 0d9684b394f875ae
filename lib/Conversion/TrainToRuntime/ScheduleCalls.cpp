//===- ScheduleCalls.cpp - the calls reordered to hold less memory --------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The calls follow the graph's node order, and ONNX Runtime's gradient
// builder orders a training graph for its own executor, not for memory: the
// input-gradient GEMM of each layer comes right after the layer's output
// gradient, but the weight-gradient GEMM, the bias-gradient ReduceSum and
// the gradient accumulators come after the whole backward pass. Run in that
// order, every layer's forward input and output gradient stay alive to the
// end of the step (GPT-2 small in fp32: 615 MB of arena at batch 2, most of
// it such gradients).
//
// This pass moves calls earlier where that lowers the memory the step holds
// at its peak. For each call, in order: if its dependencies are all done
// some calls earlier, it and the calls that then become possible with it
// (its descendants whose other dependencies are done too, at most
// kMaxGroup) are moved to right after the last dependency, and the move is
// kept when the simulated peak of live temporaries falls (or stays and their
// bytes-times-calls area falls). The weight-gradient GEMM and its
// accumulator move up together, freeing the layer's input and gradient.
//
// Dependencies are by buffer: the calls touching one buffer keep their
// order (conservatively, every access may write: kernels do not say which
// parameters they write), so no read moves across a write. Graph inputs
// and constants that no call writes are read-only and order nothing.
// Random kernels draw from streams keyed by node and step, not by call
// order. Graphs of more than kMaxCalls calls keep their order (the search
// is quadratic).
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

using namespace amp::lowering;

/// The most calls moved as one group.
static constexpr size_t kMaxGroup = 16;
/// Larger graphs are not rescheduled.
static constexpr size_t kMaxCalls = 20000;

namespace {
/// Live bytes of temporaries over an order of the calls.
struct Simulation {
  int64_t peak = 0;
  int64_t area = 0; // sum over call positions of live bytes, graph outputs
                    // left out (tie-break)
};
} // namespace

void GraphLowering::scheduleForMemory() {
  size_t n = calls.size();
  if (n < 3 || n > kMaxCalls)
    return;
  llvm::DenseSet<int> written = buffersWrittenInPlace();
  llvm::DenseSet<int> outputs(results.begin(), results.end());

  // Per buffer, the calls touching it (in order, once each).
  DenseMap<int, SmallVector<int, 4>> accesses;
  for (auto [ci, c] : llvm::enumerate(calls))
    for (auto &list : c.tensors)
      for (int b : list) {
        auto &a = accesses[b];
        if (a.empty() || a.back() != int(ci))
          a.push_back(int(ci));
      }
  // Dependencies: consecutive accesses of a buffer that some call may
  // write (every temporary; graph inputs written in place).
  SmallVector<SmallVector<int, 4>> preds(n);
  SmallVector<int> tracked; // temporaries, for the simulation
  for (auto &[b, list] : accesses) {
    const Buffer &buf = bufs[b];
    bool temp = buf.kind == Buffer::Temp;
    if (temp)
      tracked.push_back(b);
    if (!temp && !written.contains(b))
      continue;
    for (size_t k = 1; k < list.size(); ++k)
      preds[list[k]].push_back(list[k - 1]);
  }
  llvm::sort(tracked);
  SmallVector<SmallVector<int, 4>> succs(n);
  for (size_t c = 0; c < n; ++c) {
    llvm::sort(preds[c]);
    preds[c].erase(std::unique(preds[c].begin(), preds[c].end()),
                   preds[c].end());
    for (int p : preds[c])
      succs[p].push_back(int(c));
  }

  SmallVector<int> order(n), pos(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = pos[i] = int(i);
  // Live bytes per position, and separately those of graph outputs: their
  // birth counts for the peak, but an output made later than needed is no
  // gain, so they stay out of the area (moves that only delay an output's
  // producer are not taken).
  SmallVector<int64_t> delta(n + 1), outDelta(n + 1);
  auto simulate = [&](ArrayRef<int> p) {
    std::fill(delta.begin(), delta.end(), 0);
    std::fill(outDelta.begin(), outDelta.end(), 0);
    for (int b : tracked) {
      int first = INT_MAX, last = -1;
      for (int c : accesses[b]) {
        first = std::min(first, p[c]);
        last = std::max(last, p[c]);
      }
      int64_t bytes = bufs[b].bytes();
      if (outputs.contains(b)) {
        outDelta[first] += bytes;
        continue;
      }
      delta[first] += bytes;
      if (last + 1 <= int(n))
        delta[last + 1] -= bytes;
    }
    Simulation s;
    int64_t live = 0, out = 0;
    for (size_t i = 0; i <= n; ++i) {
      live += delta[i];
      out += outDelta[i];
      s.peak = std::max(s.peak, live + out);
      s.area += live;
    }
    return s;
  };

  Simulation best = simulate(pos);
  SmallVector<int> trialOrder, trialPos(n);
  llvm::SmallDenseSet<int, 16> group;
  for (size_t c = 0; c < n; ++c) {
    int earliest = 0;
    for (int p : preds[c])
      earliest = std::max(earliest, pos[p] + 1);
    if (earliest >= pos[c])
      continue;
    // The group: c, then calls after it that depend on the group and
    // whose other dependencies are done before `earliest`.
    group.clear();
    group.insert(int(c));
    SmallVector<int, 16> members{int(c)};
    for (int at = pos[c] + 1; at < int(n) && members.size() < kMaxGroup;
         ++at) {
      int d = order[at];
      bool fromGroup = false, ready = true;
      for (int p : preds[d]) {
        if (group.contains(p))
          fromGroup = true;
        else if (pos[p] >= earliest)
          ready = false;
      }
      if (fromGroup && ready) {
        group.insert(d);
        members.push_back(d);
      }
    }
    trialOrder.clear();
    trialOrder.append(order.begin(), order.begin() + earliest);
    trialOrder.append(members.begin(), members.end());
    for (int at = earliest; at < int(n); ++at)
      if (!group.contains(order[at]))
        trialOrder.push_back(order[at]);
    for (size_t i = 0; i < n; ++i)
      trialPos[trialOrder[i]] = int(i);
    Simulation s = simulate(trialPos);
    if (s.peak < best.peak || (s.peak == best.peak && s.area < best.area)) {
      best = s;
      order.swap(trialOrder);
      pos.swap(trialPos);
    }
  }

  SmallVector<PlannedCall> scheduled;
  scheduled.reserve(n);
  for (int c : order)
    scheduled.push_back(std::move(calls[c]));
  calls = std::move(scheduled);
}
