//===- Program.h - interpret a lowered module over the runtime ABI -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A Program is one lowered function (convert-train-to-runtime output) made
// ready to run: its arena allocated, its constants copied to the device, and
// each amprt.call turned into a prepared call frame of the kernel named in
// Ops.def. Inputs are bound once (the caller keeps those buffers alive and
// writes them between runs); outputs are read after run().
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_PROGRAM_H
#define AMP_EXECUTION_PROGRAM_H

#include "amp/Runtime/Runtime.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace amp::exec {

/// The amprt dtype of an MLIR element type, or -1.
int32_t dtypeOf(mlir::Type elem);

struct Port {
  std::string name;
  int32_t dtype;
  std::vector<int64_t> shape;
  /// An input the lowering narrowed (kNarrowedFromAttr): the dtype the graph
  /// gives it, whose values the caller rounds into `dtype`; else `dtype`.
  int32_t fedAs = -1;
  size_t bytes() const;
};

class Program {
public:
  ~Program();
  /// Prepares function `funcName` of the lowered `module` for `ctx`.
  /// `inputs[i]` is the data of the i-th argument (caller-owned, live as
  /// long as the Program, of inputs()[i].bytes()).
  static llvm::Expected<std::unique_ptr<Program>>
  create(mlir::ModuleOp module, llvm::StringRef funcName, amprt_context *ctx);

  const std::vector<Port> &inputs() const { return inputPorts; }
  const std::vector<Port> &outputs() const { return outputPorts; }
  int findInput(llvm::StringRef name) const;
  int findOutput(llvm::StringRef name) const;

  /// Binds the data of input `i` (all must be bound before run()).
  void bind(unsigned i, void *data);
  /// The data bound to input `i` (null before bind()).
  void *inputData(unsigned i) const;
  /// Runs every call in order; the first failing kernel is an error naming
  /// the node and the runtime's message.
  llvm::Error run();

  // --- one call at a time (amp-run --localize-nonfinite) ------------------
  /// One tensor a call names: its descriptor (data bound), the name of its
  /// kernel parameter, whether the call reads it (all but a temporary's
  /// first naming, which writes it) and writes it (that first naming, a
  /// parameter updated in place, a buffer named twice), and the input it
  /// is (-1: a temporary or a constant).
  struct CallTensor {
    const amprt_tensor *tensor;
    std::string param;
    bool read, written;
    int input;
    /// The ONNX value it holds: an input's name, a temporary's
    /// `amprt.value`; empty for a constant or a workspace.
    std::string value;
  };
  struct CallInfo {
    std::string node;   ///< the ONNX node (amprt.call's `node`)
    std::string kernel; ///< without the amprt_ prefix
    std::vector<CallTensor> tensors;
  };
  /// What call `i` (in run order) names.
  const CallInfo &callInfo(size_t i) const;
  /// Runs call `i` alone; run() is runCall(0..numCalls()-1).
  llvm::Error runCall(size_t i);
  /// Runs call `i` alone with the data of some of its tensors replaced,
  /// for this call only: data[k], when not null, for callInfo(i).tensors[k]
  /// (a rerun that neither reads nor overwrites the run's buffers).
  llvm::Error runCallWith(size_t i, llvm::ArrayRef<void *> data);
  /// The inputs some call writes in place (accumulators, running
  /// statistics, optimizer state): a rerun of the program needs them as
  /// they were.
  std::vector<unsigned> inputsWrittenInPlace() const;
  /// Data of output `i` after run() (arena memory or a bound input).
  void *output(unsigned i) const;
  size_t arenaBytes() const { return arenaSize; }
  size_t numCalls() const;

  struct Impl;

private:
  Program() = default;
  std::unique_ptr<Impl> impl;
  std::vector<Port> inputPorts, outputPorts;
  size_t arenaSize = 0;
};

} // namespace amp::exec

#endif // AMP_EXECUTION_PROGRAM_H
