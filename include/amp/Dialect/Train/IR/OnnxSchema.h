//===- OnnxSchema.h - ONNX operator schema tables ---------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Plain-data tables describing ONNX operator schemas: inputs, outputs,
// attributes and type constraints, per (domain, op_type, since_version).
// The default-domain and ai.onnx.preview.training tables are generated from
// `onnx.defs` by utils/gen_onnx_ods.py; com.microsoft entries are written by
// hand. The importer uses them to type-check nodes, the AMP pass to know which
// ports share a type constraint.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_ONNXSCHEMA_H
#define AMP_DIALECT_TRAIN_IR_ONNXSCHEMA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace amp::train {

/// Attribute kinds; values equal onnx::AttributeProto::AttributeType.
enum class OnnxAttrKind : uint8_t {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};

/// How many values a formal parameter takes.
enum class OnnxParamOption : uint8_t { Single, Optional, Variadic };

/// One formal input or output.
struct OnnxParamSchema {
  const char *name;
  /// A type-constraint name such as "T", or a literal type string such as
  /// "tensor(int64)" for fixed-type ports.
  const char *typeStr;
  OnnxParamOption option;
  /// For variadic parameters: whether all values share one type.
  bool homogeneous;
  /// For variadic parameters: minimum number of values.
  int minArity;
};

struct OnnxAttrSchema {
  const char *name;
  OnnxAttrKind kind;
  bool required;
};

/// A type constraint ("T") and the ONNX type strings it allows
/// ("tensor(float16)", "seq(tensor(float))", ...).
struct OnnxTypeConstraintSchema {
  const char *name;
  const char *const *allowedTypes;
  unsigned numAllowedTypes;
  llvm::ArrayRef<const char *> getAllowedTypes() const {
    return {allowedTypes, numAllowedTypes};
  }
};

/// One version of one operator.
struct OnnxOpSchema {
  const char *domain; ///< "" for the default ONNX domain.
  const char *opType;
  int sinceVersion;
  /// True when this version has the same inputs, outputs and attributes as
  /// the newest version, i.e. nodes of this version import as the typed op.
  bool matchesTypedOp;
  const OnnxParamSchema *inputs;
  unsigned numInputs;
  const OnnxParamSchema *outputs;
  unsigned numOutputs;
  const OnnxAttrSchema *attrs;
  unsigned numAttrs;
  const OnnxTypeConstraintSchema *constraints;
  unsigned numConstraints;

  llvm::ArrayRef<OnnxParamSchema> getInputs() const {
    return {inputs, numInputs};
  }
  llvm::ArrayRef<OnnxParamSchema> getOutputs() const {
    return {outputs, numOutputs};
  }
  llvm::ArrayRef<OnnxAttrSchema> getAttrs() const { return {attrs, numAttrs}; }
  llvm::ArrayRef<OnnxTypeConstraintSchema> getConstraints() const {
    return {constraints, numConstraints};
  }
  const OnnxAttrSchema *findAttr(llvm::StringRef name) const;
  const OnnxTypeConstraintSchema *findConstraint(llvm::StringRef name) const;
  /// Min/max number of inputs/outputs a node of this schema may have
  /// (max is -1 when the last parameter is variadic).
  int getMinInputs() const;
  int getMaxInputs() const;
  int getMinOutputs() const;
  int getMaxOutputs() const;
  /// The formal parameter that actual input/output `index` binds to.
  const OnnxParamSchema *getInputParam(unsigned index) const;
  const OnnxParamSchema *getOutputParam(unsigned index) const;
};

/// Normalizes domain aliases: "ai.onnx" -> "".
llvm::StringRef normalizeOnnxDomain(llvm::StringRef domain);

/// The schema that a node of `opType` in `domain` resolves to under opset
/// version `opsetVersion` (the newest schema with since_version <= it), or
/// nullptr if the operator is unknown in that domain/version.
const OnnxOpSchema *lookupOnnxSchema(llvm::StringRef domain,
                                     llvm::StringRef opType,
                                     int64_t opsetVersion);

/// The newest schema of `opType` in `domain`, or nullptr.
const OnnxOpSchema *lookupLatestOnnxSchema(llvm::StringRef domain,
                                           llvm::StringRef opType);

/// The next version of the same operator after `schema` (the schema with the
/// smallest since_version above it), or nullptr if `schema` is the newest.
const OnnxOpSchema *lookupNextOnnxSchema(const OnnxOpSchema &schema);

/// True for schemas generated from the ONNX operator definitions (enforced
/// on import), false for the hand-written ONNX Runtime ones (advisory: a
/// node that does not fit one imports as a generic node).
bool isStandardOnnxSchema(const OnnxOpSchema &schema);

/// All schemas known to the build (all versions, all domains).
llvm::ArrayRef<OnnxOpSchema> getAllOnnxSchemas();

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_IR_ONNXSCHEMA_H
