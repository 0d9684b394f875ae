//===- ExportONNX.cpp - train dialect to ONNX protobuf --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Writes a train-dialect module back to an ONNX ModelProto: the inverse of
// ImportONNX.cpp. Tensor data held in resource blobs is not copied into the
// protobuf: the model is serialized without it and each large initializer is
// appended as a separate `graph { initializer { ... raw_data } }` chunk
// (protobuf merges repeated occurrences of a message field), so exporting a
// 1 GB model needs no second gigabyte.
//
// This file holds the entry points: the serialization with the deferred
// tensors appended, the 2 GiB check, the external data file, the
// --export-onnx translation and its command-line options. The Exporter
// (ExportONNXInternals.h) builds the ModelProto.
//
//===----------------------------------------------------------------------===//

#include "amp/Target/ONNX/ExportONNX.h"
#include "ExportONNXInternals.h"
#include "amp/Target/ONNX/ExternalData.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ManagedStatic.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

namespace {
/// ModelProto's appended `graph { initializer { ... } }` chunks.
void appendVarint(uint64_t v, std::string &out) {
  while (v >= 0x80) {
    out.push_back(char(v | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
constexpr uint32_t kGraphTag = (7 << 3) | 2, kInitTag = (5 << 3) | 2,
                   kRawTag = (9 << 3) | 2;
/// The chunk's bytes before the tensor's data (which follows when
/// `dataBytes` is not zero).
std::string chunkHead(const onnx::TensorProto &header, uint64_t dataBytes,
                      bool withData) {
  std::string tensorHead;
  header.SerializeToString(&tensorHead);
  std::string rawPrefix;
  if (withData) {
    appendVarint(kRawTag, rawPrefix);
    appendVarint(dataBytes, rawPrefix);
  }
  uint64_t tensorSize =
      tensorHead.size() + rawPrefix.size() + (withData ? dataBytes : 0);
  std::string initPrefix;
  appendVarint(kInitTag, initPrefix);
  appendVarint(tensorSize, initPrefix);
  std::string out;
  appendVarint(kGraphTag, out);
  appendVarint(initPrefix.size() + tensorSize, out);
  return out + initPrefix + tensorHead + rawPrefix;
}
/// What the external_data entries of a tensor add to its header at most
/// (offsets and lengths are not known before the data file is laid out).
constexpr uint64_t kExternalEntryBytes = 96;
} // namespace

LogicalResult amp::exportOnnxModel(ModuleOp module, llvm::raw_ostream &os,
                                   const ExportOnnxOptions &options) {
  onnx::ModelProto model;
  std::vector<DeferredTensor> deferred;
  Exporter exporter(module, options);
  if (failed(exporter.exportModel(model, deferred)))
    return failure();

  // Serialize. Initializers whose data is deferred leave a placeholder in
  // the graph; to keep their order, the graph's initializers are all moved
  // into the appended chunks when any is deferred.
  std::vector<onnx::TensorProto> inlineInits;
  onnx::GraphProto *graph = model.mutable_graph();
  bool anyDeferred = !deferred.empty();
  std::vector<std::pair<bool, size_t>> order; // (deferred?, index)
  if (anyDeferred) {
    size_t d = 0;
    for (onnx::TensorProto &t : *graph->mutable_initializer()) {
      if (t.name() == "\x01amp-deferred") {
        order.push_back({true, d++});
      } else {
        order.push_back({false, inlineInits.size()});
        inlineInits.push_back(std::move(t));
      }
    }
    graph->clear_initializer();
  }

  std::string head;
  if (!model.SerializeToString(&head)) {
    emitError(module.getLoc()) << "the model cannot be serialized";
    return failure();
  }

  // The whole model's size, before a byte is written: protobuf cannot read
  // a message over 2 GiB, so such a file is never written.
  uint64_t total = head.size();
  bool anyExternal = false;
  for (auto [isDeferred, index] : order) {
    if (!isDeferred) {
      total += chunkHead(inlineInits[index], 0, false).size();
      continue;
    }
    const DeferredTensor &d = deferred[index];
    anyExternal |= d.external;
    total += chunkHead(d.header, d.bytes().size(), !d.external).size() +
             (d.external ? kExternalEntryBytes : d.bytes().size());
  }
  if (total > options.protobufLimit) {
    if (options.externalData == ExternalDataMode::Auto) {
      ExportOnnxOptions external = options;
      external.externalData = ExternalDataMode::Always;
      std::string location =
          options.location.empty()
              ? defaultExternalDataLocation(options.modelPath)
              : options.location;
      emitRemark(module.getLoc())
          << "the model would be " << total
          << " bytes, more than one protobuf can hold ("
          << options.protobufLimit << "): tensors of at least "
          << options.sizeThreshold << " bytes go to the external data file '"
          << location << "'";
      return exportOnnxModel(module, os, external);
    }
    InFlightDiagnostic diag = emitError(module.getLoc());
    diag << "the model would be " << total
         << " bytes, more than one protobuf can hold (" << options.protobufLimit
         << ", 2 GiB); nothing was written";
    if (options.externalData == ExternalDataMode::Never)
      diag << " (write its weights as external data: "
              "--onnx-external-data=auto or always)";
    else
      diag << " even with every initializer of at least "
           << options.sizeThreshold
           << " bytes in the external data file (what is left: node "
              "attributes, subgraph initializers)";
    return failure();
  }

  // External data first, into its own temporary file; it is renamed onto
  // its name once the model is written too.
  std::unique_ptr<ExternalDataWriter> writer;
  if (anyExternal) {
    StringRef modelPath = options.modelPath;
    if (modelPath.empty() || modelPath == "-") {
      emitError(module.getLoc())
          << "the model keeps tensors in an external data file, which needs "
             "the model written to a file (-o model.onnx), not to standard "
             "output (or --onnx-external-data=never to write them inline)";
      return failure();
    }
    std::string location = options.location.empty()
                               ? defaultExternalDataLocation(modelPath)
                               : options.location;
    auto created = ExternalDataWriter::create(modelPath, location);
    if (!created) {
      emitError(module.getLoc()) << llvm::toString(created.takeError());
      return failure();
    }
    writer = std::move(*created);
    for (DeferredTensor &d : deferred) {
      if (!d.external)
        continue;
      if (llvm::Error e = writer->append(d.header, d.bytes())) {
        emitError(module.getLoc()) << "initializer '" << d.header.name()
                                   << "': " << llvm::toString(std::move(e));
        return failure();
      }
    }
  }

  os.write(head.data(), head.size());
  for (auto [isDeferred, index] : order) {
    if (!isDeferred) {
      os << chunkHead(inlineInits[index], 0, false);
      continue;
    }
    const DeferredTensor &d = deferred[index];
    ArrayRef<char> data = d.bytes();
    os << chunkHead(d.header, data.size(), !d.external);
    if (!d.external)
      os.write(data.data(), data.size());
  }
  os.flush();
  if (os.get_kind() == llvm::raw_ostream::OStreamKind::OK_FDStream) {
    auto &fd = static_cast<llvm::raw_fd_ostream &>(os);
    if (fd.has_error()) {
      emitError(module.getLoc())
          << "cannot write the model: " << fd.error().message();
      fd.clear_error(); // reported; the caller removes the file
      return failure();
    }
  }
  if (writer)
    if (llvm::Error e = writer->commit()) {
      emitError(module.getLoc()) << llvm::toString(std::move(e));
      return failure();
    }
  return success();
}

//===----------------------------------------------------------------------===//
// Command-line options
//===----------------------------------------------------------------------===//

namespace {
struct ExportCLOptions {
  llvm::cl::opt<ExternalDataMode> mode{
      "onnx-external-data",
      llvm::cl::desc("Where ONNX export puts the main graph's initializers"),
      llvm::cl::init(ExternalDataMode::Auto),
      llvm::cl::values(
          clEnumValN(ExternalDataMode::Auto, "auto",
                     "tensors that were external data stay external; all "
                     "of at least the threshold go external when the model "
                     "would pass 2 GiB (default)"),
          clEnumValN(ExternalDataMode::Always, "always",
                     "every tensor of at least the threshold in the data "
                     "file"),
          clEnumValN(ExternalDataMode::Never, "never",
                     "everything inline (a model over 2 GiB is an error)"))};
  llvm::cl::opt<std::string> location{
      "onnx-external-data-location",
      llvm::cl::desc("The external data file, relative to the model's "
                     "folder (default: <model file name>.data)"),
      llvm::cl::value_desc("file")};
  llvm::cl::opt<uint64_t> threshold{
      "onnx-external-data-threshold",
      llvm::cl::desc("The smallest tensor, in bytes, that "
                     "--onnx-external-data=always (and auto past 2 GiB) "
                     "writes to the data file (default 1024)"),
      llvm::cl::init(1024), llvm::cl::value_desc("bytes")};
  llvm::cl::opt<uint64_t> limit{
      "onnx-protobuf-limit",
      llvm::cl::desc("For tests: the largest model written as one protobuf "
                     "(default 2 GiB - 1, protobuf's limit)"),
      llvm::cl::init(kMaxProtobufBytes), llvm::cl::Hidden};
};
llvm::ManagedStatic<ExportCLOptions> clOptions;
} // namespace

void amp::registerExportOnnxCLOptions() { *clOptions; }

ExportOnnxOptions amp::getExportOnnxCLOptions(StringRef modelPath) {
  ExportOnnxOptions o;
  o.modelPath = modelPath.str();
  if (clOptions.isConstructed()) {
    o.externalData = clOptions->mode;
    o.location = clOptions->location;
    o.sizeThreshold = clOptions->threshold;
    o.protobufLimit = std::min<uint64_t>(clOptions->limit, kMaxProtobufBytes);
  }
  return o;
}

/// The file mlir-translate's -o names ("-" when it writes to standard
/// output): external data goes next to it.
static std::string translateOutputPath() {
  auto &registered = llvm::cl::getRegisteredOptions();
  auto it = registered.find("o");
  if (it == registered.end())
    return "-";
  // MlirTranslateMain's `-o` is a cl::opt<std::string>.
  return static_cast<llvm::cl::opt<std::string> *>(it->second)->getValue();
}

void amp::registerToOnnxTranslation() {
  registerExportOnnxCLOptions();
  TranslateFromMLIRRegistration registration(
      "export-onnx", "export a train-dialect module to ONNX (.onnx)",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module");
        return exportOnnxModel(module, os,
                               getExportOnnxCLOptions(translateOutputPath()));
      },
      [](DialectRegistry &registry) { registry.insert<TrainDialect>(); });
}
