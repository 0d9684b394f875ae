//===- TrainDialect.h - Train dialect ---------------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINDIALECT_H
#define AMP_DIALECT_TRAIN_IR_TRAINDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "amp/Dialect/Train/IR/TrainOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "amp/Dialect/Train/IR/TrainOpsTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "amp/Dialect/Train/IR/TrainOpsAttrs.h.inc"

namespace amp::train {

/// Names of the discardable attributes that carry ONNX fields which have no
/// place in MLIR's structure. Every name starts with the dialect prefix.
namespace attrs {
/// Node name (NodeProto.name), on node ops.
inline constexpr llvm::StringLiteral kNodeName = "train.name";
/// Output value names (NodeProto.output), on node ops; "" for an absent
/// optional output. Its length is the node's output count in ONNX.
inline constexpr llvm::StringLiteral kOutputNames = "train.outputs";
/// doc_string of a node, graph, model, function or value.
inline constexpr llvm::StringLiteral kDocString = "train.doc_string";
/// Graph/function argument and result attribute: the ONNX value name.
inline constexpr llvm::StringLiteral kValueName = "train.name";
/// Argument/result/value_info attribute: symbolic dim names ("" = none).
inline constexpr llvm::StringLiteral kDims = "train.dims";
/// Graph argument attribute (unit): train-bind-dims made a symbolic dim of
/// this input static (a batch of data, not a weight).
inline constexpr llvm::StringLiteral kBoundDims = "train.bound_dims";
/// Value info entries of a graph: [{name, type, dims?, doc_string?}].
inline constexpr llvm::StringLiteral kValueInfo = "train.value_info";
/// Metadata properties: [[key, value], ...].
inline constexpr llvm::StringLiteral kMetadataProps = "train.metadata_props";
/// Module-level model fields.
inline constexpr llvm::StringLiteral kIrVersion = "train.ir_version";
inline constexpr llvm::StringLiteral kOpsetImport = "train.opset_import";
inline constexpr llvm::StringLiteral kProducerName = "train.producer_name";
inline constexpr llvm::StringLiteral kProducerVersion =
    "train.producer_version";
inline constexpr llvm::StringLiteral kModelDomain = "train.domain";
inline constexpr llvm::StringLiteral kModelVersion = "train.model_version";
/// ONNX name of a graph (GraphProto.name), on graph ops and, per graph
/// attribute, in kSubgraphs.
inline constexpr llvm::StringLiteral kGraphName = "train.graph_name";
/// On nodes with graph attributes: per region, a dictionary with the
/// subgraph's name, doc string, input/output names and value_info.
inline constexpr llvm::StringLiteral kSubgraphs = "train.subgraphs";
/// On function ops: attribute parameter names, defaults, opset imports.
inline constexpr llvm::StringLiteral kFunctionAttrs = "train.attribute";
inline constexpr llvm::StringLiteral kFunctionAttrDefaults =
    "train.attribute_proto";
/// Number of inputs a node had in ONNX when it differs from what the typed
/// op's operands imply (trailing "" inputs written explicitly).
inline constexpr llvm::StringLiteral kNumInputs = "train.num_inputs";
/// Position of a node in its graph in the file, set only on the nodes of a
/// graph that was not stored in topological order (export restores it).
inline constexpr llvm::StringLiteral kOrder = "train.order";
/// On a value_info entry: the file's type disagrees with the value's, so
/// export writes it unchanged rather than refreshing its element type.
inline constexpr llvm::StringLiteral kKeepType = "train.keep_type";
/// On a value_info entry: the original serialized TypeProto, kept when it
/// says more than the MLIR type (denotations, nested symbolic dims).
inline constexpr llvm::StringLiteral kTypeProto = "train.type_proto";
/// The order of a node's attributes in the file, when it is not sorted by
/// name (export writes them sorted otherwise).
inline constexpr llvm::StringLiteral kAttrOrder = "train.attr_order";
/// Dictionary of ONNX attribute name -> doc_string for node attributes that
/// carried one.
inline constexpr llvm::StringLiteral kAttrDocs = "train.attr_docs";
} // namespace attrs

/// Returns true if `name` is one of the dialect's bookkeeping attributes
/// (everything prefixed "train."), i.e. not an ONNX attribute of the node.
inline bool isBookkeepingAttr(llvm::StringRef name) {
  return name.starts_with("train.");
}

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_TRAINDIALECT_H
