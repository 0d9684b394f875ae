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
  int lossOut = -1, scaleOut = -1, finiteOut = -1;
  // The scale the log shows where the graph has no scaler state: a static
  // scale of fp16 AMP, else none.
  double staticScale =
      opts.amp && opts.staticLossScale != 0 ? opts.staticLossScale : 1.0;
  for (auto [i, p] : llvm::enumerate(trainProg->outputs())) {
    if (lossOut < 0 && p.dtype == AMPRT_F32 && p.shape.empty())
      lossOut = i;
    if (p.name == (kLossScaleName + train::kUpdatedSuffix).str())
      scaleOut = i;
    if (p.name == train::kAllFiniteName)
      finiteOut = i;
  }
  // Outputs written back into state: "<x>.out" for an input "<x>".
  std::vector<std::pair<unsigned, DeviceBuffer *>> writeBack;
  for (auto [i, p] : llvm::enumerate(trainProg->outputs())) {
    StringRef n = p.name;
    if (n.consume_back(".out") && trainProg->findInput(n) >= 0) {
      DeviceBuffer *b = state[n].get();
      if (b->bytes == p.bytes())
        writeBack.push_back({unsigned(i), b});
    }
  }
  // The state without a gradient the step updates from its own batch.
  std::vector<unsigned> inPlace = trainProg->inputsWrittenInPlace();
  for (const std::string &p : params) {
    if (llvm::is_contained(trainable, p))
      continue;
    int in = trainProg->findInput(p);
    bool written = llvm::any_of(writeBack,
                                [&](const auto &w) {
                                  return w.second == state[p].get();
                                }) ||
                   (in >= 0 && llvm::is_contained(inPlace, unsigned(in)));
    if (written)
      stepWrittenParams.push_back(p);
  }
  // The optimizer's "updated" flag: AdamWOptimizer's output 0 (a bool);
  // graphs without one update when their update signals are fed true.
  int updatedOut = -1;
  if (!optProg->outputs().empty() && optProg->outputs()[0].dtype == AMPRT_BOOL)
    updatedOut = 0;
  std::vector<DeviceBuffer *> updateSignals;
  for (const std::string &n : updateIns)
    updateSignals.push_back(state[n].get());
  DeviceBuffer *lr =
      state.count("learning_rate") ? state["learning_rate"].get() : nullptr;
  DeviceBuffer *stepIn = state.count("step") ? state["step"].get() : nullptr;
  DeviceBuffer *finiteIn = state.count(train::kAllFiniteName)
                               ? state[train::kAllFiniteName].get()
                               : nullptr;
  if (lr) {
    float v = float(opts.lr);
    amprt_memcpy(ctx, lr->data, &v, 4, AMPRT_HOST_TO_DEVICE);
  }

  std::unique_ptr<llvm::raw_fd_ostream> log;
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
  // What the training arena holds where most of it is alive.
  if (auto main = trainLowered.lookupSymbol<func::FuncOp>("main"))
    if (auto split = main->getAttrOfType<DictionaryAttr>(kArenaSplitAttr)) {
      status << "amp-run: training arena at its peak:";
      for (auto [i, role] : llvm::enumerate(kArenaRoles))
        if (auto n = split.getAs<IntegerAttr>(role))
          status << (i ? ", " : " ")
                 << llvm::join(llvm::split(StringRef(role), '_'), " ") << " "
                 << n.getInt();
      status << " bytes\n";
    }
  bool tty = opts.progress && llvm::sys::Process::StandardErrIsDisplayed();
  auto start = std::chrono::steady_clock::now();
  uint64_t first = stepsDone;
  // Gradient accumulation: the optimizer runs on the last step of each
  // group of opts.accumulate steps, if every step of the group was finite.
  //
  // The control values of a step stay on the device: the signals are
  // filled by kernels, the all-finite flag goes from the training graph to
  // the optimizer (and-ed over an accumulation group) without a host round
  // trip, and the optimizer's step counter grows there by its "updated"
  // flag. The host reads the step's results (loss, scale, flags) once, at
  // its end, and keeps its own counts from them.
  DeviceBuffer groupBuf[2];
  int group = 0; // groupBuf[group] holds the group's flag so far
  DeviceBuffer stepOne, stepNext;
  for (DeviceBuffer *b : {&groupBuf[0], &groupBuf[1], &stepOne, &stepNext}) {
    b->ctx = ctx;
    b->bytes = 1;
    b->dtype = AMPRT_BOOL;
    if (stepIn && (b == &stepOne || b == &stepNext)) {
      // The counter's own type and shape (i64 in ORT's optimizer graphs).
      b->bytes = stepIn->bytes;
      b->dtype = stepIn->dtype;
      b->shape = stepIn->shape;
    }
    if (amprt_malloc(ctx, b->bytes, &b->data) != AMPRT_OK)
      return fail(Twine("device memory: ") + amprt_last_error(ctx));
  }
  auto check = [&](amprt_status st, StringRef what) -> llvm::Error {
    if (st == AMPRT_OK)
      return llvm::Error::success();
    return fail(Twine(what) + ": " + amprt_last_error(ctx));
  };
  auto fillWith = [&](DeviceBuffer &b, double v) {
    amprt_tensor t = b.tensor();
    return check(amprt_fill(ctx, &t, v), "step signal");
  };
  // The flag the optimizer gets is device data when the training graph
  // reports one; "updated" is, when the optimizer reports it or follows
  // that flag.
  bool deviceFlag = finiteOut >= 0;
  bool followsFlag = !updateSignals.empty() || finiteIn;
  bool deviceUpdated = updatedOut >= 0 || (deviceFlag && followsFlag);
  if (stepIn && deviceUpdated)
    if (auto e = fillWith(*stepIn, double(optimizerStep + 1)))
      return e;
  std::optional<RangeCollector> collector;
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
  uint8_t groupFinite = 1;
  for (; int64_t(stepsDone) < opts.steps; ++stepsDone) {
    if (auto e = fillBatch(stepsDone))
      return e;
    bool groupStart = stepsDone % opts.accumulate == 0;
    bool groupEnd = (stepsDone + 1) % opts.accumulate == 0;
    for (DeviceBuffer *b : resetSignals)
      if (auto e = fillWith(*b, groupStart))
        return e;
    for (DeviceBuffer *b : accumulateSignals)
      if (auto e = fillWith(*b, !groupStart))
        return e;
    // New dropout masks and random draws each step; a resumed run draws
    // what the uninterrupted one drew at this step.
    if (auto e = check(amprt_set_random_offset(ctx, stepsDone), "random"))
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
    if (opts.localizeNonfinite) {
      float loss = 0;
      uint8_t flag = 1;
      if (lossOut >= 0)
        amprt_memcpy(ctx, &loss, trainProg->output(lossOut), 4,
                     AMPRT_DEVICE_TO_HOST);
      if (finiteOut >= 0)
        amprt_memcpy(ctx, &flag, trainProg->output(finiteOut), 1,
                     AMPRT_DEVICE_TO_HOST);
      if (!std::isfinite(loss) || !flag)
        if (auto e = localizeStep(int64_t(stepsDone), loss, !flag))
          return e;
    }
    for (auto &[i, b] : writeBack)
      amprt_memcpy(ctx, b->data, trainProg->output(i), b->bytes,
                   AMPRT_DEVICE_TO_DEVICE);
    // Data parallel: the parameters without a gradient that the step
    // updates from the rank's own batch (BatchNorm's running statistics)
    // are rank 0's on every rank, as DDP broadcasts its buffers.
    if (auto e = broadcastBuffers())
      return e;
    // The group's flag on the device: this step's, and-ed with the
    // earlier steps' of the group.
    const void *flag = deviceFlag ? trainProg->output(finiteOut) : nullptr;
    if (deviceFlag && opts.accumulate > 1) {
      DeviceBuffer &cur = groupBuf[group], &other = groupBuf[1 - group];
      amprt_tensor f = {const_cast<void *>(flag), AMPRT_BOOL, 0, nullptr},
                   a = cur.tensor(), y = other.tensor();
      if (groupStart)
        amprt_memcpy(ctx, cur.data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
      else if (auto e =
                   check(amprt_logical_and(ctx, &a, &f, &y), "all-finite flag"))
        return e;
      else
        group = 1 - group;
      flag = groupBuf[group].data;
    }
    void *updatedDev = nullptr;
    if (groupEnd) {
      for (DeviceBuffer *b : updateSignals) {
        if (flag)
          amprt_memcpy(ctx, b->data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
        else if (auto e = fillWith(*b, 1))
          return e;
      }
      if (finiteIn) {
        if (flag)
          amprt_memcpy(ctx, finiteIn->data, flag, 1, AMPRT_DEVICE_TO_DEVICE);
        else if (auto e = fillWith(*finiteIn, 1))
          return e;
      }
      if (stepIn && !deviceUpdated)
        if (auto e = fillWith(*stepIn, double(optimizerStep + 1)))
          return e;
      bool stepFinite = true;
      if (opts.localizeNonfinite) {
        // Only a step whose training run was finite: a non-finite one was
        // localized there, and its update is skipped or already NaN.
        float loss = 0;
        uint8_t f = 1;
        if (lossOut >= 0)
          amprt_memcpy(ctx, &loss, trainProg->output(lossOut), 4,
                       AMPRT_DEVICE_TO_HOST);
        if (flag)
          amprt_memcpy(ctx, &f, flag, 1, AMPRT_DEVICE_TO_HOST);
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
      updatedDev = updatedOut >= 0 ? optProg->output(updatedOut)
                                   : const_cast<void *>(flag);
      if (stepIn && deviceUpdated) {
        // step += updated, for the next optimizer run.
        amprt_tensor u = {updatedDev, AMPRT_BOOL, int32_t(stepIn->shape.size()),
                          stepIn->shape.data()},
                     one = stepOne.tensor(), next = stepNext.tensor(),
                     cur = stepIn->tensor();
        if (auto e = check(amprt_cast(ctx, &u, &one), "optimizer step"))
          return e;
        if (auto e = check(amprt_add(ctx, &cur, &one, &next), "optimizer step"))
          return e;
        amprt_memcpy(ctx, stepIn->data, stepNext.data, stepIn->bytes,
                     AMPRT_DEVICE_TO_DEVICE);
      }
    }
    // The step's results, read once the device is done with it.
    uint8_t finite = 1;
    if (finiteOut >= 0)
      amprt_memcpy(ctx, &finite, trainProg->output(finiteOut), 1,
                   AMPRT_DEVICE_TO_HOST);
    groupFinite &= finite;
    if (groupEnd) {
      // Without an "updated" output, the flag fed to the optimizer says.
      uint8_t updated = followsFlag ? groupFinite : uint8_t(1);
      if (updatedOut >= 0)
        amprt_memcpy(ctx, &updated, updatedDev, 1, AMPRT_DEVICE_TO_HOST);
      if (updated)
        ++optimizerStep;
      if (!groupFinite)
        ++skipped;
      groupFinite = 1;
    }
    // A static scale is a constant of the graph, not an output.
    float loss = NAN, scale = float(staticScale);
    if (lossOut >= 0)
      amprt_memcpy(ctx, &loss, trainProg->output(lossOut), 4,
                   AMPRT_DEVICE_TO_HOST);
    if (scaleOut >= 0)
      amprt_memcpy(ctx, &scale, trainProg->output(scaleOut), 4,
                   AMPRT_DEVICE_TO_HOST);
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
          return fail("data parallel: after step " + Twine(stepsDone + 1) +
                      " the ranks' parameters or optimizer state differ");
      }
    }
    // Seconds since the loop started, taken after the step's results were
    // read back (so its device work is done): with --log-time a benchmark
    // takes the steady state from one process, (seconds[j] - seconds[i]) /
    // (j - i).
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (log) {
      *log << stepsDone << "," << llvm::format("%.9g", loss) << ","
           << llvm::format("%.9g", scale) << "," << int(finite) << ","
           << skipped << "," << optimizerStep;
      if (opts.logTime)
        *log << "," << llvm::format("%.6f", secs);
      *log << "\n";
    }
    bool last = int64_t(stepsDone) + 1 == opts.steps;
    if (opts.progress && (tty || last))
      status << (tty ? "\r" : "") << "step " << stepsDone + 1 << "/"
             << opts.steps << "  loss " << llvm::format("%.6f", loss)
             << "  scale " << llvm::format("%g", scale) << "  skipped "
             << skipped << "  "
             << llvm::format("%.1f", double(stepsDone + 1 - first) /
                                         std::max(secs, 1e-9))
             << " steps/s" << (last || !tty ? "\n" : "");
    status.flush();
    // --checkpoint-every: the state after this step (a multiple of
    // --accumulate, so between groups), replaced atomically; the last
    // step's is written below.
    if (opts.checkpointEvery > 0 && !last && (writesOutputs() || sharded()) &&
        (stepsDone + 1) % uint64_t(opts.checkpointEvery) == 0)
      if (auto e = saveCheckpoint(opts.checkpointPath, stepsDone + 1))
        return e;
  }
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
