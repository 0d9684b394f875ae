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
// With pullAlong, a dependent whose other dependencies are not done yet
// still joins the group when each of those can come along (its own
// dependencies are done, or in the group): a weight-gradient GEMM of a
// batched MatMul reads two 2-d reshapes that ORT put at the end, one of
// the activation and one of the output gradient, and neither reshape alone
// is worth moving. The pipeline (Passes.cpp) plans both rules through
// and keeps the smaller arena: a greedy schedule that looks better in the
// simulation can place worse (reshapes become views after it).
//
// Dependencies are by buffer: the calls touching one buffer keep their
// order (conservatively, every access may write: kernels do not say which
// parameters they write), so no read moves across a write; only a run of
// finite checks that AND into one flag (reset 0) is unordered among itself.
// Graph inputs and constants that no call writes are read-only and order
// nothing. Random kernels draw from streams keyed by node and step, not by call
// order. Graphs of more than kMaxCalls calls keep their order (the search
// is quadratic).
//
//===----------------------------------------------------------------------===//

#include "PlannedProgram.h"

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

bool PlannedProgram::scheduleForMemory(bool pullAlong) {
  size_t n = calls.size();
  if (n < 3 || n > kMaxCalls)
    return false;
  bool pulled = false;
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
  // Whether call c only ANDs into flag b (a finite check with reset 0, or
  // a checked accumulation): such updates commute with each other.
  auto andsInto = [&](int c, int b) {
    const PlannedCall &pc = calls[c];
    StringRef k = pc.sig->name;
    bool ands = k == "unscale_check_accumulate";
    if (k == "multi_tensor_unscale_check" || k == "multi_tensor_all_finite") {
      auto reset = dyn_cast_or_null<IntegerAttr>(pc.attrs.get("reset"));
      ands = reset && reset.getInt() == 0;
    }
    int slot = tensorSlot(pc, "all_finite");
    if (!ands || slot < 0 || pc.tensors[slot] != ArrayRef<int>{b})
      return false;
    for (auto [i, list] : llvm::enumerate(pc.tensors))
      if (int(i) != slot && llvm::is_contained(list, b))
        return false;
    return true;
  };
  // Dependencies: consecutive accesses of a buffer that some call may
  // write (every temporary; graph inputs written in place), except that a
  // run of ANDs into one flag is unordered: each follows the access before
  // the run, and the access after it follows all of them.
  SmallVector<SmallVector<int, 4>> preds(n);
  SmallVector<int> tracked; // temporaries, for the simulation
  for (auto &[b, list] : accesses) {
    const Buffer &buf = bufs[b];
    bool temp = buf.kind == Buffer::Temp;
    if (temp)
      tracked.push_back(b);
    if (!temp && !written.contains(b))
      continue;
    // What the next access follows (the last access, or a whole run), and
    // what the members of the current run follow.
    SmallVector<int, 4> frontier, runBase;
    bool inRun = false;
    for (int c : list) {
      if (andsInto(c, b)) {
        if (!inRun) {
          runBase = frontier;
          frontier.clear();
          inRun = true;
        }
        preds[c].append(runBase.begin(), runBase.end());
        frontier.push_back(c);
        continue;
      }
      preds[c].append(frontier.begin(), frontier.end());
      frontier.assign({c});
      inRun = false;
    }
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
    // whose other dependencies are done before `earliest` or can come
    // along: a dependency whose own ones are all done there or in the
    // group (a weight-gradient GEMM that reads two reshapes, each made
    // late: neither reshape alone is worth moving, the three together
    // free the layer's input and output gradient).
    group.clear();
    group.insert(int(c));
    SmallVector<int, 16> members{int(c)};
    SmallVector<int, 4> along;
    for (int at = pos[c] + 1; at < int(n) && members.size() < kMaxGroup; ++at) {
      int d = order[at];
      if (group.contains(d))
        continue;
      bool fromGroup = false, ready = true;
      along.clear();
      for (int p : preds[d]) {
        if (group.contains(p)) {
          fromGroup = true;
          continue;
        }
        if (pos[p] < earliest)
          continue;
        bool movable = pullAlong;
        for (int q : preds[p])
          if (!group.contains(q) && pos[q] >= earliest)
            movable = false;
        if (!movable) {
          ready = false;
          break;
        }
        along.push_back(p);
      }
      if (!fromGroup || !ready || members.size() + along.size() + 1 > kMaxGroup)
        continue;
      pulled |= !along.empty();
      for (int p : along) {
        group.insert(p);
        members.push_back(p);
      }
      group.insert(d);
      members.push_back(d);
    }
    // In their present order, which keeps every dependency inside the
    // group before its dependent.
    llvm::sort(members, [&](int a, int b) { return pos[a] < pos[b]; });
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

  // Then the other way: a call that reads only graph inputs and constants
  // no call writes (the casts of the weights to fp16, which the AMP pass
  // puts at the top of the graph; fills; random draws) frees nothing by
  // running early and holds its outputs from then on: it goes to right
  // before the first call that reads one of them.
  auto readOnly = [&](int b) {
    return bufs[b].kind != Buffer::Temp && !written.contains(b);
  };
  DenseMap<int, SmallVector<int, 2>> sunkBefore; // anchor call -> calls
  llvm::DenseSet<int> sunk;
  for (size_t c = 0; c < n; ++c) {
    int anchorPos = INT_MAX;
    bool producesAll = true;
    for (const auto &list : calls[c].tensors)
      for (int b : list) {
        if (readOnly(b))
          continue;
        const auto &acc = accesses[b];
        if (bufs[b].kind != Buffer::Temp || acc.front() != int(c) ||
            outputs.contains(b)) {
          producesAll = false;
          continue;
        }
        for (int r : acc)
          if (r != int(c))
            anchorPos = std::min(anchorPos, pos[r]);
      }
    if (!producesAll || anchorPos == INT_MAX || anchorPos <= pos[c] + 1)
      continue;
    sunkBefore[order[anchorPos]].push_back(int(c));
    sunk.insert(int(c));
  }
  SmallVector<PlannedCall> scheduled;
  scheduled.reserve(n);
  for (int c : order) {
    if (sunk.contains(c))
      continue;
    if (auto it = sunkBefore.find(c); it != sunkBefore.end()) {
      llvm::sort(it->second, [&](int a, int b) { return pos[a] < pos[b]; });
      for (int m : it->second)
        scheduled.push_back(std::move(calls[m]));
    }
    scheduled.push_back(std::move(calls[c]));
  }
  calls = std::move(scheduled);
  return pulled;
}
