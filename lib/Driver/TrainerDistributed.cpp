//===- TrainerDistributed.cpp - data-parallel training across ranks -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run started by a launcher (mpirun, srun) as several ranks trains
// data-parallel (docs/Distributed.md): the ranks join one communicator of
// the runtime, the training graph reduces its gradients over it
// (train-data-parallel), every rank reads its own part of each global
// batch (TrainerData.cpp) and takes rank 0's parameters before the first
// step; the ranks agree on the models, the options and the data, or none
// trains. With --shard-optimizer (ZeRO stage 1) each trainable parameter
// has an owner rank: the training graph reduce-scatters the gradients to
// their owners, each rank's optimizer updates its own parameters, and
// gatherParameters all-gathers them.
//
//===----------------------------------------------------------------------===//

#include "TrainerInternals.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

using namespace amp;
using namespace amp::driver;
using namespace amp::driver::detail;

uint64_t amp::driver::detail::graphFingerprint(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(
      os,
      OpPrintingFlags().elideLargeElementsAttrs(16).elideLargeResourceString(
          64));
  return llvm::xxh3_64bits(llvm::arrayRefFromStringRef(text));
}

std::optional<std::pair<int64_t, int64_t>>
amp::driver::detail::launcherWorld() {
  static const char *const kVars[][2] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
      {"PMI_SIZE", "PMI_RANK"},
      // srun's step (SLURM_NTASKS is set in a whole sbatch script too).
      {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID"}};
  for (const auto &[sizeVar, rankVar] : kVars) {
    const char *size = std::getenv(sizeVar), *rank = std::getenv(rankVar);
    int64_t n = 0, r = 0;
    if (size && rank && !StringRef(size).getAsInteger(10, n) &&
        !StringRef(rank).getAsInteger(10, r))
      return std::make_pair(n, r);
  }
  return std::nullopt;
}

namespace {

/// Combines `v` into the running hash `h`.
void mix(uint64_t &h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
}
void mix(uint64_t &h, StringRef s) {
  mix(h, llvm::xxh3_64bits(llvm::arrayRefFromStringRef(s)));
}

} // namespace

llvm::Error Trainer::joinRanks() {
  std::optional<std::pair<int64_t, int64_t>> world = launcherWorld();
  if (!world || world->first <= 1) {
    if (opts.shardOptimizer || opts.verifyReplicas ||
        opts.injectNonFiniteRank >= 0)
      status << "amp-run: note: --shard-optimizer, --verify-replicas and "
                "--inject-rank act across data-parallel ranks; one process "
                "(started without mpirun or srun) has nothing to share\n";
    return llvm::Error::success();
  }
  auto [size, myRank] = *world;
  if (!amprt_comm_available("mpi"))
    return fail("started as rank " + Twine(myRank) + " of " + Twine(size) +
                " by a launcher, but this build has no MPI for data-parallel "
                "training (install libopenmpi-dev and rebuild)");
  // What the data-parallel step does not do yet: refused, not ignored.
  if (opts.optimizerModel.empty())
    return fail("data-parallel training takes the ONNX training and "
                "optimizer models (a lowered program does not say which "
                "inputs carry samples)");
  if (opts.localizeNonfinite || opts.stepRunner ||
      !opts.collectRangesPath.empty())
    return fail("--localize-nonfinite, --compare-precision and "
                "--collect-ranges run on one rank: start amp-run without "
                "mpirun for them");
  if (opts.shardOptimizer && !opts.ortCheckpointPath.empty())
    return fail("--shard-optimizer keeps each rank's part of the optimizer "
                "state: --ort-checkpoint (one file with all of it) does not "
                "go with it; --checkpoint writes one file per rank");
  const char *engine =
      opts.device == "cuda" && amprt_comm_available("nccl") ? "nccl" : "mpi";
  if (amprt_comm_create(engine, &comm) != AMPRT_OK)
    return fail(Twine("data parallel: ") + amprt_last_error(nullptr));
  rank = amprt_comm_rank(comm);
  worldSize = amprt_comm_size(comm);
  if (worldSize != size)
    return fail("data parallel: the launcher started " + Twine(size) +
                " ranks, the communicator has " + Twine(worldSize));
  return llvm::Error::success();
}

llvm::Expected<void *> Trainer::reductionScratch() {
  if (!scratchData && amprt_malloc(ctx, 16, &scratchData) != AMPRT_OK)
    return fail(Twine("device memory: ") + amprt_last_error(ctx));
  return scratchData;
}

llvm::Expected<bool> Trainer::sameOnAllRanks(uint64_t value) {
  // The 64-bit value as two i64 halves, their min and max over the ranks:
  // equal everywhere iff min == max.
  auto buf = reductionScratch();
  if (!buf)
    return buf.takeError();
  int64_t v[2] = {int64_t(value >> 32), int64_t(value & 0xffffffffu)};
  int64_t shape = 2, lo[2], hi[2];
  amprt_tensor t = {*buf, AMPRT_I64, 1, &shape};
  for (auto [op, out] :
       {std::pair{AMPRT_REDUCE_MIN, lo}, std::pair{AMPRT_REDUCE_MAX, hi}}) {
    amprt_memcpy(ctx, *buf, v, sizeof v, AMPRT_HOST_TO_DEVICE);
    if (amprt_all_reduce(ctx, &t, &t, op) != AMPRT_OK)
      return fail(Twine("data parallel: ") + amprt_last_error(ctx));
    amprt_memcpy(ctx, out, *buf, sizeof v, AMPRT_DEVICE_TO_HOST);
  }
  return lo[0] == hi[0] && lo[1] == hi[1];
}

llvm::Expected<float> Trainer::meanOverRanks(float v) {
  auto buf = reductionScratch();
  if (!buf)
    return buf.takeError();
  amprt_memcpy(ctx, *buf, &v, 4, AMPRT_HOST_TO_DEVICE);
  amprt_tensor t = {*buf, AMPRT_F32, 0, nullptr};
  if (amprt_all_reduce(ctx, &t, &t, AMPRT_REDUCE_AVG) != AMPRT_OK)
    return fail(Twine("data parallel: ") + amprt_last_error(ctx));
  amprt_memcpy(ctx, &v, *buf, 4, AMPRT_DEVICE_TO_HOST);
  return v;
}

llvm::Error Trainer::broadcastState(StringRef name, int32_t root,
                                    StringRef what) {
  amprt_tensor t = state[name]->tensor();
  if (amprt_broadcast(ctx, &t, root) != AMPRT_OK)
    return fail(what + ": broadcasting '" + name +
                "': " + amprt_last_error(ctx));
  return llvm::Error::success();
}

/// Whether state key `key` is a parameter's optimizer state
/// ("<sequence>:<parameter>", as bindOptimizerInputs names it).
static bool isOptimizerState(StringRef key, ArrayRef<std::string> trainable) {
  auto [seq, param] = key.split(':');
  return !seq.empty() && !param.empty() && llvm::is_contained(trainable, param);
}

/// The state buffers every rank must hold alike: all but the data inputs
/// (and, sharded, the optimizer state and the gradient buffers: each
/// rank's own, reduced for the parameters it owns), by name.
std::vector<std::pair<std::string, DeviceBuffer *>> Trainer::replicatedState() {
  std::vector<std::pair<std::string, DeviceBuffer *>> out;
  for (auto &e : state)
    if (e.getValue() && e.getValue()->bytes &&
        !llvm::is_contained(dataInputs, e.getKey()) &&
        !(sharded() && (isOptimizerState(e.getKey(), trainable) ||
                        e.getKey().ends_with("_grad.accumulation.buffer"))))
      out.push_back({e.getKey().str(), e.getValue().get()});
  llvm::sort(out,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  return out;
}

uint64_t Trainer::stateChecksum() {
  uint64_t h = 0;
  std::vector<uint8_t> host;
  for (auto &[name, b] : replicatedState()) {
    host.resize(b->bytes);
    amprt_memcpy(ctx, host.data(), b->data, b->bytes, AMPRT_DEVICE_TO_HOST);
    mix(h, name);
    mix(h, llvm::xxh3_64bits(host));
  }
  return h;
}

llvm::Error Trainer::agreeAcrossRanks() {
  if (worldSize <= 1)
    return llvm::Error::success();
  if (batchedInputs.empty())
    return fail("data parallel: no data input of the training graph has a "
                "symbolic batch dimension, so every rank would read the "
                "same samples; export the model with a dynamic batch "
                "(dim_param) on its data inputs");
  // The models: every call's kernel and its tensors' shapes and types.
  // Sharded, each rank's programs reduce, check and update its own
  // parameters: the training graph as imported instead.
  uint64_t models = trainGraphPrint;
  SmallVector<Program *, 2> programs;
  if (!sharded())
    programs = {trainProg.get(), optProg.get()};
  for (Program *p : programs)
    for (size_t i = 0; i < p->numCalls(); ++i) {
      const Program::CallInfo &c = p->callInfo(i);
      mix(models, c.kernel);
      for (const Program::CallTensor &t : c.tensors)
        if (t.tensor) {
          mix(models, uint64_t(t.tensor->dtype));
          for (int32_t d = 0; d < t.tensor->rank; ++d)
            mix(models, uint64_t(t.tensor->shape[d]));
        }
    }
  // The options that change what a step computes.
  uint64_t options = 0;
  // Doubles by their bits; the options that add collectives to a step too.
  std::string o;
  llvm::raw_string_ostream os(o);
  os << opts.steps << ' ' << opts.batch << ' ' << llvm::format("%a", opts.lr)
     << ' ' << opts.amp << ' ' << opts.ampMode << ' '
     << llvm::format("%a", opts.staticLossScale) << ' ' << opts.accumulate
     << ' ' << opts.seed << ' ' << opts.shuffle << ' ' << opts.dims << ' '
     << llvm::format("%a", opts.bucketMB) << ' ' << opts.device << ' '
     << llvm::join(opts.ampKeepFp32, ",") << ' ' << opts.ampRangesPath << ' '
     << opts.verifyReplicas << ' ' << opts.shardOptimizer << ' '
     << opts.injectNonFiniteStep << ' ' << opts.injectNonFiniteRank;
  mix(options, o);
  // Where each rank is: a resumed rank's counters come from its own file.
  uint64_t counters = 0;
  mix(counters, stepsDone);
  mix(counters, optimizerStep);
  mix(counters, skipped);
  // The data: its source, and a file's rows, shapes and first bytes.
  uint64_t data = 0;
  if (StringRef(opts.data).starts_with("synthetic:"))
    mix(data, opts.data);
  for (auto &[name, t] : dataset) {
    mix(data, name);
    for (int64_t d : t.shape)
      mix(data, uint64_t(d));
    mix(data, StringRef(t.data.data(), std::min<size_t>(t.data.size(), 4096)));
  }
  for (auto [what, value] :
       {std::pair{"the models (their lowered programs)", models},
        std::pair{"the training options", options}, std::pair{"the data", data},
        std::pair{"the step counters (checkpoints of different steps?)",
                  counters}}) {
    auto same = sameOnAllRanks(value);
    if (!same)
      return same.takeError();
    if (!*same)
      return fail(Twine("data parallel: the ranks disagree on ") + what +
                  ": start every rank with the same command line and files");
  }
  // Every rank starts from rank 0's parameters and state.
  for (auto &[name, b] : replicatedState())
    if (auto e = broadcastState(name, 0, "data parallel"))
      return e;
  auto same = sameOnAllRanks(stateChecksum());
  if (!same)
    return same.takeError();
  if (!*same)
    return fail("data parallel: the ranks' parameters differ after the "
                "broadcast from rank 0");
  return llvm::Error::success();
}

llvm::Error Trainer::broadcastBuffers() {
  if (worldSize <= 1)
    return llvm::Error::success();
  for (const std::string &name : stepWrittenParams) {
    auto it = state.find(name);
    if (it == state.end() || !it->second || !it->second->bytes)
      continue;
    if (auto e = broadcastState(name, 0, "data parallel"))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error
Trainer::shardParameters(ArrayRef<std::pair<std::string, uint64_t>> bytes) {
  optimized.clear();
  owner.clear();
  if (!sharded()) {
    for (const auto &[name, size] : bytes)
      optimized.push_back(name);
    return llvm::Error::success();
  }
  if (int64_t(bytes.size()) < worldSize)
    return fail("--shard-optimizer: " + Twine(bytes.size()) +
                " trainable parameters for " + Twine(worldSize) +
                " ranks: every rank must own one");
  // The largest first, each to the rank with the fewest bytes so far (the
  // lowest rank of equals): the same on every rank.
  std::vector<std::pair<std::string, uint64_t>> order(bytes.begin(),
                                                      bytes.end());
  llvm::stable_sort(
      order, [](const auto &a, const auto &b) { return a.second > b.second; });
  std::vector<uint64_t> load(worldSize, 0);
  for (const auto &[name, size] : order) {
    int32_t r =
        int32_t(std::min_element(load.begin(), load.end()) - load.begin());
    owner[name] = r;
    load[r] += size;
  }
  for (const auto &[name, size] : bytes)
    if (owner[name] == rank)
      optimized.push_back(name);
  return llvm::Error::success();
}

llvm::Error Trainer::planGather() {
  for (const std::string &p : trainable) {
    const DeviceBuffer &b = *state[p];
    auto it = llvm::find_if(gatherGroups,
                            [&](const auto &g) { return g->dtype == b.dtype; });
    if (it == gatherGroups.end()) {
      gatherGroups.push_back(std::make_unique<GatherGroup>());
      gatherGroups.back()->dtype = b.dtype;
      it = std::prev(gatherGroups.end());
    }
    (*it)->layout.push_back({p, 0});
  }
  for (auto &g : gatherGroups) {
    // Each parameter after its owner's earlier ones, in `trainable` order.
    std::vector<int64_t> load(worldSize, 0);
    size_t esize = amprt_dtype_size(g->dtype);
    for (auto &[p, at] : g->layout) {
      at = load[owner[p]];
      load[owner[p]] += int64_t(state[p]->bytes / esize);
    }
    g->part = *std::max_element(load.begin(), load.end());
    for (auto [b, elems] : {std::pair{&g->send, g->part},
                            std::pair{&g->recv, g->part * worldSize}}) {
      b->ctx = ctx;
      b->dtype = g->dtype;
      b->bytes = size_t(elems) * esize;
      b->shape = {elems};
      if (amprt_malloc(ctx, b->bytes, &b->data) != AMPRT_OK)
        return fail(Twine("device memory: ") + amprt_last_error(ctx));
      // The padding after a rank's parameters travels as zeros.
      amprt_memset(ctx, b->data, 0, b->bytes);
    }
  }
  return llvm::Error::success();
}

llvm::Error Trainer::gatherParameters() {
  for (auto &g : gatherGroups) {
    size_t esize = amprt_dtype_size(g->dtype);
    auto *send = static_cast<char *>(g->send.data),
         *recv = static_cast<char *>(g->recv.data);
    for (auto &[p, at] : g->layout)
      if (owner[p] == rank)
        amprt_memcpy(ctx, send + at * esize, state[p]->data, state[p]->bytes,
                     AMPRT_DEVICE_TO_DEVICE);
    amprt_tensor x = g->send.tensor(), y = g->recv.tensor();
    if (amprt_all_gather(ctx, &x, &y) != AMPRT_OK)
      return fail(Twine("--shard-optimizer: gathering the parameters: ") +
                  amprt_last_error(ctx));
    for (auto &[p, at] : g->layout)
      if (owner[p] != rank)
        amprt_memcpy(ctx, state[p]->data,
                     recv + (owner[p] * g->part + at) * esize, state[p]->bytes,
                     AMPRT_DEVICE_TO_DEVICE);
  }
  return llvm::Error::success();
}

std::string Trainer::shardedTraffic() {
  // The training program's collectives (the flag's all_reduce_many among
  // them), then the driver's all_gather.
  std::map<std::string, std::pair<int64_t, uint64_t>> calls;
  for (size_t i = 0; i < trainProg->numCalls(); ++i) {
    const Program::CallInfo &c = trainProg->callInfo(i);
    if (c.kernel != "reduce_scatter" && c.kernel != "all_reduce_many" &&
        c.kernel != "all_reduce")
      continue;
    auto &[n, bytes] = calls[c.kernel];
    ++n;
    // What a rank puts in: reduce_scatter's x, all_reduce_many's xs.
    for (const Program::CallTensor &t : c.tensors)
      if (t.tensor && (t.param == "x" || t.param == "xs"))
        bytes += uint64_t(std::accumulate(t.tensor->shape,
                                          t.tensor->shape + t.tensor->rank,
                                          int64_t(1), std::multiplies<>())) *
                 amprt_dtype_size(t.tensor->dtype);
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  for (auto &[kernel, nb] : calls)
    os << nb.first << " " << kernel << " of " << nb.second << " bytes, ";
  uint64_t gathered = 0;
  for (auto &g : gatherGroups)
    gathered += g->recv.bytes;
  os << gatherGroups.size() << " all_gather of " << gathered << " bytes";
  return out;
}

std::pair<uint64_t, uint64_t> Trainer::optimizerStateBytes() {
  uint64_t here = 0;
  for (auto &e : state)
    if (e.getValue() && isOptimizerState(e.getKey(), trainable))
      here += e.getValue()->bytes;
  // Every parameter has as many state tensors as this rank's have: the
  // unsharded total from the parameters' sizes.
  uint64_t mine = 0, all = 0;
  for (const std::string &p : trainable) {
    all += state[p]->bytes;
    if (llvm::is_contained(optimized, p))
      mine += state[p]->bytes;
  }
  return {here, mine ? uint64_t(double(here) / double(mine) * double(all)) : 0};
}
