//===- KernelABI.h - the runtime kernels of Ops.def as data -------*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The parameter lists of every `amprt_*` kernel, read from
// include/amp/Runtime/Ops.def (the only place the ABI is spelled out). The
// lowering and the amprt.call verifier use it to name and check parameters;
// the interpreter (lib/Execution) uses it to build call frames.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_AMPRT_KERNELABI_H
#define AMP_DIALECT_AMPRT_KERNELABI_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace amp::amprt {

/// The C type of one kernel parameter.
enum class ParamKind {
  Context,  ///< amprt_context *
  Tensor,   ///< const amprt_tensor * (one, an array, or NULL)
  I32,      ///< int32_t
  I64,      ///< int64_t
  U64,      ///< uint64_t
  F32,      ///< float
  F64,      ///< double
  I64Array, ///< const int64_t *
  Window,   ///< const amprt_window *
};

/// The `op` of the collective kernels: amprt_reduce_op of Runtime.h, whose
/// values are part of the ABI (the lowering sees the ABI through Ops.def
/// only).
enum class ReduceOp : int32_t { Sum = 0, Avg = 1, Min = 2, Max = 3 };

struct KernelParam {
  std::string name;
  ParamKind kind;
};

struct KernelSignature {
  std::string name;                          ///< without the amprt_ prefix
  std::string kind;                          ///< UNARY, BINARY, GRAD, SPECIAL
  llvm::SmallVector<KernelParam, 12> params; ///< ctx first
  unsigned numTensorParams() const;
  const KernelParam *find(llvm::StringRef name) const;
};

/// Every kernel of Ops.def, in file order.
llvm::ArrayRef<KernelSignature> allKernels();
/// The kernel named `name` (no prefix), or nullptr.
const KernelSignature *lookupKernel(llvm::StringRef name);

/// Whether tensor parameter `param` of `kernel` is updated in place: read
/// and written by the call (the optimizers' parameters and moments, the
/// accumulators, the multi-tensor checks' flag that a call with reset = 0
/// ANDs into, the loss scaler's state). A buffer passed there holds another
/// value after the call.
bool isInPlaceParam(llvm::StringRef kernel, llvm::StringRef param);

} // namespace amp::amprt

#endif // AMP_DIALECT_AMPRT_KERNELABI_H
