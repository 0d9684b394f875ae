//===- BatchSearch.cpp - the largest batch a training step fits -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Each probe is a whole amp-run of one step at one batch under the memory
// limit (Trainer.cpp: import, AMP, lowering, the state, the data, one
// training and one optimizer run), so what fits is what ran, not an
// estimate. The next batch to probe comes from the step's memory as a
// line through the two largest batches that fit (a step's memory is the
// state plus about a per-sample cost: the line usually lands on the answer
// or one off), kept inside the bracket of the largest batch that fits and
// the smallest that does not, and bisects that bracket where the line
// leaves it.
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/BatchSearch.h"
#include "TrainerInternals.h"
#include "amp/Runtime/Runtime.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace amp::driver;

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

struct Probe {
  bool fits = false;
  uint64_t peak = 0;
  std::string why; ///< what was refused, when it does not fit
};

/// One training step at `batch` under `limit` bytes; a failure that no
/// refused allocation explains is returned as an error.
llvm::Expected<Probe> probe(const TrainOptions &base, int64_t batch,
                            uint64_t limit) {
  // Nothing is written: the search only runs.
  TrainOptions o = withoutOutputs(base);
  o.batch = batch;
  o.steps = 1;
  o.accumulate = 1;
  o.checkpointEvery = 0;
  o.logTime = false;
  o.injectNonFiniteStep = -1;
  o.memoryLimit = limit;
  o.requireBatchDim = true;
  std::string text;
  llvm::raw_string_ostream os(text);
  MemoryUse use;
  llvm::Error e = train(o, os, &use);
  if (!e)
    return Probe{true, use.peak, ""};
  std::string msg = llvm::toString(std::move(e));
  if (use.refused)
    return Probe{false, use.peak, msg};
  return fail("batch " + llvm::Twine(batch) + ": " + msg);
}

} // namespace

std::optional<uint64_t> amp::driver::parseByteSize(llvm::StringRef text) {
  text = text.trim();
  size_t end = 0;
  while (end < text.size() && (llvm::isDigit(text[end]) || text[end] == '.'))
    ++end;
  llvm::StringRef num = text.take_front(end),
                  unit = text.drop_front(end).trim().lower();
  double v;
  if (num.empty() || num.getAsDouble(v) || !std::isfinite(v) || v < 0)
    return std::nullopt;
  static const std::pair<const char *, double> units[] = {
      {"", 1},
      {"b", 1},
      {"k", 1024.0},
      {"kib", 1024.0},
      {"kb", 1e3},
      {"m", 1048576.0},
      {"mib", 1048576.0},
      {"mb", 1e6},
      {"g", 1073741824.0},
      {"gib", 1073741824.0},
      {"gb", 1e9},
      {"t", 1099511627776.0},
      {"tib", 1099511627776.0},
      {"tb", 1e12}};
  std::string u = unit.str();
  for (auto [name, scale] : units)
    if (u == name) {
      double bytes = std::floor(v * scale);
      if (bytes < 1 || bytes > 9.0e18)
        return std::nullopt;
      return uint64_t(bytes);
    }
  return std::nullopt;
}

llvm::Expected<BatchSearchResult>
amp::driver::findMaxBatch(const TrainOptions &options, uint64_t limit,
                          llvm::raw_ostream &status) {
  BatchSearchResult r;
  if (auto world = detail::launcherWorld(); world && world->first > 1)
    return fail("--max-batch searches on one process; it was started as " +
                llvm::Twine(world->first) +
                " ranks (the batch per rank of data-parallel training is "
                "the one process's)");
  if (!limit) {
    amprt_context *ctx = nullptr;
    if (amprt_context_create(options.device.c_str(), &ctx) != AMPRT_OK)
      return fail("--device " + options.device + ": " +
                  amprt_last_error(nullptr));
    amprt_memory_stats m;
    amprt_memory_stats_get(ctx, &m);
    amprt_context_destroy(ctx);
    if (!m.device_free)
      return fail("--max-batch: the device does not say how much memory is "
                  "free; give the limit (--max-batch=<bytes>)");
    limit = m.device_free;
    if (options.progress)
      status << "amp-run: --max-batch: within the device's free memory, "
             << limit << " bytes (" << formatMiB(limit) << ")\n";
  }
  r.limit = limit;
  // lo fits (r.batch, its peak r.peak), hi does not (0: none known); the
  // batch that fitted before lo, and its peak (0: none).
  int64_t lo = 0, hi = 0, before = 0;
  uint64_t beforePeak = 0;
  constexpr int64_t kMaxBatch = int64_t(1) << 40;
  constexpr unsigned kMaxProbes = 48;
  auto guess = [&]() -> int64_t {
    int64_t g = 0;
    if (before) {
      double slope =
          (double(r.peak) - double(beforePeak)) / double(lo - before);
      if (slope > 0) {
        double line =
            double(lo) + std::floor((double(limit) - double(r.peak)) / slope);
        g = int64_t(std::clamp(line, 1.0, double(kMaxBatch)));
      }
    }
    if (!g)
      g = hi   ? lo + (hi - lo) / 2
          : lo ? 2 * lo
               : std::max<int64_t>(options.batch, 1);
    if (g <= lo)
      g = lo + 1;
    if (hi && g >= hi)
      g = lo + (hi - lo) / 2;
    return std::min(g, kMaxBatch);
  };
  while (!hi || hi - lo > 1) {
    if (r.probes == kMaxProbes)
      return fail("--max-batch: no answer after " + llvm::Twine(kMaxProbes) +
                  " probed batches (batch " + llvm::Twine(lo) + " fits, " +
                  (hi ? llvm::Twine(hi) : llvm::Twine("none")) +
                  " does not): the step's memory does not grow with its "
                  "batch as a search needs");
    int64_t b = guess();
    if (b == lo) // kMaxBatch fits
      break;
    auto p = probe(options, b, limit);
    ++r.probes;
    if (!p)
      return p.takeError();
    if (options.progress) {
      status << "amp-run: --max-batch: batch " << b << ": ";
      if (p->fits)
        status << "fits, peak " << p->peak << " bytes (" << formatMiB(p->peak)
               << ")\n";
      else
        status << "does not fit (" << p->why << ")\n";
      status.flush();
    }
    if (p->fits) {
      before = lo;
      beforePeak = r.peak;
      lo = r.batch = b;
      r.peak = p->peak;
    } else {
      hi = b;
    }
  }
  r.firstMiss = hi;
  return r;
}
