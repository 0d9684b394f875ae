//===- ONNXInternals.cpp - Shared by the ONNX importer and exporter -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "ONNXInternals.h"
#include "amp/Dialect/Train/IR/OnnxSchema.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"

using namespace amp;

std::string onnx_detail::getTypedOpName(llvm::StringRef domain,
                                        llvm::StringRef opType) {
  domain = train::normalizeOnnxDomain(domain);
  if (domain.empty())
    return ("train." + opType).str();
  if (domain == "com.microsoft")
    return ("train.ms." + opType).str();
  if (domain == "ai.onnx.preview.training")
    return ("train.preview." + opType).str();
  // Every other domain: the rule of Train_OnnxOp in TrainBase.td.
  return ("train." + domain + "." + opType).str();
}

int64_t onnx_detail::getRawDataSize(int32_t dataType, int64_t count) {
  unsigned bits = train::getOnnxDataTypeBits(dataType);
  if (bits == 0)
    return -1;
  return (count * bits + 7) / 8;
}
