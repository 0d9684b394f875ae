//===- AmpOptMain.cpp - amp-opt driver ------------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// mlir-opt with ONNX at both ends. When neither the input nor the output is
// ONNX (an input is when it is called .onnx, or starts like a binary model
// and is not called .mlir) this is exactly MlirOptMain. Otherwise the input
// is imported (streamed from disk) or parsed, the pass pipeline from the
// command line runs, and the result is exported to ONNX or printed as MLIR. The
// output file is created only once everything succeeded.
//
//===----------------------------------------------------------------------===//

#include "amp/Tools/AmpOptMain.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Target/ONNX/ExportONNX.h"
#include "amp/Target/ONNX/ImportONNX.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

const char *amp::getVersionString() { return "amp-mlir 0.1.0"; }

void amp::registerVersionPrinter() {
  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << getVersionString() << " (built against MLIR " << LLVM_VERSION_STRING
       << ")\n";
  });
}

static bool isOnnxPath(llvm::StringRef path) {
  return path.ends_with_insensitive(".onnx");
}

/// An input is ONNX when it is called .onnx, or when an input not called
/// .mlir starts like a binary model (ONNX models are often .pb; an ORT
/// format .ort gets the importer's explanation, not MLIR's parse error). A
/// regular file is looked at in place (and an ONNX one streamed from disk);
/// stdin ("-") and pipes are read once into `preread` and judged by it.
static bool isOnnxInput(llvm::StringRef path,
                        std::unique_ptr<llvm::MemoryBuffer> &preread,
                        std::string &errorMessage) {
  bool mlirName = path.ends_with_insensitive(".mlir");
  if (path != "-" && llvm::sys::fs::is_regular_file(path))
    return isOnnxPath(path) || (!mlirName && amp::startsLikeBinaryModel(path));
  preread = openInputFile(path, &errorMessage);
  if (!preread)
    return false;
  return isOnnxPath(path) ||
         (!mlirName &&
          amp::isBinaryModelHead(preread->getBuffer().take_front(8)));
}

/// The AMP pass leaves the casts it inserts unnamed; the ONNX exporter names
/// them as it writes them. When MLIR is printed instead, the pipeline ends
/// with train-name-casts so that the printed casts carry the same names.
static void nameCastsBeforePrinting(PassManager &pm) {
  bool amp = llvm::any_of(pm.getPasses(), [](Pass &p) {
    return p.getArgument() == "auto-mixed-precision";
  });
  if (amp)
    pm.addPass(amp::train::createNameCasts());
}

int amp::ampOptMain(int argc, char **argv, DialectRegistry &registry) {
  registerVersionPrinter();
  registerExportOnnxCLOptions();
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "amp-opt: the amp-mlir optimizer driver\n\n"
      "Reads an ONNX model (.onnx, or any binary input not called .mlir, "
      "such as .pb or stdin) or train-dialect MLIR (text or bytecode), runs "
      "the given passes, and writes ONNX when -o names an .onnx file, MLIR "
      "otherwise (bytecode with --emit-bytecode). ONNX external data is read "
      "next to the model and written next to -o (--onnx-external-data).\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

  std::unique_ptr<llvm::MemoryBuffer> preread;
  std::string readError;
  bool onnxInput = isOnnxInput(inputFilename, preread, readError);
  if (!readError.empty()) {
    llvm::errs() << readError << "\n";
    return 1;
  }
  // The input as a buffer: the one read already, or the file.
  auto inputBuffer = [&](std::string &errorMessage) {
    return preread ? std::move(preread)
                   : openInputFile(inputFilename, &errorMessage);
  };
  if (!onnxInput && !isOnnxPath(outputFilename)) {
    config.setPassPipelineSetupFn(
        [base = config](PassManager &pm) -> LogicalResult {
          if (failed(base.setupPassPipeline(pm)))
            return failure();
          nameCastsBeforePrinting(pm);
          return success();
        });
    std::string errorMessage;
    auto file = inputBuffer(errorMessage);
    if (!file) {
      llvm::errs() << errorMessage << "\n";
      return 1;
    }
    auto output = openOutputFile(outputFilename, &errorMessage);
    if (!output) {
      llvm::errs() << errorMessage << "\n";
      return 1;
    }
    if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
      return 1;
    output->keep();
    return 0;
  }

  MLIRContext context(registry);
  // One module, module passes: no work to spread over threads, and a
  // single-threaded context interns attributes and types without locks
  // (about 20% off the AMP pass and the import at 100k nodes).
  context.disableMultithreading();
  context.loadAllAvailableDialects();
  // --mlir-timing: import, each pass and export, as in MlirOptMain.
  DefaultTimingManager tm;
  applyDefaultTimingManagerCLOptions(tm);
  TimingScope timing = tm.getRootScope();
  OwningOpRef<ModuleOp> module;
  // Kept alive with the module: resources parsed from MLIR bytecode
  // reference the (mapped) input buffer instead of being copied.
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  SourceMgrDiagnosticHandler handler(*sourceMgr, &context);
  TimingScope inputTiming = timing.nest(onnxInput ? "Import ONNX" : "Parser");
  if (onnxInput && preread) {
    module = importOnnxModel(preread->getMemBufferRef(), &context);
  } else if (onnxInput) {
    module = importOnnxFile(inputFilename, &context);
  } else {
    std::string errorMessage;
    auto file = inputBuffer(errorMessage);
    if (!file) {
      llvm::errs() << errorMessage << "\n";
      return 1;
    }
    sourceMgr->AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  }
  inputTiming.stop();
  if (!module)
    return 1;

  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  pm.enableVerifier(config.shouldVerifyPasses());
  pm.enableTiming(timing);
  if (failed(applyPassManagerCLOptions(pm)) ||
      failed(config.setupPassPipeline(pm)))
    return 1;
  if (!isOnnxPath(outputFilename))
    nameCastsBeforePrinting(pm);
  if (failed(pm.run(*module)))
    return 1;

  TimingScope outputTiming =
      timing.nest(isOnnxPath(outputFilename) ? "Export ONNX" : "Output");
  // Serialize in memory first: a failed export leaves no file behind.
  std::string buffer;
  llvm::raw_string_ostream os(buffer);
  if (isOnnxPath(outputFilename)) {
    std::string errorMessage;
    auto output = openOutputFile(outputFilename, &errorMessage);
    if (!output) {
      llvm::errs() << errorMessage << "\n";
      return 1;
    }
    if (failed(exportOnnxModel(*module, output->os(),
                               getExportOnnxCLOptions(outputFilename))))
      return 1;
    output->keep();
    return 0;
  }
  if (config.shouldEmitBytecode()) {
    // Resources (the weights) are written as raw bytes, not hex.
    BytecodeWriterConfig writerConfig(getVersionString());
    if (std::optional<int64_t> version = config.bytecodeVersionToEmit())
      writerConfig.setDesiredBytecodeVersion(*version);
    if (config.shouldElideResourceDataFromBytecode())
      writerConfig.setElideResourceDataFlag();
    std::string errorMessage;
    auto output = openOutputFile(outputFilename, &errorMessage);
    if (!output) {
      llvm::errs() << errorMessage << "\n";
      return 1;
    }
    if (failed(writeBytecodeToFile(*module, output->os(), writerConfig)))
      return 1;
    output->keep();
    return 0;
  }
  module->print(os, OpPrintingFlags());
  std::string errorMessage;
  auto output = openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  output->os() << buffer << "\n";
  output->keep();
  return 0;
}
