//===- Trainer.cpp - the amp-run training loop ----------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX Runtime training-API semantics (orttraining/training_api): the
// training graph's gradient accumulation buffers are state, reset lazily
// (lazy_reset_grad = true on the first step of each group of --accumulate
// steps, 1 by default; a version-1 InPlaceAccumulator's "accumulate" signal
// the opposite); the optimizer runs on each group's last step, gets
// `step + 1`, and the step counter grows only when the optimizer reports an
// update; learning_rate is an input.
//
// This file holds the step loop and the entry point; the Trainer's setup,
// data and files of state are in TrainerLoad.cpp, TrainerData.cpp and
// TrainerCheckpoint.cpp (TrainerInternals.h).
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/Trainer.h"
#include "TrainerInternals.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/LoweredForm.h"
#include "amp/Driver/NonfiniteLocator.h"
#include "amp/Driver/RangeCollector.h"
#include "amp/Target/ONNX/ExternalData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Process.h"

#include <chrono>
#include <cmath>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::driver::detail;
using namespace amp::exec;

llvm::Error Trainer::localizeStep(int64_t step, float loss, bool flagFalse) {
  status << "amp-run: step " << step + 1 << ": ";
  if (!std::isfinite(loss))
    status << "loss "
           << (std::isnan(loss) ? "nan"
               : loss > 0       ? "inf"
                                : "-inf")
           << (flagFalse ? ", " : "");
  if (flagFalse)
    status << "all-finite flag false";
  status << "; rerunning the step with a check after every call\n";
  // From the state the step started in, with the same random draws: the
  // rerun computes what the run did.
  for (auto &[i, copy] : stepSnapshots)
    amprt_memcpy(ctx, trainProg->inputData(i), copy,
                 trainProg->inputs()[i].bytes(), AMPRT_DEVICE_TO_DEVICE);
  if (amprt_set_random_offset(ctx, uint64_t(step)) != AMPRT_OK)
    return fail(Twine("random: ") + amprt_last_error(ctx));
  auto src = localizeNonfinite(*trainProg, ctx);
  if (!src)
    return src.takeError();
  printNonfiniteSource(status, *src, nodeOpTypes, trainProg->numCalls());
  status.flush();
  return llvm::Error::success();
}

llvm::Error Trainer::localizeOptimizer(int64_t step) {
  // What the optimizer left non-finite: one of the inputs it updates.
  std::string updated;
  for (auto &[i, copy] : optSnapshots)
    if (!rangeOf(ctx,
                 amprt_tensor{optProg->inputData(i), optProg->inputs()[i].dtype,
                              int32_t(optProg->inputs()[i].shape.size()),
                              optProg->inputs()[i].shape.data()})
             .finite()) {
      updated = optProg->inputs()[i].name;
      break;
    }
  if (updated.empty())
    return llvm::Error::success();
  status << "amp-run: step " << step + 1 << ": the optimizer left '" << updated
         << "' non-finite; rerunning it with a check after every call\n";
  for (auto &[i, copy] : optSnapshots)
    amprt_memcpy(ctx, optProg->inputData(i), copy, optProg->inputs()[i].bytes(),
                 AMPRT_DEVICE_TO_DEVICE);
  auto src = localizeNonfinite(*optProg, ctx);
  if (!src)
    return src.takeError();
  printNonfiniteSource(status, *src, nodeOpTypes, optProg->numCalls(),
                       /*optimizer=*/true);
  status.flush();
  return llvm::Error::success();
}

llvm::Error Trainer::run() {
  if (auto e = load())
    return e;
  if (!opts.ortCheckpointPath.empty())
    if (auto layout = ortCheckpointLayout(); !layout)
      return layout.takeError();
  // -o inline: a model past protobuf's 2 GiB is refused now, not after
  // training (writeModel checks the exact size).
  if (!opts.outPath.empty() && opts.externalData == ExternalData::Never) {
    uint64_t total = 0;
    llvm::sys::fs::file_size(outputGraph, total);
    for (const std::string &p : params)
      total += state[p]->bytes;
    if (total > kMaxProtobufBytes)
      return fail("-o " + opts.outPath + ": the model would hold at least " +
                  Twine(total) +
                  " bytes, more than one protobuf can (2 "
                  "GiB) with --external-data=never");
  }
  if (auto e = planSteps())
    return e;
  // The state without a gradient the step updates from its own batch.
  std::vector<unsigned> inPlace = trainProg->inputsWrittenInPlace();
  for (const std::string &p : params) {
    if (llvm::is_contained(trainable, p))
      continue;
    int in = trainProg->findInput(p);
    bool written = llvm::any_of(plan.writeBack,
                                [&](const auto &w) {
                                  return w.second == state[p].get();
                                }) ||
                   (in >= 0 && llvm::is_contained(inPlace, unsigned(in)));
    if (written)
      stepWrittenParams.push_back(p);
  }
  DeviceBuffer *lr =
      state.count("learning_rate") ? state["learning_rate"].get() : nullptr;
  if (lr) {
    float v = float(opts.lr);
    amprt_memcpy(ctx, lr->data, &v, 4, AMPRT_HOST_TO_DEVICE);
  }

  std::string logTmp;
  if (!opts.logPath.empty() && writesOutputs()) {
    std::error_code ec;
    logTmp = opts.logPath + ".tmp";
    log = std::make_unique<llvm::raw_fd_ostream>(logTmp, ec);
    if (ec)
      return fail(logTmp + ": " + ec.message());
    *log << "step,loss,loss_scale,all_finite,skipped,optimizer_step"
         << (opts.logTime ? ",seconds\n" : "\n");
  }
  status << "amp-run: " << params.size() << " parameters, "
         << trainProg->numCalls() << " + " << optProg->numCalls()
         << " runtime calls, arena " << trainProg->arenaBytes() << " + "
         << optProg->arenaBytes() << " bytes, " << precisionName()
         << ", device " << opts.device;
  if (worldSize > 1)
    status << ", data parallel: " << worldSize << " ranks ("
           << amprt_comm_engine(comm) << "), global batch "
           << (batchedInputs.empty()
                   ? 0
                   : state[batchedInputs.begin()->getKey()]->shape[0] *
                         worldSize);
  if (opts.device == "cpu" && !opts.cpuInfo.empty())
    status << "; cpu " << opts.cpuInfo;
  status << "\n";
  if (sharded()) {
    auto [here, all] = optimizerStateBytes();
    status << "amp-run: optimizer state sharded over " << worldSize
           << " ranks: " << here << " of " << all << " bytes on rank " << rank
           << "\n";
    if (auto e = planGather())
      return e;
    status << "amp-run: collectives per step: " << shardedTraffic() << "\n";
  }
  // What the training arena holds where most of it is alive, and which of
  // its windows (convolutions, pools) run channels last.
  if (auto main = trainLowered.lookupSymbol<func::FuncOp>("main")) {
    if (auto split = main->getAttrOfType<DictionaryAttr>(kArenaSplitAttr)) {
      status << "amp-run: training arena at its peak:";
      for (auto [i, role] : llvm::enumerate(kArenaRoles))
        if (auto n = split.getAs<IntegerAttr>(role))
          status << (i ? ", " : " ")
                 << llvm::join(llvm::split(StringRef(role), '_'), " ") << " "
                 << n.getInt();
      status << " bytes\n";
    }
    unsigned windows = 0, nhwc = 0;
    main.walk([&](amprt::CallOp call) {
      if (auto win = call->getAttrOfType<DictionaryAttr>("win")) {
        auto layout = win.getAs<IntegerAttr>("layout");
        ++windows;
        nhwc += layout && layout.getInt() != 0;
      }
    });
    if (nhwc)
      status << "amp-run: channels last: " << nhwc << " of " << windows
             << " convolution and pooling calls in NHWC\n";
  }
  tty = opts.progress && llvm::sys::Process::StandardErrIsDisplayed();
  loopStart = std::chrono::steady_clock::now();
  firstStep = stepsDone;
  auto check = [&](amprt_status st, StringRef what) -> llvm::Error {
    if (st == AMPRT_OK)
      return llvm::Error::success();
    return fail(Twine(what) + ": " + amprt_last_error(ctx));
  };
  if (plan.stepIn && plan.deviceUpdated) {
    amprt_tensor t = plan.stepIn->tensor();
    if (auto e = check(amprt_fill(ctx, &t, double(optimizerStep + 1)),
                       "optimizer step"))
      return e;
  }
  if (!opts.collectRangesPath.empty()) {
    if (precisionName() != "fp32")
      return fail("--collect-ranges measures the fp32 step's values: run "
                  "it without --amp (the ranges then feed "
                  "auto-mixed-precision's ranges=)");
    collector.emplace(initialLossScale(opts));
  }
  if (opts.localizeNonfinite)
    for (unsigned i : trainProg->inputsWrittenInPlace()) {
      void *copy = nullptr;
      if (amprt_malloc(ctx, trainProg->inputs()[i].bytes(), &copy) != AMPRT_OK)
        return fail(Twine("device memory: ") + amprt_last_error(ctx));
      stepSnapshots.push_back({i, copy});
    }
  if (opts.localizeNonfinite)
    for (unsigned i : optProg->inputsWrittenInPlace()) {
      void *copy = nullptr;
      if (amprt_malloc(ctx, optProg->inputs()[i].bytes(), &copy) != AMPRT_OK)
        return fail(Twine("device memory: ") + amprt_last_error(ctx));
      optSnapshots.push_back({i, copy});
    }
  // The random offset is the step's, moved on by each step's device work.
  if (auto e = check(amprt_set_random_offset(ctx, stepsDone), "random"))
    return e;
  // The host reads a step's results while the device runs the next one,
  // unless the next step needs them (the host's optimizer step count), the
  // ranks compare them, or a diagnostic reads each step as it goes.
  bool runAhead = !(plan.stepIn && !plan.deviceUpdated) && worldSize == 1 &&
                  !opts.localizeNonfinite && !opts.stepRunner && !collector;
  // Then a kernel that finds bad data (a label out of range) reports it
  // when the loop next waits (finishStep), not by making the device wait
  // at once. A run that reads each step as it goes keeps the immediate
  // checks: its own reads would otherwise be the ones to get the failure.
  if (runAhead)
    if (auto e = check(amprt_set_data_checks(ctx, AMPRT_CHECKS_DEFERRED),
                       "data checks"))
      return e;
  if (opts.stepGraph == StepGraph::On) {
    // Refused before any step, where it can be known then.
    std::string why = StringRef(amprt_backend_name(ctx)) == "cpu"
                          ? "the cpu backend has no graphs"
                          : stepGraphObstacle();
    if (!why.empty())
      return fail("--cuda-graph=on: the step cannot be one graph: " + why);
  }
  // What the host waited for in the steady state: from the third step of
  // the process (the first makes plans and workspaces, the second may be
  // recorded).
  amprt_queue_stats steadyFrom = {0, 0, 0};
  uint64_t steadyStep = firstStep + 2;
  // Gradient accumulation: the optimizer runs on the last step of each
  // group of opts.accumulate steps, if every step of the group was finite.
  for (; int64_t(stepsDone) < opts.steps; ++stepsDone) {
    if (stepsDone == steadyStep)
      amprt_queue_stats_get(ctx, &steadyFrom);
    bool groupStart = stepsDone % opts.accumulate == 0;
    bool groupEnd = (stepsDone + 1) % opts.accumulate == 0;
    bool last = int64_t(stepsDone) + 1 == opts.steps;
    bool checkpoint = opts.checkpointEvery > 0 &&
                      (stepsDone + 1) % uint64_t(opts.checkpointEvery) == 0;
    if (auto e = fillBatch(stepsDone))
      return e;
    if (auto e = runStep(groupStart, groupEnd))
      return e;
    if (auto e = queueResults(groupEnd))
      return e;
    size_t keep = runAhead && !last && !checkpoint ? 1 : 0;
    while (pending.size() > keep)
      if (auto e = finishStep())
        return e;
  }
  amprt_queue_stats waits;
  bool counted = amprt_queue_stats_get(ctx, &waits) == AMPRT_OK;
  // What the last step queued after its results (nothing, unless a
  // deferred check failed there).
  if (amprt_synchronize(ctx) != AMPRT_OK)
    return stepFailure(stepsDone ? stepsDone - 1 : 0);
  if (opts.progress && stepsDone > steadyStep && counted &&
      StringRef(amprt_backend_name(ctx)) != "cpu")
    status << "amp-run: steps " << steadyStep + 1 << " to " << stepsDone
           << ": the host drained the device's queue "
           << waits.drains - steadyFrom.drains << " times and waited "
           << waits.fence_waits - steadyFrom.fence_waits
           << " times for a step's results (" << stepsDone - steadyStep
           << " steps, " << waits.graph_launches - steadyFrom.graph_launches
           << " graph launches)\n";
  if (opts.progress && opts.steps > 0) {
    MemoryUse use = memoryUse();
    status << "amp-run: device memory at its peak: " << use.peak << " bytes ("
           << formatMiB(use.peak)
           << "; state, arenas, data and the backend's workspace)\n";
  }
  if (log) {
    log->close();
    if (log->has_error())
      return fail(logTmp + ": write failed");
    if (std::error_code ec = llvm::sys::fs::rename(logTmp, opts.logPath))
      return fail(opts.logPath + ": " + ec.message());
  }
  // Every rank holds the same state: rank 0 writes it (each rank its
  // shard of a --shard-optimizer checkpoint).
  if (!opts.checkpointPath.empty() && (writesOutputs() || sharded()))
    if (auto e = saveCheckpoint(opts.checkpointPath, stepsDone))
      return e;
  if (!writesOutputs())
    return llvm::Error::success();
  if (collector)
    if (auto e =
            train::writeAMPRanges(opts.collectRangesPath, collector->ranges()))
      return e;
  if (!opts.ortCheckpointPath.empty())
    if (auto e = saveOrtCheckpoint(opts.ortCheckpointPath))
      return e;
  if (!opts.outPath.empty())
    if (auto e = writeWeights(opts.outPath))
      return e;
  return llvm::Error::success();
}

std::string amp::driver::formatMiB(uint64_t bytes) {
  std::string s;
  llvm::raw_string_ostream(s)
      << llvm::format("%.2f MiB", double(bytes) / double(1 << 20));
  return s;
}

TrainOptions amp::driver::withoutOutputs(const TrainOptions &options) {
  TrainOptions o = options;
  o.logPath.clear();
  o.outPath.clear();
  o.checkpointPath.clear();
  o.ortCheckpointPath.clear();
  o.loweredPath.clear();
  o.collectRangesPath.clear();
  o.progress = false;
  return o;
}

double amp::driver::initialLossScale(const TrainOptions &options) {
  return options.staticLossScale != 0 ? options.staticLossScale
                                      : kInitialLossScale;
}

MemoryUse Trainer::memoryUse() const {
  MemoryUse use;
  amprt_memory_stats m;
  if (ctx && amprt_memory_stats_get(ctx, &m) == AMPRT_OK) {
    use.peak = m.peak;
    use.refused = m.refused;
    use.deviceFree = m.device_free;
    use.deviceTotal = m.device_total;
  }
  return use;
}

llvm::Error amp::driver::train(const TrainOptions &options,
                               llvm::raw_ostream &status, MemoryUse *memory) {
  // Data-parallel training: rank 0 reports progress, the others run quiet.
  std::optional<std::pair<int64_t, int64_t>> world = launcherWorld();
  bool quiet = world && world->first > 1 && world->second != 0;
  Trainer t(options, quiet ? llvm::nulls() : status);
  llvm::Error e = t.run();
  if (memory)
    *memory = t.memoryUse();
  if (e) {
    // No other rank may wait for this one in a collective: every rank
    // ends, the launcher naming this one.
    e = llvm::handleErrors(
        std::move(e), [&](const llvm::ErrorInfoBase &info) -> llvm::Error {
          if (t.isDataParallel()) {
            llvm::errs() << "amp-run: rank " << world->second
                         << ": error: " << info.message() << "\n";
            llvm::errs().flush();
            t.abortRanks(1);
          }
          return fail(info.message());
        });
  }
  return e;
}
