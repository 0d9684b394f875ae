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
// the same tables with FlatBufferBuilder's table API.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/OrtCheckpoint.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <flatbuffers/flatbuffers.h>
#include <optional>
#include <type_traits>

// Table::VerifyField with an alignment argument (used below) is 2.0.6's.
#if FLATBUFFERS_VERSION_MAJOR < 2 ||                                           \
    (FLATBUFFERS_VERSION_MAJOR == 2 && FLATBUFFERS_VERSION_MINOR == 0 &&       \
     FLATBUFFERS_VERSION_REVISION < 6)
#error "amp-mlir needs FlatBuffers 2.0.6 or newer (Debian 12: libflatbuffers-dev)"
#endif

using namespace llvm;
using namespace amp::exec;

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
           v.VerifyVector(momentums()) &&
           v.VerifyVectorOfTables(momentums()) && v.EndTable();
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

/// `t`'s name, type, dims and data, checked against each other.
Expected<OrtCheckpointTensor> readTensor(StringRef path, const FbTensor *t) {
  OrtCheckpointTensor p;
  p.name = t->name() ? t->name()->str() : "";
  if (p.name.empty())
    return failure(path, "a tensor without a name");
  p.onnxType = t->dataType();
  size_t elem = elementBytes(p.onnxType);
  if (!elem)
    return failure(path, "tensor '" + p.name + "' has data type " +
                             Twine(p.onnxType) +
                             ", which amp-run cannot hold");
  if (t->dims())
    p.dims.assign(t->dims()->begin(), t->dims()->end());
  std::optional<uint64_t> need = dataBytes(p.dims, elem);
  if (!need)
    return failure(path, "tensor '" + p.name + "' has an invalid shape");
  if (t->externalDataOffset() >= 0)
    return failure(path, "tensor '" + p.name +
                             "' is in an external data file, which is not "
                             "read");
  size_t have = t->rawData() ? t->rawData()->size() : 0;
  if (have != *need)
    return failure(path, "tensor '" + p.name + "' has " + Twine(have) +
                             " bytes of data; its type and shape need " +
                             Twine(*need));
  if (have)
    p.data.assign(reinterpret_cast<const char *>(t->rawData()->data()),
                  reinterpret_cast<const char *>(t->rawData()->data()) + have);
  return p;
}

} // namespace

bool amp::exec::isOrtCheckpoint(StringRef bytes) {
  return bytes.size() >= 8 &&
         flatbuffers::BufferHasIdentifier(bytes.data(), kIdentifier);
}

bool amp::exec::isOrtCheckpointFile(StringRef path) {
  auto buf = MemoryBuffer::getFileSlice(path, 8, 0, /*IsVolatile=*/false);
  return buf && isOrtCheckpoint((*buf)->getBuffer());
}

std::string amp::exec::findArtifactsCheckpoint(StringRef trainingModelPath) {
  SmallString<256> path = sys::path::parent_path(trainingModelPath);
  sys::path::append(path, "checkpoint");
  return isOrtCheckpointFile(path) ? std::string(path) : "";
}

Expected<OrtCheckpoint> amp::exec::readOrtCheckpoint(StringRef path) {
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
  if (module->hasExternalData())
    return failure(path, "the checkpoint keeps its tensors in an external "
                         "data file, which is not read; give --weights "
                         "<model.onnx>");
  OrtCheckpoint out;
  // ORT writes each tensor once, with a unique name. A crafted file could
  // point many entries at one large tensor: names must be unique and the
  // data copied can be no more than the file holds.
  StringSet<> seen;
  uint64_t copied = 0;
  auto account = [&](const OrtCheckpointTensor &t,
                     const Twine &key) -> Error {
    if (!seen.insert(key.str()).second)
      return failure(path, "'" + key + "' appears twice");
    copied += t.data.size();
    if (copied > bytes.size())
      return failure(path, "the tensors share data (more bytes than the "
                           "file holds)");
    return Error::success();
  };
  for (bool trainable : {true, false}) {
    const TensorList *list =
        trainable ? module->requiresGrad() : module->frozen();
    if (!list)
      continue;
    for (const FbTensor *t : *list) {
      auto p = readTensor(path, t);
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
          auto m = readTensor(path, t);
          if (!m)
            return m.takeError();
          if (Error e = account(*m, "optimizer state " + m->name + " of " +
                                        param))
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

Error amp::exec::encodeOrtCheckpoint(
    const OrtCheckpoint &c, function_ref<Error(StringRef bytes)> write) {
  // Everything goes into one buffer, which FlatBuffers' 32-bit offsets cap
  // just under 2 GB; leave room for the tables around the data.
  uint64_t total = 0;
  auto check = [&](const OrtCheckpointTensor &t) -> Error {
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
      return createStringError(inconvertibleErrorCode(),
                               "tensor '" + t.name + "' has " +
                                   Twine(t.data.size()) +
                                   " bytes of data; its type and shape "
                                   "need " + Twine(*need));
    total += t.data.size() + t.name.size() + 8 * t.dims.size() + 64;
    return Error::success();
  };
  for (const OrtCheckpointTensor &t : c.params)
    if (Error e = check(t))
      return std::move(e);
  for (const OrtCheckpointMoment &m : c.moments)
    if (Error e = check(m.tensor))
      return std::move(e);
  for (const auto &[name, value] : c.properties.strings)
    total += name.size() + value.size() + 64;
  if (total >= FLATBUFFERS_MAX_BUFFER_SIZE - (uint64_t(1) << 20))
    return createStringError(
        inconvertibleErrorCode(),
        "the state holds " + Twine(total) +
            " bytes, more than one checkpoint buffer can (2 GB; "
            "onnxruntime-training keeps larger models in an external data "
            "file, which amp-run does not write)");

  flatbuffers::FlatBufferBuilder b(size_t(total) + 1024);
  using Off = flatbuffers::Offset<void>;
  auto tensor = [&](const OrtCheckpointTensor &t, StringRef nameAs) {
    auto name = b.CreateString(nameAs.data(), nameAs.size());
    auto dims = b.CreateVector(t.dims);
    // 16-byte aligned data, so a reader may view it as floats in place.
    b.ForceVectorAlignment(t.data.size(), 1, 16);
    auto raw = b.CreateVector(reinterpret_cast<const uint8_t *>(t.data.data()),
                              t.data.size());
    auto start = b.StartTable();
    b.AddOffset(slot(0), name);
    b.AddOffset(slot(2), dims);
    b.AddElement<int32_t>(slot(3), t.onnxType, 0);
    b.AddOffset(slot(4), raw);
    return Off(b.EndTable(start));
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
  b.AddElement<uint8_t>(slot(2), 0, 0); // is_nominal_state
  b.AddElement<uint8_t>(slot(3), 0, 0); // has_external_data
  Off module(b.EndTable(moduleStart));

  Off groups;
  if (c.optimizerStep) {
    StringMap<std::vector<const OrtCheckpointMoment *>> momentsOf;
    for (const OrtCheckpointMoment &m : c.moments)
      momentsOf[m.param].push_back(&m);
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
  return write(StringRef(reinterpret_cast<const char *>(b.GetBufferPointer()),
                         b.GetSize()));
}
