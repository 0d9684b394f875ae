//===- TrainerData.cpp - the amp-run trainer's data -----------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The data the training graph is fed: a folder of <input>.npy / <input>.pb
// files, read once and checked against the data inputs, then a batch per
// step from a permutation of the rows seeded by (seed, epoch) (a pure
// function of the step, so a resumed run sees the same batches), narrowed
// inputs rounded as the graph's cast rounds; or synthetic batches drawn on
// the device from a splitmix stream (--data synthetic:<seed>).
//
//===----------------------------------------------------------------------===//

#include "TrainerInternals.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/LoweredForm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::driver::detail;
using namespace amp::exec;

llvm::Error Trainer::loadDataset() {
  StringRef src = opts.data;
  if (!src.starts_with("synthetic:")) {
    for (const std::string &name : dataInputs) {
      if (!isPlainFileName(name))
        return fail("data: graph input '" + name + "' cannot name a file in " +
                    src +
                    " (a path separator or a dot name); use "
                    "--data synthetic:<seed>");
      auto found = readNamedTensor(src, name);
      if (!found)
        return found.takeError();
      if (!*found)
        return fail("data: no " + name + ".npy or " + name + ".pb in " + src +
                    " for graph input '" + name + "'");
      HostTensor t = std::move(**found);
      const Port &p = trainProg->inputs()[trainProg->findInput(name)];
      if (p.shape.empty())
        return fail("data: graph input '" + name +
                    "' is a scalar, which cannot be fed samples along axis "
                    "0; give it with --weights, or as a constant in the "
                    "graph");
      if (t.dtype != p.fedAs)
        return fail(Twine("data for '") + name + "' is " +
                    amprt_dtype_name(t.dtype) + ", the graph wants " +
                    amprt_dtype_name(p.fedAs));
      if (t.shape.empty() ||
          std::vector<int64_t>(t.shape.begin() + 1, t.shape.end()) !=
              std::vector<int64_t>(p.shape.begin() + 1, p.shape.end())) {
        ArrayRef<int64_t> ts(t.shape), ps(p.shape);
        return fail("data for '" + name + "' has shape " + shapeString(ts) +
                    (ts.empty()
                         ? std::string(": a scalar, not samples")
                         : ": samples of " + shapeString(ts.drop_front())) +
                    ", the graph input wants samples of " +
                    shapeString(ps.drop_front()) + " (samples along axis 0)");
      }
      if (datasetRows && datasetRows != t.shape[0])
        return fail("data files have different numbers of samples: " +
                    Twine(t.shape[0]) + " for '" + name + "', " +
                    Twine(datasetRows) + " for '" + dataset.begin()->first +
                    "'");
      datasetRows = t.shape[0];
      int64_t ranks = batchedInputs.contains(name) ? worldSize : 1;
      int64_t global = p.shape.empty() ? 1 : p.shape[0] * ranks;
      if (datasetRows < global)
        return fail("data has " + Twine(datasetRows) +
                    " samples, fewer than one batch of " + Twine(global) +
                    (ranks > 1 ? " (" + Twine(ranks) + " ranks of " +
                                     Twine(p.shape[0]) + ")"
                               : Twine("")));
      dataset[name] = std::move(t);
    }
  }
  return llvm::Error::success();
}

/// The class count of an integer label input: dim 1 of the scores of the
/// loss kernel that reads it (16 when no loss reads it).
int64_t Trainer::numClasses(StringRef input) {
  int64_t classes = 16;
  trainLowered->walk([&](amprt::CallOp call) {
    if (call.getKernel() != "softmax_cross_entropy_loss")
      return;
    auto operands = call.getTensors();
    auto arg = dyn_cast<BlockArgument>(operands[1]);
    auto func = call->getParentOfType<func::FuncOp>();
    if (!arg || !func)
      return;
    auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
    auto scores = cast<MemRefType>(operands[0].getType());
    if (n && n.getValue() == input && scores.getRank() >= 2)
      classes = scores.getDimSize(1);
  });
  return classes;
}

llvm::Error Trainer::drawSyntheticBatch() {
  StringRef src = opts.data;
  if (!src.consume_front("synthetic:"))
    return llvm::Error::success();
  uint64_t seed = 0;
  src.getAsInteger(10, seed);
  for (auto [k, name] : llvm::enumerate(dataInputs)) {
    DeviceBuffer &b = *state[name];
    // Data parallel: a batched input's global batch is the ranks' batches
    // in rank order; this rank draws its part (the samples from rank *
    // batch), the others the whole input.
    bool sharded = worldSize > 1 && batchedInputs.contains(name);
    int64_t part = sharded ? rank : 0;
    // Step t's stream starts at s + 7919 t: the runtime adds 7919 times
    // its random offset, which is the step's.
    uint64_t s = seed * 0x100000001b3ull + k;
    // Element i of the global batch is drawn from s + i * golden: this
    // rank's first element is element part * numel of it.
    int64_t numel = int64_t(b.bytes / amprt_dtype_size(b.dtype));
    s += uint64_t(part) * uint64_t(numel) * 0x9e3779b97f4a7c15ull;
    // A narrowed input is drawn in its 16-bit type: random_fill rounds
    // the f32 draw once more, the values the graph's cast made.
    if (b.fedAs != AMPRT_F32 && b.fedAs != AMPRT_I64 && b.fedAs != AMPRT_I32 &&
        b.fedAs != AMPRT_BOOL)
      return fail("synthetic data: unsupported dtype for '" + name + "'");
    int64_t classes = 0;
    if (b.dtype == AMPRT_I64 || b.dtype == AMPRT_I32) {
      auto it = classCounts.find(name);
      if (it == classCounts.end())
        it = classCounts
                 .try_emplace(name, std::max<int64_t>(numClasses(name), 1))
                 .first;
      classes = it->second;
    }
    // Element i is the (i+1)-th draw of the splitmix stream from the
    // step's seed, drawn where the batch lives (on the device for cuda):
    // no host work and no copy per step, the same values on every backend.
    amprt_tensor t = b.tensor();
    if (amprt_random_fill(ctx, &t, s, 7919, classes) != AMPRT_OK)
      return fail(Twine("synthetic data for '") + name +
                  "': " + amprt_last_error(ctx));
  }
  return llvm::Error::success();
}

llvm::Error Trainer::fillBatch(int64_t step) {
  bool synthetic = StringRef(opts.data).starts_with("synthetic:");
  for (auto [k, name] : llvm::enumerate(dataInputs)) {
    DeviceBuffer &b = *state[name];
    int64_t batch = b.shape.empty() ? 1 : b.shape[0];
    bool sharded = worldSize > 1 && batchedInputs.contains(name);
    int64_t ranks = sharded ? worldSize : 1, part = sharded ? rank : 0;
    if (!synthetic) {
      // The staging buffer of this turn, once its last copy is done: the
      // device may still run the previous step while this one is gathered.
      Staging &stage = staging[name];
      int turn = stage.next;
      stage.next = 1 - turn;
      if (stage.fence[turn] &&
          amprt_fence_wait(ctx, stage.fence[turn]) != AMPRT_OK)
        return stepFailure(step > 0 ? step - 1 : 0);
      if (!stage.buf[turn] &&
          amprt_host_alloc(ctx, b.bytes, &stage.buf[turn]) != AMPRT_OK)
        return fail(Twine("host memory: ") + amprt_last_error(ctx));
      char *host = static_cast<char *>(stage.buf[turn]);
      // Epoch e uses a permutation of the rows seeded by (seed, e); the
      // batch of a step is a pure function of the step, so a resumed run
      // sees the same batches.
      int64_t global = batch * ranks;
      int64_t perEpoch = datasetRows / global;
      int64_t epoch = step / perEpoch,
              first = (step % perEpoch) * global + part * batch;
      std::vector<int64_t> perm(datasetRows);
      for (int64_t i = 0; i < datasetRows; ++i)
        perm[i] = i;
      if (opts.shuffle) {
        uint64_t s = opts.seed * 0x9e3779b97f4a7c15ull + uint64_t(epoch);
        for (int64_t i = datasetRows - 1; i > 0; --i)
          std::swap(perm[i], perm[splitmix(s) % uint64_t(i + 1)]);
      }
      const HostTensor &t = dataset[name];
      bool narrowed = b.fedAs != b.dtype;
      // The samples' rows, gathered in the data's dtype.
      size_t row = b.bytes / size_t(batch) / amprt_dtype_size(b.dtype) *
                   amprt_dtype_size(b.fedAs);
      std::vector<char> rows(narrowed ? row * size_t(batch) : 0);
      char *gathered = narrowed ? rows.data() : host;
      for (int64_t r = 0; r < batch; ++r)
        std::memcpy(&gathered[r * row], &t.data[perm[first + r] * row], row);
      if (narrowed) {
        // Rounded as the graph's cast rounds (the runtime's own cast).
        if (!hostCtx && amprt_context_create("cpu", &hostCtx) != AMPRT_OK)
          return fail(Twine("the CPU backend: ") + amprt_last_error(nullptr));
        int64_t n = int64_t(b.bytes / amprt_dtype_size(b.dtype));
        amprt_tensor from = {gathered, b.fedAs, 1, &n};
        amprt_tensor to = {host, b.dtype, 1, &n};
        if (amprt_cast(hostCtx, &from, &to) != AMPRT_OK)
          return fail(Twine("data for '") + name +
                      "': " + amprt_last_error(hostCtx));
      }
      if (amprt_memcpy_async(ctx, b.data, host, b.bytes,
                             AMPRT_HOST_TO_DEVICE) != AMPRT_OK ||
          amprt_fence_record(ctx, &stage.fence[turn]) != AMPRT_OK)
        return fail(Twine("data for '") + name + "': " + amprt_last_error(ctx));
    }
  }
  return llvm::Error::success();
}

llvm::Error Trainer::injectNonFinite() {
  if (opts.injectNonFiniteRank >= 0 && opts.injectNonFiniteRank != rank)
    return llvm::Error::success();
  for (const std::string &name : dataInputs) {
    DeviceBuffer &b = *state[name];
    if (b.fedAs != AMPRT_F32 || !b.bytes)
      continue;
    float nan = NAN;
    uint16_t nan16 = b.dtype == AMPRT_F16 ? 0x7e00 : 0x7fc0; // f16, bf16
    if (amprt_memcpy(ctx, b.data,
                     b.dtype == AMPRT_F32 ? static_cast<void *>(&nan) : &nan16,
                     amprt_dtype_size(b.dtype),
                     AMPRT_HOST_TO_DEVICE) != AMPRT_OK)
      return stepFailure(stepsDone);
  }
  return llvm::Error::success();
}
