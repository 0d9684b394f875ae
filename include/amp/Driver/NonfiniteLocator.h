//===- NonfiniteLocator.h - the first call that made a non-finite value -*- C++
//-*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run --localize-nonfinite: when a step's loss or all-finite flag shows
// a non-finite value, the step runs again call by call, every value a call
// reads checked before it and every value it writes checked after it. The
// first call that writes a NaN or an infinity from finite inputs made it;
// a graph input that is non-finite before any call (bad data, or weights an
// earlier optimizer step made non-finite) is named instead.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_NONFINITELOCATOR_H
#define AMP_DRIVER_NONFINITELOCATOR_H

#include "amp/Driver/TensorRange.h"
#include "amp/Execution/Program.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace amp::driver {

struct NonfiniteSource {
  /// Nothing non-finite was seen (a flag computed otherwise).
  bool found = false;
  /// A graph input non-finite before any call: its name (else empty).
  std::string input;
  TensorRange inputRange;
  /// Else the call that made it, in run order.
  size_t call = 0;
  std::string node, kernel;
  struct Operand {
    std::string param;
    bool read, written;
    const amprt_tensor *tensor;
    TensorRange before, after; ///< before the call if read; after if written
  };
  std::vector<Operand> operands;
};

/// Runs every call of `prog` in order (the step's results are what run()
/// gives), checking as described above until the source is found.
llvm::Expected<NonfiniteSource> localizeNonfinite(exec::Program &prog,
                                                  amprt_context *ctx);

/// Says where the non-finite value came from: the node (its op type from
/// `opTypes`; forward or backward by ORT's gradient names, or `optimizer`'s
/// program), the kernel and
/// the range of each tensor the call read and wrote; or the input.
void printNonfiniteSource(llvm::raw_ostream &os, const NonfiniteSource &src,
                          const llvm::StringMap<std::string> &opTypes,
                          size_t numCalls, bool optimizer = false);

} // namespace amp::driver

#endif // AMP_DRIVER_NONFINITELOCATOR_H
