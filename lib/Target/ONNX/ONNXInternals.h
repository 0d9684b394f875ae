//===- ONNXInternals.h - Shared by the ONNX importer and exporter -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_TARGET_ONNX_ONNXINTERNALS_H
#define AMP_LIB_TARGET_ONNX_ONNXINTERNALS_H

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

namespace amp::onnx_detail {

/// Largest element count a tensor may declare (2^40): far beyond any model
/// that fits in memory, small enough that byte sizes cannot overflow.
inline constexpr int64_t kMaxElements = int64_t(1) << 40;

/// The MLIR op name of the typed op for (domain, opType), e.g. "train.Gemm",
/// "train.ms.ReluGrad", "train.ai.onnx.ml.LabelEncoder" (it may not exist:
/// look it up).
std::string getTypedOpName(llvm::StringRef domain, llvm::StringRef opType);

/// Number of bytes that `count` elements of ONNX data type `dataType` take
/// in raw_data (sub-byte types packed), or -1 for strings/unknown types.
int64_t getRawDataSize(int32_t dataType, int64_t count);

} // namespace amp::onnx_detail

#endif // AMP_LIB_TARGET_ONNX_ONNXINTERNALS_H
