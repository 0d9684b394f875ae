//===- AmpRunMain.cpp - amp-run driver ------------------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run's command line and what it does with it: the training options
// checked and handed to the trainer (lib/Driver/Trainer.h), or --run, one
// graph run once on a test data set (lib/Driver/GraphRunner.h). Its --help
// lists amp-run's own options only, not the LLVM library options the linked
// libraries register (--help-hidden still shows them all).
//
//===----------------------------------------------------------------------===//

#include "amp/Tools/amp-run/AmpRunMain.h"
#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "amp/Driver/BatchSearch.h"
#include "amp/Driver/CpuSetup.h"
#include "amp/Driver/GraphRunner.h"
#include "amp/Driver/OrtCheckpoint.h"
#include "amp/Driver/PrecisionCompare.h"
#include "amp/Driver/Trainer.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include <cmath>
#include <memory>

namespace cl = llvm::cl;

namespace {

/// amp-run MODEL --run DIR: one graph, once (GraphRunner.h). The training
/// options are refused before this is called.
int runOnce(llvm::ArrayRef<std::string> models, llvm::StringRef dir,
            llvm::StringRef outDir, llvm::StringRef device,
            llvm::StringRef dims, double rtol, double atol) {
  if (models.size() != 1 || llvm::StringRef(models[0]).ends_with(".mlir")) {
    llvm::errs() << "amp-run: --run takes one ONNX model\n";
    return 1;
  }
  amp::driver::RunOptions o;
  o.model = models[0];
  o.data = dir.str();
  o.outDir = outDir.str();
  o.device = device.str();
  o.dims = dims.str();
  o.rtol = rtol;
  o.atol = atol;
  auto ok = amp::driver::runGraph(o, llvm::outs());
  if (!ok) {
    llvm::WithColor::error(llvm::errs(), "amp-run")
        << llvm::toString(ok.takeError()) << "\n";
    return 1;
  }
  return *ok ? 0 : 1;
}

/// 1 after naming the first of `opts` given on the command line, which
/// does not go with `mode` (`why`), else 0.
int refuseWith(llvm::ArrayRef<cl::Option *> opts, llvm::StringRef mode,
               llvm::StringRef why) {
  for (cl::Option *opt : opts)
    if (opt->getNumOccurrences()) {
      llvm::errs() << "amp-run: " << (opt->ArgStr.size() == 1 ? "-" : "--")
                   << opt->ArgStr << " does not go with " << mode << " (" << why
                   << ")\n";
      return 1;
    }
  return 0;
}

/// amp-run's options, in one category (its --help lists that one only).
struct AmpRunOptions {
  cl::OptionCategory category{"amp-run options"};
  cl::list<std::string> models{
      cl::Positional, cl::OneOrMore,
      cl::desc("<training_model.onnx> <optimizer_model.onnx> | "
               "<lowered.mlir> | <model.onnx> --run <dir>"),
      cl::cat(category)};
  cl::opt<std::string> weights{
      "weights",
      cl::desc("the initial parameters: an ONNX model's "
               "initializers (e.g. the forward model) or "
               "onnxruntime-training's checkpoint (the default: "
               "the checkpoint next to the training model)"),
      cl::cat(category)};
  cl::opt<std::string> initSeed{
      "init", cl::value_desc("seed"),
      cl::desc("without --weights: initialize the trainable parameters "
               "from this seed (uniform +-1/sqrt(fan_in) for rank >= 2, "
               "zeros for biases)"),
      cl::cat(category)};
  cl::opt<std::string> device{"device", cl::desc("cpu | cuda"),
                              cl::cat(category), cl::init("cpu")};
  cl::opt<int64_t> threads{
      "threads",
      cl::desc("CPU threads (0: the CPUs this process may use, shared "
               "among the ranks a launcher started on the node)"),
      cl::cat(category), cl::init(0)};
  cl::opt<bool> cpuReference{
      "cpu-reference",
      cl::desc("the CPU backend's reference GEMM loops instead of oneDNN "
               "(numerics checks; also AMPRT_CPU_REFERENCE=1)"),
      cl::cat(category)};
  cl::opt<bool> fuseAttention{
      "fuse-attention",
      cl::desc("attention in f16/bf16 and its gradient as fused calls, "
               "scores and probabilities never stored (=false: the graph's "
               "separate calls)"),
      cl::cat(category), cl::init(true)};
  cl::opt<amp::driver::ChannelsLastChoice> channelsLast{
      "channels-last",
      cl::desc("convolutions and the calls around them in NHWC, the layout "
               "changed only at the edges of those regions"),
      cl::values(clEnumValN(amp::driver::ChannelsLastChoice::Auto, "auto",
                            "16bit on a device, off on the CPU"),
                 clEnumValN(amp::driver::ChannelsLastChoice::Off, "off",
                            "every layer as the graph has it (NCHW)"),
                 clEnumValN(amp::driver::ChannelsLastChoice::LowPrecision,
                            "16bit", "the regions of f16/bf16 convolutions"),
                 clEnumValN(amp::driver::ChannelsLastChoice::All, "all",
                            "the regions of every convolution")),
      cl::init(amp::driver::ChannelsLastChoice::Auto), cl::cat(category)};
  cl::opt<amp::driver::StepGraph> cudaGraph{
      "cuda-graph",
      cl::desc("record the second step as one CUDA graph and launch it for "
               "every step after (the step's host work then is one launch)"),
      cl::values(clEnumValN(amp::driver::StepGraph::Auto, "auto",
                            "when the device and the run allow it, else "
                            "call by call (a line says why)"),
                 clEnumValN(amp::driver::StepGraph::On, "on",
                            "as auto, but a step that cannot be one graph "
                            "is an error"),
                 clEnumValN(amp::driver::StepGraph::Off, "off",
                            "always call by call")),
      cl::init(amp::driver::StepGraph::Auto), cl::cat(category)};
  cl::opt<int64_t> steps{"steps", cl::desc("training steps"), cl::cat(category),
                         cl::init(1)};
  cl::opt<int64_t> batch{"batch",
                         cl::desc("batch size (binds the leading "
                                  "symbolic dim of the inputs)"),
                         cl::cat(category), cl::init(0)};
  cl::opt<std::string> data{"data",
                            cl::desc("synthetic:<seed> or a folder of "
                                     "<input>.npy / <input>.pb files"),
                            cl::cat(category), cl::init("synthetic:0")};
  cl::opt<uint64_t> seed{"seed", cl::desc("shuffle seed"), cl::cat(category),
                         cl::init(0)};
  cl::opt<bool> noShuffle{"no-shuffle", cl::desc("batches in file order"),
                          cl::cat(category)};
  cl::opt<std::string> dims{"dims", cl::desc("symbolic dims: name=v,..."),
                            cl::cat(category)};
  cl::opt<std::string> amp{
      "amp", cl::ValueOptional, cl::value_desc("fp16|bf16"),
      cl::desc("run auto-mixed-precision before lowering: --amp or "
               "--amp=fp16 with dynamic loss scaling, --amp=bf16 without"),
      cl::cat(category)};
  cl::opt<std::string> lossScale{
      "loss-scale", cl::value_desc("dynamic|<scale>"),
      cl::desc("fp16 AMP's loss scale: dynamic (the default; from 65536, "
               "halved on overflow, doubled after 2000 finite steps) or a "
               "static scale (as Apex's loss_scale); with --collect-ranges, "
               "the scale gradients' underflow is judged under"),
      cl::cat(category)};
  cl::opt<double> lr{"lr", cl::desc("learning rate"), cl::cat(category),
                     cl::init(1e-3)};
  cl::opt<std::string> log{"log", cl::desc("per-step CSV log"),
                           cl::cat(category)};
  cl::opt<bool> logTime{
      "log-time",
      cl::desc("with --log: a last column, seconds since the training loop "
               "started, when each step's results are back on the host"),
      cl::cat(category)};
  cl::opt<std::string> out{"o",
                           cl::desc("write the trained weights as "
                                    "ONNX initializers (with --run: "
                                    "a folder for output_<j>.pb)"),
                           cl::cat(category)};
  cl::opt<std::string> run{
      "run", cl::value_desc("dir"),
      cl::desc("run one model's graph once on the inputs in <dir> (an ONNX "
               "test data set: input_<i>.pb, or <name>.pb / <name>.npy) and "
               "compare with the expected outputs there (output_<j>.pb); "
               "exit 1 on a mismatch"),
      cl::cat(category)};
  cl::opt<double> rtol{"rtol", cl::desc("with --run: relative tolerance"),
                       cl::cat(category), cl::init(1e-3)};
  cl::opt<double> atol{"atol", cl::desc("with --run: absolute tolerance"),
                       cl::cat(category), cl::init(1e-7)};
  cl::opt<std::string> checkpoint{"checkpoint",
                                  cl::desc("write a checkpoint at the end"),
                                  cl::cat(category)};
  cl::opt<std::string> resume{"resume", cl::desc("resume from a checkpoint"),
                              cl::cat(category)};
  cl::opt<int64_t> checkpointEvery{
      "checkpoint-every", cl::value_desc("N"),
      cl::desc("with --checkpoint: also write it after every N steps (a "
               "multiple of --accumulate), replacing the last"),
      cl::cat(category), cl::init(0)};
  cl::opt<std::string> ortCheckpoint{
      "ort-checkpoint",
      cl::desc("write onnxruntime-training's checkpoint at the end "
               "(parameters, optimizer state; loss scale as properties): "
               "training goes on in ORT, or in amp-run with --weights"),
      cl::cat(category)};
  cl::opt<amp::driver::ExternalData> externalData{
      "external-data",
      cl::desc("-o and --ort-checkpoint: tensors in an external data file "
               "(<file>.data)"),
      cl::values(
          clEnumValN(amp::driver::ExternalData::Auto, "auto",
                     "from --external-data-threshold bytes on, or "
                     "(-o) when --weights had external data"),
          clEnumValN(amp::driver::ExternalData::Always, "always", "always"),
          clEnumValN(amp::driver::ExternalData::Never, "never",
                     "never (over 2 GB is refused)")),
      cl::init(amp::driver::ExternalData::Auto), cl::cat(category)};
  cl::opt<uint64_t> externalDataThreshold{
      "external-data-threshold", cl::value_desc("bytes"),
      cl::desc("--external-data=auto's threshold (default 1800 MiB, "
               "onnxruntime-training's)"),
      cl::init(amp::driver::TrainOptions().externalDataThreshold),
      cl::cat(category)};
  cl::opt<std::string> lowered{"dump-lowered",
                               cl::desc("write the lowered modules here"),
                               cl::cat(category)};
  cl::opt<bool> localize{
      "localize-nonfinite",
      cl::desc("when a step's loss or all-finite flag is non-finite, rerun "
               "the step with a check after every call and name the first "
               "node that made a NaN or inf from finite inputs"),
      cl::cat(category)};
  cl::opt<std::string> collectRanges{
      "collect-ranges", cl::value_desc("stats.json"),
      cl::desc("fp32: record per ONNX value the largest and smallest "
               "nonzero magnitude over the steps and the fraction below "
               "fp16's smallest normal (gradients under the loss scale), for "
               "auto-mixed-precision's ranges="),
      cl::cat(category)};
  cl::opt<std::string> ampRanges{
      "amp-ranges", cl::value_desc("stats.json"),
      cl::desc("with --amp: keep fp32 the nodes whose outputs, as "
               "--collect-ranges measured them, would overflow or underflow "
               "the low type (auto-mixed-precision's ranges=)"),
      cl::cat(category)};
  cl::opt<std::string> compare{
      "compare-precision", cl::ValueOptional, cl::value_desc("fp16|bf16"),
      cl::desc("train --steps steps in fp32 and in AMP from the same weights "
               "and batches and compare every value: per value its error, "
               "the error its node adds, underflow and overflow, worst "
               "first; then the nodes to keep fp32, checked by a third run "
               "(no output file is written)"),
      cl::cat(category)};
  cl::opt<std::string> compareReport{
      "compare-report", cl::value_desc("f.json"),
      cl::desc("with --compare-precision: every value's comparison as JSON"),
      cl::cat(category)};
  cl::opt<std::string> compareDot{
      "compare-dot", cl::value_desc("f.dot"),
      cl::desc("with --compare-precision: the training graph as Graphviz "
               "dot, each node filled by the error it adds"),
      cl::cat(category)};
  cl::opt<unsigned> compareTop{
      "compare-top", cl::desc("with --compare-precision: table rows (20)"),
      cl::init(20), cl::cat(category)};
  cl::opt<bool> compareOverlap{
      "compare-overlap",
      cl::desc("with --compare-precision on the CPU: the fp32 run records "
               "the next step while the AMP run compares this one, from "
               "copies of its values (while a program's fit a 32nd of the "
               "memory; =false: the runs in turn, one step's values "
               "read in place)"),
      cl::init(true), cl::cat(category)};
  cl::opt<double> compareTolerance{
      "compare-tolerance",
      cl::desc("with --compare-precision: the largest relative error a value "
               "may have (0.01)"),
      cl::init(1e-2), cl::cat(category)};
  cl::list<std::string> ampKeep{
      "amp-keep-fp32", cl::CommaSeparated, cl::value_desc("node,..."),
      cl::desc("with --amp: nodes (names or regular expressions) the AMP "
               "pass keeps fp32 (its keep-fp32=)"),
      cl::cat(category)};
  cl::opt<int64_t> inject{"inject-nonfinite",
                          cl::desc("testing: NaN in step k's batch"),
                          cl::cat(category), cl::init(-1)};
  cl::opt<int64_t> injectRank{
      "inject-rank",
      cl::desc("testing, data parallel: --inject-nonfinite on this rank only"),
      cl::cat(category), cl::init(-1)};
  cl::opt<double> bucketMB{
      "bucket-mb",
      cl::desc("data parallel (started by mpirun or srun as several ranks): "
               "the largest bucket of gradients reduced together, in MB"),
      cl::cat(category), cl::init(amp::driver::TrainOptions().bucketMB)};
  cl::opt<bool> verifyReplicas{
      "verify-replicas",
      cl::desc("data parallel: after every step, check that every rank "
               "holds the same parameters and optimizer state"),
      cl::cat(category)};
  cl::opt<bool> shardOptimizer{
      "shard-optimizer",
      cl::desc("data parallel, ZeRO stage 1: each rank keeps and updates "
               "the optimizer state of its share of the parameters and "
               "broadcasts them (optimizer memory per rank falls by the "
               "ranks); --checkpoint writes one file per rank"),
      cl::cat(category)};
  cl::opt<int64_t> accumulate{
      "accumulate",
      cl::desc("gradient accumulation: one optimizer step every N training "
               "steps, on their summed gradients (--steps a multiple of N)"),
      cl::cat(category), cl::init(1)};
  cl::opt<std::string> maxBatch{
      "max-batch", cl::ValueOptional, cl::value_desc("bytes"),
      cl::desc("find the largest batch whose training step fits in this "
               "much device memory (8GiB, 1.5GB, 300MiB, bytes; without a "
               "value: the device's free memory), one step per probed "
               "batch; prints it on stdout and writes nothing else"),
      cl::cat(category)};
  cl::opt<bool> quiet{"quiet", cl::desc("no progress line"), cl::cat(category)};

  /// --max-batch: the search instead of training.
  int searchBatch(const amp::driver::TrainOptions &o);

  /// Runs what the parsed options say; returns the exit code.
  int execute();
};

} // namespace

int AmpRunOptions::execute() {
  amp::driver::TrainOptions o;
  auto cpu = amp::driver::configureCpu(threads, cpuReference);
  if (!cpu) {
    llvm::WithColor::error(llvm::errs(), "amp-run")
        << llvm::toString(cpu.takeError()) << "\n";
    return 1;
  }
  o.cpuInfo = *cpu;
  for (const std::string &m : models)
    if (amp::train::parseAMPMode(m)) {
      llvm::errs() << "amp-run: '" << m << "' is not a model; to choose the "
                   << "AMP type write --amp=" << m << "\n";
      return 1;
    }
  if (run.getNumOccurrences()) {
    for (cl::Option *opt :
         std::initializer_list<cl::Option *>{&weights,
                                             &initSeed,
                                             &steps,
                                             &batch,
                                             &data,
                                             &seed,
                                             &noShuffle,
                                             &amp,
                                             &lossScale,
                                             &lr,
                                             &log,
                                             &logTime,
                                             &checkpoint,
                                             &resume,
                                             &checkpointEvery,
                                             &ortCheckpoint,
                                             &externalData,
                                             &externalDataThreshold,
                                             &lowered,
                                             &inject,
                                             &injectRank,
                                             &bucketMB,
                                             &verifyReplicas,
                                             &shardOptimizer,
                                             &localize,
                                             &collectRanges,
                                             &ampRanges,
                                             &accumulate,
                                             &cudaGraph,
                                             &maxBatch})
      if (opt->getNumOccurrences()) {
        llvm::errs() << "amp-run: --" << opt->ArgStr
                     << " is a training option; --run runs a graph once\n";
        return 1;
      }
    return runOnce(models, run, out, device, dims, rtol, atol);
  }
  for (cl::Option *opt :
       {static_cast<cl::Option *>(&rtol), static_cast<cl::Option *>(&atol)})
    if (opt->getNumOccurrences()) {
      llvm::errs() << "amp-run: --" << opt->ArgStr << " needs --run\n";
      return 1;
    }
  if (models.size() > 2 ||
      (models.size() == 1 && !llvm::StringRef(models[0]).ends_with(".mlir"))) {
    llvm::errs() << "amp-run: give an ONNX training + optimizer model pair, "
                    "or one lowered program (.mlir, from --dump-lowered)\n";
    return 1;
  }
  o.trainingModel = models[0];
  if (models.size() == 2)
    o.optimizerModel = models[1];
  o.weights = weights;
  // ONNX Runtime's artifacts keep their parameters in `checkpoint`, next to
  // the training model: the default when no other source is named.
  if (o.weights.empty() && !initSeed.getNumOccurrences() && resume.empty() &&
      models.size() == 2) {
    o.weights = amp::driver::findArtifactsCheckpoint(models[0]);
    if (!o.weights.empty() && !quiet)
      llvm::errs() << "amp-run: parameters from " << o.weights
                   << " (the artifacts' checkpoint)\n";
  }
  if (initSeed.getNumOccurrences()) {
    uint64_t seed;
    if (llvm::StringRef(initSeed).getAsInteger(10, seed)) {
      llvm::errs() << "amp-run: --init takes an integer seed, not '" << initSeed
                   << "'\n";
      return 1;
    }
    if (!o.weights.empty()) {
      llvm::errs() << "amp-run: --init and --weights exclude each other\n";
      return 1;
    }
    o.initSeed = seed;
  }
  o.device = device;
  o.steps = steps;
  o.batch = batch;
  o.data = data;
  o.seed = seed;
  o.shuffle = !noShuffle;
  o.dims = dims;
  o.amp = amp.getNumOccurrences() > 0;
  if (o.amp) {
    std::optional<amp::train::AMPMode> mode =
        amp::train::parseAMPMode(amp.empty() ? "fp16" : amp.getValue());
    if (!mode) {
      llvm::errs() << "amp-run: --amp takes fp16 or bf16, not '"
                   << amp.getValue() << "'\n";
      return 1;
    }
    o.ampMode = amp::train::getAMPModeName(*mode).str();
  }
  if (lossScale.getNumOccurrences()) {
    double scale = 0;
    if (lossScale != "dynamic" &&
        (llvm::StringRef(lossScale).getAsDouble(scale) ||
         !std::isfinite(scale) || !(scale > 0) || scale > 3.0e38)) {
      llvm::errs() << "amp-run: --loss-scale takes dynamic or a positive "
                      "finite scale, not '"
                   << lossScale << "'\n";
      return 1;
    }
    bool fp16 =
        (o.amp && o.ampMode == "fp16") ||
        (compare.getNumOccurrences() && (compare.empty() || compare == "fp16"));
    if (!fp16 && collectRanges.empty()) {
      llvm::errs() << "amp-run: --loss-scale is a setting of fp16 AMP: give "
                      "--amp (fp16), --compare-precision (fp16) or "
                      "--collect-ranges too\n";
      return 1;
    }
    o.staticLossScale = scale;
  }
  o.lr = lr;
  o.lrGiven = lr.getNumOccurrences() > 0;
  o.logPath = log;
  o.logTime = logTime;
  o.fuseAttention = fuseAttention;
  o.stepGraph = cudaGraph;
  o.channelsLast = channelsLast;
  o.outPath = out;
  o.checkpointPath = checkpoint;
  o.resumePath = resume;
  o.ortCheckpointPath = ortCheckpoint;
  o.externalData = externalData;
  o.externalDataThreshold = externalDataThreshold;
  o.loweredPath = lowered;
  o.injectNonFiniteStep = inject;
  o.injectNonFiniteRank = injectRank;
  if (injectRank.getNumOccurrences() && inject < 0) {
    llvm::errs() << "amp-run: --inject-rank needs --inject-nonfinite\n";
    return 1;
  }
  if (!(bucketMB > 0) || !std::isfinite(bucketMB)) {
    llvm::errs() << "amp-run: --bucket-mb must be a positive number\n";
    return 1;
  }
  o.bucketMB = bucketMB;
  o.verifyReplicas = verifyReplicas;
  o.shardOptimizer = shardOptimizer;
  o.localizeNonfinite = localize;
  o.collectRangesPath = collectRanges;
  o.ampRangesPath = ampRanges;
  o.ampKeepFp32.assign(ampKeep.begin(), ampKeep.end());
  if (!o.ampKeepFp32.empty() && !o.amp) {
    llvm::errs() << "amp-run: --amp-keep-fp32 is a policy of the AMP pass: "
                    "give --amp too\n";
    return 1;
  }
  if (steps < 0) {
    llvm::errs() << "amp-run: --steps must not be negative\n";
    return 1;
  }
  if (batch.getNumOccurrences() && batch < 1) {
    llvm::errs() << "amp-run: --batch must be at least 1\n";
    return 1;
  }
  if (!std::isfinite(lr) || lr < 0) {
    llvm::errs() << "amp-run: --lr must be a finite number >= 0, not "
                 << llvm::format("%g", lr.getValue()) << "\n";
    return 1;
  }
  if (accumulate < 1 || steps % accumulate != 0) {
    llvm::errs() << "amp-run: --accumulate must be at least 1 and divide "
                    "--steps (checkpoints fall between groups)\n";
    return 1;
  }
  o.accumulate = accumulate;
  if (checkpointEvery.getNumOccurrences() &&
      (checkpoint.empty() || checkpointEvery < 1 ||
       checkpointEvery % accumulate != 0)) {
    llvm::errs() << "amp-run: --checkpoint-every takes a number of steps >= 1 "
                    "that --accumulate divides, and needs --checkpoint\n";
    return 1;
  }
  o.checkpointEvery = checkpointEvery;
  if (logTime && log.empty()) {
    llvm::errs() << "amp-run: --log-time needs --log\n";
    return 1;
  }
  o.progress = !quiet;
  if (compare.getNumOccurrences()) {
    amp::driver::CompareOptions c;
    std::optional<amp::train::AMPMode> mode =
        amp::train::parseAMPMode(compare.empty() ? "fp16" : compare.getValue());
    if (!mode || o.amp || !(compareTolerance > 0)) {
      llvm::errs() << "amp-run: --compare-precision takes fp16 or bf16 "
                      "(instead of --amp) and a positive "
                      "--compare-tolerance\n";
      return 1;
    }
    // The comparison trains twice and writes only its own report: an
    // output another option asks for would silently not be written.
    cl::Option *const notWritten[] = {
        &out,           &log,       &checkpoint,
        &ortCheckpoint, &lowered,   &localize,
        &collectRanges, &ampRanges, std::addressof(ampKeep),
        &maxBatch};
    if (refuseWith(notWritten, "--compare-precision",
                   "which writes only --compare-report and --compare-dot"))
      return 1;
    c.mode = amp::train::getAMPModeName(*mode).str();
    c.reportPath = compareReport;
    c.dotPath = compareDot;
    c.top = compareTop;
    c.tolerance = compareTolerance;
    c.overlap = compareOverlap;
    if (llvm::Error e = amp::driver::comparePrecision(o, c, llvm::errs())) {
      llvm::WithColor::error(llvm::errs(), "amp-run")
          << llvm::toString(std::move(e)) << "\n";
      return 1;
    }
    return 0;
  }
  if (maxBatch.getNumOccurrences())
    return searchBatch(o);
  if (llvm::Error e = amp::driver::train(o, llvm::errs())) {
    llvm::WithColor::error(llvm::errs(), "amp-run")
        << llvm::toString(std::move(e)) << "\n";
    return 1;
  }
  return 0;
}

int AmpRunOptions::searchBatch(const amp::driver::TrainOptions &o) {
  // Each probe is one step; what the run would write is not written.
  cl::Option *const notWritten[] = {
      &out,           &log,   &checkpoint, &ortCheckpoint,   &lowered,
      &collectRanges, &steps, &accumulate, &checkpointEvery, &inject};
  if (refuseWith(notWritten, "--max-batch",
                 "which runs one step per probed batch and writes nothing"))
    return 1;
  uint64_t limit = 0;
  if (!maxBatch.empty()) {
    std::optional<uint64_t> bytes = amp::driver::parseByteSize(maxBatch);
    if (!bytes) {
      llvm::errs() << "amp-run: --max-batch takes a memory size (8GiB, "
                      "1.5GB, 300MiB, bytes), not '"
                   << maxBatch << "'\n";
      return 1;
    }
    limit = *bytes;
  }
  auto r = amp::driver::findMaxBatch(o, limit, llvm::errs());
  if (!r) {
    llvm::WithColor::error(llvm::errs(), "amp-run")
        << llvm::toString(r.takeError()) << "\n";
    return 1;
  }
  if (!r->batch) {
    llvm::WithColor::error(llvm::errs(), "amp-run")
        << "--max-batch: not even batch 1 fits in " << r->limit << " bytes ("
        << amp::driver::formatMiB(r->limit) << ")\n";
    return 1;
  }
  if (!quiet) {
    llvm::errs() << "amp-run: the largest batch that fits in " << r->limit
                 << " bytes (" << amp::driver::formatMiB(r->limit)
                 << "): " << r->batch << ", its step's peak " << r->peak
                 << " bytes (" << amp::driver::formatMiB(r->peak) << ")";
    if (r->firstMiss)
      llvm::errs() << "; batch " << r->firstMiss << " does not fit";
    llvm::errs() << " (" << r->probes << " probed batches)\n";
  }
  llvm::outs() << r->batch << "\n";
  return 0;
}

int amp::ampRunMain(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --help lists amp-run's options only, not every LLVM library option the
  // linked libraries register (--help-hidden still shows them all).
  // libLLVM registers a --threads of its own (for its linker's thread
  // pool, unused here): amp-run's names the CPU backend's threads.
  auto &registered = cl::getRegisteredOptions();
  if (auto it = registered.find("threads"); it != registered.end())
    it->second->removeArgument();
  AmpRunOptions options;
  cl::HideUnrelatedOptions(options.category);
  cl::ParseCommandLineOptions(argc, argv,
                              "amp-run: train ONNX Runtime training "
                              "artifacts, or run one ONNX graph once "
                              "(--run), on the amp runtime\n");
  return options.execute();
}
