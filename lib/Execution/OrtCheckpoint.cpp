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
//
// Slot i is at vtable offset 4 + 2 i. Every table is verified (bounds,
// alignment, nesting depth) before any field is read.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/OrtCheckpoint.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <flatbuffers/flatbuffers.h>

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

struct FbCheckpoint : private flatbuffers::Table {
  const FbModuleState *moduleState() const {
    return GetPointer<const FbModuleState *>(slot(1));
  }
  const GroupList *groups() const {
    return GetPointer<const GroupList *>(slot(2));
  }
  bool Verify(flatbuffers::Verifier &v) const {
    return VerifyTableStart(v) && VerifyField<int32_t>(v, slot(0), 4) &&
           VerifyOffset(v, slot(1)) && v.VerifyTable(moduleState()) &&
           VerifyOffset(v, slot(2)) && v.VerifyVector(groups()) &&
           v.VerifyVectorOfTables(groups()) && v.EndTable();
  }
};

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
  uint64_t numel = 1;
  if (t->dims())
    for (int64_t d : *t->dims()) {
      if (d < 0 || (d && numel > UINT64_MAX / uint64_t(d)))
        return failure(path, "tensor '" + p.name + "' has an invalid shape");
      numel *= uint64_t(d);
      p.dims.push_back(d);
    }
  if (t->externalDataOffset() >= 0)
    return failure(path, "tensor '" + p.name +
                             "' is in an external data file, which is not "
                             "read");
  size_t have = t->rawData() ? t->rawData()->size() : 0;
  if (numel > UINT64_MAX / elem || have != numel * elem)
    return failure(path, "tensor '" + p.name + "' has " + Twine(have) +
                             " bytes of data; its type and shape need " +
                             Twine(numel * elem));
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
  return out;
}
