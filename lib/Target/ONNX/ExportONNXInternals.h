//===- ExportONNXInternals.h - the ONNX exporter's shared state -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to the ONNX exporter (CIRCT's ImportVerilogInternals.h pattern):
// the Exporter, which holds the state of one export (the names given to
// values, the casts named on the way), and the initializers whose bytes are
// written after the model. Its member functions live in one file per
// concern, as the importer's do:
//   ExportONNX.cpp       the entry points: serializing with the deferred
//                        tensors appended, the 2 GiB check, external data,
//                        the --export-onnx translation and its options
//   ExportStructure.cpp  the model, its functions and graphs
//   ExportNodes.cpp      nodes and the names of values
//   ExportTensors.cpp    tensors (typed or raw storage, deferred), sparse
//                        tensors, attributes
//   ExportTypes.cpp      MLIR types as ONNX types, value infos
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_TARGET_ONNX_EXPORTONNXINTERNALS_H
#define AMP_LIB_TARGET_ONNX_EXPORTONNXINTERNALS_H

#include "ONNXInternals.h"
#include "amp/Dialect/Train/IR/CastNamer.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Target/ONNX/ExportONNX.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <memory>
#include <onnx/onnx_pb.h>
#include <optional>

namespace amp::onnx_detail {

using namespace mlir;
using namespace amp::train;

/// An initializer of the main graph whose bytes are written after the model
/// (straight from its resource blob, or from `owned`), or into the external
/// data file.
struct DeferredTensor {
  onnx::TensorProto header;           // everything but the data
  ArrayRef<char> data;                // the bytes, when they live in a blob
  std::unique_ptr<std::string> owned; // else the bytes
  bool external = false;
  ArrayRef<char> bytes() const {
    return owned ? ArrayRef<char>(owned->data(), owned->size()) : data;
  }
};

class Exporter {
public:
  Exporter(ModuleOp module, const ExportOnnxOptions &options)
      : module(module), ctx(module.getContext()), options(options) {}
  LogicalResult exportModel(onnx::ModelProto &model,
                            std::vector<DeferredTensor> &deferred);

private:
  InFlightDiagnostic error(Operation *op) { return op->emitError(); }
  LogicalResult exportGraph(Block &block, onnx::GraphProto &graph,
                            DictionaryAttr info, Operation *owner,
                            std::vector<DeferredTensor> *deferred);
  LogicalResult exportNode(Operation *op, onnx::NodeProto &node);
  LogicalResult exportAttribute(StringRef name, Attribute value,
                                onnx::AttributeProto &attr, Operation *op,
                                int64_t kindHint);
  LogicalResult exportTensor(Attribute value, onnx::TensorProto &tensor,
                             Operation *op, bool raw,
                             std::vector<DeferredTensor> *deferred);
  LogicalResult exportSparseTensor(SparseTensorAttr sparse,
                                   onnx::SparseTensorProto &proto,
                                   Operation *op) {
    if (failed(exportTensor(sparse.getValues(), *proto.mutable_values(), op,
                            /*raw=*/true, nullptr)) ||
        failed(exportTensor(sparse.getIndices(), *proto.mutable_indices(), op,
                            /*raw=*/true, nullptr)))
      return failure();
    for (int64_t d : sparse.getDims().asArrayRef())
      proto.add_dims(d);
    return success();
  }
  LogicalResult exportType(Type type, ArrayAttr dims, onnx::TypeProto &proto,
                           Operation *op);
  LogicalResult exportValueInfo(DictionaryAttr entry, Type current,
                                onnx::ValueInfoProto &vi, Operation *op);
  std::string nameOf(Value v);
  void mergeUnknown(Operation *op, google::protobuf::Message &msg) {
    if (auto u = op->getAttrOfType<StringAttr>("train.unknown_fields"))
      msg.MergeFromString(u.getValue().str());
  }

  /// Whether the main-graph initializer `init` goes to the external data
  /// file (ExternalDataMode).
  bool goesExternal(InitializerOp init);

  ModuleOp module;
  MLIRContext *ctx;
  const ExportOnnxOptions &options;
  /// ONNX names of values.
  DenseMap<Value, std::string> names;
  llvm::StringSet<> usedNames;
  unsigned generated = 0;
  /// Casts a pass left unnamed in the main graph or a model-local function
  /// are named here, by the rule of CastNames.h, without interning the
  /// names in the context: unique within their graph or function.
  GraphOp mainGraph;
  DenseMap<Operation *, std::unique_ptr<CastNameScope>> castScopes;
  DenseMap<Operation *, StringRef> castNodeNames; ///< given here
  /// The graph or function whose names `cast` must not take.
  mlir::FunctionOpInterface castScopeOf(Operation *cast) {
    if (auto fn = cast->getParentOfType<FunctionOp>())
      return fn;
    return mainGraph;
  }
  CastNameScope &castNameScope(Operation *cast) {
    mlir::FunctionOpInterface scope = castScopeOf(cast);
    auto &entry = castScopes[scope.getOperation()];
    if (!entry)
      entry = std::make_unique<CastNameScope>(scope);
    return *entry;
  }
  bool isGeneratedCast(Operation *op) {
    if (!isa<CastOp>(op))
      return false;
    if (op->getParentOfType<FunctionOp>())
      return true;
    return mainGraph && mainGraph->isProperAncestor(op);
  }
};

} // namespace amp::onnx_detail

#endif // AMP_LIB_TARGET_ONNX_EXPORTONNXINTERNALS_H
