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
  json::Object root{
      {"mode", getAMPModeName(mode)},
      {"summary", std::move(sum)},
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
