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

bool amp::amprt::isInPlaceParam(llvm::StringRef kernel, llvm::StringRef param) {
  // Ops.def's entries that update an input in place, and the multi-tensor
  // checks whose flag a call with reset = 0 reads and writes back.
  static const llvm::StringMap<llvm::SmallVector<llvm::StringRef, 4>> inPlace =
      {{"inplace_accumulate", {"buffer"}},
       {"unscale_gate_accumulate", {"buffer"}},
       {"unscale_check_accumulate", {"buffer", "all_finite"}},
       {"sgd", {"params", "momentum_bufs", "step"}},
       {"adamw", {"params", "m1", "m2"}},
       {"onnx_adam", {"x", "v", "h"}},
       {"onnx_adagrad", {"x", "h"}},
       {"onnx_momentum", {"x", "v"}},
       {"loss_scaler_update", {"scale", "growth_tracker"}},
       {"multi_tensor_unscale", {"ins", "outs", "all_finite"}},
       {"multi_tensor_all_finite", {"all_finite"}},
       {"multi_tensor_unscale_check", {"all_finite"}},
       {"multi_tensor_zero_unless", {"ins"}},
       {"batch_norm_training",
        {"running_mean", "running_var", "running_mean_out",
         "running_var_out"}}};
#ifndef NDEBUG
  static const bool checked = [] {
    for (const auto &entry : inPlace) {
      const KernelSignature *sig = lookupKernel(entry.getKey());
      assert(sig && "in-place table names a kernel missing from Ops.def");
      for (llvm::StringRef p : entry.getValue())
        assert(sig->find(p) && "in-place table names a missing parameter");
    }
    return true;
  }();
  (void)checked;
#endif
  auto it = inPlace.find(kernel);
  return it != inPlace.end() && llvm::is_contained(it->second, param);
}
