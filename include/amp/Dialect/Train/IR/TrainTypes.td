//===- TrainTypes.td - Train dialect types and attributes --*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// ONNX value types beyond builtin tensors: sequences, maps, optionals, sparse
// tensors, the string element type and the type of values whose type the
// model does not state.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINTYPES_TD
#define AMP_DIALECT_TRAIN_IR_TRAINTYPES_TD

include "amp/Dialect/Train/IR/TrainBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class Train_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Train_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Train_StringType : Train_Type<"String", "string"> {
  let summary = "ONNX string element type";
}

def Train_UnknownType : Train_Type<"Unknown", "unknown"> {
  let summary = "a value whose type the ONNX model does not state";
}

def Train_SeqType : Train_Type<"Seq", "seq"> {
  let summary = "ONNX sequence type seq(T)";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def Train_OptType : Train_Type<"Opt", "opt"> {
  let summary = "ONNX optional type optional(T)";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def Train_MapType : Train_Type<"Map", "map"> {
  let summary = "ONNX map type map(K, V)";
  let parameters = (ins "::mlir::Type":$keyType, "::mlir::Type":$valueType);
  let assemblyFormat = "`<` $keyType `,` $valueType `>`";
}

def Train_SparseTensorType : Train_Type<"SparseTensor", "sparse_tensor"> {
  let summary = "ONNX sparse tensor type";
  let parameters = (ins "::mlir::Type":$tensorType);
  let assemblyFormat = "`<` $tensorType `>`";
}

class Train_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Train_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Train_RefAttr : Train_Attr<"Ref", "ref"> {
  let summary = "an attribute of a function body node that refers to an "
                "attribute of the enclosing function (ref_attr_name)";
  let parameters = (ins "::mlir::StringAttr":$refName,
                        "uint32_t":$kind);
  let assemblyFormat = "`<` $refName `,` $kind `>`";
}

def Train_SparseTensorAttr : Train_Attr<"SparseTensor", "sparse"> {
  let summary = "an ONNX SparseTensorProto: values, indices and dense dims";
  let parameters = (ins "::mlir::Attribute":$values,
                        "::mlir::Attribute":$indices,
                        "::mlir::DenseI64ArrayAttr":$dims);
  let assemblyFormat = "`<` $values `,` $indices `,` $dims `>`";
}

def Train_TypeProtoAttr : Train_Attr<"TypeProto", "type_proto"> {
  let summary = "a TYPE_PROTO attribute value with the original TypeProto";
  let description = [{
    The MLIR type of an ONNX TypeProto, plus its serialized bytes for what
    the type cannot say (symbolic dims, denotations); export writes the
    bytes.
  }];
  let parameters = (ins "::mlir::TypeAttr":$type, "::mlir::StringAttr":$proto);
  let assemblyFormat = "`<` $type `,` $proto `>`";
}

def Train_TensorAttr : Train_Attr<"Tensor", "tensor"> {
  let summary = "an ONNX TensorProto with its name and doc string";
  let description = [{
    Wraps the tensor data (a builtin elements attribute, usually a
    `dense_resource` for large data) with the TensorProto fields that are not
    data: the tensor's name, doc string, and how the data was stored
    (`raw_data` or the typed field), so export reproduces the proto.
  }];
  let parameters = (ins "::mlir::Attribute":$value,
                        "::mlir::StringAttr":$name,
                        "::mlir::StringAttr":$docString,
                        "bool":$rawStorage);
  let assemblyFormat = "`<` $value `,` $name `,` $docString `,` $rawStorage `>`";
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINTYPES_TD
