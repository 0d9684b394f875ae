//===- AMPGraphRewriter.h - the AMP pass on one train.graph -----*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Private to the auto-mixed-precision pass: the AMPGraphRewriter, which runs
// the pass on one train.graph, and its tables. Its member functions live in
// one file per concern:
//   AMPGraphAnalysis.cpp  the vertex graph ((node, type constraint) pairs,
//                         control-flow groups, SSA edges) and its painting
//   AMPCastInsertion.cpp  the rewrite: lowered element types, casts on the
//                         edges whose ends disagree, graph outputs renamed
//   AMPGraphReport.cpp    per-node records and the summary counts, the
//                         warning on operator versions that keep nodes fp32
// AutoMixedPrecision.cpp holds the pass, which reads its options and runs
// the rewriter on each graph.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_DIALECT_TRAIN_TRANSFORMS_AMPGRAPHREWRITER_H
#define AMP_LIB_DIALECT_TRAIN_TRANSFORMS_AMPGRAPHREWRITER_H

#include "amp/Dialect/Train/IR/CastNamer.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/AMPPainter.h"
#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "amp/Dialect/Train/Transforms/AMPRanges.h"
#include "amp/Dialect/Train/Transforms/AMPReport.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"

#include <map>
#include <optional>
#include <tuple>

namespace amp::train::detail {

using namespace mlir;

// A vertex is one (node, type constraint) pair: the ports of the node whose
// portVertex is the vertex (plus, for control flow, its ControlFlowPorts).
// Its list, candidacy and edges are the AMPVertex and AMPEdges entries of
// the same index (what painting sees). The tables are flat arrays: at a
// million nodes, memory first touched costs more than the work done on it.

/// Control-flow groups (If/Loop/Scan): besides the node's own ports, the
/// body terminators' operands a group consumes and the body arguments it
/// defines. One group is one value across the boundary (and across loop
/// iterations), so all its members have one type.
struct ControlFlowPorts {
  SmallVector<OpOperand *, 2> ins;
  SmallVector<Value, 2> outs;
};

struct NodeInfo {
  Operation *op;
  const OnnxOpSchema *schema = nullptr;
  /// The vertex of input port i is portVertex[ports + i], that of output
  /// port i portVertex[ports + numInputs + i]; -1 for none.
  unsigned ports = 0, numInputs = 0;
  /// Its vertices: firstVertex, ..., firstVertex + numVertices - 1.
  unsigned firstVertex = 0, numVertices = 0;
  AMPList list = AMPList::None;
  bool processable = false;
  bool keep = false; ///< keep-fp32
  /// Holds subgraphs the pass cannot see through (not If/Loop/Scan): the
  /// node stays fp32 and its subgraphs' boundaries keep their types.
  bool structural = false;
  bool converted = false;
  bool retargetedCast = false;
  bool isCast = false;

  auto vertices() const {
    return llvm::seq(firstVertex, firstVertex + numVertices);
  }
};

using PaintWhy = AMPPaintWhy;

inline Type getElementTypeOrNull(Type type) {
  if (auto t = dyn_cast<TensorType>(type))
    return t.getElementType();
  return {};
}

class AMPGraphRewriter {
public:
  AMPGraphRewriter(FunctionOpInterface graph, const AMPLists &lists,
                   AMPMode mode, ArrayRef<llvm::Regex> keepRegexes,
                   const llvm::StringSet<> &keepNames,
                   const AMPRangePolicy &rangePolicy, AMPReport &report,
                   bool records)
      : graph(graph), lists(lists), mode(mode), keepRegexes(keepRegexes),
        keepNames(keepNames), rangePolicy(rangePolicy), report(report),
        records(records), namer(graph), dom(graph) {
    MLIRContext *ctx = graph.getContext();
    lowType = mode == AMPMode::BF16 ? Type(BFloat16Type::get(ctx))
                                    : Type(Float16Type::get(ctx));
    f32Type = Float32Type::get(ctx);
    nodeNameId = StringAttr::get(ctx, attrs::kNodeName);
  }

  /// Sizes of symbolic dims (the pass's dims=), for the Tensor Core
  /// report; null or empty: symbolic dims stay unknown.
  void setDimBindings(const llvm::StringMap<int64_t> *bindings) {
    dimBindings = bindings;
  }

  void run() {
    collect();
    paint();
    if (!nothingToDo)
      rewrite();
    record();
    warnOpsetLimits();
  }

private:
  bool isKept(StringRef name) const {
    if (name.empty())
      return false;
    if (keepNames.contains(name))
      return true;
    for (const llvm::Regex &re : keepRegexes)
      if (re.match(name))
        return true;
    return false;
  }

  void collect();
  void addVertices(unsigned n);
  void addControlFlowGroups(unsigned n);
  /// The type-constraint group of input (output) port `i` of `schema`: -1
  /// for a fixed type or a heterogeneous variadic.
  int groupOf(const OnnxOpSchema &schema, bool input, unsigned i);
  /// The vertex of the port or body argument that defines `value`, or -1.
  int sourceVertex(Value value) const;
  /// Edges follow SSA use-def: the vertex defining input `i` (`operand`)
  /// of `n` -> that input's vertex `v`.
  void addInputEdge(const NodeInfo &n, unsigned i, Value operand, int v) {
    int src = srcPort[n.ports + i] >= 0     ? portVertex[srcPort[n.ports + i]]
              : isa<BlockArgument>(operand) ? sourceVertex(operand)
                                            : -1;
    if (src >= 0)
      edges.add(src, v);
  }
  void paint();
  void rewrite();
  void record();

  Value getCast(Value value, Type elementType, Operation *consumer);
  std::string valueName(Value value);
  bool isLowOnlySource(Value value);
  /// Calls in(i) for each input port i and out(i) for each output port i
  /// of vertex `vi` (the node's own ports).
  template <typename In, typename Out>
  void forEachPort(unsigned vi, In in, Out out) const {
    const NodeInfo &n = nodes[vertexNode[vi]];
    for (unsigned i = 0; i < n.numInputs; ++i)
      if (portVertex[n.ports + i] == (int)vi)
        in(i);
    for (unsigned i = 0, e = n.op->getNumResults(); i < e; ++i)
      if (portVertex[n.ports + n.numInputs + i] == (int)vi)
        out(i);
  }
  const ControlFlowPorts *controlFlowPortsOf(unsigned vi) const {
    if (controlFlowPorts.empty())
      return nullptr;
    auto it = controlFlowPorts.find(vi);
    return it == controlFlowPorts.end() ? nullptr : &it->second;
  }
  StringRef nodeName(const NodeInfo &n) const {
    auto a = n.op->getAttrOfType<StringAttr>(nodeNameId);
    return a ? a.getValue() : StringRef();
  }
  static StringRef domainOf(const NodeInfo &n) {
    return normalizeOnnxDomain(cast<OnnxNodeOpInterface>(n.op).getOnnxDomain());
  }
  static StringRef opTypeOf(const NodeInfo &n) {
    return cast<OnnxNodeOpInterface>(n.op).getOnnxOpType();
  }

  bool wasLowered(Value value) const {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return loweredArgs.contains(arg);
    auto it = nodeIndex.find(value.getDefiningOp());
    if (it == nodeIndex.end())
      return false;
    const NodeInfo &n = nodes[it->second];
    return loweredPort[n.ports + n.numInputs +
                       cast<OpResult>(value).getResultNumber()];
  }

  /// Whether rewrite() lowers `value` (wasLowered, before it does).
  bool willLower(Value value) const {
    if (getElementTypeOrNull(value.getType()) != f32Type)
      return false;
    if (auto result = dyn_cast<OpResult>(value)) {
      auto it = nodeIndex.find(result.getOwner());
      if (it == nodeIndex.end())
        return false;
      int v = outVertex(nodes[it->second], result.getResultNumber());
      return v >= 0 && allow[v];
    }
    auto it = argVertex.find(value);
    return it != argVertex.end() && allow[it->second];
  }

  /// wasLowered for input `i` of node `n`, whose value is `value`, without
  /// a map lookup when its producer is a node.
  bool inputWasLowered(const NodeInfo &n, unsigned i, Value value) const {
    int src = srcPort[n.ports + i];
    return src >= 0 ? loweredPort[src] : wasLowered(value);
  }

  int inVertex(const NodeInfo &n, unsigned i) const {
    return portVertex[n.ports + i];
  }
  int outVertex(const NodeInfo &n, unsigned i) const {
    return portVertex[outPort(n, i)];
  }
  static unsigned outPort(const NodeInfo &n, unsigned i) {
    return n.ports + n.numInputs + i;
  }
  /// The vertex consuming `use`: a node's input port, or a body terminator
  /// operand of a control-flow group; -1 for none.
  int consumerVertex(OpOperand &use) const {
    auto it = nodeIndex.find(use.getOwner());
    if (it != nodeIndex.end())
      return inVertex(nodes[it->second], use.getOperandNumber());
    auto u = useVertex.find(&use);
    return u == useVertex.end() ? -1 : (int)u->second;
  }

  /// A train.graph or a model-local train.function.
  FunctionOpInterface graph;
  const AMPLists &lists;
  AMPMode mode;
  ArrayRef<llvm::Regex> keepRegexes;
  const llvm::StringSet<> &keepNames;
  const AMPRangePolicy &rangePolicy;
  const llvm::StringMap<int64_t> *dimBindings = nullptr;
  /// The nodes rangePolicy keeps fp32, and why.
  DenseMap<Operation *, std::string> rangeReasons;
  AMPReport &report;
  bool records; ///< fill report.nodes and report.casts (report= or dot=)
  /// No allow-list vertex: the graph is left unchanged (Grappler's "No
  /// allowlist ops found, nothing to do").
  bool nothingToDo = false;
  Type lowType, f32Type;
  StringAttr nodeNameId;

  std::vector<NodeInfo> nodes;
  DenseMap<Operation *, unsigned> nodeIndex;
  /// Ops with operands that are not nodes (terminators, ...), each with the
  /// number of nodes that come before it in a pre-order walk.
  std::vector<std::pair<unsigned, Operation *>> otherOps;
  /// Some op holds regions: walk orders differ, nodes are not in one block.
  bool hasRegions = false;
  std::vector<int> portVertex;
  /// For an input port, the output port (index as portVertex) producing its
  /// value; -1 for none (a block argument, a value of no node).
  std::vector<int> srcPort;
  std::vector<unsigned> vertexNode; ///< the node of each vertex
  DenseMap<unsigned, ControlFlowPorts> controlFlowPorts; ///< by vertex
  std::vector<AMPVertex> pv; ///< painting view of the vertices
  AMPEdges edges;
  DenseMap<OpOperand *, unsigned> useVertex; ///< terminator operands
  DenseMap<Value, unsigned> argVertex;       ///< body arguments of groups
  /// Per schema, the type-constraint group of each port, worked out once.
  struct PortGroups {
    SmallVector<int, 8> in, out;
    SmallVector<bool, 4> supports; ///< per group: allows the low type
    SmallVector<const OnnxTypeConstraintSchema *, 4> constraints;
  };
  DenseMap<const OnnxOpSchema *, PortGroups> portGroups;
  /// Per schema, the first later opset version whose f32 type constraint
  /// also allows the low type (0 for none), worked out once.
  DenseMap<const OnnxOpSchema *, int> laterOpsetTaking;
  int getLaterOpsetTaking(const OnnxOpSchema &schema);
  /// Allow-list nodes left f32 only by their operator version, per op type
  /// (sorted, for a stable message).
  struct OpsetLimit {
    int taking = 0;
    unsigned nodes = 0;
  };
  /// Keyed by (domain, op_type, since_version).
  std::map<std::tuple<std::string, std::string, int>, OpsetLimit> opsetLimits;
  /// Tells the user which operator versions kept allow-list nodes f32 (a
  /// model at opset 11 gets no bf16 Conv at all, say).
  void warnOpsetLimits();
  std::vector<char> allow, deny;
  std::vector<PaintWhy> why;
  std::vector<int> paintFrom; ///< neighbour vertex that painted it, or -1
  std::vector<int> denyRoot;  ///< deny-list vertex a deny paint came from

  /// The values the pass changed from f32 to the low type: node outputs by
  /// port index (as portVertex), body arguments of control-flow groups.
  std::vector<char> loweredPort;
  DenseSet<Value> loweredArgs;
  DenseMap<std::pair<Value, Type>, Value> castCache;
  /// Names new casts only where a name is needed at once (graph and
  /// subgraph outputs, the report); the others are named when the graph is
  /// written (CastNames.h).
  CastNamer namer;
  /// The casts the pass created, in creation order, with their inputs.
  std::vector<std::pair<CastOp, Value>> newCasts;
  DenseMap<Type, Type> lowered; ///< f32 tensor type -> low tensor type
  DenseMap<std::pair<Type, Type>, Type> castTypes; ///< (type, element) -> type
  DenseMap<Type, IntegerAttr> castTo; ///< element type -> Cast's `to`
  std::optional<OperationName> castName;
  DenseMap<Block *, Operation *> argCastTail;
  /// Graph outputs that became low precision: the cast back to f32 takes
  /// the output's name (the producer's output was renamed).
  DenseMap<Value, std::string> outputCastNames;
  DominanceInfo dom;
};

} // namespace amp::train::detail

#endif // AMP_LIB_DIALECT_TRAIN_TRANSFORMS_AMPGRAPHREWRITER_H
