//===- LoweringTable.cpp - the op families by (domain, op_type) ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// GraphLowering::lowerNode finds the families that lower a node here, by its
// (domain, op_type), instead of asking every family in turn. Each family's
// file lists its ops (GraphLowering::register*); an op two families lower
// (one declines what the other takes) keeps the order of registration.
// Shape computations (HostFold.cpp) are tried before any family: whether a
// node folds depends on its inputs' values, not on its type.
//
//===----------------------------------------------------------------------===//

#include "LoweringTable.h"

using namespace amp::lowering;

void GraphLowering::FamilyTable::add(StringRef domain,
                                     ArrayRef<StringRef> types, Family f) {
  for (StringRef type : types) {
    auto &list = map[(domain + ":" + type).str()];
    if (!llvm::is_contained(list, f))
      list.push_back(f);
  }
  if (!llvm::is_contained(order, f))
    order.push_back(f);
}

ArrayRef<GraphLowering::Family>
GraphLowering::FamilyTable::lookup(StringRef domain, StringRef type) const {
  if (domain == "ai.onnx")
    domain = "";
  auto it = map.find((domain + ":" + type).str());
  return it == map.end() ? ArrayRef<Family>() : ArrayRef<Family>(it->second);
}

namespace {
const GraphLowering::FamilyTable &familyTable() {
  static const GraphLowering::FamilyTable table = [] {
    GraphLowering::FamilyTable t;
    GraphLowering::registerFamilies(t);
    return t;
  }();
  return table;
}
} // namespace

void GraphLowering::registerFamilies(FamilyTable &t) {
  for (auto add :
       {registerResize, registerNN, registerData, registerRecurrent,
        registerComposite, registerElementwise, registerMath, registerLoss,
        registerOptimizer, registerShape, registerCollective})
    add(t);
}

ArrayRef<GraphLowering::Family> GraphLowering::familiesOf(StringRef domain,
                                                          StringRef type) {
  return familyTable().lookup(domain, type);
}

ArrayRef<GraphLowering::Family> GraphLowering::allFamilies() {
  return familyTable().families();
}
