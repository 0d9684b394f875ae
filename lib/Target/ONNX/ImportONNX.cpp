//===- ImportONNX.cpp - ONNX protobuf to train dialect --------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Imports an ONNX ModelProto into the train dialect, losslessly: every node,
// attribute, initializer, name, doc string, value_info entry, opset import,
// function and subgraph, and any field this libonnx does not know (kept as
// its wire bytes). Nodes are sorted topologically (stably: a sorted graph
// keeps its order); undefined inputs, cycles, duplicate outputs, bad
// attributes and bad tensors are reported with the file and node.
//
// This file holds the entry points: reading and parsing the protobuf (with
// the checks on the file: empty, ORT format, over 2 GiB) and the
// --import-onnx translation. The Importer (ImportONNXInternals.h) does the
// rest.
//
//===----------------------------------------------------------------------===//

#include "amp/Target/ONNX/ImportONNX.h"
#include "ImportONNXInternals.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace amp;
using namespace amp::train;
using namespace amp::onnx_detail;

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// ONNX Runtime's ORT format: a FlatBuffer whose file identifier (bytes 4
/// to 8) is "ORTM". Users meet it as generate_artifacts(ort_format=True)'s
/// .ort files, and it parses as no protobuf.
static bool isOrtFormat(StringRef head) {
  return head.size() >= 8 && head.substr(4, 4) == "ORTM";
}

static std::string tooLargeMessage(uint64_t bytes) {
  return "file is " + std::to_string(bytes) +
         " bytes, larger than 2 GiB, the protobuf limit: not one ONNX "
         "ModelProto (a model this large keeps its weights as external "
         "data, which onnx.save_model(..., save_as_external_data=True) "
         "writes)";
}

/// `head`: the first bytes of the input (at most 8), when they could be
/// read without consuming the stream (not from a pipe).
static OwningOpRef<ModuleOp>
importFromStream(google::protobuf::io::ZeroCopyInputStream &stream,
                 StringRef name, MLIRContext *ctx,
                 const ImportOnnxOptions &options,
                 std::optional<StringRef> head) {
  Location loc = FileLineColLoc::get(ctx, name, 0, 0);
  if (head && head->empty()) {
    emitError(loc) << "file is empty: not an ONNX model";
    return nullptr;
  }
  if (head && isOrtFormat(*head)) {
    emitError(loc) << "an ONNX Runtime ORT-format model (FlatBuffer 'ORTM'), "
                      "not ONNX: give the .onnx model it was made from "
                      "(generate_artifacts writes one next to each .ort)";
    return nullptr;
  }
  // On an arena: a model of a million nodes is parsed into a few large
  // blocks and freed as them, not as millions of small heap chunks (which
  // would leave glibc's heap to sort them on the passes' next allocations).
  google::protobuf::Arena arena;
  onnx::ModelProto &model =
      *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    // A stream (a pipe) is only known to be too large once the parser
    // reaches protobuf's limit.
    if (coded.BytesUntilTotalBytesLimit() <= 0)
      emitError(loc) << "input is larger than 2 GiB, the protobuf limit: "
                        "not one ONNX ModelProto (a model this large keeps "
                        "its weights as external data)";
    else
      emitError(loc) << "cannot parse the file as an ONNX ModelProto "
                     << "(truncated or not a protobuf)";
    return nullptr;
  }
  if (!model.has_graph() && model.ir_version() == 0) {
    emitError(loc) << "not an ONNX model: no ir_version and no graph";
    return nullptr;
  }
  Importer importer(ctx, name, options);
  return importer.importModel(model);
}

OwningOpRef<ModuleOp> amp::importOnnxModel(llvm::MemoryBufferRef buffer,
                                           MLIRContext *context,
                                           const ImportOnnxOptions &options) {
  if (buffer.getBufferSize() > kMaxProtobufBytes) {
    emitError(FileLineColLoc::get(context, buffer.getBufferIdentifier(), 0, 0))
        << tooLargeMessage(buffer.getBufferSize());
    return nullptr;
  }
  google::protobuf::io::ArrayInputStream stream(buffer.getBufferStart(),
                                                buffer.getBufferSize());
  return importFromStream(stream, buffer.getBufferIdentifier(), context,
                          options, buffer.getBuffer().take_front(8));
}

OwningOpRef<ModuleOp> amp::importOnnxFile(StringRef path, MLIRContext *context,
                                          const ImportOnnxOptions &options) {
  Location loc = FileLineColLoc::get(context, path, 0, 0);
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    emitError(loc) << "cannot open file: " << std::strerror(errno);
    return nullptr;
  }
  // A regular file over protobuf's limit cannot be one ModelProto: say so
  // before parsing 2 GiB of it.
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      uint64_t(st.st_size) > kMaxProtobufBytes) {
    ::close(fd);
    emitError(loc) << tooLargeMessage(uint64_t(st.st_size));
    return nullptr;
  }
  // The first bytes, without consuming them (a pipe cannot be peeked: its
  // head stays unknown and protobuf's parse speaks for it).
  char head[8];
  ssize_t got = ::pread(fd, head, sizeof(head), 0);
  std::optional<StringRef> headBytes;
  if (got >= 0)
    headBytes = StringRef(head, size_t(got));
  OwningOpRef<ModuleOp> result;
  {
    google::protobuf::io::FileInputStream stream(fd, 1 << 20);
    result = importFromStream(stream, path, context, options, headBytes);
  }
  ::close(fd);
  return result;
}

bool amp::startsLikeBinaryModel(StringRef path) {
  // Only a regular file can be looked at without taking bytes from the
  // parse that follows (a pipe or /dev/fd/N cannot).
  if (!llvm::sys::fs::is_regular_file(path))
    return false;
  int fd = ::open(path.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char head[8];
  ssize_t got = ::pread(fd, head, sizeof(head), 0);
  ::close(fd);
  return got > 0 && isBinaryModelHead(StringRef(head, size_t(got)));
}

bool amp::isBinaryModelHead(StringRef head) {
  if (head.empty())
    return false;
  if (isOrtFormat(head))
    return true;
  unsigned char first = head[0];
  bool text = (first >= 0x20 && first < 0x7f) || first == '\t' ||
              first == '\n' || first == '\r';
  return !text;
}

void amp::registerFromOnnxTranslation() {
  TranslateToMLIRRegistration registration(
      "import-onnx", "import an ONNX model (.onnx) into the train dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buf =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        return importOnnxModel(buf->getMemBufferRef(), context);
      },
      [](DialectRegistry &registry) { registry.insert<TrainDialect>(); });
}
