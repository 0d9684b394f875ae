//===- ExternalData.h - ONNX tensors stored outside the model ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Reading a TensorProto's external data (data_location EXTERNAL: the bytes
// live in a file next to the model). Shared by the importer and by amp-run's
// weight loading, so both refuse the same unsafe paths.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TARGET_ONNX_EXTERNALDATA_H
#define AMP_TARGET_ONNX_EXTERNALDATA_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace amp {

/// The `expectedBytes` bytes of `tensor`'s external data. Its `location`
/// must be a relative path that stays inside `modelDir` (no "..", and
/// symlinks resolve inside it); `offset` and `length` must lie within the
/// file, and `length` (when given) must be `expectedBytes`. The error
/// message says which rule failed ("external data location 'x' leaves the
/// model folder", ...), without naming the tensor.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readOnnxExternalData(const onnx::TensorProto &tensor, llvm::StringRef modelDir,
                     int64_t expectedBytes);

} // namespace amp

#endif // AMP_TARGET_ONNX_EXTERNALDATA_H
