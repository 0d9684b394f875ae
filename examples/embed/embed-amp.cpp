//===- embed-amp.cpp - Run AMP through amp-mlir's C++ API -----------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Parses a train-dialect module, runs auto-mixed-precision (and loss-scaling)
// with amp::train::runAMPPipeline, and prints what the pipeline returned:
// the summary counters, each node's decision, the inserted casts and the
// loss-scaling outcome. The rewritten module goes to stdout last.
//
//   embed-amp model.mlir [--mode=bf16] [--loss-scaling] [--keep-fp32=name]
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/Pipeline.h"
#include "amp/InitAllDialects.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace amp::train;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::Required,
                                            llvm::cl::desc("<input.mlir>"));
static llvm::cl::opt<std::string> mode("mode", llvm::cl::init("fp16"),
                                       llvm::cl::desc("fp16 or bf16"));
static llvm::cl::opt<bool> lossScaling("loss-scaling",
                                       llvm::cl::desc("Run loss-scaling too"));
static llvm::cl::list<std::string>
    keepFp32("keep-fp32", llvm::cl::desc("Nodes that stay fp32"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "embed-amp\n");

  DialectRegistry registry;
  amp::registerAllDialects(registry);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return 1;

  // Typed options: the passes' own option structs.
  AMPPipelineOptions options;
  options.amp.mode = mode;
  options.amp.keepFp32.assign(keepFp32.begin(), keepFp32.end());
  options.lossScaling = lossScaling;
  options.lossScalingOptions.mode = "static";
  options.lossScalingOptions.initScale = 1024;
  FailureOr<AMPPipelineResult> result = runAMPPipeline(*module, options);
  if (failed(result))
    return 1;

  const AMPSummary &s = result->amp.summary;
  llvm::outs() << "processable " << s.totalProcessable << "\n"
               << "recognized " << s.recognized << "\n"
               << "converted " << s.converted << "\n"
               << "low-precision casts " << s.lowPrecisionCasts << "\n"
               << "allowlisted converted " << s.allowlistedConverted << "\n"
               << "denylisted blocking " << s.denylistedBlocking << "\n"
               << "blocked by denylisted " << s.blockedByDenylisted << "\n";
  for (const AMPNodeRecord &node : result->amp.nodes)
    llvm::outs() << "node " << node.name << " " << node.opType << " "
                 << (node.lowPrecision ? mode.getValue() : "fp32") << " ("
                 << node.reason << ")\n";
  for (const AMPCastRecord &cast : result->amp.casts)
    llvm::outs() << "cast " << cast.name << ": " << cast.input << " -> "
                 << cast.to << "\n";
  if (result->lossScaling) {
    llvm::outs() << "loss-scaling " << result->lossScaling->options.mode
                 << " scale "
                 << llvm::format("%g", result->lossScaling->options.initScale)
                 << "\n";
    for (const LossScalingGraphRecord &g : result->lossScaling->graphs)
      llvm::outs() << "graph @" << g.graph << ": " << g.seeds.size()
                   << " seed(s), " << g.unscaled << " gradient(s) unscaled, "
                   << g.accumulators << " accumulator(s) gated\n";
  }
  // And the human-readable summary the pass prints, from the same data.
  result->amp.printSummary(llvm::outs());
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
