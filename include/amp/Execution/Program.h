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
  /// Runs every call in order; the first failing kernel is an error naming
  /// the node and the runtime's message.
  llvm::Error run();
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
