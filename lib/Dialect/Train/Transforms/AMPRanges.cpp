//===- AMPRanges.cpp - measured value ranges for the AMP policy -----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/AMPRanges.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using namespace amp::train;

static Error bad(StringRef path, const Twine &what) {
  return createStringError(inconvertibleErrorCode(),
                           "ranges file '" + path + "': " + what);
}

Expected<AMPRanges> amp::train::readAMPRanges(StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return bad(path, buf.getError().message());
  Expected<json::Value> doc = json::parse((*buf)->getBuffer());
  if (!doc)
    return bad(path, toString(doc.takeError()));
  const json::Object *root = doc->getAsObject();
  if (!root || root->getString("format") != "amp-ranges")
    return bad(path, "not an amp-ranges file (\"format\": \"amp-ranges\", "
                     "as amp-run --collect-ranges writes)");
  if (root->getInteger("version") != 1)
    return bad(path, "unsupported version (this build reads version 1)");
  AMPRanges r;
  r.steps = root->getInteger("steps").value_or(0);
  r.lossScale = root->getNumber("loss_scale").value_or(1.0);
  const json::Object *values = root->getObject("values");
  if (!values || r.steps < 1 || !(r.lossScale > 0))
    return bad(path, "needs \"values\", \"steps\" >= 1 and a positive "
                     "\"loss_scale\"");
  for (const auto &[name, v] : *values) {
    const json::Object *o = v.getAsObject();
    std::optional<double> maxAbs = o ? o->getNumber("max_abs") : std::nullopt;
    std::optional<double> minNz =
        o ? o->getNumber("min_nonzero") : std::nullopt;
    std::optional<double> below =
        o ? o->getNumber("below_normal") : std::nullopt;
    if (!maxAbs || !minNz || !below || !std::isfinite(*maxAbs) || *maxAbs < 0 ||
        !(*below >= 0 && *below <= 1))
      return bad(path, "value '" + name.str() +
                           "' needs max_abs >= 0, min_nonzero and "
                           "below_normal in [0, 1]");
    AMPValueRange &vr = r.values[name.str()];
    vr.maxAbs = *maxAbs;
    vr.minNonzero = *minNz;
    vr.belowNormal = *below;
    vr.count = o->getInteger("count").value_or(0);
    vr.gradient = o->getBoolean("gradient").value_or(false);
    // Files written before these were measured: nothing known, 0.
    for (auto [key, field] : {std::pair{"unresolved_fp16", &vr.unresolvedFp16},
                              std::pair{"unresolved_bf16", &vr.unresolvedBf16}})
      if (std::optional<double> f = o->getNumber(key)) {
        if (!(*f >= 0 && *f <= 1))
          return bad(path, "value '" + name.str() + "': " + key +
                               " must be in [0, 1]");
        *field = *f;
      }
  }
  return r;
}

Error amp::train::writeAMPRanges(StringRef path, const AMPRanges &ranges) {
  json::Object values;
  for (const auto &e : ranges.values) {
    const AMPValueRange &v = e.getValue();
    values[e.getKey()] = json::Object{{"max_abs", v.maxAbs},
                                      {"min_nonzero", v.minNonzero},
                                      {"below_normal", v.belowNormal},
                                      {"count", v.count},
                                      {"gradient", v.gradient},
                                      {"unresolved_fp16", v.unresolvedFp16},
                                      {"unresolved_bf16", v.unresolvedBf16}};
  }
  json::Object root{{"format", "amp-ranges"},
                    {"version", 1},
                    {"steps", ranges.steps},
                    {"loss_scale", ranges.lossScale},
                    {"values", std::move(values)}};
  // A temporary file renamed into place: the file is whole or absent.
  return writeToOutput(path, [&](raw_ostream &os) {
    os << formatv("{0:2}", json::Value(std::move(root))) << "\n";
    return Error::success();
  });
}

std::optional<std::string>
AMPRangePolicy::keepReason(ArrayRef<StringRef> outputs, AMPMode mode) const {
  if (!ranges)
    return std::nullopt;
  // The low type's largest finite value.
  double largest = mode == AMPMode::BF16 ? 3.3895313892515355e38 : 65504.0;
  for (StringRef name : outputs) {
    auto it = ranges->values.find(name);
    if (name.empty() || it == ranges->values.end())
      continue;
    const AMPValueRange &v = it->second;
    std::string s;
    raw_string_ostream os(s);
    if (v.maxAbs * margin >= largest) {
      os << "max |" << name << "| " << format("%.3g", v.maxAbs) << " over "
         << ranges->steps << " step" << (ranges->steps == 1 ? "" : "s") << " > "
         << format("%g", largest) << " / margin " << format("%g", margin);
      return s;
    }
    if (mode == AMPMode::FP16 && v.belowNormal > underflowLimit) {
      os << format("%.0f", v.belowNormal * 100) << "% of nonzero |" << name
         << "|";
      if (v.gradient)
        os << " (under loss scale " << format("%g", ranges->lossScale) << ")";
      os << " below fp16's smallest normal 6.1e-05 over " << ranges->steps
         << " step" << (ranges->steps == 1 ? "" : "s") << " > "
         << format("%g", underflowLimit * 100) << "%";
      return s;
    }
    double unresolved =
        mode == AMPMode::BF16 ? v.unresolvedBf16 : v.unresolvedFp16;
    if (unresolved > resolutionLimit) {
      os << format("%.0f", unresolved * 100) << "% of the varying elements of "
         << name << " within half of " << getAMPModeName(mode)
         << "'s spacing of their mean over " << ranges->steps << " step"
         << (ranges->steps == 1 ? "" : "s") << " > "
         << format("%g", resolutionLimit * 100)
         << "%: the change is lost to rounding";
      return s;
    }
  }
  return std::nullopt;
}
