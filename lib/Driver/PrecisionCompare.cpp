//===- PrecisionCompare.cpp - every value of AMP against fp32 -------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/PrecisionCompare.h"
#include "amp/Dialect/Train/Transforms/AMPDot.h"
#include "amp/Dialect/Train/Transforms/LossScalingState.h"
#include "amp/Driver/Lowering.h"
#include "amp/Driver/RangeCollector.h"
#include "amp/Driver/TensorRange.h"
#include "amp/Runtime/Kernels.h"
#include "amp/Runtime/Math/Compare.h"
#include "amp/Target/ONNX/ImportONNX.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

using namespace amp;
using namespace amp::driver;

namespace {

using amprt::CompareStat;
constexpr int kStats = amprt::kCompareStats;

/// The comparison's own runtime context on the runs' device: it owns the
/// fp32 run's values, which outlive that run's context, and the buffers
/// of the reruns. Kernels of either run's context read and write them
/// (host memory on the CPU, managed memory on CUDA).
class Memory {
public:
  ~Memory() {
    for (void *p : blocks)
      amprt_free(ctx, p);
    if (ctx)
      amprt_context_destroy(ctx);
  }
  llvm::Error open(const std::string &device) {
    if (amprt_context_create(device.c_str(), &ctx) != AMPRT_OK)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "precision comparison: no %s context: %s",
                                     device.c_str(), amprt_last_error(nullptr));
    return llvm::Error::success();
  }
  /// A buffer of `bytes`: one recycled at that size, else a new one.
  llvm::Expected<void *> alloc(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = spare.find(bytes);
    if (it != spare.end()) {
      void *p = it->second;
      spare.erase(it);
      return p;
    }
    void *p = nullptr;
    if (amprt_malloc(ctx, bytes, &p) != AMPRT_OK)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "precision comparison: %zu bytes not allocated: %s", bytes,
          amprt_last_error(ctx));
    blocks.push_back(p);
    return p;
  }
  /// `p` (of `bytes`) is free for another alloc of that size: a program's
  /// values for a later step's, which have the same sizes.
  void recycle(void *p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    spare.emplace(bytes, p);
  }
  /// `bytes` from the host into `dst`, with the lock: the other run's
  /// thread may be allocating on the same context.
  llvm::Error upload(void *dst, const void *src, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex);
    if (amprt_memcpy(ctx, dst, src, bytes, AMPRT_HOST_TO_DEVICE) != AMPRT_OK)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "precision comparison: a copy to the "
                                     "device: %s",
                                     amprt_last_error(ctx));
    return llvm::Error::success();
  }
  void release(void *p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = llvm::find(blocks, p);
    if (it != blocks.end()) {
      amprt_free(ctx, *it);
      blocks.erase(it);
    }
  }
  amprt_context *ctx = nullptr;

private:
  std::mutex mutex;
  std::vector<void *> blocks;
  std::multimap<size_t, void *> spare;
};

/// A value of the fp32 run, kept in the comparison's memory as f32, and
/// its largest finite magnitude (f32 [1] beside it).
struct RefValue {
  std::vector<int64_t> shape;
  amprt_tensor t{}, max{};
  /// Its buffer in the comparison's memory and the buffer's bytes: t and
  /// max together, or max alone when t is read in place (the fp32 run's
  /// arena, lowered with keep-values).
  void *owned = nullptr;
  size_t bytes = 0;
  int64_t size() const { return numElements(t); }
};
using Values = llvm::StringMap<RefValue>;

/// Whether the kernels compare `t`: f32, f16 or bf16.
bool comparable(const amprt_tensor *t) {
  return t && (t->dtype == AMPRT_F32 || t->dtype == AMPRT_F16 ||
               t->dtype == AMPRT_BF16);
}

/// The error of a value against the fp32 run's: normwise, ||amp - fp32|| /
/// ||fp32|| over its finite elements (what the tolerance judges); the
/// largest and the mean elementwise relative error over its significant
/// elements (|fp32| at least 1e-3 of its largest); nonzero fp32 elements
/// that became 0; finite ones that became inf or NaN. From compare_stats
/// (Math/Compare.h): of the value divided by the loss scale when it carries
/// it.
struct Error {
  double maxRel = 0, sumRel = 0, sqDiff = 0, sqRef = 0;
  int64_t counted = 0, nonzero = 0, underflow = 0, overflow = 0;
  void add(const double *st) {
    maxRel = std::max(maxRel, st[amprt::kMaxRel]);
    sumRel += st[amprt::kSumRel];
    sqDiff += st[amprt::kSqDiff];
    sqRef += st[amprt::kSqRef];
    counted += int64_t(st[amprt::kCounted]);
    nonzero += int64_t(st[amprt::kNonzero]);
    underflow += int64_t(st[amprt::kUnderflow]);
    overflow += int64_t(st[amprt::kOverflow]);
  }
  void merge(const Error &o) {
    maxRel = std::max(maxRel, o.maxRel);
    sumRel += o.sumRel;
    sqDiff += o.sqDiff;
    sqRef += o.sqRef;
    counted += o.counted;
    nonzero += o.nonzero;
    underflow += o.underflow;
    overflow += o.overflow;
  }
  double normwise() const {
    return sqRef > 0 ? std::sqrt(sqDiff / sqRef) : (sqDiff > 0 ? 1.0 : 0.0);
  }
  /// What the tolerance judges: the normwise error, inf on overflow.
  double worst() const {
    return overflow ? std::numeric_limits<double>::infinity() : normwise();
  }
};

struct Row {
  std::string value, node, opType;
  bool optimizer = false;
  /// Where the value is first written (run order over both programs).
  int64_t order = 0;
  Error total;
  /// The error the node's call adds on the fp32 run's inputs (has: measured).
  Error added;
  bool hasAdded = false;
};

/// A value of the AMP run by the name the fp32 run gives it: the same name,
/// or the name the AMP pass derived it from (`<x>_fp16`, `<x>_bf16`).
const RefValue *refOf(const Values &ref, llvm::StringRef name) {
  auto it = ref.find(name);
  if (it != ref.end())
    return &it->second;
  for (llvm::StringRef suffix : {"_fp16", "_bf16"})
    if (name.ends_with(suffix)) {
      it = ref.find(name.drop_back(suffix.size()));
      if (it != ref.end())
        return &it->second;
    }
  return nullptr;
}

/// The fp32 run's value of the named tensor `t`, when the kernels compare
/// its dtype and it has the same element count.
const RefValue *sameSizeRef(const Values &ref,
                            const exec::Program::CallTensor &t) {
  if (t.value.empty() || !comparable(t.tensor))
    return nullptr;
  const RefValue *r = refOf(ref, t.value);
  return r && r->size() == numElements(*t.tensor) ? r : nullptr;
}

/// The bytes of record()'s f32 copy of value `t` (padded to 64).
size_t copyBytes(const amprt_tensor &t) {
  return (size_t(numElements(t)) * 4 + 63) / 64 * 64;
}

/// The bytes record() keeps of `prog`'s values when it copies them all
/// (each named value the kernels compare as f32, with its largest).
size_t keptBytes(exec::Program &prog) {
  llvm::StringSet<> seen;
  size_t bytes = 0;
  for (size_t i = 0; i < prog.numCalls(); ++i)
    for (const exec::Program::CallTensor &t : prog.callInfo(i).tensors)
      if (!t.value.empty() && comparable(t.tensor) &&
          seen.insert(t.value).second)
        bytes += copyBytes(*t.tensor) + 4;
  return bytes;
}

/// Whether call `info` is worth and safe to run twice: it computes in a
/// 16-bit type somewhere (a call all in f32 computes what the fp32 run's
/// does from the same inputs: it adds nothing), it reads and writes no
/// tensor in place, and it draws no random numbers (a second draw would
/// move the stream).
bool rerunnable(const exec::Program::CallInfo &info) {
  llvm::StringRef k = info.kernel;
  if (k.contains("random") || k.contains("dropout") || k.contains("bernoulli"))
    return false;
  bool lowPrecision = false;
  for (const exec::Program::CallTensor &t : info.tensors) {
    if (t.read && t.written)
      return false;
    lowPrecision |= t.tensor && (t.tensor->dtype == AMPRT_F16 ||
                                 t.tensor->dtype == AMPRT_BF16);
  }
  return lowPrecision;
}

/// Which of `prog`'s writes of named values a run needs to measure, per
/// call and tensor: a write that another write of the same value (later in
/// the program, or a later tensor of the same call) replaces is not, the
/// value being compared as its last write leaves it, unless a call that
/// `readsFactor` reads the value, or anything at its address (a view of
/// it), in between: such a call uses what the comparison of the earlier
/// write says of it (Comparison::compare's reruns). The fp32 run keeps
/// each value's last write only (a null readsFactor).
std::vector<llvm::SmallVector<bool, 4>>
measuredWrites(exec::Program &prog,
               bool (*readsFactor)(const exec::Program::CallInfo &)) {
  size_t n = prog.numCalls();
  std::vector<llvm::SmallVector<bool, 4>> measured(n);
  // What each call that reads factors reads by address: the value last
  // written where it reads (a view of it, whatever its later writes'
  // addresses), as the comparison finds it.
  std::vector<llvm::SmallVector<llvm::StringRef, 2>> viewed(n);
  if (readsFactor) {
    llvm::DenseMap<const void *, llvm::StringRef> lastAt;
    for (size_t i = 0; i < n; ++i) {
      const exec::Program::CallInfo &info = prog.callInfo(i);
      if (readsFactor(info))
        for (const exec::Program::CallTensor &t : info.tensors)
          if (t.read && t.tensor)
            if (auto it = lastAt.find(t.tensor->data); it != lastAt.end())
              viewed[i].push_back(it->second);
      for (const exec::Program::CallTensor &t : info.tensors)
        if (t.written && t.tensor) {
          if (t.value.empty())
            lastAt.erase(t.tensor->data);
          else
            lastAt[t.tensor->data] = t.value;
        }
    }
  }
  // Values written later with no reader of their factor since.
  llvm::StringSet<> replaced;
  for (size_t i = n; i-- > 0;) {
    const exec::Program::CallInfo &info = prog.callInfo(i);
    measured[i].assign(info.tensors.size(), false);
    for (size_t k = info.tensors.size(); k-- > 0;) {
      const exec::Program::CallTensor &t = info.tensors[k];
      if (!t.written || t.value.empty() || !t.tensor)
        continue;
      measured[i][k] = !replaced.contains(t.value);
      replaced.insert(t.value);
    }
    if (!readsFactor || !readsFactor(info))
      continue;
    for (const exec::Program::CallTensor &t : info.tensors)
      if (t.read)
        replaced.erase(t.value);
    for (llvm::StringRef name : viewed[i])
      replaced.erase(name);
  }
  return measured;
}

llvm::Error kernelError(amprt_context *ctx, const char *what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "precision comparison: %s: %s", what,
                                 amprt_last_error(ctx));
}

/// Statistics slots (f64 [kStats] each) in the comparison's memory: the
/// kernels of one call write them, one copy brings them to the host.
class Slots {
public:
  explicit Slots(Memory &mem) : mem(mem) {}
  /// Room for `n` slots; between calls (nothing written and unread).
  llvm::Error reserve(size_t n) {
    if (n <= capacity)
      return llvm::Error::success();
    mem.release(base);
    capacity = std::max<size_t>(2 * capacity, std::max<size_t>(n, 16));
    auto p = mem.alloc(capacity * kStats * sizeof(double));
    if (!p)
      return p.takeError();
    base = *p;
    tensors.assign(capacity, amprt_tensor{});
    return llvm::Error::success();
  }
  /// Slot `i` of the call (i < the reserved count), as a tensor.
  const amprt_tensor *at(size_t i) {
    assert(i < capacity && "slot not reserved");
    amprt_tensor &t = tensors[i];
    t.data = static_cast<double *>(base) + i * kStats;
    t.dtype = AMPRT_F64;
    t.rank = 1;
    t.shape = &kShape;
    used = std::max(used, i + 1);
    return &t;
  }
  /// The slots written since the last read, on the host (waits for `ctx`;
  /// an error of a kernel that wrote them is reported here).
  llvm::Expected<const double *> read(amprt_context *ctx) {
    host.resize(used * kStats);
    size_t n = used;
    used = 0;
    if (n && amprt_memcpy(ctx, host.data(), base, n * kStats * sizeof(double),
                          AMPRT_DEVICE_TO_HOST) != AMPRT_OK)
      return kernelError(ctx, "reading the statistics");
    return host.data();
  }

private:
  static constexpr int64_t kShape = kStats;
  Memory &mem;
  void *base = nullptr;
  size_t capacity = 0, used = 0;
  std::vector<amprt_tensor> tensors;
  std::vector<double> host;
};

class Comparison {
public:
  explicit Comparison(Memory &mem) : mem(mem), slots(mem) {}

  llvm::StringMap<Row> rows;
  /// The AMP run's static loss scale (1: none, or the dynamic scaler's).
  double staticScale = 1;
  /// Wall seconds per step (by step number: a resumed run starts past 0):
  /// the fp32 run's programs with the keeping of their values (record), and
  /// the AMP run's with the comparisons and the reruns (compare); each
  /// program's run ends with its results back.
  std::map<int64_t, double> recordSeconds, compareSeconds;
  /// When each step's training program reached the AMP run: a step's wall
  /// time is the time to the next one's (both runs, whatever each does
  /// between its programs, and their handing over).
  std::map<int64_t, std::chrono::steady_clock::time_point> stepStarts;
  /// Whether the fp32 run records a step while the AMP run compares the
  /// one before (both programs' values copied: runCompared).
  bool overlapped = false;
  static void addTime(std::map<int64_t, double> &v, int64_t step,
                      std::chrono::steady_clock::time_point t0) {
    v[step] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  }

  /// The fp32 run's program, call by call: every named value it reads or
  /// writes kept into `out`; all of them copied when `copy` (else an f32
  /// one is read in place).
  llvm::Error record(exec::Program &prog, amprt_context *ctx, bool copy,
                     Values &out) {
    // Into the comparison's memory, widened to f32 (or, for an f32 value
    // read in place, only referred to), with its largest finite magnitude:
    // kernels of the run's context, nothing read back.
    auto keep = [&](const exec::Program::CallTensor &ct) -> llvm::Error {
      const amprt_tensor &t = *ct.tensor;
      RefValue &r = out[ct.value];
      // Without `copy`, the fp32 program's values stay where they are
      // until the AMP run has compared them: its temporaries in its arena
      // (runCompared lowers it with keep-values), its inputs in the
      // trainer's buffers (nothing writes them while the fp32 run waits
      // for the comparison). An f32 one is read there, not copied; its
      // last content is the value compared, as a copy after each write
      // would be.
      bool inPlace = t.dtype == AMPRT_F32 && !copy;
      if (!r.owned) {
        size_t bytes = inPlace ? 0 : copyBytes(t);
        auto p = mem.alloc(bytes + 4);
        if (!p)
          return p.takeError();
        r.owned = *p;
        r.bytes = bytes + 4;
        r.shape.assign(t.shape, t.shape + t.rank);
        r.t = {*p, AMPRT_F32, t.rank, r.shape.data()};
        r.max = {static_cast<char *>(*p) + bytes, AMPRT_F32, 1, &kOne};
      }
      if (inPlace)
        r.t.data = t.data;
      else if (t.dtype == AMPRT_F32
                   ? amprt_memcpy(ctx, r.t.data, t.data,
                                  size_t(numElements(t)) * 4,
                                  AMPRT_DEVICE_TO_DEVICE) != AMPRT_OK
                   : amprt_cast(ctx, &t, &r.t) != AMPRT_OK)
        return kernelError(ctx, "keeping a value");
      if (amprt_abs_max_finite(ctx, &r.t, &r.max) != AMPRT_OK)
        return kernelError(ctx, "keeping a value");
      return llvm::Error::success();
    };
    // A value's last write is what the AMP run compares.
    auto measured = measuredWrites(prog, nullptr);
    llvm::StringSet<> writes;
    for (size_t i = 0; i < prog.numCalls(); ++i)
      for (const exec::Program::CallTensor &t : prog.callInfo(i).tensors)
        if (t.written && !t.value.empty())
          writes.insert(t.value);
    for (size_t i = 0; i < prog.numCalls(); ++i) {
      const exec::Program::CallInfo &info = prog.callInfo(i);
      // A named value no call writes (a reshape the plan made a view of
      // another, a graph input): as the call reads it, so that the AMP
      // run's rerun can read it too.
      for (const exec::Program::CallTensor &t : info.tensors)
        if (t.read && !t.written && !t.value.empty() && comparable(t.tensor) &&
            !writes.contains(t.value) && !out.count(t.value))
          if (auto e = keep(t))
            return e;
      if (auto e = prog.runCall(i))
        return e;
      for (auto [k, t] : llvm::enumerate(info.tensors))
        if (t.written && !t.value.empty() && comparable(t.tensor) &&
            measured[i][k])
          if (auto e = keep(t))
            return e;
    }
    // The AMP run reads these on its own context: wait for this one's
    // kernels (and hear of their errors).
    if (amprt_synchronize(ctx) != AMPRT_OK)
      return kernelError(ctx, "keeping the values");
    return llvm::Error::success();
  }

  /// The AMP run's step, call by call: each named value a call writes is
  /// compared with the fp32 run's (compare_stats into a slot), and a call
  /// that computes in 16 bits runs again on the fp32 run's inputs. All of
  /// it is queued on the run's context; the step's slots come back in one
  /// copy at its end.
  llvm::Error compare(exec::Program &prog, amprt_context *ctx,
                      const Values &fp32, bool optimizer,
                      const llvm::StringMap<std::string> &opTypes) {
    // The step's loss scale: the backward's gradients are that much larger.
    // The dynamic scaler's is an input; a static one a graph constant.
    double scale = optimizer ? 1.0 : staticScale;
    if (int in = prog.findInput(train::kLossScaleName); in >= 0 && !optimizer) {
      float s = 1;
      if (amprt_memcpy(ctx, &s, prog.inputData(in), 4, AMPRT_DEVICE_TO_HOST) !=
          AMPRT_OK)
        return kernelError(ctx, "reading the loss scale");
      scale = s;
    }
    if (!std::isfinite(scale) || scale == 0)
      scale = 1;
    for (auto &e : substitutes)
      e.second.valid = false;
    // The step's comparisons, in order: (row, whether it measures the
    // error the node adds, else the error its value carries), one slot
    // each. Every tensor of a call may take three (its write, a view's
    // factor, the rerun's write).
    struct Event {
      Row *row;
      bool added;
    };
    std::vector<Event> events;
    size_t bound = 0;
    for (size_t i = 0; i < prog.numCalls(); ++i)
      bound += 3 * prog.callInfo(i).tensors.size();
    if (auto e = slots.reserve(bound))
      return e;
    // The named values this program has written, or whose factor was read
    // from a view of them (the loss scale changes from step to step).
    llvm::StringSet<> written;
    // The value each written address last received, with its element
    // count: what a view at that address (a reshape the plan made a view
    // of its input, alive only while its input is) holds. A call's writes
    // enter it after its own rerun has looked its inputs up (an output may
    // lie over a dying input); a write without an fp32 value clears it.
    llvm::DenseMap<const void *, std::pair<llvm::StringRef, int64_t>> lastWrite;
    std::vector<std::pair<const void *, std::pair<llvm::StringRef, int64_t>>>
        callWrites;
    // compare_stats of `t` against `r` into the next slot; the value's
    // factor (the loss scale if it carries it, else 1) into its own.
    auto stats = [&](const amprt_tensor *t, const RefValue &r,
                     llvm::StringRef value, Row *row,
                     bool added) -> llvm::Error {
      const amprt_tensor *slot = slots.at(events.size());
      events.push_back({row, added});
      auto f = factorOf(value, optimizer);
      if (!f)
        return f.takeError();
      // The value's factor changes: so do its substitutes.
      invalidateSubstitutes(value, optimizer);
      amprt_tensor x = *t;
      if (amprt_compare_stats(ctx, &x, &r.t, &r.max, float(scale), slot, *f) !=
          AMPRT_OK)
        return kernelError(ctx, "comparing a value");
      return llvm::Error::success();
    };
    // A write that a later one replaces is not compared (the comparison
    // keeps a value's last), unless a rerun reads it in between.
    auto measured = measuredWrites(prog, rerunnable);
    // The last call whose rerun reads each (value, dtype): a write of it
    // before then makes that rerun's input while comparing.
    std::map<std::pair<std::string, int32_t>, size_t> lastReader;
    if (substituteBudget)
      for (size_t i = 0; i < prog.numCalls(); ++i)
        if (const exec::Program::CallInfo &info = prog.callInfo(i);
            rerunnable(info))
          for (const exec::Program::CallTensor &t : info.tensors)
            if (t.read && !t.written && t.tensor && !t.value.empty())
              lastReader[{t.value, t.tensor->dtype}] = i;
    // Runs call i once more on the fp32 values of its inputs, where it
    // computes in 16 bits and can: into `data` (the buffers of its
    // tensors, its outputs' among them), left empty where it does not.
    auto rerun = [&](size_t i, std::vector<void *> &data) -> llvm::Error {
      const exec::Program::CallInfo &info = prog.callInfo(i);
      if (!rerunnable(info))
        return llvm::Error::success();
      // Substituted inputs: those the fp32 run has a value of that size.
      auto substituted = [&](const exec::Program::CallTensor &t) {
        return t.read ? sameSizeRef(fp32, t) : nullptr;
      };
      // An input kept as it is must still hold what the call read: not
      // when it shares memory with an output (the plan may write an output
      // over a dying input), which the run has overwritten.
      auto overlap = [&](const amprt_tensor *a, const amprt_tensor *b) {
        auto *pa = static_cast<const char *>(a->data),
             *pb = static_cast<const char *>(b->data);
        return pa < pb + bytesOf(*b) && pb < pa + bytesOf(*a);
      };
      bool anyInput = false, clobbered = false;
      for (const exec::Program::CallTensor &t : info.tensors) {
        if (!t.read)
          continue;
        if (substituted(t)) {
          anyInput = true;
          continue;
        }
        for (const exec::Program::CallTensor &w : info.tensors)
          clobbered |=
              w.written && t.tensor && w.tensor && overlap(t.tensor, w.tensor);
      }
      if (!anyInput || clobbered)
        return llvm::Error::success();
      // A value no AMP call wrote: a view of a written one has its factor
      // (the same bytes); of another (a graph input), whether it carries the
      // loss scale is read from it, once.
      for (const exec::Program::CallTensor &t : info.tensors)
        if (const RefValue *r = substituted(t);
            r && written.insert(t.value).second) {
          auto base = lastWrite.find(t.tensor->data);
          if (base != lastWrite.end() &&
              base->second.second == numElements(*t.tensor)) {
            // Copied into the view's own factor, which a later round (another
            // plan) may measure.
            auto from = factorOf(base->second.first, optimizer);
            if (!from)
              return from.takeError();
            auto to = factorOf(t.value, optimizer);
            if (!to)
              return to.takeError();
            if (amprt_memcpy(ctx, (*to)->data, (*from)->data, sizeof(float),
                             AMPRT_DEVICE_TO_DEVICE) != AMPRT_OK)
              return kernelError(ctx, "a view's factor");
            invalidateSubstitutes(t.value, optimizer);
            continue;
          }
          if (auto e = stats(t.tensor, *r, t.value, nullptr, false))
            return e;
        }
      // The rerun reads its substituted inputs from, and writes its
      // outputs to, buffers of the comparison's (Program::runCallWith): the
      // run's own are neither read nor overwritten, so nothing is saved or
      // put back. (A fresh output is written whole by its call.)
      data.assign(info.tensors.size(), nullptr);
      size_t nscratch = 0;
      for (auto [k, t] : llvm::enumerate(info.tensors)) {
        const RefValue *r = substituted(t);
        if (!t.written && !r)
          continue;
        auto p = t.written ? scratch(ctx, bytesOf(*t.tensor), nscratch++)
                           : substitute(ctx, t, *r, optimizer, nscratch);
        if (!p)
          return p.takeError();
        data[k] = *p;
      }
      return prog.runCallWith(i, data);
    };
    for (size_t i = 0; i < prog.numCalls(); ++i) {
      const exec::Program::CallInfo &info = prog.callInfo(i);
      for (const auto &[address, value] : callWrites)
        if (value.first.empty())
          lastWrite.erase(address);
        else
          lastWrite[address] = value;
      callWrites.clear();
      if (auto e = prog.runCall(i))
        return e;
      // The error the call adds: it runs once more on the fp32 values of
      // its inputs (rounded to its types), before its outputs are compared,
      // so that each output's fp32 value is read by both comparisons (and
      // its substitute for later reruns) at once.
      std::vector<void *> rerunData;
      if (auto e = rerun(i, rerunData))
        return e;
      for (auto [k, t] : llvm::enumerate(info.tensors)) {
        if (!t.written || !t.tensor)
          continue;
        const RefValue *r = sameSizeRef(fp32, t);
        callWrites.push_back(
            {t.tensor->data,
             {r ? llvm::StringRef(t.value) : "", numElements(*t.tensor)}});
        if (!r)
          continue;
        written.insert(t.value);
        // The row is the first writer's.
        Row &row = rowFor(t.value, info, optimizer, opTypes);
        if (measured[i][k])
          if (auto e = stats(t.tensor, *r, t.value, &row, false))
            return e;
        // The rerun's output: the error the node adds. Its own factor: the
        // run's value may be non-finite, so compare_stats says it from this
        // one (into a scratch factor, leaving the run's).
        if (!rerunData.empty()) {
          amprt_tensor out = *t.tensor;
          out.data = rerunData[k];
          if (auto e = stats(&out, *r, "", &row, true))
            return e;
        }
        // A later rerun's input, made while the fp32 value is at hand.
        if (measured[i][k])
          if (auto it = lastReader.find({t.value, t.tensor->dtype});
              it != lastReader.end() && it->second > i) {
            size_t none = 0;
            if (auto p = substitute(ctx, t, *r, optimizer, none,
                                    /*onlyKept=*/true);
                !p)
              return p.takeError();
          }
      }
    }
    // The step's statistics, in one copy. A value written by several calls
    // (a sum scattered into its buffer) is compared as its last call leaves
    // it: each write replaces the step's comparison of it.
    auto read = slots.read(ctx);
    if (!read)
      return read.takeError();
    const double *st = *read;
    llvm::DenseMap<Row *, Error> pending;
    for (size_t k = 0; k < events.size(); ++k, st += kStats) {
      Row *row = events[k].row;
      if (!row)
        continue;
      Error err;
      err.add(st);
      if (events[k].added) {
        row->added.merge(err);
        row->hasAdded = true;
      } else {
        pending[row] = err;
      }
    }
    for (auto &[row, err] : pending)
      row->total.merge(err);
    return llvm::Error::success();
  }

  /// The rows, worst first: by the error the node adds, then (where it
  /// could not be measured, or ties) a node before a cast (a cast moves a
  /// value into the type its reader computes in: of a cast and its reader
  /// adding the same, the reader is what a policy changes), then by the
  /// error the value carries, then in run order (the first of equals is
  /// where it started).
  std::vector<const Row *> sorted() const {
    std::vector<const Row *> out;
    for (const auto &e : rows)
      out.push_back(&e.getValue());
    auto added = [](const Row *r) {
      return r->hasAdded ? r->added.worst() : -1;
    };
    llvm::stable_sort(out, [&](const Row *a, const Row *b) {
      if (added(a) != added(b))
        return added(a) > added(b);
      if ((a->opType == "Cast") != (b->opType == "Cast"))
        return b->opType == "Cast";
      if (a->total.worst() != b->total.worst())
        return a->total.worst() > b->total.worst();
      return a->order < b->order;
    });
    return out;
  }

private:
  static constexpr int64_t kOne = 1;
  Memory &mem;
  Slots slots;
  /// Each named value's factor (f32 [1]: the loss scale when it carries
  /// it, else 1), as compare_stats last wrote it; "" is the rerun's
  /// scratch. In blocks that never move: kernels queued earlier use them.
  std::map<std::pair<bool, std::string>, amprt_tensor> factors;
  std::vector<float *> factorBlocks;
  size_t factorUsed = 0;
  static constexpr size_t kFactorBlock = 256;
  /// Substituted inputs kept for the step's later reruns, by (optimizer
  /// program, value, dtype), within substituteBudget bytes (CPU, side by
  /// side: runCompared): valid until the value's factor changes (its next
  /// comparison) or the program's next step.
  struct Substitute {
    void *data = nullptr;
    size_t bytes = 0;
    bool valid = false;
  };
  std::map<std::tuple<bool, std::string, int32_t>, Substitute> substitutes;
  size_t substituteBytes = 0;

public:
  uint64_t substituteBudget = 0;

private:
  /// A rerun's inputs and outputs, reused from call to call: each buffer
  /// and its capacity.
  std::vector<void *> scratchBuffers;
  std::vector<size_t> scratchBytes;
  int64_t nextOrder = 0;

  static size_t bytesOf(const amprt_tensor &t) {
    return size_t(numElements(t)) * amprt_dtype_size(t.dtype);
  }
  /// The factor tensor of `value` (a new one starts at 1).
  llvm::Expected<const amprt_tensor *> factorOf(llvm::StringRef value,
                                                bool optimizer) {
    auto [it, isNew] = factors.try_emplace({optimizer, value.str()});
    if (isNew) {
      if (factorUsed % kFactorBlock == 0) {
        auto p = mem.alloc(kFactorBlock * sizeof(float));
        if (!p)
          return p.takeError();
        factorBlocks.push_back(static_cast<float *>(*p));
      }
      float *f = factorBlocks.back() + factorUsed++ % kFactorBlock;
      float one = 1;
      if (auto e = mem.upload(f, &one, sizeof one))
        return e;
      it->second = {f, AMPRT_F32, 1, &kOne};
    }
    return &it->second;
  }
  /// Scratch buffer k of a rerun, at least `bytes`.
  llvm::Expected<void *> scratch(amprt_context *ctx, size_t bytes, size_t k) {
    if (scratchBuffers.size() <= k) {
      scratchBuffers.resize(k + 1, nullptr);
      scratchBytes.resize(k + 1, 0);
    }
    if (scratchBytes[k] < bytes) {
      // Its last use, a rerun or a comparison, may still be queued on the
      // run's context.
      if (amprt_synchronize(ctx) != AMPRT_OK)
        return kernelError(ctx, "a rerun's buffers");
      mem.release(scratchBuffers[k]);
      scratchBuffers[k] = nullptr;
      size_t grown = std::max(bytes, 2 * scratchBytes[k]);
      auto p = mem.alloc(grown);
      if (!p)
        return p.takeError();
      scratchBuffers[k] = *p;
      scratchBytes[k] = grown;
    }
    return scratchBuffers[k];
  }
  /// Input `t` of a rerun as the fp32 run's value `r` times the factor
  /// the AMP run's input has, rounded once to its type: a kept substitute
  /// (made now if it is not valid), or scratch buffer nscratch++ (with
  /// `onlyKept`, nothing: null).
  llvm::Expected<void *> substitute(amprt_context *ctx,
                                    const exec::Program::CallTensor &t,
                                    const RefValue &r, bool optimizer,
                                    size_t &nscratch, bool onlyKept = false) {
    size_t bytes = bytesOf(*t.tensor);
    auto key = std::make_tuple(optimizer, t.value, t.tensor->dtype);
    Substitute *kept = nullptr;
    if (auto it = substitutes.find(key); it != substitutes.end()) {
      if (it->second.bytes >= bytes)
        kept = &it->second;
    } else if (substituteBytes + bytes <= substituteBudget) {
      auto p = mem.alloc(bytes);
      if (!p)
        return p.takeError();
      kept = &substitutes[key];
      *kept = {*p, bytes, false};
      substituteBytes += bytes;
    }
    if (kept && kept->valid)
      return kept->data;
    if (!kept && onlyKept)
      return nullptr;
    void *dst = kept ? kept->data : nullptr;
    if (!dst) {
      auto p = scratch(ctx, bytes, nscratch++);
      if (!p)
        return p.takeError();
      dst = *p;
    }
    auto f = factorOf(t.value, optimizer);
    if (!f)
      return f.takeError();
    amprt_tensor view = r.t;
    view.rank = t.tensor->rank;
    view.shape = t.tensor->shape;
    amprt_tensor out = *t.tensor;
    out.data = dst;
    if (amprt_scale(ctx, &view, *f, 0, &out) != AMPRT_OK)
      return kernelError(ctx, "substituting an input");
    if (kept)
      kept->valid = true;
    return dst;
  }
  /// The kept substitutes of `value` (of the program) are stale.
  void invalidateSubstitutes(llvm::StringRef value, bool optimizer) {
    if (value.empty() || substitutes.empty())
      return;
    for (auto it = substitutes.lower_bound({optimizer, value.str(), INT32_MIN});
         it != substitutes.end() && std::get<0>(it->first) == optimizer &&
         std::get<1>(it->first) == value;
         ++it)
      it->second.valid = false;
  }
  Row &rowFor(llvm::StringRef value, const exec::Program::CallInfo &info,
              bool optimizer, const llvm::StringMap<std::string> &opTypes) {
    Row &row = rows[(optimizer ? "optimizer:" : "") + value.str()];
    if (row.value.empty()) {
      row.value = value.str();
      row.node = info.node;
      auto t = opTypes.find(info.node);
      row.opType = t != opTypes.end() ? t->second : "";
      row.optimizer = optimizer;
      row.order = nextOrder++;
    }
    return row;
  }
};

/// The options of an inner run: the model, data and steps of `train`, no
/// file written, no progress.
TrainOptions innerRun(const TrainOptions &train) {
  TrainOptions o = withoutOutputs(train);
  o.localizeNonfinite = false;
  // Attention's separate calls: every value they make has its fp32
  // counterpart, and a rerun on fp32 inputs needs no fused call's lse.
  o.fuseAttention = false;
  // Nor a bias gemm: the product before the bias is a value of its own.
  o.fuseGemmEpilogues = false;
  // Each value in its graph's layout, as the fp32 run's.
  o.channelsLast = ChannelsLastChoice::Off;
  return o;
}

std::string formatErr(double v) {
  if (std::isinf(v))
    return "inf";
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2e", v);
  return s;
}

/// The fp32 and the AMP run in lockstep: the fp32 run (a thread of its
/// own) keeps each program's values and waits until the AMP run (the
/// calling thread) has compared its same program with them -- or, when it
/// copied them, only until the programs kAhead before it are compared --;
/// then the values' buffers serve a later program's. Read in place, one
/// step's values are kept at a time and the runs take turns; copied, up to
/// three programs' are, and the runs compute side by side.
class Lockstep {
public:
  using Key = std::pair<int64_t, bool>; // (step, optimizer program)
  explicit Lockstep(Memory &mem) : mem(mem) {}

  /// fp32 side: `values` of `key` are ready; waits until they are compared
  /// (or the AMP run stopped). Copies (`copied`: nothing of the run's is
  /// read in place) wait only while kAhead programs before them are not
  /// compared: the fp32 run records the next step's training program
  /// while the AMP run compares this one (its optimizer program between).
  llvm::Error publish(Key key, Values values, bool copied) {
    std::unique_lock<std::mutex> lock(mutex);
    ready.emplace_back(key, std::move(values));
    notifyAll();
    waitFor(lock, [&] {
      return stopped || (copied ? pendingBefore(key) < kAhead : !isReady(key));
    });
    if (stopped) {
      // The AMP run ended first (its last programs were not the fp32
      // run's: a skipped step's optimizer): not a failure of this run.
      cut = true;
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "precision comparison stopped");
    }
    return llvm::Error::success();
  }
  /// fp32 side: the run has ended (with `error`, or not).
  void finish(llvm::Error error) {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::consumeError(std::move(fp32Error)); // the initial success
    fp32Failed = bool(error);
    fp32Error = std::move(error);
    fp32Done = true;
    notifyAll();
  }
  /// Whether the fp32 run has ended with an error (then the AMP run stops:
  /// it would compare nothing).
  bool fp32HasFailed() {
    std::lock_guard<std::mutex> lock(mutex);
    return fp32Failed && !cut;
  }
  ~Lockstep() {
    while (!ready.empty())
      drop();
  }
  /// AMP side: waits until the fp32 run has kept its first program (so
  /// that the two runs never set up at once) or ended; false when it ended
  /// without one (it failed: the AMP run would compare nothing).
  bool waitFirst() {
    std::unique_lock<std::mutex> lock(mutex);
    waitFor(lock, [&] { return fp32Done || !ready.empty(); });
    return !ready.empty();
  }
  /// AMP side: the fp32 values of `key`, or null when the fp32 run has
  /// none (its programs were not the AMP run's: one it kept that the AMP
  /// run does not have is dropped).
  const Values *acquire(Key key) {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      waitFor(lock, [&] { return fp32Done || !ready.empty(); });
      if (ready.empty())
        return nullptr;
      if (ready.front().first == key)
        return &ready.front().second;
      if (key < ready.front().first)
        return nullptr;
      drop();
    }
  }
  /// AMP side: the values of `key` are compared; the fp32 run goes on.
  void release(Key key) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!ready.empty() && ready.front().first == key)
      drop();
  }
  /// AMP side: the AMP run has ended; the fp32 run stops at its next
  /// program.
  void stop() {
    std::lock_guard<std::mutex> lock(mutex);
    stopped = true;
    notifyAll();
  }
  /// The fp32 run's error, if it failed (not when stop() cut it short).
  llvm::Error takeFp32Error() {
    if (cut) {
      llvm::consumeError(std::move(fp32Error));
      return llvm::Error::success();
    }
    return std::move(fp32Error);
  }

private:
  Memory &mem;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<Key, Values>> ready;
  bool fp32Done = false, stopped = false, cut = false, fp32Failed = false;
  llvm::Error fp32Error = llvm::Error::success();

  /// Every change, counted, so that a waiter can spin on it unlocked.
  std::atomic<uint64_t> changes{0};
  /// Called with the lock.
  void notifyAll() {
    changes.fetch_add(1, std::memory_order_release);
    changed.notify_all();
  }
  /// Waits (with the lock) until pred() holds: first spinning briefly on
  /// the change count, then asleep. The runs take turns, so a hand-over is
  /// on the step's critical path, and waking a sleeping thread costs tens
  /// of microseconds on a busy machine (a sixth of a small model's step).
  /// Yielding, for up to kSpin, catches a quick turn without holding a
  /// core the other run needs; a longer one is waited for asleep.
  template <typename Pred>
  void waitFor(std::unique_lock<std::mutex> &lock, Pred pred) {
    constexpr std::chrono::microseconds kSpin{2000};
    if (pred())
      return;
    uint64_t seen = changes.load(std::memory_order_acquire);
    lock.unlock();
    auto until = std::chrono::steady_clock::now() + kSpin;
    while (changes.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::yield();
    lock.lock();
    changed.wait(lock, pred);
  }
  /// Programs ahead of the fp32 run's that the AMP run has not compared.
  static constexpr size_t kAhead = 2;
  /// The programs published before `key` and not yet compared.
  size_t pendingBefore(Key key) const {
    size_t n = 0;
    for (const auto &e : ready)
      n += e.first < key;
    return n;
  }
  bool isReady(Key key) const {
    for (const auto &[k, v] : ready)
      if (k == key)
        return true;
    return false;
  }
  /// Recycles the first ready program's buffers (called with the lock).
  void drop() {
    for (auto &e : ready.front().second)
      mem.recycle(e.getValue().owned, e.getValue().bytes);
    ready.pop_front();
    notifyAll();
  }
};

/// One comparison: the fp32 run and the AMP run with the AMP pass keeping
/// `keep` fp32, in lockstep, into `cmp`'s rows.
llvm::Error runCompared(const TrainOptions &train, const CompareOptions &opts,
                        const std::vector<std::string> &keep, Memory &mem,
                        Comparison &cmp) {
  Lockstep lockstep(mem);
  TrainOptions a = innerRun(train);
  a.amp = false;
  a.keepValues = true; // record() may read the f32 values in place
  // On the CPU, a program whose values fit a 32nd of the memory (and an
  // eighth of what is available) is copied, so that the fp32 run records
  // the next step while the AMP run compares this one (Lockstep::publish;
  // up to three programs' copies at once): each run leaves most of the
  // other core idle (small kernels run on one thread), and the copies cost
  // a fraction of what the overlap saves. A larger model's kernels use
  // every core themselves, and its values are read in place. Per program,
  // decided at its first record.
  uint64_t budget = 0;
  if (opts.overlap && train.device == "cpu") {
    amprt_memory_stats ms{};
    if (amprt_memory_stats_get(mem.ctx, &ms) == AMPRT_OK)
      budget = std::min(ms.device_total / 32, ms.device_free / 8);
  }
  std::optional<bool> copyProgram[2];
  // Side by side, each run's kernels take half of the CPU threads (the two
  // runs are the process's work: with all of them each, their parallel
  // regions wait for threads the other run holds); in turn, all of them.
  // Reruns' substitutes are kept within half the copies' budget (each at
  // most half of its value's f32 copy).
  int32_t cpuThreads = amprt_cpu_threads();
  a.stepRunner = [&](exec::Program &prog, amprt_context *ctx, int64_t step,
                     bool optimizer, const llvm::StringMap<std::string> &) {
    auto t0 = std::chrono::steady_clock::now();
    std::optional<bool> &copy = copyProgram[optimizer];
    if (!copy) {
      copy = budget && keptBytes(prog) <= budget;
      // Side by side when both programs are copied (each decided once).
      cmp.overlapped =
          copyProgram[0].value_or(true) && copyProgram[1].value_or(true);
      // The threads and the substitutes' budget are set at the first
      // program's decision, before the AMP run starts (it waits for that
      // program), and kept: a later change would land in the middle of
      // the AMP run's step.
      if (!copyProgram[!optimizer] && *copy && train.device == "cpu") {
        amprt_cpu_set_threads(std::max(1, cpuThreads / 2));
        cmp.substituteBudget = budget / 2;
      }
    }
    Values values;
    if (auto e = cmp.record(prog, ctx, *copy, values))
      return e;
    Comparison::addTime(cmp.recordSeconds, step, t0);
    return lockstep.publish({step, optimizer}, std::move(values), *copy);
  };
  // Each run its own quiet stream: the runs write their progress at once.
  llvm::raw_null_ostream fp32Quiet, ampQuiet;
  std::thread fp32([&] { lockstep.finish(driver::train(a, fp32Quiet)); });

  TrainOptions b = innerRun(train);
  b.amp = true;
  b.ampMode = opts.mode;
  b.ampKeepFp32 = keep;
  cmp.rows.clear();
  cmp.staticScale = train.staticLossScale != 0 ? train.staticLossScale : 1.0;
  static const Values none;
  b.stepRunner = [&](exec::Program &prog, amprt_context *ctx, int64_t step,
                     bool optimizer,
                     const llvm::StringMap<std::string> &opTypes) {
    if (!optimizer)
      cmp.stepStarts.try_emplace(step, std::chrono::steady_clock::now());
    const Values *fp32 = lockstep.acquire({step, optimizer});
    // Timed from here: the wait for the fp32 run is its record's time.
    auto t0 = std::chrono::steady_clock::now();
    if (!fp32 && lockstep.fp32HasFailed())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the fp32 run failed");
    llvm::Error e =
        cmp.compare(prog, ctx, fp32 ? *fp32 : none, optimizer, opTypes);
    // Nothing queued may still read the fp32 values when their buffers
    // serve the next program.
    amprt_synchronize(ctx);
    lockstep.release({step, optimizer});
    Comparison::addTime(cmp.compareSeconds, step, t0);
    return e;
  };
  llvm::Error ampError = lockstep.waitFirst() ? driver::train(b, ampQuiet)
                                              : llvm::Error::success();
  lockstep.stop();
  fp32.join();
  amprt_cpu_set_threads(cpuThreads);
  cmp.substituteBudget = 0;
  llvm::Error fp32Error = lockstep.takeFp32Error();
  // The fp32 run's own failure says more than the AMP run's stop.
  if (fp32Error) {
    llvm::consumeError(std::move(ampError));
    return fp32Error;
  }
  return ampError;
}

/// The training graph with each node filled by the error it adds: green
/// within a tenth of the tolerance, yellow within it, orange within ten
/// times it, red past that or on overflow; grey where not measured (a call
/// in f32, in place or random), with the largest error its values carry.
llvm::Error writeCompareDot(const TrainOptions &train,
                            const CompareOptions &opts, const Comparison &cmp) {
  mlir::MLIRContext ctx;
  loadDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importOnnxFile(train.trainingModel, &ctx);
  if (!module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   train.trainingModel + ": import failed");
  // Per node: the largest error it adds, and the largest its values carry.
  llvm::StringMap<std::pair<double, double>> byNode;
  for (const auto &e : cmp.rows) {
    const Row &r = e.getValue();
    if (r.optimizer)
      continue;
    auto &[added, total] = byNode.try_emplace(r.node, -1.0, 0.0).first->second;
    if (r.hasAdded)
      added = std::max(added, r.added.worst());
    total = std::max(total, r.total.worst());
  }
  double tol = opts.tolerance;
  return train::writeGraphDot(
      *module, opts.dotPath, [&](llvm::StringRef name, llvm::StringRef) {
        train::DotNodeStyle style;
        auto it = byNode.find(name);
        if (it == byNode.end())
          return style;
        auto [added, total] = it->second;
        style.tooltip = "carries " + formatErr(total);
        if (added < 0) {
          style.extraLine = "carries " + formatErr(total);
          return style;
        }
        style.extraLine = "adds " + formatErr(added);
        style.fill = added <= tol / 10   ? "#93c47d"
                     : added <= tol      ? "#ffd966"
                     : added <= 10 * tol ? "#f6b26b"
                                         : "#e06666";
        return style;
      });
}

unsigned overTolerance(const Comparison &cmp, double tol) {
  unsigned n = 0;
  for (const auto &e : cmp.rows)
    n += !(e.getValue().total.worst() <= tol);
  return n;
}

} // namespace

llvm::Error amp::driver::comparePrecision(const TrainOptions &train,
                                          const CompareOptions &opts,
                                          llvm::raw_ostream &status) {
  Memory mem;
  if (auto e = mem.open(train.device))
    return e;
  Comparison cmp(mem);
  if (auto e = runCompared(train, opts, {}, mem, cmp))
    return e;

  // What a compared step costs: the median over the steps after the first
  // (whose calls make their plans and caches), or the only one.
  auto medianMs = [](std::vector<double> v) {
    if (v.size() > 1)
      v.erase(v.begin());
    if (v.empty())
      return 0.0;
    llvm::sort(v);
    return 1e3 * (v.size() % 2 ? v[v.size() / 2]
                               : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
  };
  auto seconds = [](const std::map<int64_t, double> &m) {
    std::vector<double> v;
    for (const auto &[step, s] : m)
      v.push_back(s);
    return v;
  };
  double recordMs = medianMs(seconds(cmp.recordSeconds)),
         compareMs = medianMs(seconds(cmp.compareSeconds));
  // The step's wall time, from one step's start to the next's; with one
  // step (no next start), its two runs' programs.
  std::vector<double> walls;
  for (auto it = cmp.stepStarts.begin(); it != cmp.stepStarts.end(); ++it)
    if (auto next = std::next(it); next != cmp.stepStarts.end())
      walls.push_back(
          std::chrono::duration<double>(next->second - it->second).count());
  double totalMs = walls.empty() ? recordMs + compareMs : medianMs(walls);
  // The steps the medians are of: all but the first (warm-up) of several.
  size_t series = walls.empty() ? cmp.recordSeconds.size() : walls.size();
  size_t measured = series > 1 ? series - 1 : series;
  std::vector<const Row *> rows = cmp.sorted();
  status << "amp-run: precision comparison, " << opts.mode
         << " AMP against fp32, " << train.steps << " step"
         << (train.steps == 1 ? "" : "s") << ", " << rows.size()
         << " values, worst first (added: the error the node adds on fp32 "
            "inputs; error: the value's, normwise ||amp - fp32|| / ||fp32||; "
            "max elem: the largest elementwise relative error over elements "
            ">= 1e-3 of the value's largest):\n";
  status << llvm::format("  %-28s %-12s %-28s %-9s %-9s %-9s %-9s %s\n", "node",
                         "op", "value", "added", "error", "max elem",
                         "underflow", "overflow");
  for (const Row *r : llvm::ArrayRef(rows).take_front(opts.top)) {
    auto clip = [](std::string n, size_t w) {
      return n.size() > w ? "..." + n.substr(n.size() - (w - 3)) : n;
    };
    std::string name = clip((r->optimizer ? "opt:" : "") + r->value, 28);
    std::string node = clip(r->node.empty() ? "-" : r->node, 28);
    double under = r->total.nonzero
                       ? double(r->total.underflow) / double(r->total.nonzero)
                       : 0;
    std::string op = clip(r->opType.empty() ? "-" : r->opType, 12);
    std::string added = r->hasAdded ? formatErr(r->added.worst()) : "-";
    status << llvm::format("  %-28s %-12s %-28s %-9s %-9s %-9s %-9s %lld\n",
                           node.c_str(), op.c_str(), name.c_str(),
                           added.c_str(), formatErr(r->total.worst()).c_str(),
                           formatErr(r->total.maxRel).c_str(),
                           llvm::formatv("{0:P1}", under).str().c_str(),
                           (long long)r->total.overflow);
  }
  if (rows.size() > opts.top)
    status << "  ... " << rows.size() - opts.top
           << " more (--compare-report)\n";
  status << llvm::format("amp-run: a compared step took %.2f ms: the fp32 "
                         "run with its values kept %.2f ms and the AMP run "
                         "with the comparisons and reruns %.2f ms, %s "
                         "(medians of %zu step%s)\n",
                         totalMs, recordMs, compareMs,
                         cmp.overlapped ? "side by side" : "in turn", measured,
                         measured == 1 ? "" : "s");

  // Nodes to keep fp32: the error they add themselves is past the
  // tolerance (not the error they inherit). Checked by running again; a
  // node that then adds too much joins, up to four rounds.
  std::vector<std::string> keep;
  llvm::StringSet<> seen;
  auto extend = [&](const Comparison &c) {
    size_t n = keep.size();
    for (const Row *r : c.sorted())
      // keep-fp32 takes regular expressions, comma-separated: a name is
      // escaped, and one with a comma cannot be given.
      if (r->hasAdded && !(r->added.worst() <= opts.tolerance) &&
          !r->node.empty() && r->opType != "Cast" && !r->optimizer &&
          !llvm::StringRef(r->node).contains(',') &&
          seen.insert(r->node).second)
        keep.push_back(llvm::Regex::escape(r->node));
    return keep.size() > n;
  };
  unsigned before = overTolerance(cmp, opts.tolerance);
  Comparison again(mem);
  unsigned after = before, rounds = 0;
  double worstAfter = 0;
  for (const Comparison *last = &cmp; rounds < 4 && extend(*last); ++rounds) {
    if (auto e = runCompared(train, opts, keep, mem, again))
      return e;
    after = overTolerance(again, opts.tolerance);
    worstAfter = 0;
    for (const auto &e : again.rows)
      worstAfter = std::max(worstAfter, e.getValue().total.worst());
    last = &again;
    if (after == 0)
      break;
  }
  std::string keepList = llvm::join(keep, ",");
  status << "amp-run: " << before << " of " << rows.size()
         << " values over the tolerance " << llvm::format("%g", opts.tolerance)
         << "; ";
  if (keep.empty())
    status << "no node adds more than the tolerance itself: no policy "
              "change to suggest\n";
  else
    status << "suggested: auto-mixed-precision{keep-fp32=" << keepList
           << "} (amp-run: --amp-keep-fp32 " << keepList
           << "); checked by running again: " << after << " of "
           << again.rows.size() << " values over the tolerance, worst "
           << formatErr(worstAfter) << "\n";

  if (!opts.dotPath.empty())
    if (auto e = writeCompareDot(train, opts, cmp))
      return e;
  if (!opts.reportPath.empty()) {
    llvm::json::Array values;
    for (const Row *r : rows) {
      auto err = [](const Error &e) {
        return llvm::json::Object{
            {"normwise", std::isinf(e.worst())
                             ? llvm::json::Value(nullptr)
                             : llvm::json::Value(e.normwise())},
            {"max_rel", e.maxRel},
            {"mean_rel", e.counted ? e.sumRel / double(e.counted) : 0.0},
            {"underflow",
             e.nonzero ? double(e.underflow) / double(e.nonzero) : 0.0},
            {"overflow", e.overflow}};
      };
      llvm::json::Object o{{"value", r->value},
                           {"node", r->node},
                           {"op_type", r->opType},
                           {"program", r->optimizer ? "optimizer" : "training"},
                           {"total", err(r->total)}};
      if (r->hasAdded)
        o["added"] = err(r->added);
      values.push_back(std::move(o));
    }
    llvm::json::Object root{
        {"mode", opts.mode},
        {"steps", train.steps},
        {"tolerance", opts.tolerance},
        {"over_tolerance", before},
        {"suggested_keep_fp32", llvm::json::Array(keep)},
        {"over_tolerance_with_suggestion", after},
        {"step_ms", llvm::json::Object{{"total", totalMs},
                                       {"fp32_record", recordMs},
                                       {"amp_compare", compareMs},
                                       {"steps_measured", int64_t(measured)}}},
        {"values", std::move(values)}};
    if (auto e =
            llvm::writeToOutput(opts.reportPath, [&](llvm::raw_ostream &os) {
              os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)))
                 << "\n";
              return llvm::Error::success();
            }))
      return e;
  }
  return llvm::Error::success();
}
