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
#include "amp/Target/ONNX/ImportONNX.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <map>

using namespace amp;
using namespace amp::driver;

namespace {

/// A value of the fp32 run: its elements and largest finite magnitude.
struct RefValue {
  std::vector<float> v;
  float largest = 0;
  size_t size() const { return v.size(); }
};
using Values = llvm::StringMap<RefValue>;

/// The error of a value against the fp32 run's: normwise, ||amp - fp32|| /
/// ||fp32|| over its finite elements (what the tolerance judges); the
/// largest and the mean elementwise relative error over its significant
/// elements (|fp32| at least 1e-3 of its largest); nonzero fp32 elements
/// that became 0; finite ones that became inf or NaN.
struct Error {
  double maxRel = 0, sumRel = 0, sqDiff = 0, sqRef = 0;
  int64_t counted = 0, nonzero = 0, underflow = 0, overflow = 0;
  void add(const std::vector<float> &amp, const RefValue &ref, double scale) {
    double floor = 1e-3 * double(ref.largest), inv = 1.0 / scale;
    size_t n = std::min(ref.size(), amp.size());
    const float *pa = amp.data(), *pb = ref.v.data();
    for (size_t i = 0; i < n; ++i) {
      double a = double(pa[i]) * inv, b = pb[i];
      if (!std::isfinite(b))
        continue;
      if (!std::isfinite(a)) {
        ++overflow;
        continue;
      }
      sqDiff += (a - b) * (a - b);
      sqRef += b * b;
      if (b != 0) {
        ++nonzero;
        underflow += a == 0;
      }
      if (b != 0 && std::fabs(b) >= floor) {
        double rel = std::fabs(a - b) / std::fabs(b);
        maxRel = std::max(maxRel, rel);
        sumRel += rel;
        ++counted;
      }
    }
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

/// Whether `amp` is `ref` times the loss scale `scale` rather than `ref`
/// itself: the backward's gradients carry the scale until loss scaling's
/// unscale, the values its gradient subgraphs compute from the forward do
/// not, and names do not tell them apart. The mean log-ratio over the
/// elements finite and nonzero in both says which factor is nearer.
bool carriesScale(const std::vector<float> &amp, const RefValue &refValue,
                  double scale) {
  const std::vector<float> &ref = refValue.v;
  if (scale == 1)
    return false;
  double sum = 0;
  int64_t n = 0;
  // A sample of at most about 1024 elements says it.
  size_t size = std::min(amp.size(), ref.size());
  size_t stride = std::max<size_t>(1, size / 1024);
  for (size_t i = 0; i < size; i += stride)
    if (std::isfinite(amp[i]) && std::isfinite(ref[i]) && amp[i] != 0 &&
        ref[i] != 0) {
      sum += std::log(std::fabs(double(amp[i]) / double(ref[i])));
      ++n;
    }
  if (n == 0)
    return false;
  double mean = sum / double(n);
  return std::fabs(mean - std::log(scale)) < std::fabs(mean);
}

bool isFloat(const amprt_tensor *t) { return t && isFloatTensor(*t); }

/// The fp32 run's value of the named float tensor `t`, when of its size.
const RefValue *sameSizeRef(const Values &ref,
                            const exec::Program::CallTensor &t) {
  if (t.value.empty() || !isFloat(t.tensor))
    return nullptr;
  const RefValue *r = refOf(ref, t.value);
  return r && int64_t(r->size()) == numElements(*t.tensor) ? r : nullptr;
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

class Comparison {
public:
  /// The fp32 run's values, per (step, optimizer program).
  std::map<std::pair<int64_t, bool>, Values> ref;
  llvm::StringMap<Row> rows;
  /// The AMP run's static loss scale (1: none, or the dynamic scaler's).
  double staticScale = 1;

  llvm::Error record(exec::Program &prog, amprt_context *ctx, int64_t step,
                     bool optimizer) {
    Values &out = ref[{step, optimizer}];
    auto keep = [&](const amprt_tensor &t, llvm::StringRef value) {
      RefValue &r = out[value];
      readFloats(ctx, t, r.v, scratch);
      r.largest = 0;
      for (float x : r.v)
        if (std::isfinite(x))
          r.largest = std::max(r.largest, std::fabs(x));
    };
    for (size_t i = 0; i < prog.numCalls(); ++i) {
      const exec::Program::CallInfo &info = prog.callInfo(i);
      // A named value no call writes (a reshape the plan made a view of
      // another, a graph input): as the call reads it, so that the AMP
      // run's rerun can read it too.
      for (const exec::Program::CallTensor &t : info.tensors)
        if (t.read && !t.written && !t.value.empty() && isFloat(t.tensor) &&
            !out.count(t.value))
          keep(*t.tensor, t.value);
      if (auto e = prog.runCall(i))
        return e;
      for (const exec::Program::CallTensor &t : info.tensors)
        if (t.written && !t.value.empty() && isFloat(t.tensor))
          keep(*t.tensor, t.value);
    }
    return llvm::Error::success();
  }

  llvm::Error compare(exec::Program &prog, amprt_context *ctx, int64_t step,
                      bool optimizer,
                      const llvm::StringMap<std::string> &opTypes) {
    const Values &fp32 = ref[{step, optimizer}];
    // The step's loss scale: the backward's gradients are that much larger.
    // The dynamic scaler's is an input; a static one a graph constant.
    double scale = optimizer ? 1.0 : staticScale;
    if (int in = prog.findInput(train::kLossScaleName); in >= 0 && !optimizer) {
      float s = 1;
      amprt_memcpy(ctx, &s, prog.inputData(in), 4, AMPRT_DEVICE_TO_HOST);
      scale = s;
    }
    // A value written by several calls (a sum scattered into its buffer)
    // is compared as its last call leaves it: each write replaces the
    // step's comparison of it.
    llvm::StringMap<std::pair<Row *, Error>> pending;
    // Each value's factor, as it was written (carriesScale).
    auto scaleOf = [&](llvm::StringRef name) {
      auto it = scaled.find(name);
      return it != scaled.end() && it->second ? scale : 1.0;
    };
    for (size_t i = 0; i < prog.numCalls(); ++i) {
      const exec::Program::CallInfo &info = prog.callInfo(i);
      if (auto e = prog.runCall(i))
        return e;
      for (const exec::Program::CallTensor &t : info.tensors)
        if (const RefValue *r = t.written ? sameSizeRef(fp32, t) : nullptr) {
          readFloats(ctx, *t.tensor, got, scratch);
          scaled[t.value] = !optimizer && carriesScale(got, *r, scale);
          Error err;
          err.add(got, *r, scaleOf(t.value));
          pending[t.value] = {&rowFor(t.value, info, optimizer, opTypes), err};
        }
      // The error the call adds: it runs once more on the fp32 values of
      // its inputs (rounded to its types); then its inputs and outputs are
      // put back as the run left them.
      if (!rerunnable(info))
        continue;
      size_t nsaved = 0;
      auto save = [&](const amprt_tensor *t) {
        if (saved.size() <= nsaved)
          saved.emplace_back();
        auto &[tensor, bytes] = saved[nsaved++];
        tensor = t;
        bytes.resize(size_t(numElements(*t)) * amprt_dtype_size(t->dtype));
        amprt_memcpy(ctx, bytes.data(), t->data, bytes.size(),
                     AMPRT_DEVICE_TO_HOST);
      };
      // Outputs first: an output may share its memory with a dying input
      // (the plan reuses it), which the substitution overwrites.
      // Substituted inputs: those the fp32 run has a value of that size.
      auto substituted = [&](const exec::Program::CallTensor &t) {
        return t.read ? sameSizeRef(fp32, t) : nullptr;
      };
      // An input kept as it is must still hold what the call read: not
      // when it shares memory with an output (the plan may write an output
      // over a dying input), which the run has overwritten.
      auto bytesOf = [](const amprt_tensor *t) {
        return size_t(numElements(*t)) * amprt_dtype_size(t->dtype);
      };
      auto overlap = [&](const amprt_tensor *a, const amprt_tensor *b) {
        auto *pa = static_cast<const char *>(a->data),
             *pb = static_cast<const char *>(b->data);
        return pa < pb + bytesOf(b) && pb < pa + bytesOf(a);
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
        continue;
      for (const exec::Program::CallTensor &t : info.tensors)
        if (t.written)
          save(t.tensor);
      for (const exec::Program::CallTensor &t : info.tensors)
        if (const RefValue *r = substituted(t)) {
          // A value no AMP call wrote (a view of another): whether it
          // carries the loss scale is read from it.
          if (!optimizer && !scaled.count(t.value)) {
            readFloats(ctx, *t.tensor, got, scratch);
            scaled[t.value] = carriesScale(got, *r, scale);
          }
          save(t.tensor);
          // With the factor the AMP run's input has.
          writeFloats(ctx, *t.tensor, r->v, float(scaleOf(t.value)), scratch);
        }
      if (auto e = prog.runCall(i))
        return e;
      for (const exec::Program::CallTensor &t : info.tensors)
        if (const RefValue *r = t.written ? sameSizeRef(fp32, t) : nullptr) {
          Row &row = rowFor(t.value, info, optimizer, opTypes);
          // Its own factor: the run's value may be non-finite, so say it
          // from this one.
          readFloats(ctx, *t.tensor, got, scratch);
          bool carries = !optimizer && carriesScale(got, *r, scale);
          row.added.add(got, *r, carries ? scale : 1.0);
          row.hasAdded = true;
        }
      // Back as the run left them: in reverse, so that of two tensors
      // sharing memory the one saved first (an output) is written last.
      for (size_t k = nsaved; k-- > 0;)
        amprt_memcpy(ctx, saved[k].first->data, saved[k].second.data(),
                     saved[k].second.size(), AMPRT_HOST_TO_DEVICE);
    }
    for (auto &e : pending)
      e.getValue().first->total.merge(e.getValue().second);
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
  llvm::StringMap<bool> scaled;
  /// Host buffers reused from call to call.
  std::vector<float> got;
  std::vector<char> scratch;
  std::vector<std::pair<const amprt_tensor *, std::vector<char>>> saved;
  int64_t nextOrder = 0;
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
  TrainOptions o = train;
  o.logPath.clear();
  o.outPath.clear();
  o.checkpointPath.clear();
  o.ortCheckpointPath.clear();
  o.loweredPath.clear();
  o.collectRangesPath.clear();
  o.localizeNonfinite = false;
  o.progress = false;
  return o;
}

std::string formatErr(double v) {
  if (std::isinf(v))
    return "inf";
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2e", v);
  return s;
}

/// The AMP run against `cmp.ref`, with the AMP pass keeping `keep` fp32.
llvm::Error runAMP(const TrainOptions &train, const CompareOptions &opts,
                   const std::vector<std::string> &keep, Comparison &cmp) {
  TrainOptions b = innerRun(train);
  b.amp = true;
  b.ampMode = opts.mode;
  b.ampKeepFp32 = keep;
  cmp.rows.clear();
  cmp.staticScale = train.staticLossScale != 0 ? train.staticLossScale : 1.0;
  b.stepRunner = [&](exec::Program &prog, amprt_context *ctx, int64_t step,
                     bool optimizer,
                     const llvm::StringMap<std::string> &opTypes) {
    return cmp.compare(prog, ctx, step, optimizer, opTypes);
  };
  return driver::train(b, llvm::nulls());
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
  Comparison cmp;
  TrainOptions a = innerRun(train);
  a.amp = false;
  a.stepRunner = [&](exec::Program &prog, amprt_context *ctx, int64_t step,
                     bool optimizer, const llvm::StringMap<std::string> &) {
    return cmp.record(prog, ctx, step, optimizer);
  };
  if (auto e = driver::train(a, llvm::nulls()))
    return e;
  if (auto e = runAMP(train, opts, {}, cmp))
    return e;

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
  Comparison again;
  again.ref = std::move(cmp.ref); // not read again: the rows are kept
  unsigned after = before, rounds = 0;
  double worstAfter = 0;
  for (const Comparison *last = &cmp; rounds < 4 && extend(*last); ++rounds) {
    if (auto e = runAMP(train, opts, keep, again))
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
    llvm::json::Object root{{"mode", opts.mode},
                            {"steps", train.steps},
                            {"tolerance", opts.tolerance},
                            {"over_tolerance", before},
                            {"suggested_keep_fp32", llvm::json::Array(keep)},
                            {"over_tolerance_with_suggestion", after},
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
