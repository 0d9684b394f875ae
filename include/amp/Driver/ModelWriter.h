//===- ModelWriter.h - an ONNX model with streamed initializers -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run's -o: an ONNX model whose large initializers (the trained
// parameters, tensors kept in external data) are written from where their
// bytes lie, a piece at a time, inline or into one external data file.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_MODELWRITER_H
#define AMP_DRIVER_MODELWRITER_H

#include "amp/Driver/TensorStream.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <onnx/onnx_pb.h>

#include <vector>

namespace amp::driver {

/// An initializer for writeModel: its TensorProto without data (name,
/// data_type, dims) and where its bytes are.
struct StreamedInitializer {
  onnx::TensorProto header;
  TensorBytes bytes;
};

/// Writes `model` with `initializers` added to its graph to `path`, through
/// a temporary file and a rename. Their bytes are never held whole:
///  * inline, each follows the model as a `graph { initializer { ... } }`
///    chunk (protobuf merges the repeated occurrences of a message field,
///    so readers see one graph); a model that would pass protobuf's 2 GiB
///    is refused, nothing written;
///  * with `externalData`, they go to one external data file next to `path`
///    (onnx's name and layout, ExternalDataWriter; a file range is copied
///    file to file), the model holding only references.
llvm::Error writeModel(onnx::ModelProto &model,
                       std::vector<StreamedInitializer> initializers,
                       llvm::StringRef path, bool externalData);

} // namespace amp::driver

#endif // AMP_DRIVER_MODELWRITER_H
