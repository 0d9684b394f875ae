//===- ChannelsLast.cpp - convolutions and their neighbours in NHWC -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// `amprt-channels-last`: ONNX keeps images channels first (NCHW), while the
// Tensor Core convolutions of cuDNN in f16/bf16 want channels innermost
// (NHWC); given NCHW, cuDNN transposes inside every call. This pass moves
// whole regions of a lowered step to channels last, so that the layout
// changes only at the region's edges.
//
// A region is a set of buffers that must share one layout because a call
// reads or writes them together, grown through the calls that can run
// channels last:
//  * conv, conv_grad, conv_transpose, max_pool, average_pool and
//    average_pool_grad: every tensor of rank spatial + 2 (a convolution's
//    weight too: [M, C/g, k...] becomes [M, k..., C/g], the same move of
//    dim 1 to the end); the window gets `layout = 1` (runtime ABI 10);
//  * max_pool_grad (flat indices into dx as it is stored): when its
//    indices come from a max_pool of the region and go nowhere else;
//  * global_average_pool(_grad): become average_pool(_grad) over the whole
//    image, channels last (the same sums in the same order);
//  * batch normalization: [N, spatial..., C] is [N * spatial, C], a
//    BatchNorm1d whose statistics are the same, in the same order: the call
//    reads and writes reshapes of its buffers (views once planned);
//  * elementwise calls (arithmetic, comparisons, logic, activations and
//    their gradients, casts) whose tensors but single elements all have
//    one rank: one permutation of all keeps a broadcast;
//  * reductions keeping their dims (axes permuted; not over the channels
//    with a spatial dim, which would add in another order), pad (pads
//    permuted) and concat (axis permuted).
// A region is moved when it holds a convolution that computes in f16/bf16
// (`channels-last=16bit`) or any convolution (`all`). A cast whose wider
// side only it ties to the region is left out, so the edge falls on the
// 16-bit side (an f32 weight's copy, an f32 image batch).
//
// Every buffer of a moved region takes the channels-last shape. One that
// something outside the region names too (a graph input or output, a
// call that is no member, an optimizer reading a weight gradient) keeps
// its buffer and gets a channels-last twin, and a `transpose` call copies
// the value over where the other side reads it next: before a member's
// read of a value written channels first, before a non-member's read of a
// value written channels last, before the return for an output (a
// reshape where only dims of size 1 move). The copies are planned first
// (planMove): a value written in place on one side and read on the other
// would be copied twice, writing a buffer twice where the unplanned form's
// planning counts on one write, so its region stays channels first.
//
// On the CPU a channels-last window runs its channels-first kernel on
// transposed copies (lib/Runtime/Layout.cpp): the step's results are those
// of the channels-first lowering, bit for bit, and slower; the pass is for
// devices.
//
//===----------------------------------------------------------------------===//

#include "BufferFacts.h"
#include "PlannedProgram.h"

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace amp {
#define GEN_PASS_DEF_AMPRTCHANNELSLAST
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::lowering;

namespace {

/// A window's `layout` for channels last: the runtime's
/// AMPRT_LAYOUT_CHANNELS_LAST (Runtime.h, ABI 10).
constexpr int64_t kChannelsLastLayout = 1;

/// How a call runs channels last.
enum class Role {
  Window,      // its window's layout
  MaxPoolGrad, // as it is: flat indices
  GlobalPool,  // an average pool over the whole image
  BatchNorm,   // on [N * spatial, C] reshapes
  Elementwise, // as it is: one permutation keeps a broadcast one
  Axes,        // a reduction: its axes attribute permuted
  Pads,        // pad: its pads permuted
  Axis         // concat: its axis permuted
};

/// A call that can run channels last and the operands that follow the
/// layout.
struct Member {
  amprt::CallOp call;
  Role role;
  SmallVector<unsigned, 6> operands;
  bool seed = false;
};

/// Elementwise kernels, broadcasting or not: the same permutation of every
/// operand of one rank keeps each output element's inputs.
const llvm::StringSet<> &elementwiseKernels() {
  static const llvm::StringSet<> set = {
      // Arithmetic, comparisons and logic (numpy broadcasting).
      "add", "sub", "mul", "div", "mod", "fmod", "pow", "min", "max", "less",
      "greater", "equal", "less_or_equal", "greater_or_equal", "logical_and",
      "logical_or", "logical_xor", "where", "sum", "scale",
      // One tensor in, one out.
      "cast", "identity", "expand", "neg", "abs", "relu", "sigmoid", "tanh",
      "exp", "log", "sqrt", "reciprocal", "gelu", "fast_gelu", "erf", "sign",
      "floor", "ceil", "round", "sin", "cos", "isnan", "isinf", "logical_not",
      "leaky_relu", "quick_gelu",
      // Activation gradients.
      "relu_grad", "sigmoid_grad", "tanh_grad", "gelu_grad", "fast_gelu_grad",
      "leaky_relu_grad", "quick_gelu_grad"};
  return set;
}

bool isWindowKernel(StringRef k) {
  return k == "conv" || k == "conv_grad" || k == "conv_transpose" ||
         k == "max_pool" || k == "average_pool" || k == "average_pool_grad";
}

bool isConvolution(StringRef k) {
  return k == "conv" || k == "conv_grad" || k == "conv_transpose";
}

bool isBatchNorm(StringRef k) {
  return k == "batch_norm_training" || k == "batch_norm_inference" ||
         k == "batch_norm_grad" || k == "batch_norm_training_sync" ||
         k == "batch_norm_grad_sync";
}

int64_t elements(Value v) {
  int64_t n = 1;
  for (int64_t d : bufferShape(v))
    n *= d;
  return n;
}

bool isLowPrecision(Type t) { return t.isF16() || t.isBF16(); }

/// The shape of `shape` with dim 1 moved to the end, and back.
SmallVector<int64_t> lastShape(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s = {shape[0]};
  s.append(shape.begin() + 2, shape.end());
  s.push_back(shape[1]);
  return s;
}
SmallVector<int64_t> toLastPerm(size_t rank) {
  SmallVector<int64_t> p = {0};
  for (size_t i = 2; i < rank; ++i)
    p.push_back(int64_t(i));
  p.push_back(1);
  return p;
}
SmallVector<int64_t> toFirstPerm(size_t rank) {
  SmallVector<int64_t> p = {0, int64_t(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i)
    p.push_back(int64_t(i));
  return p;
}

/// Whether a reduction sums the channels together with a spatial dim (each
/// of more than one element): it walks its input as stored, so channels
/// last it would add them in another order.
bool reducesChannelsWithSpatial(amprt::CallOp call) {
  ArrayRef<int64_t> sx = bufferShape(call.getTensors()[0]);
  int64_t rank = int64_t(sx.size());
  if (rank < 3)
    return false;
  SmallVector<bool> reduced(size_t(rank), false);
  auto axes = call->getAttrOfType<DenseI64ArrayAttr>("axes");
  auto noop = call->getAttrOfType<IntegerAttr>("noop_with_empty_axes");
  if (!axes || axes.empty())
    reduced.assign(size_t(rank), !(noop && noop.getInt()));
  else
    for (int64_t a : axes.asArrayRef())
      if (a >= -rank && a < rank)
        reduced[size_t(a < 0 ? a + rank : a)] = true;
  bool spatial = false;
  for (int64_t d = 2; d < rank; ++d)
    spatial |= reduced[size_t(d)] && sx[size_t(d)] > 1;
  return spatial && reduced[1] && sx[1] > 1;
}

/// What `call` would be in a region, if anything.
std::optional<Member> classify(amprt::CallOp call, ChannelsLast mode) {
  StringRef k = call.getKernel();
  Member m{call, Role::Elementwise, {}, false};
  auto tensors = call.getTensors();
  if (isWindowKernel(k)) {
    auto win = call->getAttrOfType<DictionaryAttr>("win");
    if (!win)
      return std::nullopt;
    auto layout = win.getAs<IntegerAttr>("layout");
    auto sr = win.getAs<IntegerAttr>("spatial_rank");
    if ((layout && layout.getInt() != 0) || !sr)
      return std::nullopt;
    m.role = Role::Window;
    for (auto [i, v] : llvm::enumerate(tensors))
      if (int64_t(bufferShape(v).size()) == sr.getInt() + 2)
        m.operands.push_back(unsigned(i));
    if (isConvolution(k)) {
      Value x = call.getSingleTensor(k == "conv_grad" ? "dy" : "x");
      m.seed =
          x && (mode == ChannelsLast::All || isLowPrecision(elementType(x)));
    }
    return m;
  }
  bool pool = k == "max_pool_grad" || k == "global_average_pool" ||
              k == "global_average_pool_grad";
  if (pool || isBatchNorm(k)) {
    m.role = k == "max_pool_grad" ? Role::MaxPoolGrad
             : isBatchNorm(k)     ? Role::BatchNorm
                                  : Role::GlobalPool;
    for (auto [i, v] : llvm::enumerate(tensors))
      if (bufferShape(v).size() >= 3)
        m.operands.push_back(unsigned(i));
    if (m.operands.empty())
      return std::nullopt;
    if (pool && m.operands.size() != tensors.size())
      return std::nullopt;
    return m;
  }
  bool reduce = k == "reduce_sum" || k == "reduce_mean" || k == "reduce_max" ||
                k == "reduce_min";
  if (reduce && reducesChannelsWithSpatial(call))
    return std::nullopt;
  if (reduce || k == "pad" || k == "concat")
    m.role = reduce ? Role::Axes : k == "pad" ? Role::Pads : Role::Axis;
  else if (!elementwiseKernels().contains(k))
    return std::nullopt;
  // Every operand but a single element has one rank, 3 or more (a
  // reduction keeps its dims; ONNX broadcasting aligns lower ranks to the
  // right, which a permutation would not keep).
  size_t rank = 0;
  for (auto [i, v] : llvm::enumerate(tensors)) {
    if (m.role == Role::Elementwise && elements(v) == 1)
      continue;
    size_t r = bufferShape(v).size();
    if (r < 3 || (rank && r != rank))
      return std::nullopt;
    rank = r;
    m.operands.push_back(unsigned(i));
  }
  if (m.operands.empty())
    return std::nullopt;
  return m;
}

/// Where dim `a` of a rank-`rank` tensor is once channels last.
int64_t lastAxis(int64_t a, int64_t rank) {
  if (a < 0)
    a += rank;
  return a == 0 ? 0 : a == 1 ? rank - 1 : a - 1;
}

/// Union-find over buffers.
struct Regions {
  llvm::MapVector<Value, unsigned> index;
  SmallVector<unsigned> parent;
  unsigned id(Value v) {
    auto [it, inserted] = index.try_emplace(v, unsigned(parent.size()));
    if (inserted)
      parent.push_back(it->second);
    return it->second;
  }
  unsigned find(unsigned i) {
    while (parent[i] != i)
      i = parent[i] = parent[parent[i]];
    return i;
  }
  void join(Value a, Value b) { parent[find(id(a))] = find(id(b)); }
};

class ChannelsLastRewriter {
public:
  ChannelsLastRewriter(func::FuncOp func, ChannelsLast mode)
      : func(func), mode(mode), builder(func.getContext()) {}

  void run() {
    collectMembers();
    if (llvm::none_of(members, [](const Member &m) { return m.seed; }))
      return;
    pruneMembers();
    pickRegions();
    if (moved.empty())
      return;
    SmallVector<Member> movedMembers;
    for (Member &m : members)
      if (moved.contains(m.call.getTensors()[m.operands.front()]))
        movedMembers.push_back(m);
    size_t edges = 0;
    for (Value v : moved)
      edges += moveBuffer(v);
    unsigned windows = 0;
    for (Member &m : movedMembers) {
      windows += m.role == Role::Window || m.role == Role::GlobalPool;
      rewriteMember(m);
    }
    eraseUnusedBuffers(func);
    emitRemark(func.getLoc())
        << "graph @" << func.getSymName()
        << ": channels last: " << movedMembers.size() << " calls (" << windows
        << " windows), " << moved.size() << " buffers, " << edges
        << " layout copies at the edges";
  }

private:
  func::FuncOp func;
  ChannelsLast mode;
  OpBuilder builder;
  SmallVector<Member> members;
  llvm::DenseMap<Operation *, unsigned> memberOf;
  Regions regions;
  llvm::DenseSet<unsigned> movedRoots;
  llvm::SetVector<Value> moved;

  Member *member(amprt::CallOp call) {
    auto it = memberOf.find(call);
    return it == memberOf.end() ? nullptr : &members[it->second];
  }
  bool isLayoutOperand(amprt::CallOp call, unsigned operand) {
    Member *m = member(call);
    return m && llvm::is_contained(m->operands, operand);
  }

  void collectMembers() {
    func.walk([&](amprt::CallOp call) {
      if (auto m = classify(call, mode)) {
        memberOf[call] = unsigned(members.size());
        members.push_back(*m);
      }
    });
  }

  void pruneMembers() {
    // A max_pool's indices hold positions: every namer must be a member
    // (the max_pool writing them, max_pool_grads reading them).
    bool changed = true;
    auto drop = [&](amprt::CallOp call) {
      memberOf.erase(call);
      changed = true;
    };
    while (changed) {
      changed = false;
      for (Member &m : members) {
        if (!memberOf.count(m.call))
          continue;
        StringRef k = m.call.getKernel();
        if (k == "max_pool" || k == "max_pool_grad") {
          Value idx = m.call.getSingleTensor("indices");
          if (!idx)
            continue;
          bool ok = isTemporary(idx) && !isReturned(idx);
          for (BufferUse u : bufferUses(idx))
            ok &= (u.call.getKernel() == "max_pool" ||
                   u.call.getKernel() == "max_pool_grad") &&
                  memberOf.count(u.call);
          if (!ok)
            drop(m.call);
          continue;
        }
        // A cast whose wider side nothing else of a region names stays
        // out: the edge falls on its narrower side.
        if (k == "cast" && m.operands.size() == 2) {
          Value x = m.call.getTensors()[m.operands[0]],
                y = m.call.getTensors()[m.operands[1]];
          unsigned bx = elementType(x).getIntOrFloatBitWidth(),
                   by = elementType(y).getIntOrFloatBitWidth();
          if (bx == by)
            continue;
          Value wide = bx > by ? x : y;
          bool tied = false;
          for (BufferUse u : bufferUses(wide))
            tied |= u.call != m.call && isLayoutOperand(u.call, u.operand);
          if (!tied)
            drop(m.call);
        }
      }
    }
    SmallVector<Member> kept;
    for (Member &m : members)
      if (memberOf.count(m.call))
        kept.push_back(m);
    members = std::move(kept);
    memberOf.clear();
    for (auto [i, m] : llvm::enumerate(members))
      memberOf[m.call] = unsigned(i);
  }

  void pickRegions() {
    for (Member &m : members) {
      auto tensors = m.call.getTensors();
      for (unsigned o : m.operands)
        regions.join(tensors[m.operands.front()], tensors[o]);
    }
    for (Member &m : members)
      if (m.seed)
        movedRoots.insert(
            regions.find(regions.id(m.call.getTensors()[m.operands.front()])));
    // Planned once, on the IR before any move: each value's uses are its
    // own, so the other moves leave its plan as it is.
    for (auto &[v, i] : regions.index)
      if (movedRoots.contains(regions.find(i)))
        if (!plans.try_emplace(v, planMove(v)).first->second.safe)
          movedRoots.erase(regions.find(i));
    for (auto &[v, i] : regions.index)
      if (movedRoots.contains(regions.find(i)))
        moved.insert(v);
  }

  /// A new buffer of `type` after the function's last buffer (so that the
  /// unplanned form reads back in the order it is written).
  Value newBuffer(MemRefType type, StringRef role, StringAttr value) {
    setInsertionPointAfterBuffers(builder, func);
    auto alloc = memref::AllocOp::create(builder, func.getLoc(), type);
    alloc->setAttr(kRoleAttr, builder.getStringAttr(role));
    if (value)
      alloc->setAttr(kValueAttr, value);
    return alloc;
  }

  StringRef roleOf(Value v) {
    if (auto a = v.getDefiningOp<memref::AllocOp>())
      if (auto r = a->getAttrOfType<StringAttr>(kRoleAttr))
        return r.getValue();
    return kArenaRoles[0];
  }

  StringAttr valueOf(Value v) {
    if (auto a = v.getDefiningOp<memref::AllocOp>())
      return a->getAttrOfType<StringAttr>(kValueAttr);
    return {};
  }

  /// A new call's `node`: the ONNX node it serves, when there is one.
  SmallVector<NamedAttribute> nodeAttrs(Attribute node) {
    SmallVector<NamedAttribute> attrs;
    if (node)
      attrs.push_back(builder.getNamedAttr("node", node));
    return attrs;
  }

  /// Copies `from` into `to` (the other layout) before `at`: a reshape
  /// where only dims of size 1 move (a view once planned), else a
  /// transpose.
  void transposeBefore(Operation *at, Value from, Value to, bool toLast,
                       Attribute node) {
    builder.setInsertionPoint(at);
    size_t rank = bufferShape(from).size();
    SmallVector<int64_t> perm = toLast ? toLastPerm(rank) : toFirstPerm(rank);
    // The dims of more than one element, in the order `to` takes them.
    SmallVector<int64_t> wide;
    for (int64_t d : perm)
      if (bufferShape(from)[size_t(d)] != 1)
        wide.push_back(d);
    SmallVector<NamedAttribute> attrs = nodeAttrs(node);
    if (llvm::is_sorted(wide)) {
      amprt::createCall(builder, at->getLoc(), "reshape",
                        {{"x", from}, {"y", to}}, attrs);
      return;
    }
    attrs.push_back(
        builder.getNamedAttr("perm", builder.getDenseI64ArrayAttr(perm)));
    attrs.push_back(builder.getNamedAttr(
        "nperm", builder.getI64IntegerAttr(int64_t(rank))));
    amprt::createCall(builder, at->getLoc(), "transpose",
                      {{"x", from}, {"y", to}}, attrs);
  }

  /// How `v` moves: in place where only members name it (`pure`), else as
  /// a twin that copies keep in step with it, each copy before the call
  /// that reads the other side next (`at`; null: the return).
  struct Copy {
    Operation *at;
    bool toLast;
  };
  struct MovePlan {
    bool pure = false;
    SmallVector<Copy> copies;
    /// Each side is written at most once, and a graph input or constant
    /// never: what the unplanned form says of a buffer no call writes in
    /// place (ScheduleCalls, AliasReshapes, RematerializeCasts and
    /// exec::Program count on it). A value written in place on one side
    /// and read on the other would need a second copy: its region stays.
    bool safe = true;
  };
  /// The plan of each buffer of a region that may move (pickRegions).
  llvm::DenseMap<Value, MovePlan> plans;

  MovePlan planMove(Value v) {
    MovePlan plan;
    SmallVector<BufferUse, 4> uses = bufferUses(v);
    plan.pure = isTemporary(v) && !isReturned(v) &&
                llvm::all_of(uses, [&](BufferUse u) {
                  return isLayoutOperand(u.call, u.operand);
                });
    if (plan.pure)
      return plan;
    // Which of the two holds the value, call by call. A temporary's first
    // namer writes it; every other namer reads it, and writes it in place
    // through an in-place parameter, or (a temporary) when it names it
    // twice. Nothing writes a graph input but an in-place parameter.
    bool temp = isTemporary(v);
    Operation *producer = temp ? uses.front().call : nullptr;
    bool firstHolds = !temp, lastHolds = false;
    unsigned firstWrites = 0, lastWrites = 0;
    for (BufferUse u : uses) {
      amprt::CallOp call = u.call;
      bool produces = call == producer;
      bool inPlace = temp ? call.writesInPlace(u.operand)
                          : amprt::isInPlaceParam(call.getKernel(), u.param);
      bool reads = !produces, writes = produces || inPlace;
      if (isLayoutOperand(call, u.operand)) {
        if (reads && !lastHolds) {
          plan.copies.push_back({call, /*toLast=*/true});
          lastHolds = true;
          ++lastWrites;
        }
        if (writes) {
          lastHolds = true;
          firstHolds = false;
          ++lastWrites;
        }
      } else {
        if (reads && !firstHolds) {
          plan.copies.push_back({call, /*toLast=*/false});
          firstHolds = true;
          ++firstWrites;
        }
        if (writes) {
          firstHolds = true;
          lastHolds = false;
          ++firstWrites;
        }
      }
    }
    if ((isReturned(v) || !temp) && !firstHolds) {
      plan.copies.push_back({nullptr, /*toLast=*/false});
      ++firstWrites;
    }
    plan.safe = lastWrites <= 1 && (temp ? firstWrites <= 1 : firstWrites == 0);
    return plan;
  }

  /// Gives `v` its channels-last shape as planned; the layout copies it
  /// made.
  size_t moveBuffer(Value v) {
    const MovePlan &plan = plans.find(v)->second;
    auto type = cast<MemRefType>(v.getType());
    auto lastType =
        MemRefType::get(lastShape(type.getShape()), type.getElementType());
    // The twin of a buffer that stays holds the value only part of the
    // time: the name stays with the buffer (diagnostics read values by
    // name).
    Value twin =
        newBuffer(lastType, roleOf(v), plan.pure ? valueOf(v) : StringAttr());
    if (plan.pure) {
      v.replaceAllUsesWith(twin);
      return 0;
    }
    SmallVector<BufferUse, 4> uses = bufferUses(v);
    for (const Copy &c : plan.copies) {
      Operation *at = c.at ? c.at : func.getBody().front().getTerminator();
      Attribute node = c.at ? c.at->getAttr("node") : Attribute();
      if (c.toLast)
        transposeBefore(at, v, twin, /*toLast=*/true, node);
      else
        transposeBefore(at, twin, v, /*toLast=*/false, node);
    }
    for (BufferUse u : uses)
      if (isLayoutOperand(u.call, u.operand))
        u.call->setOperand(u.operand, twin);
    return plan.copies.size();
  }

  DictionaryAttr withLayout(DictionaryAttr win) {
    NamedAttrList attrs(win);
    attrs.set("layout", builder.getI64IntegerAttr(kChannelsLastLayout));
    return attrs.getDictionary(builder.getContext());
  }

  void rewriteMember(Member &m) {
    amprt::CallOp call = m.call;
    StringRef k = call.getKernel();
    if (m.role == Role::Window) {
      call->setAttr("win",
                    withLayout(call->getAttrOfType<DictionaryAttr>("win")));
      return;
    }
    if (m.role == Role::GlobalPool) {
      // The average over the whole image: x [N, spatial..., C].
      bool grad = k == "global_average_pool_grad";
      Value x = call.getTensors()[grad ? 1 : 0],
            y = call.getTensors()[grad ? 0 : 1];
      ArrayRef<int64_t> s = bufferShape(x);
      int64_t sr = int64_t(s.size()) - 2;
      SmallVector<int64_t> kernel(s.begin() + 1, s.end() - 1), ones(sr, 1),
          zeros(2 * sr, 0);
      NamedAttrList win;
      win.set("spatial_rank", builder.getI64IntegerAttr(sr));
      win.set("ceil_mode", builder.getI64IntegerAttr(0));
      win.set("count_include_pad", builder.getI64IntegerAttr(0));
      win.set("group", builder.getI64IntegerAttr(1));
      win.set("kernel", builder.getDenseI64ArrayAttr(kernel));
      win.set("strides", builder.getDenseI64ArrayAttr(ones));
      win.set("pads", builder.getDenseI64ArrayAttr(zeros));
      win.set("dilations", builder.getDenseI64ArrayAttr(ones));
      win.set("layout", builder.getI64IntegerAttr(kChannelsLastLayout));
      SmallVector<NamedAttribute> attrs = nodeAttrs(call->getAttr("node"));
      attrs.push_back(
          builder.getNamedAttr("win", win.getDictionary(builder.getContext())));
      builder.setInsertionPoint(call);
      if (grad)
        amprt::createCall(builder, call.getLoc(), "average_pool_grad",
                          {{"dy", y}, {"dx", x}}, attrs);
      else
        amprt::createCall(builder, call.getLoc(), "average_pool",
                          {{"x", x}, {"y", y}}, attrs);
      call->erase();
      return;
    }
    if (m.role == Role::Axes || m.role == Role::Axis) {
      int64_t rank = int64_t(bufferShape(call.getTensors()[0]).size());
      StringRef name = m.role == Role::Axes ? "axes" : "axis";
      if (m.role == Role::Axis) {
        auto axis = call->getAttrOfType<IntegerAttr>(name);
        call->setAttr(name,
                      builder.getI64IntegerAttr(lastAxis(axis.getInt(), rank)));
        return;
      }
      SmallVector<int64_t> axes;
      for (int64_t a :
           call->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef())
        axes.push_back(lastAxis(a, rank));
      call->setAttr(name, builder.getDenseI64ArrayAttr(axes));
      return;
    }
    if (m.role == Role::Pads) {
      // The begins, then the ends, each in the dims' new order.
      ArrayRef<int64_t> pads =
          call->getAttrOfType<DenseI64ArrayAttr>("pads").asArrayRef();
      size_t rank = pads.size() / 2;
      SmallVector<int64_t> perm = toLastPerm(rank), moved;
      for (size_t half = 0; half < 2; ++half)
        for (int64_t d : perm)
          moved.push_back(pads[half * rank + size_t(d)]);
      call->setAttr("pads", builder.getDenseI64ArrayAttr(moved));
      return;
    }
    if (m.role == Role::BatchNorm) {
      // [N, spatial..., C] as [N * spatial, C]: reshapes, views once
      // planned.
      for (unsigned o : m.operands) {
        Value v = call.getTensors()[o];
        ArrayRef<int64_t> s = bufferShape(v);
        int64_t rows = 1;
        for (int64_t d : s.drop_back())
          rows *= d;
        auto flat = MemRefType::get(
            {rows, s.back()}, cast<MemRefType>(v.getType()).getElementType());
        Value view = newBuffer(flat, roleOf(v), {});
        bool reads = holdsValueBefore(v, call);
        bool writes = !reads || call.writesInPlace(o);
        SmallVector<NamedAttribute> attrs = nodeAttrs(call->getAttr("node"));
        if (reads) {
          builder.setInsertionPoint(call);
          amprt::createCall(builder, call.getLoc(), "reshape",
                            {{"x", v}, {"y", view}}, attrs);
        }
        call->setOperand(o, view);
        if (writes) {
          builder.setInsertionPointAfter(call);
          amprt::createCall(builder, call.getLoc(), "reshape",
                            {{"x", view}, {"y", v}}, attrs);
        }
      }
    }
  }
};

struct AmpRTChannelsLastPass
    : public amp::impl::AmpRTChannelsLastBase<AmpRTChannelsLastPass> {
  using Base::Base;
  void runOnOperation() override {
    if (channelsLast == ChannelsLast::Off)
      return;
    for (auto f : getOperation().getOps<func::FuncOp>())
      if (f->hasAttr(kUnplannedAttr))
        ChannelsLastRewriter(f, channelsLast).run();
  }
};

} // namespace
