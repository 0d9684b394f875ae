//===- TrainerCheckpoint.cpp - the amp-run trainer's files of state -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The state the trainer reads and writes: the initial parameters (--weights:
// an ONNX model's initializers, or onnxruntime-training's checkpoint with
// its optimizer state and the loss scaler's properties), amp-run's own
// checkpoints (--resume, --checkpoint), onnxruntime-training's checkpoint
// (--ort-checkpoint) and the trained model (-o), each streamed from the state
// buffers a piece at a time.
//
//===----------------------------------------------------------------------===//

#include "TrainerInternals.h"
#include "amp/Driver/ModelWriter.h"
#include "amp/Target/ONNX/ExternalData.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <fstream>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::driver::detail;
using namespace amp::exec;

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

llvm::Error Trainer::readWeights(std::map<std::string, StoredTensor> &weights) {
  weightsAreOrtCheckpoint =
      !opts.weights.empty() && isOrtCheckpointFile(opts.weights);
  if (!opts.weights.empty() && weightsAreOrtCheckpoint) {
    // onnxruntime-training's `checkpoint`: its module state.
    auto c = readOrtCheckpoint(opts.weights);
    if (!c)
      return c.takeError();
    ortStep = c->optimizerStep;
    ortMoments = std::move(c->moments);
    ortProperties = std::move(c->properties);
    // ORT's Optimizer, too, takes its learning rate from the user, not
    // from the checkpoint: say so when they differ.
    if (ortStep && !opts.lrGiven && c->initialLearningRate > 0 &&
        float(opts.lr) != c->initialLearningRate)
      status << "amp-run: note: " << opts.weights
             << " was saved with learning rate "
             << llvm::format("%g", double(c->initialLearningRate))
             << "; this run uses " << llvm::format("%g", opts.lr)
             << " (--lr)\n";
    for (OrtCheckpointTensor &t : c->params) {
      StoredTensor w{t.name, dtypeOfOnnx(t.onnxType), std::move(t.dims),
                     std::move(t.data)};
      if (w.dtype < 0)
        return fail(opts.weights + ": parameter '" + t.name +
                    "': unsupported data type");
      weights[t.name] = std::move(w);
    }
  } else if (!opts.weights.empty()) {
    onnx::ModelProto model;
    std::ifstream in(opts.weights, std::ios::binary);
    if (!in || !model.ParseFromIstream(&in))
      return fail(opts.weights + ": cannot read the ONNX model");
    for (auto &t : *model.mutable_graph()->mutable_initializer()) {
      auto w = takeTensorProto(t, llvm::sys::path::parent_path(opts.weights));
      if (!w)
        return w.takeError();
      weights[t.name()] = std::move(*w);
    }
  }
  return llvm::Error::success();
}

llvm::Error
Trainer::readResumeCheckpoint(std::optional<CheckpointContents> &ckpt,
                              std::map<std::string, StoredTensor> &resumed) {
  if (!opts.resumePath.empty()) {
    std::string file = checkpointFile(opts.resumePath);
    if (sharded() && !llvm::sys::fs::exists(file))
      return fail(opts.resumePath + ": no shard " + file + " for rank " +
                  Twine(rank) + " of " + Twine(worldSize) +
                  " (a --shard-optimizer checkpoint resumes on the number of "
                  "ranks that wrote it)");
    auto c = readCheckpoint(file);
    if (!c)
      return c.takeError();
    ckpt = std::move(*c);
    for (const StoredTensor &t : ckpt->tensors)
      resumed[t.name] = t;
  }
  return llvm::Error::success();
}

llvm::Error Trainer::restoreCheckpoint(const CheckpointContents &ckpt) {
  const CheckpointCounters &counters = ckpt.counters;
  if (counters.steps % uint64_t(opts.accumulate) != 0)
    return fail(opts.resumePath + ": the checkpoint is " +
                std::to_string(counters.steps) +
                " steps in, inside a group of --accumulate " +
                std::to_string(opts.accumulate) + "; nothing was loaded");
  for (const StoredTensor &t : ckpt.tensors) {
    StringRef key = t.name;
    key.consume_front("param:");
    auto it = state.find(key);
    if (it == state.end() || it->second->bytes != t.bytes.size() ||
        it->second->dtype != t.dtype)
      return fail(opts.resumePath + ": tensor '" + key +
                  "' does not match the graphs; nothing was loaded");
  }
  // From the mapped file, a window at a time.
  for (const StoredTensor &t : ckpt.tensors) {
    StringRef key = t.name;
    key.consume_front("param:");
    if (auto e = toDevice(t.bytes, state[key]->data))
      return e;
  }
  stepsDone = counters.steps;
  optimizerStep = counters.optimizerStep;
  skipped = counters.skipped;
  return llvm::Error::success();
}

llvm::Error Trainer::restoreOrtOptimizerState() {
  // onnxruntime-training's AdamW moments, "momentum0" and "momentum1" per
  // parameter, are the optimizer graph's first and second order moments.
  // All or nothing: every moment the optimizer model takes must come from
  // the checkpoint (zero moments at a late step would skip Adam's bias
  // correction and take steps of several lr).
  if (*ortStep < 0)
    return fail(opts.weights + ": negative optimizer step count");
  llvm::StringSet<> wanted, given;
  for (const auto &e : state)
    if (e.getKey().starts_with("first_order_moments:") ||
        e.getKey().starts_with("second_order_moments:"))
      wanted.insert(e.getKey());
  std::vector<std::pair<DeviceBuffer *, const OrtCheckpointMoment *>> into;
  for (const OrtCheckpointMoment &m : ortMoments) {
    StringRef prefix = m.moment == "momentum0"   ? "first_order_moments:"
                       : m.moment == "momentum1" ? "second_order_moments:"
                                                 : "";
    auto it = state.find((prefix + m.param).str());
    if (prefix.empty() || it == state.end() ||
        it->second->shape != m.tensor.dims ||
        it->second->dtype != dtypeOfOnnx(m.tensor.onnxType))
      return fail(opts.weights + ": the optimizer state '" + m.moment +
                  "' of '" + m.param +
                  "' does not fit the optimizer model's inputs" +
                  (wanted.empty() ? " (it takes no moments)" : ""));
    given.insert(it->getKey());
    into.push_back({it->second.get(), &m});
  }
  if (given.size() != wanted.size())
    return fail(opts.weights + ": the checkpoint's optimizer state holds " +
                Twine(given.size()) + " of the " + Twine(wanted.size()) +
                " moments the optimizer model takes");
  for (auto [b, m] : into)
    if (auto e = toDevice(m->tensor.data, b->data))
      return e;
  optimizerStep = uint64_t(*ortStep);
  status << "amp-run: optimizer state from " << opts.weights << " (step "
         << optimizerStep << ", " << ortMoments.size() << " moments)\n";
  ortMoments.clear(); // on the device now
  ortMoments.shrink_to_fit();
  return llvm::Error::success();
}

void Trainer::restoreLossScaler() {
  // The loss-scaler state that --ort-checkpoint keeps in the property bag
  // (ORT's checkpoint has no other place for it): the scale and its
  // growth counter go on where they were.
  auto restore = [&](StringRef name, int32_t dtype, const void *v) {
    if (DeviceBuffer *b = scalarState(name, dtype)) {
      amprt_memcpy(ctx, b->data, v, b->bytes, AMPRT_HOST_TO_DEVICE);
      status << "amp-run: " << name << " from " << opts.weights << "\n";
    }
  };
  if (auto f = ortProperties.floats.find(kLossScaleName.str());
      f != ortProperties.floats.end())
    restore(kLossScaleName, AMPRT_F32, &f->second);
  if (auto i = ortProperties.ints.find(kGrowthTrackerName.str());
      i != ortProperties.ints.end())
    restore(kGrowthTrackerName, AMPRT_I64, &i->second);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

llvm::Error Trainer::saveCheckpoint(StringRef path, uint64_t steps) {
  CheckpointCounters c{steps, optimizerStep, skipped, opts.lr};
  std::vector<std::string> keys;
  for (auto &e : state)
    if (!llvm::is_contained(dataInputs, e.getKey().str()) &&
        e.getKey() != "learning_rate" && e.getKey() != "step" &&
        e.getKey() != "lazy_reset_grad")
      keys.push_back(e.getKey().str());
  llvm::sort(keys);
  // Straight from the state buffers to the file, a piece at a time.
  std::vector<StoredTensor> tensors;
  for (const std::string &k : keys) {
    const DeviceBuffer &b = *state[k];
    tensors.push_back({llvm::is_contained(params, k) ? "param:" + k : k,
                       b.dtype, b.shape, deviceBytes(b)});
  }
  return writeCheckpoint(checkpointFile(path), c, tensors);
}

/// The state as onnxruntime-training keeps it: trainable and frozen
/// parameters, by name, and the optimizer's per-parameter state (keys
/// "<sequence>:<param>"), of which ORT names only Adam's two moments,
/// "momentum0" and "momentum1". Known before training, so that a state ORT
/// cannot hold is refused before the steps are spent.
llvm::Expected<Trainer::OrtLayout> Trainer::ortCheckpointLayout() {
  std::vector<OrtEntry> out;
  std::vector<std::string> sorted = params;
  llvm::sort(sorted);
  for (const std::string &p : sorted)
    out.push_back({p, p, "", llvm::is_contained(trainable, p)});
  std::vector<std::string> keys;
  for (auto &e : state)
    keys.push_back(e.getKey().str());
  llvm::sort(keys);
  for (StringRef key : keys) {
    auto [seq, param] = key.split(':');
    if (param.empty() || !llvm::is_contained(trainable, param))
      continue;
    StringRef moment = seq == "first_order_moments"    ? "momentum0"
                       : seq == "second_order_moments" ? "momentum1"
                                                       : "";
    if (moment.empty())
      return fail("--ort-checkpoint: the optimizer state '" + seq + "' of '" +
                  param +
                  "' has no name in onnxruntime-training's "
                  "checkpoint (it names Adam's two moments)");
    out.push_back({key.str(), moment.str(), param.str(), false});
  }
  // ORT's rule: state from its threshold on goes to `<checkpoint>.data`
  // (counting the moments too, which share the FlatBuffer's 2 GB).
  uint64_t total = 0;
  for (const OrtEntry &e : out)
    total += state[e.key]->bytes;
  bool external = opts.externalData == ExternalData::Always ||
                  (opts.externalData == ExternalData::Auto &&
                   total >= opts.externalDataThreshold);
  if (!external && total >= (uint64_t(1) << 31) - (uint64_t(1) << 24))
    return fail("--ort-checkpoint: the state holds " + Twine(total) +
                " bytes, more than one checkpoint buffer can (2 GB) with "
                "--external-data=never");
  return OrtLayout{std::move(out), external};
}

llvm::Error Trainer::saveOrtCheckpoint(StringRef path) {
  auto layout = ortCheckpointLayout();
  if (!layout)
    return layout.takeError();
  OrtCheckpoint c;
  for (const OrtEntry &e : layout->entries) {
    const DeviceBuffer &b = *state[e.key];
    OrtCheckpointTensor t;
    t.name = e.name;
    t.onnxType = onnxOfDtype(b.dtype);
    t.dims = b.shape;
    t.trainable = e.trainable;
    t.data = deviceBytes(b);
    if (e.param.empty())
      c.params.push_back(std::move(t));
    else
      c.moments.push_back({e.param, e.name, std::move(t)});
  }
  c.optimizerStep = int64_t(optimizerStep);
  c.initialLearningRate = float(opts.lr);
  // The properties of a checkpoint given as --weights go on (an epoch
  // count, a best score); then the loss-scaler state, which ORT's
  // checkpoint has no field for.
  c.properties = ortProperties;
  if (DeviceBuffer *b = scalarState(kLossScaleName, AMPRT_F32))
    amprt_memcpy(ctx, &c.properties.floats[kLossScaleName.str()], b->data, 4,
                 AMPRT_DEVICE_TO_HOST);
  if (DeviceBuffer *b = scalarState(kGrowthTrackerName, AMPRT_I64))
    amprt_memcpy(ctx, &c.properties.ints[kGrowthTrackerName.str()], b->data, 8,
                 AMPRT_DEVICE_TO_HOST);
  return writeOrtCheckpoint(c, path, layout->externalData);
}

llvm::Error Trainer::findOutputGraph() {
  if (!opts.weights.empty() && !weightsAreOrtCheckpoint) {
    outputGraph = opts.weights;
    return llvm::Error::success();
  }
  // No ONNX model gave the parameters: the eval model generate_artifacts
  // writes next to the training model takes them as inputs.
  std::string from = !opts.weights.empty()
                         ? "onnxruntime-training's checkpoint " + opts.weights
                     : opts.initSeed
                         ? std::string("--init")
                         : "amp-run's checkpoint " + opts.resumePath;
  if (!opts.optimizerModel.empty()) {
    llvm::SmallString<256> eval =
        llvm::sys::path::parent_path(opts.trainingModel);
    llvm::sys::path::append(eval, "eval_model.onnx");
    if (llvm::sys::fs::exists(eval)) {
      outputGraph = std::string(eval);
      return llvm::Error::success();
    }
  }
  return fail("-o " + opts.outPath + ": the parameters come from " + from +
              ", which holds no graph, and there is no eval_model.onnx next "
              "to " +
              opts.trainingModel +
              " to write them into; give --weights <model.onnx> (the forward "
              "model) or put the artifacts' eval model there");
}

llvm::Error Trainer::writeWeights(StringRef path) {
  onnx::ModelProto model;
  {
    std::ifstream in(outputGraph, std::ios::binary);
    if (!in || !model.ParseFromIstream(&in))
      return fail(outputGraph + ": cannot read the ONNX model");
  }
  StringRef dir = llvm::sys::path::parent_path(outputGraph);
  auto *g = model.mutable_graph();
  llvm::StringSet<> paramSet;
  for (const std::string &p : params)
    paramSet.insert(p);
  // The eval model takes the parameters as inputs: they become initializers
  // (and stop being inputs), so that the model runs on its data alone.
  auto *inputs = g->mutable_input();
  inputs->erase(std::remove_if(inputs->begin(), inputs->end(),
                               [&](const onnx::ValueInfoProto &v) {
                                 return paramSet.contains(v.name());
                               }),
                inputs->end());
  // The parameters and the tensors kept in external data leave the proto:
  // their bytes are streamed into the file from where they are (the state
  // buffers, the mapped data file). The other initializers stay.
  std::vector<StreamedInitializer> streamed;
  bool hadExternalData = false;
  uint64_t total = 0;
  for (const onnx::TensorProto &t : g->initializer())
    hadExternalData |= t.data_location() == onnx::TensorProto::EXTERNAL;
  // Keeps the initializers `keep` accepts in the model and moves the
  // others' bytes (raw data, or their range of an external data file) to
  // `streamed`, each keeping its name, type and dims; the parameters' old
  // values go.
  auto split = [&](auto keep) -> llvm::Error {
    google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
    for (onnx::TensorProto &t : *g->mutable_initializer()) {
      if (paramSet.contains(t.name()))
        continue;
      if (keep(t)) {
        kept.Add(std::move(t));
        continue;
      }
      auto bytes = takeTensorProto(t, dir);
      if (!bytes)
        return fail(outputGraph + ": " + llvm::toString(bytes.takeError()));
      for (auto clear : {&onnx::TensorProto::clear_raw_data,
                         &onnx::TensorProto::clear_float_data,
                         &onnx::TensorProto::clear_int32_data,
                         &onnx::TensorProto::clear_int64_data,
                         &onnx::TensorProto::clear_double_data,
                         &onnx::TensorProto::clear_uint64_data,
                         &onnx::TensorProto::clear_external_data,
                         &onnx::TensorProto::clear_data_location})
        (t.*clear)();
      streamed.push_back({std::move(t), std::move(bytes->bytes)});
    }
    g->mutable_initializer()->Swap(&kept);
    return llvm::Error::success();
  };
  // The tensors kept in external data are streamed (from their file).
  if (auto e = split([](const onnx::TensorProto &t) {
        return t.data_location() != onnx::TensorProto::EXTERNAL;
      }))
    return e;
  for (const StreamedInitializer &i : streamed)
    total += i.bytes.size();
  for (const onnx::TensorProto &t : g->initializer())
    total += t.ByteSizeLong();
  // Each in its own type: frozen state can be a bool mask or an integer
  // counter, not only f32 weights.
  for (const std::string &p : params) {
    const DeviceBuffer &b = *state[p];
    onnx::TensorProto header;
    header.set_name(p);
    header.set_data_type(onnxOfDtype(b.dtype));
    for (int64_t d : b.shape)
      header.add_dims(d);
    total += b.bytes;
    streamed.push_back({std::move(header), deviceBytes(b)});
  }
  bool external = opts.externalData == ExternalData::Always ||
                  (opts.externalData == ExternalData::Auto &&
                   (hadExternalData || total >= opts.externalDataThreshold));
  // In external data, the other initializers from 1 KiB on join them
  // (onnx.save_model's default size_threshold); smaller ones stay in the
  // model.
  if (external)
    if (auto e = split(
            [](const onnx::TensorProto &t) { return t.ByteSizeLong() < 1024; }))
      return e;
  return writeModel(model, std::move(streamed), path, external);
}
