//===- ModelWriter.cpp - an ONNX model with streamed initializers ---------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/ModelWriter.h"
#include "amp/Target/ONNX/ExternalData.h"

#include "llvm/ADT/Twine.h"

#include <google/protobuf/io/coded_stream.h>

using namespace amp;
using namespace amp::driver;
using google::protobuf::io::CodedOutputStream;
using llvm::StringRef;
using llvm::Twine;

namespace {

llvm::Error fail(const Twine &msg) { return llvm::createStringError(msg); }

// Field numbers of onnx.proto3 on the chunk's path.
constexpr int kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;

/// The key and length of a length-delimited field `field` of `length`
/// bytes, in protobuf's wire format.
std::string fieldHead(int field, uint64_t length) {
  uint8_t buf[2 * 10];
  uint8_t *end =
      CodedOutputStream::WriteVarint64ToArray((uint64_t(field) << 3) | 2, buf);
  end = CodedOutputStream::WriteVarint64ToArray(length, end);
  return std::string(reinterpret_cast<char *>(buf), end - buf);
}

/// What precedes an initializer's bytes in its chunk:
/// graph { initializer { <header fields> raw_data: <n bytes> } }.
std::string chunkPrefix(const onnx::TensorProto &header, uint64_t n) {
  std::string fields = header.SerializeAsString();
  fields += fieldHead(kTensorRawData, n);
  std::string tensor = fieldHead(kGraphInitializer, fields.size() + n) + fields;
  return fieldHead(kModelGraph, tensor.size() + n) + tensor;
}

} // namespace

llvm::Error amp::driver::writeModel(onnx::ModelProto &model,
                                    std::vector<StreamedInitializer> inits,
                                    StringRef path, bool externalData) {
  std::unique_ptr<ExternalDataWriter> data;
  if (externalData) {
    // The bytes go to the data file first, the tensors pointing at them
    // join the model's initializers.
    auto created =
        ExternalDataWriter::create(path, defaultExternalDataLocation(path));
    if (!created)
      return created.takeError();
    data = std::move(*created);
    for (StreamedInitializer &i : inits) {
      const TensorBytes &b = i.bytes;
      llvm::Error e = llvm::Error::success();
      if (!b.path().empty())
        e = data->appendFromFile(i.header, {b.path().str(), b.fileOffset()},
                                 b.size());
      else if (b.hostData())
        e = data->append(i.header,
                         llvm::ArrayRef<char>(b.hostData(), b.size()));
      else
        e = data->appendGenerated(
            i.header, b.size(),
            [&](uint64_t at, llvm::MutableArrayRef<char> piece) {
              return b.readAt(at, piece);
            });
      if (e)
        return fail(data->path() + ": initializer '" + i.header.name() +
                    "': " + llvm::toString(std::move(e)));
      *model.mutable_graph()->add_initializer() = std::move(i.header);
    }
    inits.clear();
  }
  std::string head;
  if (!model.SerializeToString(&head))
    return fail(path + ": cannot serialize the model");
  uint64_t total = head.size();
  for (const StreamedInitializer &i : inits)
    total += chunkPrefix(i.header, i.bytes.size()).size() + i.bytes.size();
  if (total > kMaxProtobufBytes)
    return fail(path + ": the model would be " + Twine(total) +
                " bytes, more than one protobuf can hold (2 GiB); nothing "
                "was written (--external-data=auto or always writes its "
                "tensors to an external data file)");
  auto file = AtomicOutputFile::create(path);
  if (!file)
    return file.takeError();
  if (llvm::Error e = (*file)->write(head))
    return e;
  for (const StreamedInitializer &i : inits) {
    if (llvm::Error e = (*file)->write(chunkPrefix(i.header, i.bytes.size())))
      return e;
    if (llvm::Error e = (*file)->write(i.bytes))
      return e;
  }
  // The data file before the model: once the model has its name, the
  // bytes it points at are there.
  if (data)
    if (llvm::Error e = data->commit())
      return e;
  return (*file)->commit();
}
