//===- PlannedProgram.h - a lowered step as buffers and calls ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Conversion/TrainToRuntime: one lowered function as data,
// numbered buffers (arguments, constants, temporaries) and the planned
// `amprt.call`s on them, with the rewrites that run on it and its two IR
// forms (ProgramIR.cpp):
//  * unplanned (what `convert-train-to-amprt` writes and `amprt-fuse`
//    rewrites): every temporary its own `memref.alloc` tagged with its
//    arena role, the function tagged `amprt.unplanned`;
//  * planned (what `amprt-plan-buffers` writes): the temporaries placed in
//    one arena, `memref.view`s of one `memref.alloc`.
// Reading an unplanned function back gives the buffers in the order they
// were written, so the passes between compose to what one walk would do.
// The rewrites, one file each:
//   ScheduleCalls.cpp   calls moved earlier where the step then holds less
//   RematerializeCasts.cpp  a cast's late readers get a fresh cast instead
//                       of its copy being kept alive across the step
//   AliasReshapes.cpp   reshapes as views of their input, not copies
//   ReuseInputs.cpp     elementwise outputs over a dying input's memory
//   PlanArena.cpp       liveness and placement of temporaries in one arena
//   PlannedCalls.cpp    the planned calls as data: parameters, in-place
//                       writes, new calls for the rewrites
// amprt-fuse's fusions are rewrite patterns on the unplanned form's
// calls (FusePatterns.h).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_CONVERSION_TRAINTORUNTIME_PLANNEDPROGRAM_H
#define AMP_LIB_CONVERSION_TRAINTORUNTIME_PLANNEDPROGRAM_H

#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/KernelABI.h"
#include "amp/Dialect/AmpRT/LoweredForm.h"
#include "amp/Dialect/Train/IR/HostEvaluation.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>

namespace amp::lowering {

using namespace mlir;
using namespace amp::train;
using amp::amprt::KernelParam;
using amp::amprt::KernelSignature;
using amp::amprt::ParamKind;

using Shape = SmallVector<int64_t, 4>;

struct Buffer {
  enum Kind { Arg, Const, Temp } kind = Temp;
  /// What a temporary holds, for the arena's split (amp-run reports it):
  /// a node output that is a gradient (ORT names them `<x>_grad...`) or an
  /// activation, a cast of a graph input of static shape (AMP's 16-bit
  /// weights; a batch of data has a symbolic dim), or
  /// an intermediate of a lowering (no ONNX value).
  enum Role { Activation, Gradient, WeightCopy, Workspace } role = Workspace;
  unsigned argIndex = 0;
  /// An Arg with a symbolic dim (bound by `dims`): a batch of data, not a
  /// weight.
  bool boundDims = false;
  ElementsAttr value; // Const
  Shape shape;
  Type elem;
  int64_t offset = 0;
  int first = -1, last = -1; // call indices (Temp)
  /// A Temp that is another Temp's memory seen with another shape (a
  /// reshape, AliasReshapes.cpp): the buffer it aliases, else -1.
  int aliasOf = -1;
  /// An aliasOf made by AliasReshapes: the reshape's call is gone, so no
  /// call writes this view first (kAliasAttr); ReuseInputs' aliases are
  /// written by their call.
  bool reshapeView = false;
  /// The ONNX value a Temp holds (the node output it was made for;
  /// kValueAttr), or empty.
  std::string name;
  /// A Const made by constBuffer(): one per distinct value, which later
  /// constBuffer() calls (the rewrites') share (kSharedConstAttr).
  bool shared = false;
  int64_t bytes() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    unsigned bits = elem.isInteger(1) ? 8 : elem.getIntOrFloatBitWidth();
    return n * int64_t((bits + 7) / 8);
  }
};

struct PlannedCall {
  const KernelSignature *sig;
  SmallVector<SmallVector<int, 1>> tensors; // per tensor param
  NamedAttrList attrs;
  Location loc;
};

/// One named tensor argument of a planned call: a buffer, a list, or absent.
struct TArg {
  std::string name;
  SmallVector<int, 1> bufs;
};

/// Whether `kernel` is elementwise float math (Ops.def's Elementwise.cpp
/// entries): each output element from the inputs' elements at its
/// (broadcast) position, read in any of f32/f16/bf16, computed in f32 and
/// rounded once into the output's float dtype, and the output may alias an
/// input ("may alias"). The unary float ops, the activation gradients, the
/// float binary ops and sum; not the shape kernels that share their
/// parameter lists (matmul, expand, reshape, pooling, size).
bool isElementwiseFloat(StringRef kernel);

/// The largest buffer the lowering plans (bytes): beyond any device, and
/// small enough that an arena of many such buffers cannot overflow int64.
constexpr int64_t kMaxBufferBytes = int64_t(1) << 48;

/// Whether `shape` has no negative dim and holds at most kMaxBufferBytes of
/// 8-byte elements (no overflow on the way).
inline bool fitsInMemory(ArrayRef<int64_t> shape) {
  int64_t bytes = 8;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes) ||
        bytes > kMaxBufferBytes)
      return false;
  return true;
}

/// The attribute of an unplanned function's memref.global that
/// constBuffer() made (unit; PlannedProgram::constBuffers after a read).
inline constexpr const char *kSharedConstAttr = "amprt.shared_const";
/// The attribute of an unplanned function (unit).
inline constexpr const char *kUnplannedAttr = "amprt.unplanned";
/// The attribute of an unplanned temporary's `memref.alloc`: its
/// Buffer::Role, one of kArenaRoles.
inline constexpr const char *kRoleAttr = "amprt.role";

/// One lowered function: its buffers, calls, arguments and results, and the
/// rewrites of its calls.
class PlannedProgram {
public:
  explicit PlannedProgram(MLIRContext *ctx) : ctx(ctx) {}
  PlannedProgram(const PlannedProgram &) = default;
  PlannedProgram(PlannedProgram &&) = default;
  PlannedProgram &operator=(const PlannedProgram &) = default;
  PlannedProgram &operator=(PlannedProgram &&) = default;
  virtual ~PlannedProgram() = default;

  /// Reads an unplanned function (kUnplannedAttr): an error at the op that
  /// is not of that form.
  static FailureOr<PlannedProgram> read(func::FuncOp func);
  /// Writes the program as `func.func @name` at `builder`'s point, with its
  /// constants as `memref.global`s before it: unplanned (each temporary a
  /// tagged `memref.alloc`), or planned (call planArena first: the
  /// temporaries are views of one arena).
  func::FuncOp write(OpBuilder &builder, StringRef name, Location loc,
                     bool planned, int64_t arenaBytes = 0,
                     const int64_t *split = nullptr);

  /// `c` as an `amprt.call` at `builder`'s point, on the values of its
  /// buffers (`values`, by buffer number).
  static amprt::CallOp writeCall(OpBuilder &builder, const PlannedCall &c,
                                 ArrayRef<Value> values);
  /// f32 data inputs that are only cast to one 16-bit type taken in that
  /// type (NarrowInputs.cpp); `isData` says which arguments are data (a
  /// dim bound by `dims`), not weights.
  void narrowDataInputs(function_ref<bool(unsigned argIndex)> isData);
  /// Drops the reshape calls whose output can share its input's memory.
  void aliasReshapes();
  /// Elementwise outputs written over a dying input (ReuseInputs.cpp).
  void reuseInputs();
  /// Moves calls earlier where that lowers the step's peak memory
  /// (ScheduleCalls.cpp); with `pullAlong`, a moved group also takes the
  /// dependencies of its dependents that can come along. Returns whether a
  /// group took one along (else the order is the one without pullAlong).
  bool scheduleForMemory(bool pullAlong = true);
  /// Casts again where a cast's copy would otherwise stay alive, unused,
  /// between far-apart readers (RematerializeCasts.cpp).
  void rematerializeCasts();
  /// Liveness and offsets of the temporaries in one arena (PlanArena.cpp):
  /// its size, and the bytes alive at its peak by Buffer::Role. With
  /// `keepAll`, every temporary that holds an ONNX value lives to the end.
  void planArena(int64_t &arenaBytes, int64_t split[4], bool keepAll = false);

  /// The function assumes its accumulators are overwritten every step
  /// (kOverwriteAccumulatorsAttr: amprt-fuse's EarlyAccumulate.cpp applied),
  /// kept from read() to write().
  bool earlyAccumulated = false;

  // --- the planned calls as data, for the rewrites (PlannedCalls.cpp) ------
  /// The index of tensor parameter `name` among c's tensor parameters, or
  /// -1.
  static int tensorSlot(const PlannedCall &c, StringRef name);

  /// The buffers some planned call writes after the call that produced
  /// them: the in-place parameters of Ops.def's entries, a flag that a
  /// multi-tensor call ANDs into, and any buffer one call both reads and
  /// writes (the "may alias" uses, as Min/Max chains and Clip make).
  llvm::DenseSet<int> buffersWrittenInPlace() const;
  /// What the rewrites of the planned calls need to know about buffers:
  /// those written in place (buffersWrittenInPlace), the graph outputs, and
  /// every (call index, tensor-parameter index) naming each buffer.
  struct CallUses {
    llvm::DenseSet<int> written, outputs;
    DenseMap<int, SmallVector<std::pair<int, int>>> uses;
  };
  CallUses callUses() const;
  /// The calls of a rewrite, written back into `calls`: each call in
  /// `drop` goes, and each call with an entry in `replace` is replaced by
  /// that entry's calls (in their order); the rest keep theirs.
  using CallReplacements = DenseMap<int, SmallVector<PlannedCall, 2>>;
  void spliceCalls(const llvm::DenseSet<int> &drop,
                   const CallReplacements &replace = CallReplacements());
  /// A call of `kernel` with named tensor arguments and every other
  /// parameter in `attrs` (checked against Ops.def when assertions are on).
  PlannedCall plannedCall(StringRef kernel, ArrayRef<TArg> tensors,
                          NamedAttrList attrs, Location loc);

protected:
  MLIRContext *ctx;
  SmallVector<Buffer> bufs;
  SmallVector<PlannedCall> calls;
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  /// Arguments narrowDataInputs() took in a 16-bit type, with the type the
  /// graph gives them (kNarrowedFromAttr).
  SmallVector<std::pair<unsigned, Type>> narrowedArgs;
  /// Arguments read as an InPlaceAccumulator v1 signal (kAccumulateSignalAttr).
  llvm::SmallDenseSet<int, 2> accumulateSignals;
  SmallVector<int> results;
  SmallVector<std::string> resultNames;

  int newBuffer(Buffer b) {
    bufs.push_back(std::move(b));
    int id = int(bufs.size()) - 1;
    bufferAdded(id);
    return id;
  }
  /// Called for each new buffer: the conversion (GraphLowering) writes its
  /// IR as the buffer is made.
  virtual void bufferAdded(int id) {}
  /// A new temporary of `buf`'s shape and element type.
  int newBufferLike(int buf) {
    Buffer t;
    t.shape = bufs[buf].shape;
    t.elem = bufs[buf].elem;
    return newBuffer(t);
  }
  /// A constant buffer (memref.global) holding `h`; one per distinct value
  /// (a Resize and its ResizeGrad share their scales).
  int constBuffer(const HostTensor &h) {
    ElementsAttr value = toAttr(h);
    if (auto it = constBuffers.find(value); it != constBuffers.end())
      return it->second;
    Buffer b;
    b.kind = Buffer::Const;
    b.value = value;
    b.shape = h.shape;
    b.elem = h.elem;
    b.shared = true;
    return constBuffers[value] = newBuffer(b);
  }
  llvm::DenseMap<Attribute, int> constBuffers;
  /// A copy: `bufs` grows (and moves) whenever a buffer is made, so a
  /// reference into it would dangle across newBuffer().
  Shape shapeOf(int b) const { return bufs[b].shape; }

  Attribute i32(int64_t v) {
    return IntegerAttr::get(IntegerType::get(ctx, 32), v);
  }
  Attribute i64(int64_t v) {
    return IntegerAttr::get(IntegerType::get(ctx, 64), v);
  }
  Attribute f32(double v) { return FloatAttr::get(Float32Type::get(ctx), v); }
  Attribute f64(double v) { return FloatAttr::get(Float64Type::get(ctx), v); }
  Attribute ints(ArrayRef<int64_t> v) { return DenseI64ArrayAttr::get(ctx, v); }
};

/// Reads each of `funcs` (unplanned functions of `module`), lets `rewrite`
/// change it (true: planned, with the arena's size and split), and writes
/// it again in its place with its constants (renumbered for the calls
/// left; a global another op still names stays).
LogicalResult rewriteUnplanned(
    ModuleOp module, ArrayRef<func::FuncOp> funcs,
    function_ref<bool(PlannedProgram &, func::FuncOp, int64_t &, int64_t *)>
        rewrite);

} // namespace amp::lowering

#endif // AMP_LIB_CONVERSION_TRAINTORUNTIME_PLANNEDPROGRAM_H
