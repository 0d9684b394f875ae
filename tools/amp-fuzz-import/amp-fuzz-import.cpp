//===- amp-fuzz-import.cpp - libFuzzer target for the ONNX importer -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to the ONNX importer and, when they import, exports
// the module again. Any crash, hang, leak or sanitizer report is a finding;
// diagnostics are expected and swallowed.
//
//===----------------------------------------------------------------------===//

#include "amp/InitAllDialects.h"
#include "amp/Target/ONNX/ExportONNX.h"
#include "amp/Target/ONNX/ImportONNX.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::DialectRegistry registry;
  amp::registerAllDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::MemoryBufferRef buffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx");
  amp::ImportOnnxOptions options;
  // Keep external data inside an empty folder: the fuzzer must not read
  // files of the machine it runs on.
  options.externalDataDir = "/nonexistent-amp-fuzz";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      amp::importOnnxModel(buffer, &context, options);
  if (module) {
    std::string out;
    llvm::raw_string_ostream os(out);
    (void)amp::exportOnnxModel(*module, os);
  }
  return 0;
}
