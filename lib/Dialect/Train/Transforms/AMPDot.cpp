//===- AMPDot.cpp - Graphviz view of AMP decisions ------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/AMPDot.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace amp::train;

/// A dot string literal.
static std::string quote(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n"; // a line break in the label
      continue;
    }
    if (c == '"' || c == '\\')
      out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

/// "f16", "bf16", "f32", ... for a value's element type.
static std::string elementTypeName(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

llvm::Error amp::train::writeAMPDot(ModuleOp module, const AMPReport &report,
                                    StringRef path) {
  llvm::StringMap<const AMPNodeRecord *> records;
  for (const AMPNodeRecord &rec : report.nodes)
    records[rec.name] = &rec;
  llvm::StringSet<> casts;
  for (const AMPCastRecord &c : report.casts)
    casts.insert(c.name);
  return writeGraphDot(module, path, [&](StringRef name, StringRef) {
    DotNodeStyle style;
    if (casts.contains(name)) {
      style.shape = "diamond";
      style.fill = "#f6b26b";
      return style;
    }
    const AMPNodeRecord *rec = records.lookup(name);
    if (rec && rec->lowPrecision)
      style.fill = "#93c47d";
    else if (rec && rec->list == AMPList::Deny)
      style.fill = "#e06666";
    if (rec)
      style.tooltip = rec->reason;
    return style;
  });
}

llvm::Error amp::train::writeGraphDot(
    ModuleOp module, StringRef path,
    function_ref<DotNodeStyle(StringRef name, StringRef opType)> style) {
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError(ec, "cannot write dot file '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  llvm::raw_ostream &os = file.os();
  os << "digraph amp {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n";

  DenseMap<Value, std::string> sourceIds; // value -> dot id of its producer
  unsigned next = 0;
  auto idFor = [&](Operation *op) { return "n" + std::to_string(next++); };
  DenseMap<Operation *, std::string> opIds;

  module.walk([&](GraphOp graph) {
    Block &body = graph.getBody().front();
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      auto name = graph.getArgAttrOfType<StringAttr>(i, attrs::kValueName);
      std::string id = "in" + std::to_string(i);
      os << "  " << id << " [shape=ellipse, label="
         << quote(name ? name.getValue() : StringRef("input")) << "];\n";
      sourceIds[arg] = id;
    }
    graph.walk([&](Operation *op) {
      if (auto init = dyn_cast<InitializerOp>(op)) {
        std::string id = idFor(op);
        os << "  " << id
           << " [shape=ellipse, style=dashed, label=" << quote(init.getName())
           << "];\n";
        sourceIds[init.getResult()] = id;
        return;
      }
      auto node = dyn_cast<OnnxNodeOpInterface>(op);
      if (!node)
        return;
      std::string id = idFor(op);
      opIds[op] = id;
      auto nameAttr = op->getAttrOfType<StringAttr>(attrs::kNodeName);
      StringRef name = nameAttr ? nameAttr.getValue() : StringRef();
      DotNodeStyle st = style(name, node.getOnnxOpType());
      std::string label = (name + "\n" + node.getOnnxOpType()).str();
      if (!st.extraLine.empty())
        label += "\n" + st.extraLine;
      os << "  " << id << " [shape=" << st.shape
         << ", style=filled, fillcolor=" << quote(st.fill)
         << ", label=" << quote(label);
      if (!st.tooltip.empty())
        os << ", tooltip=" << quote(st.tooltip);
      os << "];\n";
      for (Value result : op->getResults())
        sourceIds[result] = id;
    });
    graph.walk([&](Operation *op) {
      std::string to = opIds.lookup(op);
      if (to.empty())
        return;
      llvm::SmallPtrSet<void *, 4> seen; // one edge per value read
      for (Value operand : op->getOperands()) {
        if (isa<NoneType>(operand.getType()) ||
            !seen.insert(operand.getAsOpaquePointer()).second)
          continue;
        std::string from = sourceIds.lookup(operand);
        if (!from.empty())
          os << "  " << from << " -> " << to
             << " [label=" << quote(elementTypeName(operand.getType()))
             << "];\n";
      }
    });
  });
  os << "}\n";
  file.keep();
  return llvm::Error::success();
}
