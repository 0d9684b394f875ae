//===- ImportONNXInternals.h - the ONNX importer's shared state -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to the ONNX importer (CIRCT's ImportVerilogInternals.h pattern): the
// Importer, which holds the state of one import (the context, the builder,
// the options, the names seen so far), and the name scopes of graphs. Its
// member functions live in one file per concern:
//   ImportONNX.cpp       the entry points: parsing the protobuf, file checks,
//                        the --import-onnx translation
//   ImportStructure.cpp  the model, its functions and graphs: inputs,
//                        initializers, value_info, topological order
//   ImportNodes.cpp      nodes: typed op or generic train.node, schema checks,
//                        result types, subgraphs
//   ImportTensors.cpp    tensors (inline, raw, external data, resources),
//                        sparse tensors, attributes
//   ImportTypes.cpp      ONNX types and value infos
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_TARGET_ONNX_IMPORTONNXINTERNALS_H
#define AMP_LIB_TARGET_ONNX_IMPORTONNXINTERNALS_H

#include "ONNXInternals.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Target/ONNX/ExternalData.h"
#include "amp/Target/ONNX/ImportONNX.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Allocator.h"
#include "llvm/Support/MemoryBuffer.h"

#include <onnx/onnx_pb.h>

namespace amp::onnx_detail {

using namespace mlir;
using namespace amp::train;

/// Names visible in a graph: its inputs, initializers and node outputs, then
/// those of the enclosing graphs.
// The name tables hold an entry per value or node: their entries come from
// a bump allocator, so a graph of a million nodes frees them as a few slabs
// rather than as millions of heap chunks for later passes to wade through.
using NameSet = llvm::StringSet<llvm::BumpPtrAllocator>;
template <typename T>
using NameMap = llvm::StringMap<T, llvm::BumpPtrAllocator>;

struct Scope {
  NameMap<Value> values;
  const Scope *parent = nullptr;
  Value lookup(StringRef name) const {
    for (const Scope *s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end())
        return it->second;
    }
    return {};
  }
};

/// Opset versions by (normalized) domain.
using OpsetMap = llvm::StringMap<int64_t>;

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef fileName, const ImportOnnxOptions &opts)
      : ctx(ctx), builder(ctx), fileName(fileName.str()), options(opts),
        fileLoc(FileLineColLoc::get(ctx, fileName, 0, 0)) {}

  OwningOpRef<ModuleOp> importModel(onnx::ModelProto &model);

private:
  InFlightDiagnostic error() { return emitError(fileLoc); }
  Location nodeLoc(StringRef nodeName) {
    return NameLoc::get(StringAttr::get(ctx, nodeName), fileLoc);
  }

  // Types and tensors.
  FailureOr<Type> importType(const onnx::TypeProto &type, const Twine &what,
                             SmallVectorImpl<Attribute> *dims);
  FailureOr<Attribute> importTensor(onnx::TensorProto &tensor,
                                    const Twine &what, bool *raw = nullptr);
  FailureOr<Attribute> importSparseTensor(onnx::SparseTensorProto &sparse,
                                          const Twine &what);
  FailureOr<Attribute> importTensorAttr(onnx::TensorProto &tensor,
                                        const Twine &what);
  FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
  loadExternalData(const onnx::TensorProto &tensor, const Twine &what,
                   int64_t expectedBytes, ExternalDataSource *source);

  // Value infos.
  FailureOr<DictionaryAttr> importValueInfo(const onnx::ValueInfoProto &vi,
                                            const Twine &what, Type *type);

  // Graphs and nodes.
  LogicalResult importGraph(onnx::GraphProto &graph, Block *block, Scope &scope,
                            const OpsetMap &opsets, NamedAttrList &graphInfo,
                            bool isMain, SmallVectorImpl<Type> &resultTypes);
  LogicalResult importNode(onnx::NodeProto &node, Scope &scope,
                           const OpsetMap &opsets,
                           const llvm::StringMap<Type> &declaredTypes);
  FailureOr<Attribute> importAttribute(onnx::AttributeProto &attr,
                                       StringRef nodeDesc);
  FailureOr<Attribute> importTypeAttr(const onnx::TypeProto &tp,
                                      const Twine &what);
  void refineControlFlowResultTypes(const onnx::NodeProto &node,
                                    ArrayRef<SmallVector<Type>> subgraphOutputs,
                                    SmallVectorImpl<Type> &resultTypes);
  Type inferResultType(const OnnxOpSchema *schema, unsigned resultIndex,
                       ArrayRef<Value> operands,
                       const NamedAttrList &onnxAttrs);
  LogicalResult importFunction(onnx::FunctionProto &fn, ModuleOp module,
                               const OpsetMap &modelOpsets);
  StringAttr unknownFields(const google::protobuf::Message &msg);
  void setDoc(NamedAttrList &attrs, const std::string &doc) {
    if (!doc.empty())
      attrs.set(attrs::kDocString, builder.getStringAttr(doc));
  }
  Value getNone(Block *block);
  std::string uniqueNodeName(const onnx::NodeProto &node);

  MLIRContext *ctx;
  OpBuilder builder;
  std::string fileName;
  ImportOnnxOptions options;
  Location fileLoc;
  /// Local functions, "domain\0name".
  llvm::StringSet<> localFunctions;
  /// Node names seen so far (to make generated names unique).
  NameSet nodeNames;
  /// Per op_type, where the search for a free generated name resumes.
  llvm::StringMap<unsigned> nextUnnamedIndex;
  llvm::DenseMap<Block *, Value> noneValues;
  llvm::StringSet<> warnedUnknownOps;
  unsigned resourceCounter = 0;
  llvm::StringSet<> resourceNames;
};

/// Key of a model-local function in `localFunctions`.
inline std::string functionKey(StringRef domain, StringRef name) {
  return (domain + Twine('\0') + name).str();
}

} // namespace amp::onnx_detail

#endif // AMP_LIB_TARGET_ONNX_IMPORTONNXINTERNALS_H
