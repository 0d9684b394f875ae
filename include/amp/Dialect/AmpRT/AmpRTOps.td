//===- AmpRTOps.td - the amprt dialect: calls of the runtime ABI -*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_AMPRT_AMPRTOPS_TD
#define AMP_DIALECT_AMPRT_AMPRTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"

def AmpRT_Dialect : Dialect {
  let name = "amprt";
  let cppNamespace = "::amp::amprt";
  let summary = "calls of the amp runtime C ABI (include/amp/Runtime/Ops.def)";
  let description = [{
    The target of `convert-train-to-runtime`: one op, `amprt.call`, that
    stands for one call of an `amprt_<kernel>` function of the runtime ABI on
    memref buffers. Everything else of a lowered module is upstream MLIR
    (`func`, `memref`, `arith`).
  }];
}

def AmpRT_CallOp : Op<AmpRT_Dialect, "call"> {
  let summary = "one call of `amprt_<kernel>(ctx, ...)`";
  let description = [{
    Calls the runtime kernel `kernel` (an entry of Ops.def). The memref
    operands are the kernel's tensor parameters in Ops.def order;
    `counts` holds, per tensor parameter, how many operands it takes: 0 for
    NULL (an absent optional tensor), 1 for a tensor, k for an array of k
    tensors (`const amprt_tensor *` + count). Every other parameter except
    `ctx` is an attribute named after the parameter: `i32`/`i64` integer
    attributes for `int32_t`/`int64_t`/`uint64_t`, `f32`/`f64` float
    attributes for `float`/`double`, a dense i64 array for `const int64_t *`,
    a dictionary for `const amprt_window *`. The verifier checks all of this
    against Ops.def. `node` names the ONNX node the call came from.

    ```mlir
    amprt.call "gemm"(%x, %w, %b, %y) {counts = array<i64: 1, 1, 1, 1>,
        trans_a = 0 : i32, trans_b = 1 : i32, alpha = 1.0 : f32,
        beta = 1.0 : f32, node = "/0/Gemm"}
        : memref<4x64xf32>, memref<32x64xf32>, memref<32xf32>, memref<4x32xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyMemRef>:$tensors,
                       DenseI64ArrayAttr:$counts);
  let assemblyFormat = [{
    $kernel `(` $tensors `)` attr-dict (`:` type($tensors)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel's Ops.def entry (null only before the verifier ran).
    const ::amp::amprt::KernelSignature *getSignature();
    /// The operands of tensor parameter `name` (empty when the parameter is
    /// absent, count 0, or the kernel has no such parameter).
    ::mlir::OperandRange getTensorParam(::llvm::StringRef name);
    /// The one operand of tensor parameter `name`, or null (absent, a list,
    /// or no such parameter).
    ::mlir::Value getSingleTensor(::llvm::StringRef name);
    /// The name of the tensor parameter that operand `operandIndex` is (one
    /// of) the tensors of.
    ::llvm::StringRef getTensorParamName(unsigned operandIndex);
    /// Whether the call writes operand `operandIndex`'s buffer over what it
    /// held: a parameter updated in place (isInPlaceParam), or a buffer the
    /// call names twice (an output over an input, "may alias").
    bool writesInPlace(unsigned operandIndex);
  }];
}

#endif // AMP_DIALECT_AMPRT_AMPRTOPS_TD
