//===- AMPReport.cpp - Summary and JSON report of the AMP pass ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/AMPReport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace llvm;
using namespace amp::train;

void AMPSummary::countNode(AMPList list, bool isConverted, bool denied) {
  ++totalProcessable;
  if (list != AMPList::None)
    ++recognized;
  if (isConverted)
    ++converted;
  if (isConverted && list == AMPList::Allow)
    ++allowlistedConverted;
  if (list == AMPList::Deny)
    ++denylistedBlocking;
  if (denied && (list == AMPList::Clear || list == AMPList::Infer))
    ++blockedByDenylisted;
}

void AMPReport::printSummary(raw_ostream &os) const {
  const AMPSummary &s = summary;
  os << "Automatic Mixed Precision Pass Summary:\n"
     << "Total processable nodes: " << s.totalProcessable << "\n"
     << "Recognized nodes available for conversion: " << s.recognized << "\n"
     << "Total nodes converted: " << s.converted << "\n"
     << "Total " << (mode == AMPMode::BF16 ? "BF16" : "FP16")
     << " Cast ops used (excluding Const and Variable casts): "
     << s.lowPrecisionCasts << "\n"
     << "Allowlisted nodes converted: " << s.allowlistedConverted << "\n"
     << "Denylisted nodes blocking conversion: " << s.denylistedBlocking << "\n"
     << "Nodes blocked from conversion by denylisted nodes: "
     << s.blockedByDenylisted << "\n";
  if (!rangesPath.empty()) {
    os << "Nodes kept fp32 by measured ranges (" << rangesPath
       << "): " << rangeKept.size() << "\n";
    for (const RangeKept &k : llvm::ArrayRef(rangeKept).take_front(10))
      os << "  kept: " << k.name << " (" << k.opType << "): " << k.why << "\n";
    if (rangeKept.size() > 10)
      os << "  ... " << (rangeKept.size() - 10) << " more (report=)\n";
  }
  if (tensorCore.empty())
    return;
  unsigned aligned = 0, partly = 0;
  for (const AMPTensorCoreRecord &r : tensorCore) {
    aligned += r.aligned();
    partly += r.partlyKnown();
  }
  os << "Tensor Core aligned GEMMs and convolutions (sizes multiples of "
     << kTensorCoreMultiple << "): " << aligned << " of " << tensorCore.size();
  if (partly)
    os << " (" << partly << " with a symbolic size, judged on the others)";
  os << "\n";
  unsigned listed = 0;
  for (const AMPTensorCoreRecord &r : tensorCore) {
    if (r.aligned())
      continue;
    if (listed++ == 10) {
      os << "  ... " << (tensorCore.size() - aligned - 10)
         << " more in the report\n";
      break;
    }
    os << "  misaligned: " << r.name << " (" << r.opType << "):";
    const char *sep = " ";
    for (const TensorCoreSize &z : r.sizes)
      if (!z.aligned()) {
        os << sep << z.name << " " << z.value << " -> pad to " << z.padTo();
        sep = ", ";
      }
    for (const TensorCoreSize &z : r.sizes)
      if (z.value < 0)
        os << "; " << z.name << " symbolic";
    os << "\n";
  }
}

Error AMPReport::writeJSON(StringRef path) const {
  json::Object sum{
      {"total_processable_nodes", summary.totalProcessable},
      {"recognized_nodes", summary.recognized},
      {"nodes_converted", summary.converted},
      {"low_precision_casts", summary.lowPrecisionCasts},
      {"allowlisted_converted", summary.allowlistedConverted},
      {"denylisted_blocking", summary.denylistedBlocking},
      {"blocked_by_denylisted", summary.blockedByDenylisted},
  };
  json::Array castArray;
  for (const AMPCastRecord &c : casts)
    castArray.push_back(
        json::Object{{"name", c.name}, {"input", c.input}, {"to", c.to}});
  json::Array nodeArray;
  for (const AMPNodeRecord &n : nodes)
    nodeArray.push_back(json::Object{
        {"name", n.name},
        {"domain", n.domain},
        {"op_type", n.opType},
        {"list", getAMPListName(n.list)},
        {"precision", n.lowPrecision ? getAMPModeName(mode) : "fp32"},
        {"reason", n.reason},
    });
  json::Array tcNodes;
  int64_t tcAligned = 0;
  for (const AMPTensorCoreRecord &r : tensorCore) {
    json::Object sizes, padTo;
    for (const TensorCoreSize &z : r.sizes) {
      sizes[z.name] = z.value < 0 ? json::Value(nullptr) : json::Value(z.value);
      if (!z.aligned())
        padTo[z.name] = z.padTo();
    }
    tcAligned += r.aligned();
    tcNodes.push_back(json::Object{{"name", r.name},
                                   {"op_type", r.opType},
                                   {"sizes", std::move(sizes)},
                                   {"aligned", r.aligned()},
                                   {"pad_to", std::move(padTo)}});
  }
  json::Object tc{{"multiple", kTensorCoreMultiple},
                  {"total", static_cast<int64_t>(tensorCore.size())},
                  {"aligned", tcAligned},
                  {"nodes", std::move(tcNodes)}};
  json::Array kept;
  for (const RangeKept &k : rangeKept)
    kept.push_back(
        json::Object{{"name", k.name}, {"op_type", k.opType}, {"why", k.why}});
  json::Object root{
      {"mode", getAMPModeName(mode)},
      {"summary", std::move(sum)},
      {"tensor_core", std::move(tc)},
      {"ranges", json::Object{{"file", rangesPath}, {"kept", std::move(kept)}}},
      {"casts_inserted", static_cast<int64_t>(casts.size())},
      {"casts", std::move(castArray)},
      {"nodes", std::move(nodeArray)},
  };
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_Text);
  if (ec)
    return createStringError(ec, "cannot write AMP report '" + path +
                                     "': " + ec.message());
  os << formatv("{0:2}", json::Value(std::move(root))) << "\n";
  return Error::success();
}
