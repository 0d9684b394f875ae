//===- GraphRunner.cpp - run one ONNX graph once on given inputs ----------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The graph's input types are made static from the data (a symbolic or
// unnamed dim takes the data's size; a static dim must equal it), then the
// graph is lowered as amp-run lowers a training graph and run once. The
// comparison widens both sides to f64 through the runtime's own cast (the
// CPU backend), so f16 and bf16 outputs compare by value.
//
//===----------------------------------------------------------------------===//

#include "amp/Driver/GraphRunner.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Driver/GraphFacts.h"
#include "amp/Driver/HostTensor.h"
#include "amp/Driver/Lowering.h"
#include "amp/Execution/Program.h"
#include "amp/Runtime/Kernels.h"
#include "amp/Target/ONNX/ImportONNX.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace amp;
using namespace amp::driver;
using namespace amp::exec;

namespace {

llvm::Error fail(const Twine &msg) { return llvm::createStringError(msg); }

std::string inFolder(StringRef dir, const Twine &file) {
  SmallString<256> p(dir);
  llvm::sys::path::append(p, file);
  return std::string(p);
}

/// The data of a graph input or an expected output: the ONNX test data
/// set's <prefix>_<index>.pb (whose tensor, when named, must carry `name`),
/// else <name>.npy or <name>.pb. The positional file comes first: a graph
/// may name an output "output_1" while output_1.pb holds its output 1.
/// nullopt when none exists.
llvm::Expected<std::optional<HostTensor>>
findTensor(StringRef dir, StringRef name, StringRef prefix, unsigned index) {
  std::string pb = inFolder(dir, prefix + "_" + Twine(index) + ".pb");
  if (llvm::sys::fs::exists(pb)) {
    std::string held;
    auto h = readTensorProtoFile(pb, &held);
    if (!h)
      return h.takeError();
    if (!held.empty() && !name.empty() && held != name)
      return fail(pb + " holds '" + held + "', but " + prefix + " " +
                  Twine(index) + " of the graph is '" + name + "'");
    return std::optional<HostTensor>(std::move(*h));
  }
  return readNamedTensor(dir, name);
}

/// Frees the context and its buffers on every path.
struct Device {
  amprt_context *ctx = nullptr;
  std::vector<void *> buffers;
  ~Device() {
    for (void *p : buffers)
      amprt_free(ctx, p);
    if (ctx)
      amprt_context_destroy(ctx);
  }
};

/// "output 'y' (f32 [2, 3]): ", the start of an output's report line.
void outputHeader(llvm::raw_ostream &report, StringRef name,
                  const HostTensor &got) {
  report << "output '" << name << "' (" << amprt_dtype_name(got.dtype) << " "
         << shapeString(got.shape) << "): ";
}

/// `h`'s values as f64, cast by the runtime (CPU backend).
llvm::Expected<std::vector<double>> widen(amprt_context *cpu,
                                          const HostTensor &h) {
  std::vector<double> out(size_t(h.numel()));
  std::vector<int64_t> shape = h.shape;
  amprt_tensor src = {const_cast<char *>(h.data.data()), h.dtype,
                      int32_t(shape.size()), shape.data()};
  amprt_tensor dst = {out.data(), AMPRT_F64, int32_t(shape.size()),
                      shape.data()};
  if (amprt_cast(cpu, &src, &dst) != AMPRT_OK)
    return fail(Twine("cannot compare: ") + amprt_last_error(cpu));
  return out;
}

bool isFloat(int32_t dt) {
  return dt == AMPRT_F32 || dt == AMPRT_F64 || dt == AMPRT_F16 ||
         dt == AMPRT_BF16;
}

/// One output against its expected value; one report line. Returns whether
/// it matched.
llvm::Expected<bool> compare(amprt_context *cpu, StringRef name,
                             const HostTensor &got, const HostTensor &want,
                             const RunOptions &o, llvm::raw_ostream &report) {
  outputHeader(report, name, got);
  if (got.dtype != want.dtype) {
    report << "expected " << amprt_dtype_name(want.dtype) << ": MISMATCH\n";
    return false;
  }
  if (got.shape != want.shape) {
    report << "expected shape " << shapeString(want.shape) << ": MISMATCH\n";
    return false;
  }
  if (!isFloat(got.dtype)) {
    int64_t bad = 0, first = -1;
    size_t es = amprt_dtype_size(got.dtype);
    for (int64_t i = 0; i < got.numel(); ++i)
      if (std::memcmp(&got.data[i * es], &want.data[i * es], es)) {
        if (first < 0)
          first = i;
        ++bad;
      }
    if (bad) {
      report << bad << " of " << got.numel()
             << " elements differ (first at flat index " << first
             << "): MISMATCH\n";
      return false;
    }
    report << "identical: ok\n";
    return true;
  }
  auto g = widen(cpu, got), w = widen(cpu, want);
  if (!g)
    return g.takeError();
  if (!w)
    return w.takeError();
  double maxAbs = 0, maxRel = 0;
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < g->size(); ++i) {
    double a = (*g)[i], b = (*w)[i];
    bool ok;
    if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
    } else {
      double d = std::fabs(a - b);
      maxAbs = std::max(maxAbs, d);
      if (b != 0)
        maxRel = std::max(maxRel, d / std::fabs(b));
      ok = d <= o.atol + o.rtol * std::fabs(b);
    }
    if (!ok) {
      if (first < 0)
        first = int64_t(i);
      ++bad;
    }
  }
  report << "max abs diff " << llvm::format("%.3g", maxAbs) << ", max rel "
         << llvm::format("%.3g", maxRel) << " (rtol "
         << llvm::format("%g", o.rtol) << ", atol "
         << llvm::format("%g", o.atol) << ")";
  if (bad) {
    report << ", " << bad << " of " << g->size()
           << " elements outside (first at flat index " << first << ": got "
           << llvm::format("%.9g", (*g)[first]) << ", expected "
           << llvm::format("%.9g", (*w)[first]) << "): MISMATCH\n";
    return false;
  }
  report << ": ok\n";
  return true;
}

} // namespace

llvm::Expected<bool> amp::driver::runGraph(const RunOptions &o,
                                           llvm::raw_ostream &report) {
  if (!llvm::sys::fs::is_directory(o.data))
    return fail("--run: " + o.data + " is not a folder");
  MLIRContext mctx;
  loadDialects(mctx);
  OwningOpRef<ModuleOp> module = importOnnxFile(o.model, &mctx);
  if (!module)
    return fail(o.model + ": import failed");
  auto graphs = llvm::to_vector(module->getOps<train::GraphOp>());
  if (graphs.size() != 1)
    return fail(o.model + ": expected one graph");
  train::GraphOp graph = graphs.front();
  std::string graphName = graph.getSymName().str();

  // The inputs, and the graph's input types made static from them.
  Block &body = graph.getBody().front();
  std::vector<std::string> names;
  std::vector<HostTensor> inputs;
  SmallVector<Type> argTypes;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto nameAttr = graph.getArgAttrOfType<StringAttr>(i, "train.name");
    std::string name = nameAttr ? nameAttr.str() : "";
    auto type = dyn_cast<TensorType>(arg.getType());
    if (!type)
      return fail(o.model + ": graph input '" + name + "' is a " +
                  "sequence or map; --run feeds tensors only");
    auto found = findTensor(o.data, name, "input", i);
    if (!found)
      return found.takeError();
    if (!*found)
      return fail("--run: no data for graph input " + Twine(i) + " '" + name +
                  "' in " + o.data + " (input_" + Twine(i) + ".pb, " + name +
                  ".npy or " + name + ".pb)");
    HostTensor &h = **found;
    int32_t want = dtypeOf(type.getElementType());
    if (h.dtype != want)
      return fail(Twine("--run: the data of graph input '") + name + "' is " +
                  amprt_dtype_name(h.dtype) + ", the graph wants " +
                  (want < 0 ? "an unsupported type" : amprt_dtype_name(want)));
    if (type.hasRank()) {
      bool fits = type.getRank() == int64_t(h.shape.size());
      for (int64_t d = 0; fits && d < type.getRank(); ++d)
        fits = type.isDynamicDim(d) || type.getDimSize(d) == h.shape[d];
      if (!fits)
        return fail("--run: the data of graph input '" + name + "' has shape " +
                    shapeString(h.shape) + ", the graph's is " +
                    shapeString(type.getShape()));
    }
    Type typed = RankedTensorType::get(h.shape, type.getElementType());
    arg.setType(typed);
    argTypes.push_back(typed);
    names.push_back(name);
    inputs.push_back(std::move(h));
  }
  graph.setFunctionType(
      FunctionType::get(&mctx, argTypes, graph.getResultTypes()));
  // The run's integer inputs are known now: shape computations over them
  // (a Reshape's shape, a Slice's starts, a Pad's pads) fold as they would
  // over initializers.
  inlineFrozenIntegers(graph, [&](StringRef n) -> const HostTensor * {
    auto it = llvm::find(names, n.str());
    return it == names.end() ? nullptr : &inputs[it - names.begin()];
  });

  TrainToRuntimeOptions lowering;
  lowering.dims = o.dims;
  if (auto e = lowerToRuntime(*module, lowering, o.model))
    return std::move(e);

  Device dev, cpu;
  if (amprt_context_create(o.device.c_str(), &dev.ctx) != AMPRT_OK)
    return fail("--device " + o.device + ": " + amprt_last_error(nullptr));
  if (amprt_context_create("cpu", &cpu.ctx) != AMPRT_OK)
    return fail(Twine("cpu context: ") + amprt_last_error(nullptr));
  auto prog = Program::create(*module, graphName, dev.ctx);
  if (!prog)
    return prog.takeError();
  for (auto [i, h] : llvm::enumerate(inputs)) {
    int port = (*prog)->findInput(names[i]);
    if (port < 0)
      return fail(o.model + ": the lowered graph has no input '" + names[i] +
                  "'");
    void *p = nullptr;
    if (amprt_malloc(dev.ctx, h.data.size(), &p) != AMPRT_OK)
      return fail(Twine("--run: ") + amprt_last_error(dev.ctx));
    dev.buffers.push_back(p);
    amprt_memcpy(dev.ctx, p, h.data.data(), h.data.size(),
                 AMPRT_HOST_TO_DEVICE);
    (*prog)->bind(unsigned(port), p);
  }
  if (auto e = (*prog)->run())
    return std::move(e);

  if (!o.outDir.empty())
    if (std::error_code ec = llvm::sys::fs::create_directories(o.outDir))
      return fail(o.outDir + ": " + ec.message());
  bool allMatch = true;
  unsigned compared = 0;
  for (auto [j, port] : llvm::enumerate((*prog)->outputs())) {
    HostTensor got;
    got.dtype = port.dtype;
    got.shape = port.shape;
    got.data.resize(port.bytes());
    amprt_memcpy(dev.ctx, got.data.data(), (*prog)->output(unsigned(j)),
                 got.data.size(), AMPRT_DEVICE_TO_HOST);
    if (!o.outDir.empty()) {
      onnx::TensorProto t;
      toTensorProto(got, port.name, t);
      std::string bytes;
      if (!t.SerializeToString(&bytes))
        return fail("output '" + port.name + "': cannot serialize");
      if (auto e = writeAtomically(
              inFolder(o.outDir, "output_" + Twine(j) + ".pb"), bytes))
        return std::move(e);
    }
    auto want = findTensor(o.data, port.name, "output", unsigned(j));
    if (!want)
      return want.takeError();
    if (!*want) {
      outputHeader(report, port.name, got);
      report << "no expected value\n";
      continue;
    }
    ++compared;
    auto ok = compare(cpu.ctx, port.name, got, **want, o, report);
    if (!ok)
      return ok.takeError();
    allMatch &= *ok;
  }
  report << "amp-run --run: " << (*prog)->outputs().size() << " outputs, "
         << compared << " compared: " << (allMatch ? "PASS" : "FAIL") << "\n";
  return allMatch;
}
