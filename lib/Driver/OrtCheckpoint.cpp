//===- OrtCheckpoint.cpp - ONNX Runtime training checkpoints --------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The checkpoint is a FlatBuffer; FlatBuffers' own Table and Verifier read
// it. The tables and their field slots (ONNX Runtime's training checkpoint
// schema, version 1 and later):
//
//   Checkpoint:  0 version:int, 1 module_state:ModuleState,
//                2 optimizer_groups:[OptimizerGroup], 3 property_bag
//   OptimizerGroup: 0 group_name:string, 1 step:int64,
//                2 initial_learning_rate:float,
//                3 optimizer_states:[ParameterOptimizerState]
//   ParameterOptimizerState: 0 param_name:string, 1 momentums:[Tensor]
//   ModuleState: 0 requires_grad_params:[Tensor], 1 frozen_params:[Tensor],
//                2 is_nominal_state:bool, 3 has_external_data:bool
//   Tensor:      0 name:string, 1 doc_string:string, 2 dims:[int64],
//                3 data_type:int (ONNX's numbering), 4 raw_data:[ubyte],
//                5 string_data:[string], 6 external_data_offset:int64 = -1
//   PropertyBag: 0 ints:[IntProperty], 1 floats:[FloatProperty],
//                2 strings:[StringProperty]
//   IntProperty, FloatProperty, StringProperty: 0 name:string,
//                1 value:int64 | float | string
//
// Slot i is at vtable offset 4 + 2 i. Every table is verified (bounds,
// alignment, nesting depth) before any field is read. The writer builds
// the same tables with FlatBufferBuilder's table API, without the tensors'
// bytes: those follow the tables in the file (or go to the external data
// file), streamed from their source.
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/OrtCheckpoint.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cassert>
#include <cstring>
#include <flatbuffers/flatbuffers.h>
#include <optional>
#include <type_traits>

// Table::VerifyField with an alignment argument (used below) is 2.0.6's.
#if FLATBUFFERS_VERSION_MAJOR < 2 ||                                           \
    (FLATBUFFERS_VERSION_MAJOR == 2 && FLATBUFFERS_VERSION_MINOR == 0 &&       \
     FLATBUFFERS_VERSION_REVISION < 6)
#error                                                                         \
    "amp-mlir needs FlatBuffers 2.0.6 or newer (Debian 12: libflatbuffers-dev)"
#endif

using namespace llvm;
using namespace amp::driver;

namespace {

constexpr const char *kIdentifier = "ODTC";

constexpr flatbuffers::voffset_t slot(int i) {
  return flatbuffers::voffset_t(4 + 2 * i);
}

struct FbTensor : private flatbuffers::Table {
  const flatbuffers::String *name() const {
    return GetPointer<const flatbuffers::String *>(slot(0));
  }
  const flatbuffers::String *docString() const {
    return GetPointer<const flatbuffers::String *>(slot(1));
  }
  const flatbuffers::Vector<int64_t> *dims() const {
    return GetPointer<const flatbuffers::Vector<int64_t> *>(slot(2));
  }
  int32_t dataType() const { return GetField<int32_t>(slot(3), 0); }
  const flatbuffers::Vector<uint8_t> *rawData() const {
    return GetPointer<const flatbuffers::Vector<uint8_t> *>(slot(4));
  }
  const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *
  stringData() const {
    return GetPointer<
        const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *>(
        slot(5));
  }
  int64_t externalDataOffset() const { return GetField<int64_t>(slot(6), -1); }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyOffset(v, slot(0)) &&
           v.VerifyString(name()) && VerifyOffset(v, slot(1)) &&
           v.VerifyString(docString()) && VerifyOffset(v, slot(2)) &&
           v.VerifyVector(dims()) && VerifyField<int32_t>(v, slot(3), 4) &&
           VerifyOffset(v, slot(4)) && v.VerifyVector(rawData()) &&
           // string_data is never read (string tensors are refused), so its
           // strings are not walked: shared by many tensors, that walk
           // would cost each reference again.
           VerifyOffset(v, slot(5)) && v.VerifyVector(stringData()) &&
           VerifyField<int64_t>(v, slot(6), 8) && v.EndTable();
  }
};

using TensorList = flatbuffers::Vector<flatbuffers::Offset<FbTensor>>;

struct FbModuleState : private flatbuffers::Table {
  const TensorList *requiresGrad() const {
    return GetPointer<const TensorList *>(slot(0));
  }
  const TensorList *frozen() const {
    return GetPointer<const TensorList *>(slot(1));
  }
  bool isNominal() const { return GetField<uint8_t>(slot(2), 0) != 0; }
  bool hasExternalData() const { return GetField<uint8_t>(slot(3), 0) != 0; }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyOffset(v, slot(0)) &&
           v.VerifyVector(requiresGrad()) &&
           v.VerifyVectorOfTables(requiresGrad()) && VerifyOffset(v, slot(1)) &&
           v.VerifyVector(frozen()) && v.VerifyVectorOfTables(frozen()) &&
           VerifyField<uint8_t>(v, slot(2), 1) &&
           VerifyField<uint8_t>(v, slot(3), 1) && v.EndTable();
  }
};

struct FbParameterOptimizerState : private flatbuffers::Table {
  const flatbuffers::String *paramName() const {
    return GetPointer<const flatbuffers::String *>(slot(0));
  }
  const TensorList *momentums() const {
    return GetPointer<const TensorList *>(slot(1));
  }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyOffset(v, slot(0)) &&
           v.VerifyString(paramName()) && VerifyOffset(v, slot(1)) &&
           v.VerifyVector(momentums()) && v.VerifyVectorOfTables(momentums()) &&
           v.EndTable();
  }
};

using StateList =
    flatbuffers::Vector<flatbuffers::Offset<FbParameterOptimizerState>>;

struct FbOptimizerGroup : private flatbuffers::Table {
  int64_t step() const { return GetField<int64_t>(slot(1), 0); }
  float initialLearningRate() const { return GetField<float>(slot(2), 0); }
  const StateList *states() const {
    return GetPointer<const StateList *>(slot(3));
  }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyOffset(v, slot(0)) &&
           v.VerifyString(GetPointer<const flatbuffers::String *>(slot(0))) &&
           VerifyField<int64_t>(v, slot(1), 8) &&
           VerifyField<float>(v, slot(2), 4) && VerifyOffset(v, slot(3)) &&
           v.VerifyVector(states()) && v.VerifyVectorOfTables(states()) &&
           v.EndTable();
  }
};

using GroupList = flatbuffers::Vector<flatbuffers::Offset<FbOptimizerGroup>>;

/// IntProperty, FloatProperty and StringProperty: a name and a value of
/// type T (a scalar, or a string).
template <typename T> struct FbProperty : private flatbuffers::Table {
  static constexpr bool isString = std::is_same_v<T, flatbuffers::String>;
  const flatbuffers::String *name() const {
    return GetPointer<const flatbuffers::String *>(slot(0));
  }
  auto value() const {
    if constexpr (isString)
      return GetPointer<const flatbuffers::String *>(slot(1));
    else
      return GetField<T>(slot(1), 0);
  }
  bool Verify(flatbuffers::Verifier &v) const {
    bool ok = VerifyTableStart(v) && VerifyOffset(v, slot(0)) &&
              v.VerifyString(name());
    if constexpr (isString)
      ok = ok && VerifyOffset(v, slot(1)) && v.VerifyString(value());
    else
      ok = ok && VerifyField<T>(v, slot(1), sizeof(T));
    return ok && v.EndTable();
  }
};

template <typename T>
using PropertyList = flatbuffers::Vector<flatbuffers::Offset<FbProperty<T>>>;

struct FbPropertyBag : private flatbuffers::Table {
  template <int I, typename T> const PropertyList<T> *list() const {
    return GetPointer<const PropertyList<T> *>(slot(I));
  }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyOffset(v, slot(0)) &&
           v.VerifyVector(list<0, int64_t>()) &&
           v.VerifyVectorOfTables(list<0, int64_t>()) &&
           VerifyOffset(v, slot(1)) && v.VerifyVector(list<1, float>()) &&
           v.VerifyVectorOfTables(list<1, float>()) &&
           VerifyOffset(v, slot(2)) &&
           v.VerifyVector(list<2, flatbuffers::String>()) &&
           v.VerifyVectorOfTables(list<2, flatbuffers::String>()) &&
           v.EndTable();
  }
};

struct FbCheckpoint : private flatbuffers::Table {
  const FbModuleState *moduleState() const {
    return GetPointer<const FbModuleState *>(slot(1));
  }
  const GroupList *groups() const {
    return GetPointer<const GroupList *>(slot(2));
  }
  const FbPropertyBag *propertyBag() const {
    return GetPointer<const FbPropertyBag *>(slot(3));
  }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyField<int32_t>(v, slot(0), 4) &&
           VerifyOffset(v, slot(1)) && v.VerifyTable(moduleState()) &&
           VerifyOffset(v, slot(2)) && v.VerifyVector(groups()) &&
           v.VerifyVectorOfTables(groups()) && VerifyOffset(v, slot(3)) &&
           v.VerifyTable(propertyBag()) && v.EndTable();
  }
};

/// The format version written: onnxruntime-training 1.19's (version 2 added
/// ModuleState.has_external_data to version 1).
constexpr int32_t kWrittenVersion = 2;

Error failure(StringRef path, const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), path + ": " + msg);
}

/// Bytes per element of the ONNX types a parameter may have; 0 for others.
size_t elementBytes(int32_t onnxType) {
  switch (onnxType) {
  case 1:  // FLOAT
  case 6:  // INT32
  case 12: // UINT32
    return 4;
  case 2: // UINT8
  case 3: // INT8
  case 9: // BOOL
    return 1;
  case 4:  // UINT16
  case 5:  // INT16
  case 10: // FLOAT16
  case 16: // BFLOAT16
    return 2;
  case 7:  // INT64
  case 11: // DOUBLE
  case 13: // UINT64
    return 8;
  default:
    return 0;
  }
}

/// The bytes a tensor of `dims` holds with `elem` bytes an element
/// (elementBytes); nullopt for a negative dim or a size past 64 bits.
std::optional<uint64_t> dataBytes(ArrayRef<int64_t> dims, size_t elem) {
  uint64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d && numel > UINT64_MAX / uint64_t(d)))
      return std::nullopt;
    numel *= uint64_t(d);
  }
  if (numel > UINT64_MAX / elem)
    return std::nullopt;
  return numel * elem;
}

/// Where a checkpoint's tensors lie: the (mapped) checkpoint file, and the
/// external data file when its module state says it has one.
struct TensorFiles {
  StringRef path, bytes;
  std::string dataPath;
  uint64_t dataSize = 0;
  bool external = false;
};

/// `t`'s name, type, dims and where its data lies, checked against each
/// other and against the files.
Expected<OrtCheckpointTensor> readTensor(const TensorFiles &f,
                                         const FbTensor *t) {
  OrtCheckpointTensor p;
  p.name = t->name() ? t->name()->str() : "";
  if (p.name.empty())
    return failure(f.path, "a tensor without a name");
  p.onnxType = t->dataType();
  size_t elem = elementBytes(p.onnxType);
  if (!elem)
    return failure(f.path, "tensor '" + p.name + "' has data type " +
                               Twine(p.onnxType) +
                               ", which amp-run cannot hold");
  if (t->dims())
    p.dims.assign(t->dims()->begin(), t->dims()->end());
  std::optional<uint64_t> need = dataBytes(p.dims, elem);
  if (!need)
    return failure(f.path, "tensor '" + p.name + "' has an invalid shape");
  if (int64_t off = t->externalDataOffset(); off >= 0) {
    if (!f.external)
      return failure(f.path, "tensor '" + p.name +
                                 "' has an external data offset, but the "
                                 "module state says the checkpoint has no "
                                 "external data");
    if (uint64_t(off) > f.dataSize || *need > f.dataSize - uint64_t(off))
      return failure(f.dataPath, "tensor '" + p.name + "': bytes [" +
                                     Twine(off) + ", " +
                                     Twine(uint64_t(off) + *need) +
                                     ") are past the end of the file (" +
                                     Twine(f.dataSize) + " bytes)");
    p.data = TensorBytes::inFile(f.dataPath, uint64_t(off), *need);
    return p;
  }
  size_t have = t->rawData() ? t->rawData()->size() : 0;
  if (have != *need)
    return failure(f.path, "tensor '" + p.name + "' has " + Twine(have) +
                               " bytes of data; its type and shape need " +
                               Twine(*need));
  uint64_t at =
      have ? uint64_t(reinterpret_cast<const char *>(t->rawData()->data()) -
                      f.bytes.data())
           : 0;
  p.data = TensorBytes::inFile(f.path.str(), at, have);
  return p;
}

/// Checks that `t`'s data matches its type and dims (before writing).
Error checkTensor(const OrtCheckpointTensor &t) {
  size_t elem = elementBytes(t.onnxType);
  if (!elem)
    return createStringError(inconvertibleErrorCode(),
                             "tensor '" + t.name + "' has data type " +
                                 Twine(t.onnxType) +
                                 ", which a checkpoint cannot hold");
  std::optional<uint64_t> need = dataBytes(t.dims, elem);
  if (!need)
    return createStringError(inconvertibleErrorCode(),
                             "tensor '" + t.name + "' has an invalid shape");
  if (t.data.size() != *need)
    return createStringError(
        inconvertibleErrorCode(),
        "tensor '" + t.name + "' has " + Twine(t.data.size()) +
            " bytes of data; its type and shape need " + Twine(*need));
  return Error::success();
}

} // namespace

bool amp::driver::isOrtCheckpoint(StringRef bytes) {
  return bytes.size() >= 8 &&
         flatbuffers::BufferHasIdentifier(bytes.data(), kIdentifier);
}

bool amp::driver::isOrtCheckpointFile(StringRef path) {
  auto buf = MemoryBuffer::getFileSlice(path, 8, 0, /*IsVolatile=*/false);
  return buf && isOrtCheckpoint((*buf)->getBuffer());
}

std::string amp::driver::findArtifactsCheckpoint(StringRef trainingModelPath) {
  SmallString<256> path = sys::path::parent_path(trainingModelPath);
  sys::path::append(path, "checkpoint");
  return isOrtCheckpointFile(path) ? std::string(path) : "";
}

std::string amp::driver::ortExternalDataPath(StringRef path) {
  return (path + ".data").str();
}

Expected<OrtCheckpoint> amp::driver::readOrtCheckpoint(StringRef path) {
  // Mapped: verification and the tables touch a few pages; the tensors'
  // bytes are read (a window at a time) only when copied to their buffers.
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return failure(path, buf.getError().message());
  StringRef bytes = (*buf)->getBuffer();
  if (!isOrtCheckpoint(bytes))
    return failure(path, "not an ONNX Runtime training checkpoint (no "
                         "FlatBuffer identifier 'ODTC')");
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return failure(path, "larger than a FlatBuffer can be");
  flatbuffers::Verifier verifier(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  if (!verifier.VerifyBuffer<FbCheckpoint>(kIdentifier))
    return failure(path, "corrupt or truncated checkpoint (FlatBuffer "
                         "verification failed)");
  auto *ckpt = flatbuffers::GetRoot<FbCheckpoint>(bytes.data());
  const FbModuleState *module = ckpt->moduleState();
  if (!module)
    return failure(path, "the checkpoint has no module state");
  if (module->isNominal())
    return failure(path, "a nominal checkpoint holds parameter names but no "
                         "values; give the model the artifacts were made "
                         "from (--weights forward.onnx) or --init");
  TensorFiles files{path, bytes, "", 0, module->hasExternalData()};
  if (files.external) {
    files.dataPath = ortExternalDataPath(path);
    if (std::error_code ec = sys::fs::file_size(files.dataPath, files.dataSize))
      return failure(files.dataPath,
                     "cannot read the checkpoint's external data file: " +
                         ec.message());
  }
  OrtCheckpoint out;
  // ORT writes each tensor once, with a unique name. A crafted file could
  // point many entries at one large tensor: names must be unique and the
  // data named can be no more than the files hold.
  StringSet<> seen;
  uint64_t inlineBytes = 0, externalBytes = 0;
  auto account = [&](const OrtCheckpointTensor &t, const Twine &key) -> Error {
    if (!seen.insert(key.str()).second)
      return failure(path, "'" + key + "' appears twice");
    bool external = !t.data.path().empty() && t.data.path() != path;
    uint64_t &sum = external ? externalBytes : inlineBytes;
    sum += t.data.size();
    if (sum > (external ? files.dataSize : bytes.size()))
      return failure(external ? StringRef(files.dataPath) : path,
                     "the tensors share data (more bytes than the file "
                     "holds)");
    return Error::success();
  };
  for (bool trainable : {true, false}) {
    const TensorList *list =
        trainable ? module->requiresGrad() : module->frozen();
    if (!list)
      continue;
    for (const FbTensor *t : *list) {
      auto p = readTensor(files, t);
      if (!p)
        return p.takeError();
      if (Error e = account(*p, p->name))
        return std::move(e);
      p->trainable = trainable;
      out.params.push_back(std::move(*p));
    }
  }
  if (const GroupList *groups = ckpt->groups(); groups && groups->size()) {
    if (groups->size() > 1)
      return failure(path, "the checkpoint has " + Twine(groups->size()) +
                               " optimizer groups; amp-run reads one");
    const FbOptimizerGroup *g = groups->Get(0);
    out.optimizerStep = g->step();
    out.initialLearningRate = g->initialLearningRate();
    if (const StateList *states = g->states())
      for (const FbParameterOptimizerState *st : *states) {
        std::string param = st->paramName() ? st->paramName()->str() : "";
        if (param.empty())
          return failure(path, "optimizer state without a parameter name");
        if (!st->momentums())
          continue;
        for (const FbTensor *t : *st->momentums()) {
          auto m = readTensor(files, t);
          if (!m)
            return m.takeError();
          if (Error e =
                  account(*m, "optimizer state " + m->name + " of " + param))
            return std::move(e);
          std::string moment = m->name;
          out.moments.push_back({param, moment, std::move(*m)});
        }
      }
  }
  if (const FbPropertyBag *bag = ckpt->propertyBag()) {
    // One name, one value, across the three kinds (ORT keeps them in one
    // map).
    StringSet<> propertyNames;
    uint64_t copied = 0;
    auto readList = [&](const auto *list, auto &into) -> Error {
      if (!list)
        return Error::success();
      for (const auto *p : *list) {
        std::string name = p->name() ? p->name()->str() : "";
        if (name.empty())
          return failure(path, "a property without a name");
        if (!propertyNames.insert(name).second)
          return failure(path, "property '" + name + "' appears twice");
        if constexpr (std::is_same_v<std::decay_t<decltype(into)>,
                                     std::map<std::string, std::string>>) {
          std::string v = p->value() ? p->value()->str() : "";
          copied += v.size();
          if (copied > bytes.size())
            return failure(path, "the properties share data (more bytes "
                                 "than the file holds)");
          into[name] = std::move(v);
        } else {
          into[name] = p->value();
        }
      }
      return Error::success();
    };
    if (Error e = readList(bag->list<0, int64_t>(), out.properties.ints))
      return std::move(e);
    if (Error e = readList(bag->list<1, float>(), out.properties.floats))
      return std::move(e);
    if (Error e = readList(bag->list<2, flatbuffers::String>(),
                           out.properties.strings))
      return std::move(e);
  }
  return out;
}

Error amp::driver::writeOrtCheckpoint(const OrtCheckpoint &c, StringRef path,
                                      bool externalData) {
  // The tensors in the order they are laid out: parameters (trainable, then
  // frozen), then each trainable parameter's moments.
  std::vector<const OrtCheckpointTensor *> order;
  uint64_t total = 0;
  for (bool trainable : {true, false})
    for (const OrtCheckpointTensor &t : c.params)
      if (t.trainable == trainable)
        order.push_back(&t);
  StringMap<std::vector<const OrtCheckpointMoment *>> momentsOf;
  for (const OrtCheckpointMoment &m : c.moments)
    momentsOf[m.param].push_back(&m);
  for (const OrtCheckpointTensor &p : c.params)
    if (p.trainable)
      for (const OrtCheckpointMoment *m : momentsOf.lookup(p.name))
        order.push_back(&m->tensor);
  for (const OrtCheckpointTensor *t : order) {
    if (Error e = checkTensor(*t))
      return failure(path, toString(std::move(e)));
    total += t->data.size();
  }
  for (const auto &[name, value] : c.properties.strings)
    total += name.size() + value.size();
  // FlatBuffers' 32-bit offsets cap one buffer just under 2 GB; leave room
  // for the tables.
  if (!externalData &&
      total >= FLATBUFFERS_MAX_BUFFER_SIZE - (uint64_t(1) << 24))
    return failure(path, "the state holds " + Twine(total) +
                             " bytes, more than one checkpoint buffer can (2 "
                             "GB) without an external data file");

  // Where each tensor's bytes go: an offset in the external data file, as
  // ORT's writer aligns them (8 bytes for INT64 and DOUBLE, else 4); or a
  // vector after the tables, its data 16-byte aligned so that a reader may
  // view it as floats in place.
  DenseMap<const OrtCheckpointTensor *, uint64_t> dataAt;
  uint64_t dataEnd = 0;
  if (externalData)
    for (const OrtCheckpointTensor *t : order) {
      uint64_t align = t->onnxType == 7 || t->onnxType == 11 ? 8 : 4;
      dataEnd = alignTo(dataEnd, align);
      dataAt[t] = dataEnd;
      dataEnd += t->data.size();
    }

  // The tables. Inline data is not copied into the builder: raw_data points
  // at a placeholder and is patched below to the vector written after the
  // tables.
  flatbuffers::FlatBufferBuilder b(1 << 16);
  using Off = flatbuffers::Offset<void>;
  static const uint8_t none = 0;
  auto placeholder = b.CreateVector(&none, 0);
  std::vector<std::pair<const OrtCheckpointTensor *, flatbuffers::uoffset_t>>
      inlineTables;
  auto tensor = [&](const OrtCheckpointTensor &t, StringRef nameAs) {
    auto name = b.CreateString(nameAs.data(), nameAs.size());
    auto dims = b.CreateVector(t.dims);
    auto start = b.StartTable();
    b.AddOffset(slot(0), name);
    b.AddOffset(slot(2), dims);
    b.AddElement<int32_t>(slot(3), t.onnxType, 0);
    if (externalData)
      b.AddElement<int64_t>(slot(6), int64_t(dataAt.lookup(&t)), -1);
    else
      b.AddOffset(slot(4), placeholder);
    Off table(b.EndTable(start));
    if (!externalData)
      inlineTables.push_back({&t, table.o});
    return table;
  };
  auto tensors = [&](bool trainable) {
    std::vector<Off> offs;
    for (const OrtCheckpointTensor &t : c.params)
      if (t.trainable == trainable)
        offs.push_back(tensor(t, t.name));
    return b.CreateVector(offs);
  };
  auto requiresGrad = tensors(true);
  auto frozen = tensors(false);
  auto moduleStart = b.StartTable();
  b.AddOffset(slot(0), requiresGrad);
  b.AddOffset(slot(1), frozen);
  b.AddElement<uint8_t>(slot(2), 0, 0);            // is_nominal_state
  b.AddElement<uint8_t>(slot(3), externalData, 0); // has_external_data
  Off module(b.EndTable(moduleStart));

  Off groups;
  if (c.optimizerStep) {
    std::vector<Off> states;
    for (const OrtCheckpointTensor &p : c.params) {
      if (!p.trainable)
        continue;
      std::vector<Off> moments;
      for (const OrtCheckpointMoment *m : momentsOf.lookup(p.name))
        moments.push_back(tensor(m->tensor, m->moment));
      auto paramName = b.CreateString(p.name);
      auto momentList = b.CreateVector(moments);
      auto start = b.StartTable();
      b.AddOffset(slot(0), paramName);
      b.AddOffset(slot(1), momentList);
      states.push_back(Off(b.EndTable(start)));
    }
    auto stateList = b.CreateVector(states);
    auto groupName = b.CreateString("group0");
    auto start = b.StartTable();
    b.AddOffset(slot(0), groupName);
    b.AddElement<int64_t>(slot(1), *c.optimizerStep, 0);
    b.AddElement<float>(slot(2), c.initialLearningRate, 0);
    b.AddOffset(slot(3), stateList);
    std::vector<Off> one{Off(b.EndTable(start))};
    groups = b.CreateVector(one).o;
  }

  Off bag;
  if (!c.properties.empty()) {
    auto list = [&](const auto &values) {
      std::vector<Off> offs;
      for (const auto &[name, value] : values) {
        auto n = b.CreateString(name);
        flatbuffers::Offset<flatbuffers::String> s;
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>,
                                     std::string>)
          s = b.CreateString(value);
        auto start = b.StartTable();
        b.AddOffset(slot(0), n);
        if constexpr (std::is_same_v<std::decay_t<decltype(value)>,
                                     std::string>)
          b.AddOffset(slot(1), s);
        else
          b.AddElement(slot(1), value, decltype(value)(0));
        offs.push_back(Off(b.EndTable(start)));
      }
      return b.CreateVector(offs);
    };
    auto ints = list(c.properties.ints);
    auto floats = list(c.properties.floats);
    auto strings = list(c.properties.strings);
    auto start = b.StartTable();
    b.AddOffset(slot(0), ints);
    b.AddOffset(slot(1), floats);
    b.AddOffset(slot(2), strings);
    bag = Off(b.EndTable(start));
  }

  auto start = b.StartTable();
  b.AddElement<int32_t>(slot(0), kWrittenVersion, 0);
  b.AddOffset(slot(1), module);
  if (!groups.IsNull())
    b.AddOffset(slot(2), groups);
  if (!bag.IsNull())
    b.AddOffset(slot(3), bag);
  b.Finish(Off(b.EndTable(start)), kIdentifier);

  // Inline data: vectors after the tables (a FlatBuffer's offsets point
  // forward, to anywhere later in the buffer). Each tensor table's raw_data
  // field is patched to its vector: u32 length, then the bytes.
  uint8_t *tables = b.GetBufferPointer();
  const uint64_t tablesSize = b.GetSize();
  std::vector<uint64_t> vectorAt;
  uint64_t end = tablesSize;
  for (auto [t, tableOff] : inlineTables) {
    uint64_t at = alignTo(end + 4, 16) - 4;
    vectorAt.push_back(at);
    end = at + 4 + t->data.size();
    uint64_t tablePos = tablesSize - tableOff;
    int32_t toVtable;
    std::memcpy(&toVtable, tables + tablePos, 4);
    uint16_t field;
    std::memcpy(&field, tables + (tablePos - toVtable) + slot(4), 2);
    assert(field && "a tensor table without raw_data");
    uint64_t fieldPos = tablePos + field;
    uint32_t rel = uint32_t(at - fieldPos);
    std::memcpy(tables + fieldPos, &rel, 4);
  }

  std::unique_ptr<AtomicOutputFile> dataFile;
  if (externalData) {
    auto f = AtomicOutputFile::create(ortExternalDataPath(path));
    if (!f)
      return f.takeError();
    dataFile = std::move(*f);
    for (const OrtCheckpointTensor *t : order) {
      if (Error e = dataFile->writeZeros(dataAt.lookup(t) - dataFile->offset()))
        return e;
      if (Error e = dataFile->write(t->data))
        return e;
    }
  }
  auto file = AtomicOutputFile::create(path);
  if (!file)
    return file.takeError();
  AtomicOutputFile &f = **file;
  if (Error e = f.write(
          StringRef(reinterpret_cast<const char *>(tables), tablesSize)))
    return e;
  for (auto [i, entry] : llvm::enumerate(inlineTables)) {
    const OrtCheckpointTensor &t = *entry.first;
    uint32_t length = uint32_t(t.data.size());
    if (Error e = f.writeZeros(vectorAt[i] - f.offset()))
      return e;
    if (Error e =
            f.write(StringRef(reinterpret_cast<const char *>(&length), 4)))
      return e;
    if (Error e = f.write(t.data))
      return e;
  }
  // The data file first: once the checkpoint is renamed, its tensors are
  // there.
  if (dataFile)
    if (Error e = dataFile->commit())
      return e;
  return f.commit();
}
