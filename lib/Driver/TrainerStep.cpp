//===- TrainerStep.cpp - one training step, queued and read back ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A step's device work is queued without the host waiting for any of it:
// the control values stay on the device (the signals are filled by kernels,
// the all-finite flag goes from the training graph to the optimizer, and-ed
// over an accumulation group, the optimizer's step counter grows there by
// its "updated" flag, the random offset moves on by a queued call), and the
// step's results (loss, scale, flags) are copied into host memory behind a
// fence. The host reads them one step later, while the device runs the
// next step, and keeps its counts from them (docs/amp-run.md, "Steps
// without waiting").
//
// On a device with graphs, the second step of a run is recorded as one
// graph and every later step launches it: the same calls with the same
// pointers, which is what queueStep makes once groups are one step long.
//
//===----------------------------------------------------------------------===//

#include "TrainerInternals.h"
#include "amp/Driver/NonfiniteLocator.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::driver::detail;
using namespace amp::exec;

namespace {

llvm::Error check(amprt_context *ctx, amprt_status st, StringRef what) {
  if (st == AMPRT_OK)
    return llvm::Error::success();
  return fail(Twine(what) + ": " + amprt_last_error(ctx));
}

} // namespace

llvm::Error Trainer::planSteps() {
  StepPlan &p = plan;
  p.staticScale =
      opts.amp && opts.staticLossScale != 0 ? opts.staticLossScale : 1.0;
  for (auto [i, port] : llvm::enumerate(trainProg->outputs())) {
    if (p.lossOut < 0 && port.dtype == AMPRT_F32 && port.shape.empty())
      p.lossOut = i;
    if (port.name == (kLossScaleName + train::kUpdatedSuffix).str())
      p.scaleOut = i;
    if (port.name == train::kAllFiniteName)
      p.finiteOut = i;
  }
  for (auto [i, port] : llvm::enumerate(trainProg->outputs())) {
    StringRef n = port.name;
    if (n.consume_back(".out") && trainProg->findInput(n) >= 0) {
      DeviceBuffer *b = state[n].get();
      if (b->bytes == port.bytes())
        p.writeBack.push_back({unsigned(i), b});
    }
  }
  // The optimizer's "updated" flag: AdamWOptimizer's output 0 (a bool);
  // graphs without one update when their update signals are fed true.
  if (!optProg->outputs().empty() && optProg->outputs()[0].dtype == AMPRT_BOOL)
    p.updatedOut = 0;
  for (const std::string &n : updateIns)
    p.updateSignals.push_back(state[n].get());
  p.stepIn = state.count("step") ? state["step"].get() : nullptr;
  p.finiteIn = state.count(train::kAllFiniteName)
                   ? state[train::kAllFiniteName].get()
                   : nullptr;
  for (DeviceBuffer *b :
       {&p.groupBuf[0], &p.groupBuf[1], &p.stepOne, &p.stepNext}) {
    b->ctx = ctx;
    b->bytes = 1;
    b->dtype = AMPRT_BOOL;
    if (p.stepIn && (b == &p.stepOne || b == &p.stepNext)) {
      // The counter's own type and shape (i64 in ORT's optimizer graphs).
      b->bytes = p.stepIn->bytes;
      b->dtype = p.stepIn->dtype;
      b->shape = p.stepIn->shape;
    }
    if (amprt_malloc(ctx, b->bytes, &b->data) != AMPRT_OK)
      return fail(Twine("device memory: ") + amprt_last_error(ctx));
  }
  p.deviceFlag = p.finiteOut >= 0;
  p.followsFlag = !p.updateSignals.empty() || p.finiteIn;
  p.deviceUpdated = p.updatedOut >= 0 || (p.deviceFlag && p.followsFlag);
  void *r = nullptr;
  if (amprt_host_alloc(ctx, kRecords * sizeof(StepRecord), &r) != AMPRT_OK)
    return fail(Twine("host memory: ") + amprt_last_error(ctx));
  records = static_cast<StepRecord *>(r);
  return llvm::Error::success();
}

llvm::Error Trainer::queueStep(bool groupStart, bool groupEnd) {
  StepPlan &p = plan;
  auto fillWith = [&](DeviceBuffer &b, double v) {
    amprt_tensor t = b.tensor();
    return check(ctx, amprt_fill(ctx, &t, v), "step signal");
  };
  if (auto e = drawSyntheticBatch())
    return e;
  if (int64_t(stepsDone) == opts.injectNonFiniteStep)
    if (auto e = injectNonFinite())
      return e;
  for (DeviceBuffer *b : resetSignals)
    if (auto e = fillWith(*b, groupStart))
      return e;
  for (DeviceBuffer *b : accumulateSignals)
    if (auto e = fillWith(*b, !groupStart))
      return e;
  if (opts.localizeNonfinite)
    for (auto &[i, copy] : stepSnapshots)
      amprt_memcpy(ctx, copy, trainProg->inputData(i),
                   trainProg->inputs()[i].bytes(), AMPRT_DEVICE_TO_DEVICE);
  if (auto e = opts.stepRunner ? opts.stepRunner(*trainProg, ctx, stepsDone,
                                                 false, nodeOpTypes)
               : collector     ? collector->runStep(*trainProg, ctx)
                               : trainProg->run())
    return e;
  // --localize-nonfinite: the step's loss and an all-finite flag, read at
  // once (1 without a flag).
  auto lossAndFlag = [&](const void *flagData) {
    float loss = 0;
    uint8_t flag = 1;
    if (p.lossOut >= 0)
      amprt_memcpy(ctx, &loss, trainProg->output(p.lossOut), 4,
                   AMPRT_DEVICE_TO_HOST);
    if (flagData)
      amprt_memcpy(ctx, &flag, flagData, 1, AMPRT_DEVICE_TO_HOST);
    return std::make_pair(loss, flag);
  };
  if (opts.localizeNonfinite) {
    auto [loss, flag] = lossAndFlag(
        p.finiteOut >= 0 ? trainProg->output(p.finiteOut) : nullptr);
    if (!std::isfinite(loss) || !flag)
      if (auto e = localizeStep(int64_t(stepsDone), loss, !flag))
        return e;
  }
  for (auto &[i, b] : p.writeBack)
    amprt_memcpy(ctx, b->data, trainProg->output(i), b->bytes,
                 AMPRT_DEVICE_TO_DEVICE);
  // Data parallel: the parameters without a gradient that the step
  // updates from the rank's own batch (BatchNorm's running statistics)
  // are rank 0's on every rank, as DDP broadcasts its buffers.
  if (auto e = broadcastBuffers())
    return e;
  // The group's flag on the device: this step's, and-ed with the
  // earlier steps' of the group.
  const void *flag = p.deviceFlag ? trainProg->output(p.finiteOut) : nullptr;
  if (p.deviceFlag && opts.accumulate > 1) {
    DeviceBuffer &cur = p.groupBuf[p.group], &other = p.groupBuf[1 - p.group];
    amprt_tensor f = {const_cast<void *>(flag), AMPRT_BOOL, 0, nullptr},
                 a = cur.tensor(), y = other.tensor();
    if (groupStart)
      amprt_memcpy(ctx, cur.data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
    else if (auto e = check(ctx, amprt_logical_and(ctx, &a, &f, &y),
                            "all-finite flag"))
      return e;
    else
      p.group = 1 - p.group;
    flag = p.groupBuf[p.group].data;
  }
  if (groupEnd) {
    for (DeviceBuffer *b : p.updateSignals) {
      if (flag)
        amprt_memcpy(ctx, b->data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
      else if (auto e = fillWith(*b, 1))
        return e;
    }
    if (p.finiteIn) {
      if (flag)
        amprt_memcpy(ctx, p.finiteIn->data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
      else if (auto e = fillWith(*p.finiteIn, 1))
        return e;
    }
    // The host's count is current here: such a run reads every step's
    // results before it queues the next (finishStep).
    if (p.stepIn && !p.deviceUpdated)
      if (auto e = fillWith(*p.stepIn, double(optimizerStep + 1)))
        return e;
    bool stepFinite = true;
    if (opts.localizeNonfinite) {
      // Only a step whose training run was finite: a non-finite one was
      // localized there, and its update is skipped or already NaN.
      auto [loss, f] = lossAndFlag(flag);
      stepFinite = std::isfinite(loss) && f;
      for (auto &[i, copy] : optSnapshots)
        amprt_memcpy(ctx, copy, optProg->inputData(i),
                     optProg->inputs()[i].bytes(), AMPRT_DEVICE_TO_DEVICE);
    }
    if (auto e = opts.stepRunner ? opts.stepRunner(*optProg, ctx, stepsDone,
                                                   true, nodeOpTypes)
                                 : optProg->run())
      return e;
    if (opts.localizeNonfinite && stepFinite)
      if (auto e = localizeOptimizer(int64_t(stepsDone)))
        return e;
    // --shard-optimizer: each parameter from the rank that updated it.
    if (auto e = gatherParameters())
      return e;
    void *updatedDev = p.updatedOut >= 0 ? optProg->output(p.updatedOut)
                                         : const_cast<void *>(flag);
    if (p.stepIn && p.deviceUpdated) {
      // step += updated, for the next optimizer run.
      amprt_tensor u = {updatedDev, AMPRT_BOOL, int32_t(p.stepIn->shape.size()),
                        p.stepIn->shape.data()},
                   one = p.stepOne.tensor(), next = p.stepNext.tensor(),
                   cur = p.stepIn->tensor();
      if (auto e = check(ctx, amprt_cast(ctx, &u, &one), "optimizer step"))
        return e;
      if (auto e =
              check(ctx, amprt_add(ctx, &cur, &one, &next), "optimizer step"))
        return e;
      amprt_memcpy(ctx, p.stepIn->data, p.stepNext.data, p.stepIn->bytes,
                   AMPRT_DEVICE_TO_DEVICE);
    }
  }
  // New dropout masks and random draws next step; a resumed run draws
  // what the uninterrupted one drew there.
  return check(ctx, amprt_advance_random_offset(ctx, 1), "random");
}

std::string Trainer::stepGraphObstacle() const {
  if (opts.stepGraph == StepGraph::Off)
    return "--cuda-graph=off";
  if (opts.stepRunner)
    return "--compare-precision runs each call apart";
  if (collector)
    return "--collect-ranges reads every value";
  if (opts.localizeNonfinite)
    return "--localize-nonfinite reads each step's results at once";
  if (worldSize > 1)
    return "data-parallel steps reduce on the host between programs";
  if (opts.accumulate > 1)
    return "--accumulate: a group's steps differ";
  if (opts.injectNonFiniteStep >= 0)
    return "a step's batch is made non-finite from the host";
  if (plan.stepIn && !plan.deviceUpdated)
    return "the optimizer's step count comes from the host";
  return "";
}

llvm::Error Trainer::runStep(bool groupStart, bool groupEnd) {
  // The first step of the process runs call by call: it makes the plans
  // and workspaces a recording must find made.
  if (!stepGraph && !stepGraphTried && stepsDone > firstStep) {
    stepGraphTried = true;
    std::string why = stepGraphObstacle();
    if (why.empty()) {
      if (amprt_graph_begin(ctx) != AMPRT_OK) {
        why = amprt_last_error(ctx);
      } else {
        llvm::Error e = queueStep(groupStart, groupEnd);
        amprt_graph *g = nullptr;
        amprt_status st = amprt_graph_end(ctx, &g);
        if (st == AMPRT_OK && !e) {
          stepGraph = g;
        } else {
          // Nothing recorded ran: the step runs call by call below (and
          // fails there when the failure was not the recording's).
          why = st != AMPRT_OK ? std::string(amprt_last_error(ctx))
                               : llvm::toString(std::move(e));
          llvm::consumeError(std::move(e));
          if (g)
            amprt_graph_destroy(ctx, g);
        }
      }
    }
    bool device = StringRef(amprt_backend_name(ctx)) != "cpu";
    if (!stepGraph && opts.stepGraph == StepGraph::On)
      return fail("--cuda-graph=on: the step cannot be one graph: " +
                  (device ? why : "the cpu backend has no graphs"));
    if (device && opts.progress) {
      if (stepGraph)
        status << "amp-run: steps " << stepsDone + 1
               << " on launch one CUDA graph each (" << trainProg->numCalls()
               << " + " << optProg->numCalls() << " calls)\n";
      else if (opts.stepGraph != StepGraph::Off)
        status << "amp-run: the steps run call by call: " << why << "\n";
    }
  }
  if (stepGraph) {
    // One launch: the graph moves the random offset and draws a synthetic
    // batch itself; a batch from files was copied before it.
    return check(ctx, amprt_graph_launch(ctx, stepGraph), "step graph");
  }
  return queueStep(groupStart, groupEnd);
}

llvm::Error Trainer::queueResults(bool groupEnd) {
  StepPlan &p = plan;
  StepRecord &r = records[stepsDone % kRecords];
  // The slot's last reader is done: finishStep read it kRecords steps ago.
  r.loss = NAN;
  r.scale = float(p.staticScale);
  r.finite = 1;
  r.updated = 1;
  auto copy = [&](void *dst, const void *src, size_t bytes) {
    return check(ctx,
                 amprt_memcpy_async(ctx, dst, src, bytes, AMPRT_DEVICE_TO_HOST),
                 "step results");
  };
  if (p.lossOut >= 0)
    if (auto e = copy(&r.loss, trainProg->output(p.lossOut), 4))
      return e;
  if (p.scaleOut >= 0)
    if (auto e = copy(&r.scale, trainProg->output(p.scaleOut), 4))
      return e;
  if (p.finiteOut >= 0)
    if (auto e = copy(&r.finite, trainProg->output(p.finiteOut), 1))
      return e;
  if (groupEnd && p.updatedOut >= 0)
    if (auto e = copy(&r.updated, optProg->output(p.updatedOut), 1))
      return e;
  uint64_t fence = 0;
  if (auto e = check(ctx, amprt_fence_record(ctx, &fence), "step results"))
    return e;
  pending.push_back({stepsDone, fence, groupEnd});
  return llvm::Error::success();
}

llvm::Error Trainer::stepFailure(uint64_t step) {
  // A deferred data check names the random offset its call ran at, which
  // is the index of the step that queued it.
  StringRef msg = amprt_last_error(ctx);
  StringRef head = msg;
  uint64_t offset = step;
  size_t at = msg.rfind(" [random offset ");
  if (at != StringRef::npos && msg.ends_with("]") &&
      !msg.slice(at + 16, msg.size() - 1).getAsInteger(10, offset))
    head = msg.take_front(at);
  else
    offset = step;
  return fail("step " + Twine(offset + 1) + ": " + head);
}

llvm::Error Trainer::finishStep() {
  StepPlan &p = plan;
  PendingStep done = pending.front();
  pending.erase(pending.begin());
  // A deferred data check of the step's kernels (or the next step's,
  // which may have run by now) fails here.
  if (amprt_fence_wait(ctx, done.fence) != AMPRT_OK)
    return stepFailure(done.step);
  const StepRecord &r = records[done.step % kRecords];
  uint8_t finite = r.finite;
  groupFinite &= finite;
  if (done.groupEnd) {
    // Without an "updated" output, the flag fed to the optimizer says.
    uint8_t updated = p.followsFlag ? groupFinite : uint8_t(1);
    if (p.updatedOut >= 0)
      updated = r.updated;
    if (updated)
      ++optimizerStep;
    if (!groupFinite)
      ++skipped;
    groupFinite = 1;
  }
  float loss = p.lossOut >= 0 ? r.loss : NAN;
  float scale = r.scale;
  if (worldSize > 1) {
    // The loss of the global batch: the mean of the ranks' (each the
    // mean over its part).
    auto mean = meanOverRanks(loss);
    if (!mean)
      return mean.takeError();
    loss = *mean;
    if (opts.verifyReplicas) {
      auto same = sameOnAllRanks(stateChecksum());
      if (!same)
        return same.takeError();
      if (!*same)
        return fail("data parallel: after step " + Twine(done.step + 1) +
                    " the ranks' parameters or optimizer state differ");
    }
  }
  // Seconds since the loop started, taken once the step's results are
  // back (so its device work is done): with --log-time a benchmark takes
  // the steady state from one process, (seconds[j] - seconds[i]) / (j - i).
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              loopStart)
                    .count();
  if (log) {
    *log << done.step << "," << llvm::format("%.9g", loss) << ","
         << llvm::format("%.9g", scale) << "," << int(finite) << "," << skipped
         << "," << optimizerStep;
    if (opts.logTime)
      *log << "," << llvm::format("%.6f", secs);
    *log << "\n";
  }
  bool last = int64_t(done.step) + 1 == opts.steps;
  if (opts.progress && (tty || last))
    status << (tty ? "\r" : "") << "step " << done.step + 1 << "/" << opts.steps
           << "  loss " << llvm::format("%.6f", loss) << "  scale "
           << llvm::format("%g", scale) << "  skipped " << skipped << "  "
           << llvm::format("%.1f", double(done.step + 1 - firstStep) /
                                       std::max(secs, 1e-9))
           << " steps/s" << (last || !tty ? "\n" : "");
  status.flush();
  // --checkpoint-every: the state after this step (a multiple of
  // --accumulate, so between groups), replaced atomically; the last
  // step's is written by run(). The loop read this step's results before
  // it queued the next.
  if (opts.checkpointEvery > 0 && !last && (writesOutputs() || sharded()) &&
      (done.step + 1) % uint64_t(opts.checkpointEvery) == 0)
    if (auto e = saveCheckpoint(opts.checkpointPath, done.step + 1))
      return e;
  return llvm::Error::success();
}
