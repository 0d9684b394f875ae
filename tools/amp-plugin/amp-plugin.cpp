//===- amp-plugin.cpp - amp-mlir as an mlir-opt plugin
//---------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// One shared object that is both a dialect plugin and a pass plugin for any
// mlir-opt built against the same libMLIR.so (Debian's mlir-opt-22):
//
//   mlir-opt-22 --load-dialect-plugin=AmpMLIRPlugin.so \
//               --load-pass-plugin=AmpMLIRPlugin.so \
//               --pass-pipeline='builtin.module(auto-mixed-precision)' in.mlir
//
// The plugin links libMLIR.so dynamically, as mlir-opt-22 does, so the host
// and the plugin share one MLIR (one set of TypeIDs and registries).
// See docs/Embedding.md.
//
//===----------------------------------------------------------------------===//

#include "amp/InitAllDialects.h"
#include "amp/InitAllPasses.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

/// Entry point of --load-dialect-plugin: adds the train and amprt dialects
/// (and the upstream ones of the lowered form).
extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AmpMLIR", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            amp::registerAllDialects(*registry);
          }};
}

/// Entry point of --load-pass-plugin: registers the train dialect's passes,
/// the lowering's passes and the convert-train-to-runtime pipeline (usable
/// through --pass-pipeline).
extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AmpMLIR", LLVM_VERSION_STRING,
          []() { amp::registerAllPasses(); }};
}
