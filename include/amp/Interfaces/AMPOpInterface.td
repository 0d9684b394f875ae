//===- AMPOpInterface.td - AMP on any dialect --------------*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INTERFACES_AMPOPINTERFACE
#define AMP_INTERFACES_AMPOPINTERFACE

include "mlir/IR/OpBase.td"

def AMPOpInterface : OpInterface<"AMPOpInterface"> {
  let description = [{
    What the auto-mixed-precision pass needs to know of an op of any dialect
    to paint it: which operands and results share one element type (one
    "type constraint", a vertex of the painting graph), whether the op can
    run in a given low-precision type, what to update inside the op after
    its types changed, and how to build a cast next to it. Upstream dialects
    get it through external models (amp::registerAMPExternalModels); the
    op-list key of an op is `<dialect>:<op name>`, e.g. `linalg:matmul`.
  }];
  let cppNamespace = "::amp";

  let methods = [
    InterfaceMethod<[{
        Appends the groups of operand and result indices that must share one
        element type. Ports in no group keep their types.
      }], "void", "getAMPTypeGroups",
      (ins "::llvm::SmallVectorImpl<::amp::AMPTypeGroup> &":$groups)>,
    InterfaceMethod<[{
        Whether the ports of `group` may all take element type `type`.
      }], "bool", "canUseAMPType",
      (ins "const ::amp::AMPTypeGroup &":$group, "::mlir::Type":$type), "",
      [{ return true; }]>,
    InterfaceMethod<[{
        Called after the ports of `group` changed element type to `type`,
        to update what the op holds besides its ports (e.g. a linalg body).
      }], "void", "updateAfterAMPTypeChange",
      (ins "const ::amp::AMPTypeGroup &":$group, "::mlir::Type":$type), "",
      [{ return; }]>,
    InterfaceMethod<[{
        Builds a cast of `value` to element type `type` (same shape) for this
        op to consume; the default is `arith.extf` / `arith.truncf`.
      }], "::mlir::Value", "buildAMPCast",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::Value":$value, "::mlir::Type":$type), "",
      [{ return ::amp::buildArithAMPCast(builder, loc, value, type); }]>,
  ];
}

#endif // AMP_INTERFACES_AMPOPINTERFACE
