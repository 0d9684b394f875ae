//===- OnnxSchema.cpp - ONNX operator schema tables -----------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The schema tables (generated OnnxSchemas.inc, hand-written
// OnnxSchemasMicrosoft.inc) and their lookup. The tables are constant data;
// the index over them is built once, on first use (a function-local static,
// hence thread-safe), and only read afterwards.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/OnnxSchema.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <iterator>
#include <tuple>
#include <vector>

namespace amp::train {
namespace {

#include "OnnxSchemas.inc"
#include "OnnxSchemasMicrosoft.inc"

/// All schemas sorted by (domain, op_type, since_version), whether each comes
/// from the generated (standard ONNX) table, and for each domain and op_type
/// the range of its versions in that order.
struct SchemaRegistry {
  struct Range {
    unsigned begin = 0;
    unsigned end = 0;
  };
  std::vector<OnnxOpSchema> schemas;
  std::vector<bool> standard;                    // parallel to `schemas`
  llvm::StringMap<llvm::StringMap<Range>> index; // domain -> op_type -> range

  SchemaRegistry() {
    std::vector<std::pair<const OnnxOpSchema *, bool>> all;
    all.reserve(std::size(kGeneratedOnnxSchemas) +
                std::size(kMicrosoftOnnxSchemas));
    for (const OnnxOpSchema &s : kGeneratedOnnxSchemas)
      all.emplace_back(&s, true);
    for (const OnnxOpSchema &s : kMicrosoftOnnxSchemas)
      all.emplace_back(&s, false);
    auto tie = [](const OnnxOpSchema *s) {
      return std::make_tuple(llvm::StringRef(s->domain),
                             llvm::StringRef(s->opType), s->sinceVersion);
    };
    std::stable_sort(all.begin(), all.end(), [&](const auto &a, const auto &b) {
      return tie(a.first) < tie(b.first);
    });
    schemas.reserve(all.size());
    standard.reserve(all.size());
    for (const auto &[s, isStandard] : all) {
      schemas.push_back(*s);
      standard.push_back(isStandard);
    }
    for (unsigned i = 0, e = schemas.size(); i != e;) {
      unsigned j = i + 1;
      while (j != e &&
             llvm::StringRef(schemas[j].domain) == schemas[i].domain &&
             llvm::StringRef(schemas[j].opType) == schemas[i].opType) {
        assert(schemas[j].sinceVersion != schemas[j - 1].sinceVersion &&
               "two schemas for one operator version");
        ++j;
      }
      index[schemas[i].domain][schemas[i].opType] = Range{i, j};
      i = j;
    }
  }

  const Range *find(llvm::StringRef domain, llvm::StringRef opType) const {
    auto ops = index.find(normalizeOnnxDomain(domain));
    if (ops == index.end())
      return nullptr;
    auto it = ops->second.find(opType);
    return it == ops->second.end() ? nullptr : &it->second;
  }
};

const SchemaRegistry &getRegistry() {
  static const SchemaRegistry registry;
  return registry;
}

/// Min/max number of actual values for a list of formal parameters, with the
/// rules of onnx::OpSchema: trailing optionals may be omitted, a variadic
/// (always last) takes at least its min arity and has no upper bound (-1).
std::pair<int, int> arityRange(llvm::ArrayRef<OnnxParamSchema> params) {
  int min = 0, max = 0;
  for (const OnnxParamSchema &p : params) {
    switch (p.option) {
    case OnnxParamOption::Single:
      min = ++max;
      break;
    case OnnxParamOption::Optional:
      ++max;
      break;
    case OnnxParamOption::Variadic:
      min = max + p.minArity;
      return {min, -1};
    }
  }
  return {min, max};
}

const OnnxParamSchema *paramFor(llvm::ArrayRef<OnnxParamSchema> params,
                                unsigned index) {
  for (unsigned i = 0, e = params.size(); i != e; ++i) {
    if (params[i].option == OnnxParamOption::Variadic)
      return &params[i]; // binds all remaining values
    if (i == index)
      return &params[i];
  }
  return nullptr;
}

} // namespace

llvm::StringRef normalizeOnnxDomain(llvm::StringRef domain) {
  if (domain == "ai.onnx")
    return "";
  return domain;
}

const OnnxOpSchema *lookupOnnxSchema(llvm::StringRef domain,
                                     llvm::StringRef opType,
                                     int64_t opsetVersion) {
  const SchemaRegistry &registry = getRegistry();
  const SchemaRegistry::Range *range = registry.find(domain, opType);
  if (!range)
    return nullptr;
  for (unsigned i = range->end; i != range->begin; --i) {
    const OnnxOpSchema &s = registry.schemas[i - 1];
    if (s.sinceVersion <= opsetVersion)
      return &s;
  }
  return nullptr;
}

const OnnxOpSchema *lookupLatestOnnxSchema(llvm::StringRef domain,
                                           llvm::StringRef opType) {
  const SchemaRegistry &registry = getRegistry();
  const SchemaRegistry::Range *range = registry.find(domain, opType);
  return range ? &registry.schemas[range->end - 1] : nullptr;
}

const OnnxOpSchema *lookupNextOnnxSchema(const OnnxOpSchema &schema) {
  const SchemaRegistry &registry = getRegistry();
  const SchemaRegistry::Range *range =
      registry.find(schema.domain, schema.opType);
  if (!range)
    return nullptr;
  for (unsigned i = range->begin; i != range->end; ++i)
    if (registry.schemas[i].sinceVersion > schema.sinceVersion)
      return &registry.schemas[i];
  return nullptr;
}

llvm::ArrayRef<OnnxOpSchema> getAllOnnxSchemas() {
  return getRegistry().schemas;
}

const OnnxAttrSchema *OnnxOpSchema::findAttr(llvm::StringRef name) const {
  for (const OnnxAttrSchema &a : getAttrs())
    if (name == a.name)
      return &a;
  return nullptr;
}

const OnnxTypeConstraintSchema *
OnnxOpSchema::findConstraint(llvm::StringRef name) const {
  for (const OnnxTypeConstraintSchema &c : getConstraints())
    if (name == c.name)
      return &c;
  return nullptr;
}

int OnnxOpSchema::getMinInputs() const { return arityRange(getInputs()).first; }
int OnnxOpSchema::getMaxInputs() const {
  return arityRange(getInputs()).second;
}
int OnnxOpSchema::getMinOutputs() const {
  return arityRange(getOutputs()).first;
}
int OnnxOpSchema::getMaxOutputs() const {
  return arityRange(getOutputs()).second;
}

const OnnxParamSchema *OnnxOpSchema::getInputParam(unsigned index) const {
  return paramFor(getInputs(), index);
}

const OnnxParamSchema *OnnxOpSchema::getOutputParam(unsigned index) const {
  return paramFor(getOutputs(), index);
}

bool isStandardOnnxSchema(const OnnxOpSchema &schema) {
  const SchemaRegistry &registry = getRegistry();
  std::less<const OnnxOpSchema *> before;
  const OnnxOpSchema *p = &schema;
  // What the lookup functions return: entries of the registry.
  const OnnxOpSchema *first = registry.schemas.data();
  const OnnxOpSchema *last = first + registry.schemas.size();
  if (!before(p, first) && before(p, last))
    return registry.standard[p - first];
  // Entries of the tables themselves, or a copy (found by its version).
  if (!before(p, std::begin(kGeneratedOnnxSchemas)) &&
      before(p, std::end(kGeneratedOnnxSchemas)))
    return true;
  if (const SchemaRegistry::Range *range =
          registry.find(schema.domain, schema.opType))
    for (unsigned i = range->begin; i != range->end; ++i)
      if (registry.schemas[i].sinceVersion == schema.sinceVersion)
        return registry.standard[i];
  return false;
}

} // namespace amp::train
