//===- AutoMixedPrecision.cpp - Automatic mixed precision pass ------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Paints (node, ONNX type constraint) vertices allow/deny following the
// Grappler auto_mixed_precision algorithm, changes the element type of the
// ALLOW vertices' ports to f16/bf16 and inserts train.Cast nodes on the edges
// whose two ends disagree. See docs/AutoMixedPrecision.md.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/CastNamer.h"
#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/AMPDot.h"
#include "amp/Dialect/Train/Transforms/AMPInterfaceRewriter.h"
#include "amp/Dialect/Train/Transforms/AMPPainter.h"
#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "amp/Dialect/Train/Transforms/AMPReport.h"
#include "amp/Dialect/Train/Transforms/GraphEditor.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"
#include <map>

namespace amp::train {
#define GEN_PASS_DEF_AUTOMIXEDPRECISION
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;

namespace {

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

static Type getElementTypeOrNull(Type type) {
  if (auto t = dyn_cast<TensorType>(type))
    return t.getElementType();
  return {};
}

class AMPGraphRewriter {
public:
  AMPGraphRewriter(GraphOp graph, const AMPLists &lists, AMPMode mode,
                   ArrayRef<llvm::Regex> keepRegexes,
                   const llvm::StringSet<> &keepNames, AMPReport &report,
                   bool records)
      : graph(graph), lists(lists), mode(mode), keepRegexes(keepRegexes),
        keepNames(keepNames), report(report), records(records), namer(graph),
        dom(graph) {
    MLIRContext *ctx = graph.getContext();
    lowType = mode == AMPMode::BF16 ? Type(BFloat16Type::get(ctx))
                                    : Type(Float16Type::get(ctx));
    f32Type = Float32Type::get(ctx);
    nodeNameId = StringAttr::get(ctx, attrs::kNodeName);
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

  GraphOp graph;
  const AMPLists &lists;
  AMPMode mode;
  ArrayRef<llvm::Regex> keepRegexes;
  const llvm::StringSet<> &keepNames;
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

} // namespace

//===----------------------------------------------------------------------===//
// Graph construction
//===----------------------------------------------------------------------===//

void AMPGraphRewriter::collect() {
  // List and schema per (domain, op_type, opset version): the same for
  // every node of that kind in the graph.
  struct Kind {
    AMPList list;
    const OnnxOpSchema *schema;
  };
  DenseMap<std::tuple<StringRef, StringRef, int64_t>, Kind> kinds;
  // A typed op's domain, op_type and schema version are those of its class:
  // at the graph's top level its kind is that of its operation name.
  DenseMap<const void *, Kind> typedKinds;
  llvm::StringMap<int64_t> importedVersion; // of the graph, by domain
  bool checkKeep = !keepNames.empty() || !keepRegexes.empty();
  // Vertices are made in node order. While no op with regions has been
  // seen, a node's vertices and edges are made as the walk reaches it, when
  // its op and its producers are in cache; after one, once the walk is done
  // (a control-flow node's groups reach into its bodies).
  unsigned verticesMade = 0;
  graph.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    auto iface = dyn_cast<OnnxNodeOpInterface>(op);
    if (op->getNumRegions())
      hasRegions = true;
    if (!iface) {
      if (op->getNumOperands())
        otherOps.push_back({(unsigned)nodes.size(), op});
      return;
    }
    NodeInfo info;
    info.op = op;
    info.structural =
        op->getNumRegions() != 0 && !isa<IfOp, LoopOp, ScanOp>(op);
    info.isCast = isa<CastOp>(op);
    info.keep = checkKeep && isKept(nodeName(info));
    info.processable = !info.structural && !info.keep;
    auto kindOf = [&]() -> Kind {
      StringRef domain = domainOf(info), opType = opTypeOf(info);
      // getSchemaFor's version: the import of the node's parents (here the
      // graph and the module), else the typed op's own.
      auto [vit, fresh] = importedVersion.try_emplace(domain, 0);
      if (fresh)
        vit->second = getImportedOpsetVersion(graph, domain);
      int64_t version =
          vit->second < 0 ? iface.getOnnxSinceVersion() : vit->second;
      auto [kit, inserted] =
          kinds.try_emplace({domain, opType, version}, Kind{});
      if (inserted)
        kit->second = {lists.classify(domain, opType), getSchemaFor(iface)};
      return kit->second;
    };
    Kind kind;
    // At the graph's top level, the import is the graph's (getSchemaFor
    // reads no node's own).
    if (op->getParentOp() == graph.getOperation()) {
      if (isa<NodeOp>(op)) {
        kind = kindOf();
      } else {
        auto [tit, fresh] =
            typedKinds.try_emplace(op->getName().getAsOpaquePointer());
        if (fresh)
          tit->second = kindOf();
        kind = tit->second;
      }
    } else {
      kind = {lists.classify(domainOf(info), opTypeOf(info)),
              getSchemaFor(iface)};
    }
    info.list = kind.list;
    info.schema = kind.schema;
    info.ports = portVertex.size();
    info.numInputs = op->getNumOperands();
    unsigned numPorts = op->getNumOperands() + op->getNumResults();
    portVertex.resize(portVertex.size() + numPorts, -1);
    srcPort.resize(srcPort.size() + numPorts, -1);
    // Each operand's producing port. Producers come first in a pre-order
    // walk (SSA dominance), so they are in the map already.
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (auto result = dyn_cast<OpResult>(operand))
        if (auto it = nodeIndex.find(result.getOwner()); it != nodeIndex.end())
          srcPort[info.ports + i] =
              outPort(nodes[it->second], result.getResultNumber());
    unsigned n = nodes.size();
    nodeIndex[op] = n;
    nodes.push_back(std::move(info));
    if (!hasRegions)
      addVertices(verticesMade++);
  });
  while (verticesMade < nodes.size())
    addVertices(verticesMade++);

  // Control-flow groups: the edges into a group from the values its body
  // terminators return (their producers have vertices only now).
  for (auto &[vi, cf] : controlFlowPorts)
    for (OpOperand *use : cf.ins)
      if (int src = sourceVertex(use->get()); src >= 0)
        edges.add(src, vi);
  for (unsigned vi = 0; vi < vertexNode.size(); ++vi)
    pv[vi].list = nodes[vertexNode[vi]].list;
  edges.finalize(vertexNode.size());
}

int AMPGraphRewriter::sourceVertex(Value value) const {
  if (auto result = dyn_cast<OpResult>(value)) {
    auto it = nodeIndex.find(result.getOwner());
    return it == nodeIndex.end()
               ? -1
               : outVertex(nodes[it->second], result.getResultNumber());
  }
  auto it = argVertex.find(value);
  return it == argVertex.end() ? -1 : (int)it->second;
}

int AMPGraphRewriter::groupOf(const OnnxOpSchema &schema, bool input,
                              unsigned i) {
  PortGroups &pg = portGroups[&schema];
  SmallVector<int, 8> &known = input ? pg.in : pg.out;
  while (known.size() <= i) {
    unsigned k = known.size();
    const OnnxParamSchema *param =
        input ? schema.getInputParam(k) : schema.getOutputParam(k);
    const OnnxTypeConstraintSchema *tc =
        param ? schema.findConstraint(param->typeStr) : nullptr;
    if (tc && param->option == OnnxParamOption::Variadic && !param->homogeneous)
      tc = nullptr;
    int g = -1;
    if (tc) {
      auto it = llvm::find(pg.constraints, tc);
      g = it - pg.constraints.begin();
      if (it == pg.constraints.end()) {
        StringRef low =
            mode == AMPMode::BF16 ? "tensor(bfloat16)" : "tensor(float16)";
        pg.constraints.push_back(tc);
        pg.supports.push_back(llvm::is_contained(tc->getAllowedTypes(), low));
      }
    }
    known.push_back(g);
  }
  return known[i];
}

void AMPGraphRewriter::addVertices(unsigned n) {
  NodeInfo &info = nodes[n];
  info.firstVertex = vertexNode.size();
  if (!info.processable || !info.schema)
    return;
  if (info.op->getNumRegions()) {
    addControlFlowGroups(n);
    info.numVertices = vertexNode.size() - info.firstVertex;
    // Edges into its input groups (Loop's carried values, Scan's inputs).
    for (auto [i, operand] : llvm::enumerate(info.op->getOperands()))
      if (int v = inVertex(info, i); v >= 0)
        addInputEdge(info, i, operand, v);
    // Its groups are f32 when every member is.
    for (unsigned vi : info.vertices()) {
      bool anyF32 = false, other = false;
      auto look = [&](Type t) {
        (getElementTypeOrNull(t) == f32Type ? anyF32 : other) = true;
      };
      forEachPort(
          vi, [&](unsigned p) { look(info.op->getOperand(p).getType()); },
          [&](unsigned p) { look(info.op->getResult(p).getType()); });
      const ControlFlowPorts &cf = controlFlowPorts.find(vi)->second;
      for (OpOperand *use : cf.ins)
        look(use->get().getType());
      for (Value value : cf.outs)
        look(value.getType());
      pv[vi].isF32 = anyF32 && !other;
    }
    return;
  }
  const OnnxOpSchema &schema = *info.schema;
  // One vertex per type-constraint group, in the order the ports first
  // name the groups. A vertex is a candidate when all its ports are f32: a
  // port of unknown type (!train.unknown, a sequence, ...) may be f32 at
  // run time and would get no cast.
  SmallVector<int, 8> groupVertex;
  SmallVector<char, 8> anyF32, other;
  auto vertexFor = [&](int g) -> int {
    if (g < 0)
      return -1;
    if ((int)groupVertex.size() <= g) {
      groupVertex.resize(g + 1, -1);
      anyF32.resize(g + 1, 0);
      other.resize(g + 1, 0);
    }
    if (groupVertex[g] < 0) {
      groupVertex[g] = vertexNode.size();
      vertexNode.push_back(n);
      pv.emplace_back();
      pv.back().supports = portGroups[&schema].supports[g];
    }
    return groupVertex[g];
  };
  auto look = [&](int g, Type t) {
    (getElementTypeOrNull(t) == f32Type ? anyF32 : other)[g] = 1;
  };
  // Puts input (output) port i, of type t, into its group's vertex: that
  // vertex, or -1 for none.
  auto assign = [&](bool input, unsigned i, Type t) -> int {
    if (isa<NoneType>(t))
      return -1;
    int g = groupOf(schema, input, i);
    int v = vertexFor(g);
    if (v < 0)
      return -1;
    portVertex[input ? info.ports + i : outPort(info, i)] = v;
    look(g, t);
    return v;
  };
  for (auto [i, operand] : llvm::enumerate(info.op->getOperands())) {
    int v = assign(/*input=*/true, i, operand.getType());
    if (v < 0)
      continue;
    addInputEdge(info, i, operand, v);
  }
  for (auto [i, result] : llvm::enumerate(info.op->getResults()))
    assign(/*input=*/false, i, result.getType());
  for (auto [g, v] : llvm::enumerate(groupVertex))
    if (v >= 0)
      pv[v].isF32 = anyF32[g] && !other[g];
  info.numVertices = vertexNode.size() - info.firstVertex;
}

void AMPGraphRewriter::addControlFlowGroups(unsigned n) {
  NodeInfo &info = nodes[n];
  Operation *op = info.op;
  // Every region one block ending in a terminator (an empty If branch or a
  // malformed body leaves the node opaque, as an unknown holder is).
  SmallVector<Operation *, 2> terms;
  for (Region &r : op->getRegions()) {
    if (!r.hasOneBlock() || r.front().empty() ||
        !r.front().back().hasTrait<OpTrait::IsTerminator>()) {
      info.structural = true;
      info.processable = false;
      return;
    }
    terms.push_back(&r.front().back());
  }
  // The type constraint of the carried values (`V`): whether it has the low
  // type depends on the opset version (bfloat16 from Loop/If/Scan-13).
  const OnnxParamSchema *param = info.schema->getOutputParam(0);
  const OnnxTypeConstraintSchema *tc =
      param ? info.schema->findConstraint(param->typeStr) : nullptr;
  StringRef low =
      mode == AMPMode::BF16 ? "tensor(bfloat16)" : "tensor(float16)";
  bool supports = tc && llvm::is_contained(tc->getAllowedTypes(), low);

  struct Member {
    int inPort = -1, outPort = -1;
    SmallVector<OpOperand *, 2> yields;
    SmallVector<Value, 1> args;
  };
  SmallVector<Member> groups;
  auto arg = [&](unsigned region, unsigned i) -> Value {
    return op->getRegion(region).getArgument(i);
  };
  auto yield = [&](unsigned region, unsigned i) -> OpOperand * {
    return &terms[region]->getOpOperand(i);
  };
  unsigned numIn = op->getNumOperands(), numOut = op->getNumResults();
  bool ok = true;
  if (isa<IfOp>(op)) {
    // Result i = then/else output i.
    for (Operation *t : terms)
      ok &= t->getNumOperands() == numOut;
    for (unsigned i = 0; ok && i < numOut; ++i) {
      Member m;
      m.outPort = i;
      for (unsigned r = 0; r < terms.size(); ++r)
        m.yields.push_back(yield(r, i));
      groups.push_back(std::move(m));
    }
  } else if (isa<LoopOp>(op)) {
    // Operands (M, cond, v_initial...N); body arguments (iter, cond, v...N);
    // body outputs (cond, v...N, scan...K); results (v...N, scan...K).
    unsigned carried = numIn >= 2 ? numIn - 2 : 0;
    ok = numIn >= 2 && op->getRegion(0).getNumArguments() == numIn &&
         terms[0]->getNumOperands() == 1 + numOut && numOut >= carried;
    for (unsigned j = 0; ok && j < numOut; ++j) {
      Member m;
      m.outPort = j;
      m.yields.push_back(yield(0, 1 + j));
      if (j < carried) {
        m.inPort = 2 + j;
        m.args.push_back(arg(0, 2 + j));
      }
      groups.push_back(std::move(m));
    }
  } else if (auto scan = dyn_cast<ScanOp>(op)) {
    // Operands (state...N, scan inputs...M); body arguments the same; body
    // outputs (state...N, scan outputs...K); results the same.
    int64_t m = (int64_t)scan.getNumScanInputs().value_or(~0ull >> 1);
    ok = m >= 0 && m <= (int64_t)numIn &&
         op->getRegion(0).getNumArguments() == numIn &&
         terms[0]->getNumOperands() == numOut;
    unsigned state = ok ? numIn - m : 0;
    ok &= state <= numOut;
    for (unsigned i = 0; ok && i < numIn; ++i) {
      Member g;
      g.inPort = i;
      g.args.push_back(arg(0, i));
      if (i < state) {
        g.outPort = i;
        g.yields.push_back(yield(0, i));
      }
      groups.push_back(std::move(g));
    }
    for (unsigned k = state; ok && k < numOut; ++k) {
      Member g;
      g.outPort = k;
      g.yields.push_back(yield(0, k));
      groups.push_back(std::move(g));
    }
  }
  if (!ok) {
    info.structural = true;
    info.processable = false;
    return;
  }
  for (Member &m : groups) {
    unsigned index = vertexNode.size();
    if (m.inPort >= 0)
      portVertex[info.ports + m.inPort] = index;
    if (m.outPort >= 0)
      portVertex[info.ports + info.numInputs + m.outPort] = index;
    ControlFlowPorts &cf = controlFlowPorts[index];
    for (OpOperand *use : m.yields) {
      cf.ins.push_back(use);
      useVertex[use] = index;
    }
    cf.outs.append(m.args.begin(), m.args.end());
    for (Value a : m.args)
      argVertex[a] = index;
    vertexNode.push_back(n);
    pv.emplace_back();
    pv.back().supports = supports;
  }
}

//===----------------------------------------------------------------------===//
// Painting
//===----------------------------------------------------------------------===//

void AMPGraphRewriter::paint() {
  AMPPaint painted = paintAMP(pv, edges, mode);
  allow = std::move(painted.allow);
  deny = std::move(painted.deny);
  why = std::move(painted.why);
  paintFrom = std::move(painted.paintFrom);
  denyRoot = std::move(painted.denyRoot);
  nothingToDo = painted.nothingToDo;
  if (nothingToDo)
    return;
  report.foundAllowOps = true;
  auto canTake = [&](unsigned w) { return canTakeLowType(pv[w], deny[w]); };

  // Existing casts whose consumers are all low precision are retargeted.
  for (unsigned n = 0; n < nodes.size(); ++n) {
    NodeInfo &info = nodes[n];
    if (!info.processable || !isa<CastOp>(info.op))
      continue;
    if (info.op->getNumResults() == 0 || outVertex(info, 0) < 0)
      continue;
    unsigned v = outVertex(info, 0);
    if (deny[v] || !canTake(v))
      continue;
    // Not when its input has another cast to the low type already: that
    // would make two casts of the input to the low type.
    Value input = info.op->getOperand(0);
    if (llvm::any_of(input.getUsers(), [&](Operation *user) {
          return user != info.op && isa<CastOp>(user) &&
                 getElementTypeOrNull(user->getResult(0).getType()) == lowType;
        }))
      continue;
    Value result = info.op->getResult(0);
    bool allLow = !result.use_empty();
    for (OpOperand &use : result.getUses()) {
      int vi = consumerVertex(use);
      if (vi < 0 || !allow[vi]) {
        allLow = false;
        break;
      }
    }
    if (allLow) {
      allow[v] = 1;
      why[v] = PaintWhy::Cast;
      info.retargetedCast = true;
    }
  }
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

std::string AMPGraphRewriter::valueName(Value value) {
  return getOnnxValueName(graph, value);
}

bool AMPGraphRewriter::isLowOnlySource(Value value) {
  // Graph inputs, initializers and Constant nodes: their casts are "Const
  // and Variable casts" and do not count in the summary.
  if (auto arg = dyn_cast<BlockArgument>(value)) // not a subgraph's input
    return arg.getOwner()->getParentOp() == graph.getOperation();
  Operation *op = value.getDefiningOp();
  return isa<InitializerOp, ConstantOp>(op);
}

Value AMPGraphRewriter::getCast(Value value, Type elementType,
                                Operation *consumer) {
  auto key = std::make_pair(value, elementType);
  if (auto it = castCache.find(key); it != castCache.end())
    return it->second;

  // Exact round trip: value = Cast(x_low -> f32) and we want x_low back.
  if (auto cast = value.getDefiningOp<CastOp>())
    if (elementType == lowType &&
        getElementTypeOrNull(value.getType()) == f32Type &&
        getElementTypeOrNull(cast.getInput().getType()) == elementType) {
      castCache[key] = cast.getInput();
      return cast.getInput();
    }

  // A graph output that became low precision gets a cast back to f32 of its
  // own, named after the output; existing casts of it then read that cast.
  bool namedOutput = elementType == f32Type && outputCastNames.count(value);

  // Reuse an existing cast of this value to this type that dominates the
  // consumer. Else one that comes after the consumer in the value's block
  // moves up to where a new cast would go, so the value keeps a single cast
  // to this type.
  Block *home = isa<BlockArgument>(value)
                    ? cast<BlockArgument>(value).getOwner()
                    : value.getDefiningOp()->getBlock();
  CastOp movable;
  if (!namedOutput)
    for (Operation *user : value.getUsers()) {
      auto existing = dyn_cast<CastOp>(user);
      if (!existing || getElementTypeOrNull(existing.getType()) != elementType)
        continue;
      if (dom.properlyDominates(existing.getOperation(), consumer)) {
        castCache[key] = existing.getResult();
        return existing.getResult();
      }
      if (!movable && existing->getBlock() == home)
        movable = existing;
    }
  if (movable) {
    if (isa<BlockArgument>(value)) {
      auto tail = argCastTail.find(home);
      if (tail != argCastTail.end())
        movable->moveAfter(tail->second);
      else
        movable->moveBefore(&home->front());
      argCastTail[home] = movable;
    } else {
      movable->moveAfter(value.getDefiningOp());
    }
    // Exported right after the node before it, not at its old file position.
    movable->removeAttr(attrs::kOrder);
    castCache[key] = movable.getResult();
    return movable.getResult();
  }

  OpBuilder b(graph.getContext());
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    // Casts of block arguments go to the top of the block, in creation order.
    auto tail = argCastTail.find(arg.getOwner());
    if (tail != argCastTail.end())
      b.setInsertionPointAfter(tail->second);
    else
      b.setInsertionPointToStart(arg.getOwner());
  } else
    b.setInsertionPointAfter(value.getDefiningOp());
  // The result type and the `to` attribute come from caches, and the op
  // name is resolved once: a graph of a million nodes gets ~10^5 casts.
  Type &type = castTypes[{value.getType(), elementType}];
  if (!type)
    type = cast<TensorType>(value.getType()).clone(elementType);
  IntegerAttr &to = castTo[elementType];
  if (!to)
    to = b.getI64IntegerAttr(elementType == f32Type           ? 1
                             : isa<BFloat16Type>(elementType) ? 16
                                                              : 10);
  if (!castName)
    castName = OperationName(CastOp::getOperationName(), graph.getContext());
  OperationState state(value.getLoc(), *castName);
  CastOp::build(b, state, type, value, /*round_mode=*/nullptr,
                /*saturate=*/nullptr, to);
  auto castOp = cast<CastOp>(b.create(state));
  // A graph output's cast back to f32 takes the output's name.
  if (auto it = outputCastNames.find(value);
      it != outputCastNames.end() && elementType == f32Type)
    namer.name(castOp, it->second);
  newCasts.push_back({castOp, value});
  if (auto arg = dyn_cast<BlockArgument>(value))
    argCastTail[arg.getOwner()] = castOp;
  if (elementType != f32Type && !isLowOnlySource(value))
    ++report.summary.lowPrecisionCasts;
  castCache[key] = castOp.getResult();
  return castOp.getResult();
}

void AMPGraphRewriter::rewrite() {
  // Changes the types of an ALLOW vertex.
  loweredPort.assign(portVertex.size(), 0);
  auto lowerVertex = [&](unsigned vi) {
    NodeInfo &info = nodes[vertexNode[vi]];
    info.converted = true;
    auto lower = [&](Value r) {
      auto t = dyn_cast<TensorType>(r.getType());
      if (!t || t.getElementType() != f32Type)
        return false;
      Type &lowT = lowered[t];
      if (!lowT)
        lowT = t.clone(lowType);
      r.setType(lowT);
      return true;
    };
    forEachPort(
        vi, [](unsigned) {},
        [&](unsigned p) {
          if (lower(info.op->getResult(p)))
            loweredPort[info.ports + info.numInputs + p] = 1;
        });
    if (const ControlFlowPorts *cf = controlFlowPortsOf(vi))
      for (Value arg : cf->outs) // body arguments of a control-flow group
        if (lower(arg))
          loweredArgs.insert(arg);
    if (auto cast = dyn_cast<CastOp>(info.op))
      cast.setToAttr(
          OpBuilder(cast).getI64IntegerAttr(mode == AMPMode::BF16 ? 16 : 10));
  };
  auto lowerNode = [&](unsigned n) {
    for (unsigned vi : nodes[n].vertices())
      if (allow[vi])
        lowerVertex(vi);
  };

  // A graph output must stay the f32 value of its name: the low-precision
  // producer's output is renamed `<name>_fp16` and the cast back to f32
  // takes `<name>`.
  Operation *terminator = graph.getBody().front().getTerminator();
  for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
    Operation *def = value.getDefiningOp();
    auto outName = graph.getResultAttrOfType<StringAttr>(i, attrs::kValueName);
    if (!def || !outName || !willLower(value) || outputCastNames.count(value) ||
        valueName(value) != outName.getValue())
      continue;
    auto outs = def->getAttrOfType<ArrayAttr>(attrs::kOutputNames);
    unsigned r = cast<OpResult>(value).getResultNumber();
    if (!outs || r >= outs.size())
      continue;
    SmallVector<Attribute> names(outs.begin(), outs.end());
    StringRef suffix = mode == AMPMode::BF16 ? "_bf16" : "_fp16";
    names[r] = StringAttr::get(
        graph.getContext(),
        namer.uniqueValueName((outName.getValue() + suffix).str()));
    def->setAttr(attrs::kOutputNames,
                 ArrayAttr::get(graph.getContext(), names));
    outputCastNames[value] = outName.getValue().str();
  }

  // Without regions, each node is lowered just before its operands are
  // fixed below (its producers come before it): one visit per node. Cast
  // nodes go first: getCast() looks for a value's casts among its users,
  // wherever they are, and must see their final types.
  for (unsigned n = 0; n < nodes.size(); ++n)
    if (hasRegions || nodes[n].isCast)
      lowerNode(n);

  // Fix every edge whose ends disagree, in post-order (casts of a block
  // argument are created, and so ordered, as their consumers come).
  auto fixOperands = [&](Operation *op, const NodeInfo *info) {
    for (OpOperand &operand : op->getOpOperands()) {
      Value value = operand.get();
      Type cur = getElementTypeOrNull(value.getType());
      if (!cur)
        continue;
      Type want;
      int vi = info ? inVertex(*info, operand.getOperandNumber())
                    : consumerVertex(operand);
      bool lowConsumer = vi >= 0 && allow[vi];
      if (lowConsumer)
        want = lowType;
      else if (cur != lowType) // the values the pass lowered are all low now
        continue;
      else if (info ? inputWasLowered(*info, operand.getOperandNumber(), value)
                    : wasLowered(value))
        want = f32Type; // the pass lowers f32 values only
      else
        continue;
      if (want == cur)
        continue;
      // An existing Cast of the value to `want` is the cast other consumers
      // reuse; its own input stays as it is (no self-recurring cast).
      Value casted = getCast(value, want, op);
      if (casted.getDefiningOp() == op)
        continue;
      operand.set(casted);
      // A subgraph output is named after the value its terminator returns.
      Operation *holder = op->getParentOp();
      if (!info && op->hasTrait<OpTrait::IsTerminator>() &&
          holder != graph.getOperation()) {
        if (auto c = casted.getDefiningOp<CastOp>())
          namer.name(c);
        setSubgraphOutputName(holder, op->getParentRegion()->getRegionNumber(),
                              operand.getOperandNumber(), valueName(casted));
      }
    }
  };
  if (!hasRegions) {
    // One block: post-order is the collected order, the nodes interleaved
    // with the other ops, and no walk of the IR is needed.
    unsigned other = 0;
    for (unsigned n = 0; n <= nodes.size(); ++n) {
      for (; other < otherOps.size() && otherOps[other].first == n; ++other)
        fixOperands(otherOps[other].second, nullptr);
      if (n < nodes.size()) {
        if (!nodes[n].isCast)
          lowerNode(n);
        fixOperands(nodes[n].op, &nodes[n]);
      }
    }
  } else {
    SmallVector<Operation *> ops;
    graph.getBody().walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      auto ni = nodeIndex.find(op);
      fixOperands(op, ni == nodeIndex.end() ? nullptr : &nodes[ni->second]);
    }
  }

  // The report names every cast: name them now, as writing the graph
  // would.
  if (records) {
    nameUnnamedCasts(graph);
    for (auto [c, input] : newCasts)
      report.casts.push_back(
          {c->getAttrOfType<StringAttr>(attrs::kNodeName).getValue().str(),
           valueName(input),
           getElementTypeOrNull(c.getType()) == f32Type
               ? "fp32"
               : getAMPModeName(mode).str()});
  }

  // Retargeted casts that now cast low to low fold away.
  for (NodeInfo &info : nodes) {
    if (!info.retargetedCast || !info.converted)
      continue;
    auto cast = cast_if_present<CastOp>(info.op);
    if (!cast || cast.getInput().getType() != cast.getType())
      continue;
    cast.getResult().replaceAllUsesWith(cast.getInput());
  }
}

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

int AMPGraphRewriter::getLaterOpsetTaking(const OnnxOpSchema &schema) {
  auto [it, inserted] = laterOpsetTaking.try_emplace(&schema, 0);
  if (!inserted)
    return it->second;
  StringRef low =
      mode == AMPMode::BF16 ? "tensor(bfloat16)" : "tensor(float16)";
  // The constraints that take f32 but not the low type, by name: a later
  // version keeps the names of its type constraints.
  SmallVector<StringRef, 2> lacking;
  for (const OnnxTypeConstraintSchema &c : schema.getConstraints())
    if (llvm::is_contained(c.getAllowedTypes(), StringRef("tensor(float)")) &&
        !llvm::is_contained(c.getAllowedTypes(), low))
      lacking.push_back(c.name);
  for (const OnnxOpSchema *next = lookupNextOnnxSchema(schema);
       next && !lacking.empty(); next = lookupNextOnnxSchema(*next))
    for (StringRef name : lacking)
      if (const OnnxTypeConstraintSchema *c = next->findConstraint(name);
          c && llvm::is_contained(c->getAllowedTypes(), low))
        return laterOpsetTaking[&schema] = next->sinceVersion;
  return 0;
}

void AMPGraphRewriter::warnOpsetLimits() {
  if (opsetLimits.empty())
    return;
  unsigned total = 0;
  for (const auto &entry : opsetLimits)
    total += entry.second.nodes;
  // At the graph's location, without the graph printed after it.
  InFlightDiagnostic diag =
      mlir::emitWarning(graph.getLoc())
      << "auto-mixed-precision: " << total
      << (total == 1 ? " allow-list node stays" : " allow-list nodes stay")
      << " fp32 because the model's operator "
         "versions take no "
      << getAMPModeName(mode) << ": ";
  bool onlyOnnx = true;
  llvm::interleaveComma(opsetLimits, diag, [&](const auto &entry) {
    const auto &[domain, opType, since] = entry.first;
    const OpsetLimit &l = entry.second;
    onlyOnnx &= domain.empty();
    diag << (domain.empty() ? "" : domain + ":") << opType << "-" << since
         << " (" << l.nodes << "; from opset " << l.taking << ")";
  });
  diag << "; convert the model to a newer opset first";
  if (onlyOnnx)
    diag << " (e.g. with onnx.version_converter)";
}

void AMPGraphRewriter::record() {
  AMPSummary &s = report.summary;
  auto nodeNameOf = [&](int v) -> std::string {
    if (v < 0)
      return "?";
    const NodeInfo &n = nodes[vertexNode[v]];
    StringRef name = nodeName(n);
    return (name.empty() ? opTypeOf(n) : name).str();
  };
  // A neighbouring vertex of an allow-list node that stayed f32 (its
  // operator cannot take the low type, or it is kept), or -1.
  auto unpaintedAllowNeighbour = [&](const NodeInfo &info) -> int {
    for (unsigned v : info.vertices())
      for (ArrayRef<unsigned> next : {edges.fanin(v), edges.fanout(v)})
        for (unsigned w : next)
          if (!allow[w] && nodes[vertexNode[w]].list == AMPList::Allow)
            return w;
    return -1;
  };
  for (NodeInfo &info : nodes) {
    bool isDenied = false;
    int deniedVertex = -1;
    for (unsigned v : info.vertices())
      if (deny[v]) {
        isDenied = true;
        deniedVertex = v;
      }

    if (info.processable)
      s.countNode(info.list, info.converted, isDenied);
    // An allow-list node whose f32 ports take no low type at this opset,
    // though a later version of its operator does.
    int laterOpset = 0;
    if (info.processable && info.schema && info.list == AMPList::Allow &&
        !info.converted && !isDenied && !info.keep && !info.structural &&
        llvm::any_of(info.vertices(), [&](unsigned v) {
          return pv[v].isF32 && !pv[v].supports;
        }))
      laterOpset = getLaterOpsetTaking(*info.schema);
    if (laterOpset) {
      OpsetLimit &limit =
          opsetLimits[{normalizeOnnxDomain(domainOf(info)).str(),
                       opTypeOf(info).str(), info.schema->sinceVersion}];
      limit.taking = laterOpset;
      ++limit.nodes;
    }
    if (!records) // the summary is all that was asked for
      continue;

    AMPNodeRecord rec;
    StringRef domain = domainOf(info), opType = opTypeOf(info);
    rec.name = nodeName(info).str();
    rec.domain = domain.str();
    rec.opType = opType.str();
    rec.list = info.list;
    rec.lowPrecision = info.converted;
    std::string listed = (getAMPListName(info.list) + ": " +
                          (domain.empty() ? opType : domain + ":" + opType))
                             .str();

    if (info.structural)
      rec.reason = "has subgraphs of unknown semantics: treated as fp32";
    else if (info.keep)
      rec.reason = "keep-fp32";
    else if (info.retargetedCast && info.converted)
      rec.reason = "existing Cast retargeted: all consumers are " +
                   getAMPModeName(mode).str();
    else if (info.list == AMPList::None)
      rec.reason =
          info.schema ? "not on any list" : "not on any list (no ONNX schema)";
    else if (!info.schema)
      rec.reason = listed + ", but no ONNX schema: fp32";
    else if (info.list == AMPList::Deny)
      rec.reason = listed;
    else if (nothingToDo)
      rec.reason = "stays fp32: no allow-list node in the graph, nothing to do";
    else if (isDenied) {
      int root = denyRoot[deniedVertex], via = paintFrom[deniedVertex];
      rec.reason = "blocked by deny node " + nodeNameOf(root);
      if (via >= 0 && via != root)
        rec.reason += " via " + nodeNameOf(via);
    } else if (info.converted) {
      rec.reason = listed;
      for (unsigned v : info.vertices()) {
        if (!allow[v])
          continue;
        switch (why[v]) {
        case PaintWhy::Between:
          rec.reason +=
              ", between allow nodes (via " + nodeNameOf(paintFrom[v]) + ")";
          break;
        case PaintWhy::FollowAllow:
          rec.reason += ", follows allow node " + nodeNameOf(paintFrom[v]);
          break;
        case PaintWhy::Clear:
          rec.reason += ", next to " + getAMPModeName(mode).str() + " node " +
                        nodeNameOf(paintFrom[v]);
          break;
        default:
          break;
        }
        break;
      }
    } else if (info.list == AMPList::Allow) {
      rec.reason =
          listed + ", but no f32 port can take " + getAMPModeName(mode).str();
      if (laterOpset)
        rec.reason += " (" + opType.str() + "-" +
                      std::to_string(info.schema->sinceVersion) +
                      " takes none; opset " + std::to_string(laterOpset) +
                      " does)";
    } else if (int w = unpaintedAllowNeighbour(info); w >= 0)
      rec.reason = "stays fp32: its allow-list neighbour " + nodeNameOf(w) +
                   " stays fp32";
    else if (info.list == AMPList::Infer)
      rec.reason = "stays fp32: not between allow nodes";
    else
      rec.reason = "stays fp32: no allow neighbour";
    report.nodes.push_back(std::move(rec));
  }

  // Erase folded casts last (records above still read their ops).
  for (NodeInfo &info : nodes)
    if (info.retargetedCast && info.converted && info.op->use_empty() &&
        isa<CastOp>(info.op))
      info.op->erase();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct AutoMixedPrecisionPass
    : public amp::train::impl::AutoMixedPrecisionBase<AutoMixedPrecisionPass> {
  using AutoMixedPrecisionBase::AutoMixedPrecisionBase;
  AutoMixedPrecisionPass(AutoMixedPrecisionOptions options, AMPReport *out)
      : AutoMixedPrecisionBase(std::move(options)), out(out) {}

  /// Where the API (createAutoMixedPrecision with a report) wants the report.
  AMPReport *out = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<AMPMode> parsedMode = parseAMPMode(mode);
    if (!parsedMode) {
      module.emitError() << "auto-mixed-precision: unknown mode '" << mode
                         << "' (expected fp16 or bf16)";
      return signalPassFailure();
    }

    AMPLists amLists = AMPLists::getDefaults(*parsedMode);
    if (!lists.empty()) {
      auto loaded = AMPLists::loadJSON(lists);
      if (!loaded) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      amLists = std::move(*loaded);
    }
    amLists.applyEnvironment();
    // Pass options come after the environment: adds, then removes, per list.
    auto edit = [&](AMPList list, ArrayRef<std::string> adds,
                    ArrayRef<std::string> removes) {
      for (const std::string &e : adds)
        amLists.add(list, e);
      for (const std::string &e : removes)
        amLists.remove(list, e);
    };
    edit(AMPList::Allow, allowAdd, allowRemove);
    edit(AMPList::Deny, denyAdd, denyRemove);
    edit(AMPList::Infer, inferAdd, inferRemove);
    edit(AMPList::Clear, clearAdd, clearRemove);
    SmallVector<std::string> conflicts = amLists.findConflicts();
    if (!conflicts.empty()) {
      for (const std::string &msg : conflicts)
        module.emitError() << "auto-mixed-precision: op lists have "
                              "conflicting entries: "
                           << msg;
      return signalPassFailure();
    }

    llvm::StringSet<> keepNames;
    SmallVector<llvm::Regex> keepRegexes;
    for (const std::string &k : keepFp32) {
      keepNames.insert(k);
      llvm::Regex re("^(" + k + ")$");
      std::string err;
      if (!re.isValid(err)) {
        module.emitError() << "auto-mixed-precision: keep-fp32 entry '" << k
                           << "' is not a valid regular expression: " << err;
        return signalPassFailure();
      }
      keepRegexes.push_back(std::move(re));
    }

    AMPReport rep;
    rep.mode = *parsedMode;
    for (GraphOp graph : module.getOps<GraphOp>()) {
      AMPGraphRewriter rewriter(
          graph, amLists, *parsedMode, keepRegexes, keepNames, rep,
          /*records=*/out || !report.empty() || !dot.empty());
      rewriter.run();
    }
    // Functions of other dialects' ops (linalg, arith, math, tosa, ...):
    // painted through AMPOpInterface.
    // Pre-order, so that skipping a function skips its body: a train.graph
    // of a million nodes is not walked again here.
    module.walk<WalkOrder::PreOrder>([&](FunctionOpInterface fn) {
      if (isa<TrainDialect>(fn->getDialect()) || fn.isExternal())
        return WalkResult::skip();
      runAMPOnFunction(fn, amLists, *parsedMode, keepRegexes, keepNames, rep,
                       /*records=*/out || !report.empty() || !dot.empty());
      return WalkResult::skip();
    });

    if (summary) {
      if (rep.foundAllowOps)
        rep.printSummary(llvm::errs());
      else
        llvm::errs() << "auto-mixed-precision: no allowlist ops found, nothing "
                        "to do\n";
    }
    if (!report.empty())
      if (llvm::Error err = rep.writeJSON(report)) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(std::move(err));
        return signalPassFailure();
      }
    if (!dot.empty())
      if (llvm::Error err = writeAMPDot(module, rep, dot)) {
        module.emitError() << "auto-mixed-precision: "
                           << llvm::toString(std::move(err));
        return signalPassFailure();
      }
    if (out)
      *out = std::move(rep);
  }
};
} // namespace

std::unique_ptr<Pass>
amp::train::createAutoMixedPrecision(AutoMixedPrecisionOptions options,
                                     AMPReport *report) {
  return std::make_unique<AutoMixedPrecisionPass>(std::move(options), report);
}
