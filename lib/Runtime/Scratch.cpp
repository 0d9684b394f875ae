//===- Scratch.cpp - the CPU kernels' reused f32 buffers ------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// A kernel's f32 copy of an f16/bf16 operand (F32In, F32Out) is as large as
// the operand. A fresh allocation that large is an mmap whose pages fault
// in on their first write and are unmapped again when it is freed: for a
// 4096 x 4096 f16 weight, 64 MB of page faults per GEMM, which made an fp16
// step on the CPU several times the fp32 step. Each thread keeps the
// buffers its kernels gave back (at most kKeepBuffers, kKeepBytes in all,
// the oldest dropped first) and hands out the smallest that fits, so that
// a training step's copies reuse the previous step's pages.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <new>
#include <utility>

using namespace amprt;

namespace {

constexpr size_t kKeepBuffers = 16;
constexpr size_t kKeepBytes = size_t(256) << 20;
constexpr std::align_val_t kAlign{64};

/// A thread's kept buffers: (memory, capacity in floats), oldest first.
struct Kept {
  std::vector<std::pair<float *, size_t>> buffers;
  size_t bytes = 0;

  /// Room for one past the most kept, reserved up front: a buffer given
  /// back (in a destructor, maybe while an exception unwinds) never makes
  /// the vector allocate.
  Kept() { buffers.reserve(kKeepBuffers + 1); }

  void dropOldest() {
    bytes -= buffers.front().second * sizeof(float);
    ::operator delete[](buffers.front().first, kAlign);
    buffers.erase(buffers.begin());
  }
  ~Kept() {
    while (!buffers.empty())
      dropOldest();
  }
};

thread_local Kept kept;

} // namespace

ScratchFloats::ScratchFloats(int64_t n) {
  size_t want = size_t(n > 0 ? n : 1);
  // The smallest kept buffer that fits and wastes at most half of itself.
  size_t best = kept.buffers.size();
  for (size_t i = 0; i < kept.buffers.size(); ++i) {
    size_t c = kept.buffers[i].second;
    if (c >= want && c / 2 <= want &&
        (best == kept.buffers.size() || c < kept.buffers[best].second))
      best = i;
  }
  if (best < kept.buffers.size()) {
    std::tie(p, capacity) = kept.buffers[best];
    kept.bytes -= capacity * sizeof(float);
    kept.buffers.erase(kept.buffers.begin() + std::ptrdiff_t(best));
    return;
  }
  capacity = (want + 15) / 16 * 16;
  p = static_cast<float *>(::operator new[](capacity * sizeof(float), kAlign));
}

ScratchFloats::~ScratchFloats() {
  if (!p)
    return;
  kept.buffers.emplace_back(p, capacity);
  kept.bytes += capacity * sizeof(float);
  while (kept.buffers.size() > kKeepBuffers || kept.bytes > kKeepBytes)
    kept.dropOldest();
}
