//===- BatchSearch.h - the largest batch a training step fits -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run --max-batch: the largest batch whose training step (the training
// and the optimizer program, with the state, the data and the backend's
// workspace) runs within a memory limit, found by running one step per
// probed batch under amprt_set_memory_limit. docs/amp-run.md.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_BATCHSEARCH_H
#define AMP_DRIVER_BATCHSEARCH_H

#include "amp/Driver/Trainer.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>

namespace amp::driver {

struct BatchSearchResult {
  int64_t batch = 0;     ///< the largest batch that fits (0: none)
  uint64_t peak = 0;     ///< its step's peak memory
  int64_t firstMiss = 0; ///< the smallest probed batch that did not fit
  uint64_t limit = 0;    ///< the memory searched within
  unsigned probes = 0;   ///< steps run
};

/// "8GiB", "1.5 GB", "300MiB", "123456": bytes (KiB/MiB/GiB/TiB and K/M/G/T
/// count in 1024s, KB/MB/GB/TB in 1000s); nullopt when not a size.
std::optional<uint64_t> parseByteSize(llvm::StringRef text);

/// Searches the batch of `options` (its model, device, AMP and other
/// settings; its outputs are not written) within `limit` bytes (0: the
/// device's free memory when the search starts). A step that fails for
/// another reason than memory is the error returned.
llvm::Expected<BatchSearchResult> findMaxBatch(const TrainOptions &options,
                                               uint64_t limit,
                                               llvm::raw_ostream &status);

} // namespace amp::driver

#endif // AMP_DRIVER_BATCHSEARCH_H
