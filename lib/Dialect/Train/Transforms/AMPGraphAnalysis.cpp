//===- AMPGraphAnalysis.cpp - AMP's vertex graph and its painting ---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The graph the AMP pass paints (docs/AutoMixedPrecision.md): one vertex per
// (node, ONNX type constraint) pair, If/Loop/Scan values across their body
// boundaries as one group each, edges along SSA use-def; a vertex is a
// candidate when all its ports are f32. Painting follows Grappler's
// auto_mixed_precision (AMPPainter.h), then retargets existing casts whose
// consumers are all low precision.
//
//===----------------------------------------------------------------------===//

#include "AMPGraphRewriter.h"

using namespace mlir;
using namespace amp::train;
using namespace amp::train::detail;

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
  graph.getFunctionBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
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
    // Measured ranges (ranges=): a node the lists would let convert stays
    // fp32 when a value it writes or reads would overflow or underflow the
    // low type.
    // Value names are the main graph's: a function's are its own.
    if (rangePolicy.ranges && isa<GraphOp>(graph.getOperation()) &&
        info.processable && !info.isCast && info.list != AMPList::None &&
        info.list != AMPList::Deny) {
      // Its outputs, and its inputs (a converted node reads them cast to
      // the low type): by ONNX name.
      SmallVector<std::string, 4> owned;
      for (Value v : op->getResults())
        owned.push_back(valueName(v));
      for (Value v : op->getOperands())
        owned.push_back(valueName(v));
      SmallVector<StringRef, 4> names(owned.begin(), owned.end());
      if (std::optional<std::string> why =
              rangePolicy.keepReason(names, mode)) {
        info.keep = true;
        info.processable = false;
        report.rangeKept.push_back(
            {nodeName(info).str(), opTypeOf(info).str(), *why});
        rangeReasons[op] = std::move(*why);
      }
    }
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
