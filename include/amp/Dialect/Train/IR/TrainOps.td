//===- TrainOps.td - Train dialect ops ---------------------*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The structural ops of the train dialect (graph, initializer, return, none,
// generic node, function) and, included at the end, one op per ONNX operator.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINOPS_TD

include "amp/Dialect/Train/IR/TrainBase.td"
include "amp/Dialect/Train/IR/TrainTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

//===----------------------------------------------------------------------===//
// train.graph
//===----------------------------------------------------------------------===//

def Train_GraphOp : Train_Op<"graph", [
    FunctionOpInterface, IsolatedFromAbove, Symbol, OpAsmOpInterface]> {
  let summary = "the main graph of an ONNX model";
  let description = [{
    An ONNX GraphProto. Block arguments are the graph inputs (argument
    attribute `train.name` holds the ONNX name, `train.dims` the symbolic dim
    names); `train.return` gives the graph outputs (result attributes
    `train.name`, `train.dims`). Initializers are `train.initializer` ops in the
    body. ONNX does not require nodes in topological order; the importer sorts
    them (and rejects cycles), so the body is an ordinary SSA region.

    Graph-level ONNX fields live in discardable attributes: `train.doc_string`,
    `train.value_info` (value_info entries in their original order),
    `train.metadata_props`.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region AnyRegion:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    static ::llvm::StringRef getDefaultDialect() { return "train"; }
  }];
}

//===----------------------------------------------------------------------===//
// train.function
//===----------------------------------------------------------------------===//

def Train_FunctionOp : Train_Op<"function", [
    FunctionOpInterface, IsolatedFromAbove, Symbol, OpAsmOpInterface]> {
  let summary = "an ONNX model-local function (FunctionProto)";
  let description = [{
    A FunctionProto. `domain` and `onnx_name` identify it (nodes call it with
    op_type = `onnx_name` in `domain`); the symbol name is unique in the
    module. Inputs are block arguments (types are `!train.unknown` unless
    the model says more); `attribute` lists the attribute parameters,
    `attribute_proto` those with default values.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       StrAttr:$domain,
                       StrAttr:$onnx_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region AnyRegion:$body);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    static ::llvm::StringRef getDefaultDialect() { return "train"; }
  }];
}

//===----------------------------------------------------------------------===//
// train.return
//===----------------------------------------------------------------------===//

def Train_ReturnOp : Train_Op<"return", [Pure, Terminator, ReturnLike]> {
  let summary = "the outputs of a graph, subgraph or function";
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

//===----------------------------------------------------------------------===//
// train.initializer
//===----------------------------------------------------------------------===//

def Train_InitializerOp : Train_Op<"initializer", [Pure]> {
  let summary = "an ONNX initializer (a named constant tensor of a graph)";
  let description = [{
    `value` holds the data: an elements attribute (inline `dense<...>` for
    small tensors, `dense_resource<...>` for large ones, which stay out of the
    IR text body) or `#train.sparse<...>` for a sparse initializer. `name` is
    the ONNX tensor name. `raw` says whether the data was stored in
    `raw_data` (true) or in the typed field, so export reproduces the proto.
    `external` keeps the external-data key/value pairs the model gave, if any.
  }];
  let arguments = (ins StrAttr:$name, AnyAttr:$value,
                       UnitAttr:$raw, UnitAttr:$sparse,
                       OptionalAttr<StrAttr>:$doc_string,
                       OptionalAttr<ArrayAttr>:$external);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// train.none
//===----------------------------------------------------------------------===//

def Train_NoneOp : Train_Op<"none", [Pure]> {
  let summary = "an absent optional input (ONNX input name \"\")";
  let results = (outs NoneType:$result);
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// train.node
//===----------------------------------------------------------------------===//

def Train_NodeOp : Train_Op<"node", [
    DeclareOpInterfaceMethods<Train_OnnxNodeOpInterface, [
      "getOnnxDomain", "getOnnxOpType", "getOnnxSinceVersion",
      "getGraphAttrNames"]>]> {
  let summary = "any ONNX node: unknown domains, custom ops, function calls";
  let description = [{
    A node that has no typed op (another domain, a call of a model-local
    function, a version whose signature differs from the typed op, or a node
    whose attributes refer to function attributes). `domain` and `op_type`
    name the operator; `attrs` holds its ONNX attributes (ONNX attribute name
    -> value); graph attributes are the regions, in the order named by
    `graph_attrs`.
  }];
  let arguments = (ins Variadic<AnyType>:$inputs,
                       StrAttr:$domain, StrAttr:$op_type,
                       DictionaryAttr:$attrs,
                       StrArrayAttr:$graph_attrs);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region VariadicRegion<AnyRegion>:$graphs);
  let hasVerifier = 1;
}

include "amp/Dialect/Train/IR/TrainOnnxOps.td"
include "amp/Dialect/Train/IR/TrainMicrosoftOps.td"

#endif // AMP_DIALECT_TRAIN_IR_TRAINOPS_TD
