//===- TrainInterfaces.td - Train dialect interfaces -------*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAININTERFACES_TD
#define AMP_DIALECT_TRAIN_IR_TRAININTERFACES_TD

include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// The ONNX node interface: every op that stands for one ONNX node.
//===----------------------------------------------------------------------===//

def Train_OnnxNodeOpInterface : OpInterface<"OnnxNodeOpInterface"> {
  let cppNamespace = "::amp::train";
  let description = [{
    An op that stands for one ONNX node. Gives its ONNX domain, op_type and,
    for typed ops, the since_version of the schema the op was generated from.
    The schema (inputs, outputs, attributes, type constraints) is looked up in
    the schema tables of `OnnxSchema.h`.
  }];
  let methods = [
    InterfaceMethod<"ONNX domain (\"\" for the default domain).",
      "::llvm::StringRef", "getOnnxDomain", (ins), [{}],
      [{ return ConcreteOp::getOnnxDomainName(); }]>,
    InterfaceMethod<"ONNX op_type.",
      "::llvm::StringRef", "getOnnxOpType", (ins), [{}],
      [{ return ConcreteOp::getOnnxOpTypeName(); }]>,
    InterfaceMethod<[{since_version of the schema this op was generated from
      (typed ops), or -1 (generic op: the opset import decides).}],
      "int64_t", "getOnnxSinceVersion", (ins), [{}],
      [{ return ConcreteOp::getOnnxSchemaVersion(); }]>,
    InterfaceMethod<[{Names of the ONNX attributes of this node that are held
      as regions (graph attributes), in region order.}],
      "::llvm::SmallVector<::llvm::StringRef>", "getGraphAttrNames", (ins),
      [{}], [{ return ConcreteOp::getOnnxGraphAttrNames(); }]>,
  ];
  let verify = [{ return ::amp::train::verifyOnnxNode($_op); }];
}

#endif // AMP_DIALECT_TRAIN_IR_TRAININTERFACES_TD
