//===- KernelABI.cpp - Ops.def parameter lists as data
//----------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/AmpRT/KernelABI.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

using namespace amp::amprt;

namespace {
struct RawEntry {
  const char *name;
  const char *kind;
  const char *params; // the expanded parameter list, as text
};

// Two steps so that AMPRT_P_UNARY and AMPRT_T are expanded before the text
// is taken: AMPRT_PARAMS_TEXT((a, b)) -> AMPRT_TEXT (a, b) -> "a, b".
#define AMPRT_TEXT(...) #__VA_ARGS__
#define AMPRT_PARAMS_TEXT(params) AMPRT_TEXT params
const RawEntry kRaw[] = {
#define AMPRT_KERNEL(name, kind, params)                                       \
  {#name, #kind, AMPRT_PARAMS_TEXT(params)},
#include "amp/Runtime/Ops.def"
};
#undef AMPRT_PARAMS_TEXT
#undef AMPRT_TEXT

ParamKind parseKind(llvm::StringRef type, llvm::StringRef kernel) {
  std::string t;
  for (char c : type)
    if (c != ' ')
      t += c;
  if (t == "amprt_context*")
    return ParamKind::Context;
  if (t == "constamprt_tensor*")
    return ParamKind::Tensor;
  if (t == "int32_t")
    return ParamKind::I32;
  if (t == "int64_t")
    return ParamKind::I64;
  if (t == "uint64_t")
    return ParamKind::U64;
  if (t == "float")
    return ParamKind::F32;
  if (t == "double")
    return ParamKind::F64;
  if (t == "constint64_t*")
    return ParamKind::I64Array;
  if (t == "constamprt_window*")
    return ParamKind::Window;
  llvm::report_fatal_error(llvm::Twine("Ops.def: kernel '") + kernel +
                           "' has a parameter of unknown type '" + type + "'");
}

struct Table {
  llvm::SmallVector<KernelSignature, 96> kernels;
  llvm::StringMap<unsigned> index;
  Table() {
    for (const RawEntry &raw : kRaw) {
      KernelSignature sig;
      sig.name = raw.name;
      sig.kind = raw.kind;
      llvm::SmallVector<llvm::StringRef> parts;
      llvm::StringRef(raw.params).split(parts, ',');
      for (llvm::StringRef part : parts) {
        part = part.trim();
        size_t cut = part.find_last_of(" *");
        if (cut == llvm::StringRef::npos)
          llvm::report_fatal_error(llvm::Twine("Ops.def: cannot read '") +
                                   part + "' of kernel " + raw.name);
        sig.params.push_back({part.substr(cut + 1).str(),
                              parseKind(part.substr(0, cut + 1), raw.name)});
      }
      index[sig.name] = kernels.size();
      kernels.push_back(std::move(sig));
    }
  }
};

const Table &table() {
  static const Table t;
  return t;
}
} // namespace

unsigned KernelSignature::numTensorParams() const {
  unsigned n = 0;
  for (const KernelParam &p : params)
    n += p.kind == ParamKind::Tensor;
  return n;
}

const KernelParam *KernelSignature::find(llvm::StringRef pname) const {
  for (const KernelParam &p : params)
    if (p.name == pname)
      return &p;
  return nullptr;
}

llvm::ArrayRef<KernelSignature> amp::amprt::allKernels() {
  return table().kernels;
}

const KernelSignature *amp::amprt::lookupKernel(llvm::StringRef name) {
  auto it = table().index.find(name);
  return it == table().index.end() ? nullptr : &table().kernels[it->second];
}
