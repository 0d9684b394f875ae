//===- TrainBase.td - Train dialect definition -------------*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINBASE_TD
#define AMP_DIALECT_TRAIN_IR_TRAINBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::amp::train";
  let summary = "ONNX training graphs (forward, backward, optimizer) in MLIR";
  let description = [{
    The `train` dialect holds ONNX models losslessly: one op per ONNX operator
    of the default domain, `ai.onnx.preview.training` and the `com.microsoft`
    training ops, a generic `train.node` for anything else, graph inputs as
    block arguments of `train.graph`, initializers as `train.initializer`.
    ONNX names, doc strings and metadata are kept in `train.*` attributes.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // The folds of shape computations (TrainFolders.cpp).
  let hasCanonicalizer = 1;
  let dependentDialects = [];
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

/// An optional ONNX input or output: absent ones are values of NoneType.
def AnyTypeOrNone : Type<CPred<"true">,
                         "any type, or none for an absent optional value">;

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

/// Base class of the ops that stand for one ONNX operator. `domain` is the
/// ONNX domain ("" default), `opType` the ONNX op type and `version` the
/// since_version of the schema the op was generated from. The mnemonic is the
/// op type, prefixed `ms.` for com.microsoft and `preview.` for
/// ai.onnx.preview.training.
class Train_OnnxOp<string domain, string opType, int version,
                   list<string> graphAttrs = [], list<Trait> traits = []>
    : Train_Op<!cond(!eq(domain, ""): "",
                     !eq(domain, "com.microsoft"): "ms.",
                     !eq(domain, "ai.onnx.preview.training"): "preview.",
                     true: domain # ".") # opType,
               !listconcat(traits, [Train_OnnxNodeOpInterface])> {
  string onnxDomain = domain;
  string onnxOpType = opType;
  int onnxVersion = version;
  code onnxExtraClassDeclaration = [{
    static ::llvm::StringRef getOnnxDomainName() { return "}] # domain # [{"; }
    static ::llvm::StringRef getOnnxOpTypeName() { return "}] # opType # [{"; }
    static int64_t getOnnxSchemaVersion() { return }] # version # [{; }
    static ::llvm::SmallVector<::llvm::StringRef> getOnnxGraphAttrNames() {
      return {}] # !interleave(!foreach(g, graphAttrs, "\"" # g # "\""), ", ")
        # [{};
    }
  }];
  let extraClassDeclaration = onnxExtraClassDeclaration;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINBASE_TD
