//===- FoldTransposes.cpp - transposes into GEMM operand flags ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Exported models multiply by transposed weights (a Linear layer is
// MatMul(x, Transpose(W))), and their gradient graphs transpose the weight
// gradient back (Transpose(MatMul(...))). Planned as written, each is a copy
// of the matrix and a launch, every step. The GEMM kernels take the
// transposition as a flag instead:
//
//   transpose(x) -> t, read only as a product's operand:
//       the product reads x with that operand's trans flag flipped;
//   a product -> y, read only by transpose(y) -> z:
//       z = (A B)^T = B^T A^T, one product with the operands swapped.
//
// Only transposes of the last two dims (leading dims in place) fold: the
// products are matrix products over the last two dims, batched over the
// rest. The same products are summed in the same order, so the results are
// bit-identical on the CPU backend; cuBLASLt may pick another algorithm for
// the other layout.
//
// The pattern matches an `amprt.call "transpose"` swapping the last two
// dims whose input x and output t no call writes in place and whose output
// is a temporary:
//  * operand side: every call naming t but the transpose is a matmul,
//    fused_matmul or gemm reading it as a or b (both of rank >= 2: matmul's
//    1-D promotion is no flag), and t is no graph output; each such product
//    becomes one reading x with that flag flipped (fused_matmul for a
//    matmul, gemm for a gemm, in its place), the transpose goes;
//  * result side: x is a temporary, no graph output, named by two calls:
//    the transpose and an earlier product writing it as y (a gemm without
//    c); the product becomes one with the operands swapped writing z in its
//    place (z may be a graph output), the transpose goes.
// A product can be rewritten twice, an operand and then its result: the
// second rewrite starts from the first one's flags. The decisions are
// those of one walk over the calls in order, on the buffers written in
// place before the fusion (a product reading x^T and x becomes one naming
// x twice, which counts as a write afterwards).
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "FusePatterns.h"
#include "Products.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// A transpose of the last two dims of a rank >= 2 tensor.
bool swapsLastTwo(amprt::CallOp transpose) {
  auto perm = transpose->getAttrOfType<DenseI64ArrayAttr>("perm");
  if (!perm || perm.size() < 2)
    return false;
  ArrayRef<int64_t> p = perm.asArrayRef();
  int64_t r = p.size();
  for (int64_t i = 0; i + 2 < r; ++i)
    if (p[i] != i)
      return false;
  return p[r - 2] == r - 1 && p[r - 1] == r - 2;
}

struct FoldTranspose : CallPattern {
  explicit FoldTranspose(MLIRContext *ctx) : CallPattern(ctx, "transpose") {}

  LogicalResult rewriteCall(amprt::CallOp t,
                            PatternRewriter &rewriter) const override {
    if (!swapsLastTwo(t))
      return failure();
    Value x = t.getSingleTensor("x"), y = t.getSingleTensor("y");
    if (!x || !y || !isTemporary(y))
      return failure();
    const llvm::DenseSet<Value> &written = writtenAtStart(t);
    if (written.contains(y) || written.contains(x))
      return failure();

    // Operand side: every reader of y is a product reading it as a or b.
    SmallVector<BufferUse, 4> readers;
    bool operands = true;
    for (const BufferUse &use : bufferUses(y)) {
      if (use.call == t)
        continue;
      operands = operands && isProduct(use.call) && productOf(use.call) &&
                 (use.param == "a" || use.param == "b");
      readers.push_back(use);
    }
    if (operands && !readers.empty() && !isReturned(y)) {
      for (const BufferUse &use : readers) {
        Product p = *productOf(use.call);
        if (use.param == "a") {
          p.a = x;
          p.ta = !p.ta;
        } else {
          p.b = x;
          p.tb = !p.tb;
        }
        replaceProduct(rewriter, use.call, p);
      }
      rewriter.eraseOp(t);
      return success();
    }

    // Result side: x is a product's result read only by this transpose,
    // which the product can write in its place (a graph output too).
    if (!isTemporary(x) || isReturned(x))
      return failure();
    SmallVector<BufferUse, 4> xs = bufferUses(x);
    if (xs.size() != 2)
      return failure();
    amprt::CallOp producer;
    for (const BufferUse &use : xs)
      if (use.call != t && isProduct(use.call) && use.param == "y")
        producer = use.call;
    if (!producer || !producer->isBeforeInBlock(t))
      return failure();
    std::optional<Product> p = productOf(producer);
    if (!p || p->c)
      return failure();
    Product q = *p;
    q.a = p->b;
    q.b = p->a;
    q.ta = !p->tb;
    q.tb = !p->ta;
    q.y = y;
    replaceProduct(rewriter, producer, q);
    rewriter.eraseOp(t);
    return success();
  }

private:
  /// The buffers some call of `op`'s function wrote in place
  /// (isWrittenInPlace) before the fusion, taken on the pattern's first
  /// match in the function: this pattern, the only one of its set, has
  /// changed nothing there yet. A product made here may name a buffer twice
  /// (fused_matmul(x, x) for x^T x), which must not block the transposes
  /// after it.
  const llvm::DenseSet<Value> &writtenAtStart(amprt::CallOp op) const {
    Operation *func = op->getParentOp();
    auto [it, fresh] = writtenBefore.try_emplace(func);
    llvm::DenseSet<Value> &written = it->second;
    if (fresh)
      func->walk([&](amprt::CallOp call) {
        for (auto [i, buffer] : llvm::enumerate(call.getTensors()))
          if (call.writesInPlace(i))
            written.insert(buffer);
      });
    return written;
  }
  mutable llvm::DenseMap<Operation *, llvm::DenseSet<Value>> writtenBefore;
};

} // namespace

void amp::lowering::populateFoldTransposesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FoldTranspose>(patterns.getContext());
}
