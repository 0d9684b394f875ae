//===- Program.cpp - interpret a lowered module over the runtime ABI
//-------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Each amprt.call becomes a frame of slots, one per kernel parameter, and a
// thunk generated from Ops.def that unpacks the slots into the C function's
// real parameter types (deduced from its declaration in Kernels.h). No
// symbol is looked up by string at run time.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Program.h"
#include "amp/Dialect/AmpRT/AmpRT.h"
#include "amp/Dialect/AmpRT/KernelABI.h"
#include "amp/Dialect/AmpRT/LoweredForm.h"
#include "amp/Runtime/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <cstring>
#include <deque>
#include <type_traits>
#include <utility>

using namespace mlir;
using namespace amp;
using namespace amp::exec;

namespace {

union Slot {
  void *p;
  int64_t i;
  double d;
};

template <typename T> T fromSlot(const Slot &s) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<T>(s.p);
  else if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(s.d);
  else
    return static_cast<T>(s.i);
}

template <typename... Args, size_t... I>
amprt_status invokeWith(amprt_status (*fn)(Args...), const Slot *s,
                        std::index_sequence<I...>) {
  return fn(fromSlot<Args>(s[I])...);
}

template <typename... Args>
constexpr size_t arityOf(amprt_status (*)(Args...)) {
  return sizeof...(Args);
}

using Thunk = amprt_status (*)(const Slot *);

struct KernelEntry {
  const char *name;
  Thunk thunk;
  size_t arity;
};

const KernelEntry kKernels[] = {
#define AMPRT_KERNEL(name, kind, params)                                       \
  {#name,                                                                      \
   [](const Slot *s) {                                                         \
     return invokeWith(&amprt_##name, s,                                       \
                       std::make_index_sequence<arityOf(&amprt_##name)>{});    \
   },                                                                          \
   arityOf(&amprt_##name)},
#include "amp/Runtime/Ops.def"
};

const KernelEntry *findKernel(StringRef name) {
  static const llvm::StringMap<const KernelEntry *> index = [] {
    llvm::StringMap<const KernelEntry *> m;
    for (const KernelEntry &e : kKernels)
      m[e.name] = &e;
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

llvm::Error fail(const Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

} // namespace

int32_t amp::exec::dtypeOf(Type t) {
  if (t.isF32())
    return AMPRT_F32;
  if (t.isF16())
    return AMPRT_F16;
  if (t.isBF16())
    return AMPRT_BF16;
  if (t.isF64())
    return AMPRT_F64;
  if (t.isInteger(1))
    return AMPRT_BOOL;
  if (t.isInteger(64))
    return AMPRT_I64;
  if (t.isInteger(32))
    return AMPRT_I32;
  if (t.isUnsignedInteger(8))
    return AMPRT_U8;
  if (t.isInteger(8))
    return AMPRT_I8;
  return -1;
}

size_t Port::bytes() const {
  size_t n = 1;
  for (int64_t d : shape)
    n *= size_t(d);
  return n * amprt_dtype_size(dtype);
}

struct Program::Impl {
  amprt_context *ctx = nullptr;
  void *arena = nullptr;
  std::vector<void *> owned; // constants
  std::deque<std::vector<int64_t>> shapes;
  std::deque<amprt_tensor> descs;               // single tensors
  std::deque<std::vector<amprt_tensor>> arrays; // tensor arrays
  std::deque<std::vector<int64_t>> hostArrays;
  std::deque<amprt_window> windows;
  struct Call {
    const KernelEntry *kernel;
    std::vector<Slot> slots;
    std::string node;
    /// The descriptor the kernel reads for each of CallInfo::tensors (an
    /// array's element for a tensor list): what runCallWith redirects.
    std::vector<amprt_tensor *> tensors;
  };
  std::vector<CallInfo> infos; // per call
  std::vector<unsigned> writtenInputs;
  std::vector<Call> calls;
  // Argument descriptors to patch at bind(): (arg, descriptor).
  std::vector<std::pair<unsigned, amprt_tensor *>> argUses;
  std::vector<void *> argData;
  std::vector<amprt_tensor> valueDesc; // per SSA value index (see create)
  std::vector<void *> outputs;
  std::vector<int> outputArg; // output i is argument k (or -1)
};

Program::~Program() {
  if (!impl)
    return;
  for (void *p : impl->owned)
    amprt_free(impl->ctx, p);
  if (impl->arena)
    amprt_free(impl->ctx, impl->arena);
}

int Program::findInput(StringRef name) const {
  for (auto [i, p] : llvm::enumerate(inputPorts))
    if (p.name == name)
      return i;
  return -1;
}
int Program::findOutput(StringRef name) const {
  for (auto [i, p] : llvm::enumerate(outputPorts))
    if (p.name == name)
      return i;
  return -1;
}
size_t Program::numCalls() const { return impl->calls.size(); }

/// Bytes of an elements attribute as the runtime stores them.
static llvm::Expected<std::vector<char>> constantBytes(ElementsAttr value,
                                                       int32_t dtype) {
  auto type = cast<ShapedType>(value.getType());
  size_t n = type.getNumElements(), esize = amprt_dtype_size(dtype);
  std::vector<char> out(n * esize);
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (dtype == AMPRT_BOOL) {
      size_t i = 0;
      for (bool b : dense.getValues<bool>())
        out[i++] = b;
      return out;
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      for (size_t i = 0; i < n; ++i)
        std::memcpy(out.data() + i * esize, raw.data(), esize);
    } else {
      if (raw.size() != out.size())
        return fail("constant of unexpected size");
      std::memcpy(out.data(), raw.data(), out.size());
    }
    return out;
  }
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return fail("constant resource has no data");
    ArrayRef<char> raw = blob->getData();
    if (raw.size() != out.size())
      return fail("constant resource of unexpected size");
    std::memcpy(out.data(), raw.data(), out.size());
    return out;
  }
  return fail("unsupported constant attribute");
}

llvm::Expected<std::unique_ptr<Program>>
Program::create(ModuleOp module, StringRef funcName, amprt_context *ctx) {
  auto func = module.lookupSymbol<func::FuncOp>(funcName);
  if (!func)
    return fail("lowered module has no function @" + funcName);
  std::unique_ptr<Program> prog(new Program());
  prog->impl = std::make_unique<Impl>();
  Impl &im = *prog->impl;
  im.ctx = ctx;

  DenseMap<Value, amprt_tensor *> desc;
  llvm::DenseSet<Value> named; // the buffers a call named so far
  auto describe = [&](Value v, void *data) -> llvm::Expected<amprt_tensor *> {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape())
      return fail("values must be static memrefs");
    int32_t dt = dtypeOf(type.getElementType());
    if (dt < 0)
      return fail("unsupported element type in lowered module");
    im.shapes.emplace_back(type.getShape().begin(), type.getShape().end());
    im.descs.push_back(amprt_tensor{data, dt, int32_t(type.getRank()),
                                    im.shapes.back().data()});
    desc[v] = &im.descs.back();
    return &im.descs.back();
  };

  Block &entry = func.getBody().front();
  im.argData.assign(entry.getNumArguments(), nullptr);
  for (BlockArgument arg : entry.getArguments()) {
    auto type = cast<MemRefType>(arg.getType());
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
    int32_t dt = dtypeOf(type.getElementType());
    auto from =
        func.getArgAttrOfType<TypeAttr>(arg.getArgNumber(), kNarrowedFromAttr);
    int32_t fedAs = from ? dtypeOf(from.getValue()) : dt;
    if (fedAs < 0)
      return fail("argument " + Twine(arg.getArgNumber()) + ": unsupported " +
                  kNarrowedFromAttr + " type");
    prog->inputPorts.push_back(
        {name ? name.str() : "arg" + std::to_string(arg.getArgNumber()), dt,
         std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
         fedAs});
    auto d = describe(arg, nullptr);
    if (!d)
      return d.takeError();
    im.argUses.push_back({arg.getArgNumber(), *d}); // callInfo()'s
  }

  for (Operation &op : entry) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (im.arena)
        return fail("lowered function has more than one arena");
      prog->arenaSize = alloc.getType().getNumElements();
      if (amprt_malloc(ctx, prog->arenaSize, &im.arena) != AMPRT_OK)
        return fail(Twine("arena allocation failed: ") + amprt_last_error(ctx));
      continue;
    }
    if (isa<arith::ConstantOp>(op))
      continue;
    if (auto view = dyn_cast<memref::ViewOp>(op)) {
      auto c = view.getByteShift().getDefiningOp<arith::ConstantIndexOp>();
      if (!c || !im.arena)
        return fail("memref.view must take a constant offset into the arena");
      auto d = describe(view, static_cast<char *>(im.arena) + c.value());
      if (!d)
        return d.takeError();
      continue;
    }
    if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
      auto global =
          module.lookupSymbol<memref::GlobalOp>(get.getNameAttr().getAttr());
      auto value =
          global ? dyn_cast_or_null<ElementsAttr>(global.getInitialValueAttr())
                 : ElementsAttr();
      if (!value)
        return fail("memref.global @" + get.getName() + " has no value");
      auto bytes =
          constantBytes(value, dtypeOf(get.getType().getElementType()));
      if (!bytes)
        return bytes.takeError();
      void *data = nullptr;
      if (amprt_malloc(ctx, bytes->size(), &data) != AMPRT_OK)
        return fail("constant allocation failed");
      im.owned.push_back(data);
      amprt_memcpy(ctx, data, bytes->data(), bytes->size(),
                   AMPRT_HOST_TO_DEVICE);
      auto d = describe(get, data);
      if (!d)
        return d.takeError();
      continue;
    }
    if (auto call = dyn_cast<amprt::CallOp>(op)) {
      const amprt::KernelSignature *sig = amprt::lookupKernel(call.getKernel());
      const KernelEntry *k = findKernel(call.getKernel());
      if (!sig || !k || k->arity != sig->params.size())
        return fail("kernel " + call.getKernel() +
                    " is not in this runtime build");
      Impl::Call c;
      c.kernel = k;
      auto node = call->getAttrOfType<StringAttr>("node");
      c.node = node ? node.str() : "";
      CallInfo info;
      info.node = c.node;
      info.kernel = call.getKernel().str();
      // What the call reads and writes: a temporary's first naming writes
      // it; a parameter updated in place and a buffer named twice ("may
      // alias") are read and written; the rest are read.
      for (auto [i, v] : llvm::enumerate(call.getTensors())) {
        auto arg = dyn_cast<BlockArgument>(v);
        // A view of another temporary's memory (a reshape the plan made a
        // view, kAliasAttr) is read, not written, where first named.
        Operation *def = v.getDefiningOp();
        bool fresh = !arg && !isa<memref::GetGlobalOp>(def) &&
                     !def->hasAttr(kAliasAttr) && !named.contains(v);
        bool written = fresh || call.writesInPlace(i);
        if (written && arg &&
            !llvm::is_contained(im.writtenInputs, arg.getArgNumber()))
          im.writtenInputs.push_back(arg.getArgNumber());
        std::string value;
        if (arg)
          value = prog->inputPorts[arg.getArgNumber()].name;
        else if (auto name =
                     v.getDefiningOp()->getAttrOfType<StringAttr>(kValueAttr))
          value = name.str();
        info.tensors.push_back(
            {desc.lookup(v), call.getTensorParamName(i).str(), !fresh, written,
             arg ? int(arg.getArgNumber()) : -1, std::move(value)});
      }
      for (Value v : call.getTensors())
        named.insert(v);
      ArrayRef<int64_t> counts = call.getCounts();
      unsigned tensorParam = 0, operand = 0;
      for (const amprt::KernelParam &p : sig->params) {
        Slot s;
        s.i = 0;
        switch (p.kind) {
        case amprt::ParamKind::Context:
          s.p = ctx;
          break;
        case amprt::ParamKind::Tensor: {
          int64_t cnt = counts[tensorParam++];
          if (cnt == 1) {
            Value v = call.getTensors()[operand++];
            amprt_tensor *d = desc.lookup(v);
            if (!d)
              return fail("operand of " + call.getKernel() + " undefined");
            s.p = d;
            c.tensors.push_back(d);
            if (auto arg = dyn_cast<BlockArgument>(v))
              im.argUses.push_back({arg.getArgNumber(), d});
          } else if (cnt > 1) {
            im.arrays.emplace_back();
            auto &arr = im.arrays.back();
            arr.reserve(cnt);
            for (int64_t j = 0; j < cnt; ++j) {
              Value v = call.getTensors()[operand++];
              amprt_tensor *d = desc.lookup(v);
              if (!d)
                return fail("operand of " + call.getKernel() + " undefined");
              arr.push_back(*d);
              c.tensors.push_back(&arr.back());
              if (auto arg = dyn_cast<BlockArgument>(v))
                im.argUses.push_back({arg.getArgNumber(), &arr.back()});
            }
            s.p = arr.data();
          } else {
            s.p = nullptr;
          }
          break;
        }
        case amprt::ParamKind::I32:
        case amprt::ParamKind::I64:
        case amprt::ParamKind::U64:
          s.i = call->getAttrOfType<IntegerAttr>(p.name).getInt();
          break;
        case amprt::ParamKind::F32:
        case amprt::ParamKind::F64:
          s.d = call->getAttrOfType<FloatAttr>(p.name).getValueAsDouble();
          break;
        case amprt::ParamKind::I64Array: {
          auto a = call->getAttrOfType<DenseI64ArrayAttr>(p.name);
          im.hostArrays.emplace_back(a.asArrayRef().begin(),
                                     a.asArrayRef().end());
          s.p = im.hostArrays.back().empty() ? nullptr
                                             : im.hostArrays.back().data();
          break;
        }
        case amprt::ParamKind::Window: {
          auto dict = call->getAttrOfType<DictionaryAttr>(p.name);
          amprt_window w{};
          auto geti = [&](StringRef n) -> int64_t {
            auto a = dict.getAs<IntegerAttr>(n);
            return a ? a.getInt() : 0;
          };
          auto getv = [&](StringRef n, int64_t *dst, size_t cap) {
            if (auto a = dict.getAs<DenseI64ArrayAttr>(n))
              for (size_t i = 0; i < size_t(a.size()) && i < cap; ++i)
                dst[i] = a[i];
          };
          w.spatial_rank = geti("spatial_rank");
          w.ceil_mode = geti("ceil_mode");
          w.count_include_pad = geti("count_include_pad");
          w.layout = int32_t(geti("layout"));
          w.group = geti("group");
          getv("kernel", w.kernel, 3);
          getv("strides", w.strides, 3);
          getv("pads", w.pads, 6);
          getv("dilations", w.dilations, 3);
          im.windows.push_back(w);
          s.p = &im.windows.back();
          break;
        }
        }
        c.slots.push_back(s);
      }
      im.calls.push_back(std::move(c));
      im.infos.push_back(std::move(info));
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto type = cast<MemRefType>(v.getType());
        auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
        int32_t dt = dtypeOf(type.getElementType());
        prog->outputPorts.push_back(
            {name ? name.str() : "result" + std::to_string(i), dt,
             std::vector<int64_t>(type.getShape().begin(),
                                  type.getShape().end()),
             dt});
        amprt_tensor *d = desc.lookup(v);
        if (!d)
          return fail("returned value undefined");
        im.outputs.push_back(d->data);
        auto arg = dyn_cast<BlockArgument>(v);
        im.outputArg.push_back(arg ? int(arg.getArgNumber()) : -1);
      }
      continue;
    }
    return fail("unexpected op in lowered function: " +
                op.getName().getStringRef());
  }
  return prog;
}

void Program::bind(unsigned i, void *data) {
  impl->argData[i] = data;
  for (auto &[arg, d] : impl->argUses)
    if (arg == i)
      d->data = data;
}

llvm::Error Program::run() {
  for (auto [i, d] : llvm::enumerate(impl->argData))
    if (!d)
      return fail("input '" + inputPorts[i].name + "' is not bound");
  for (size_t i = 0; i < impl->calls.size(); ++i)
    if (auto e = runCall(i))
      return e;
  return llvm::Error::success();
}

llvm::Error Program::runCall(size_t i) {
  const Impl::Call &c = impl->calls[i];
  amprt_status st = c.kernel->thunk(c.slots.data());
  if (st != AMPRT_OK)
    return fail(llvm::formatv("node '{0}': amprt_{1} failed ({2}): {3}", c.node,
                              c.kernel->name, int(st),
                              amprt_last_error(impl->ctx)));
  return llvm::Error::success();
}

llvm::Error Program::runCallWith(size_t i, llvm::ArrayRef<void *> data) {
  Impl::Call &c = impl->calls[i];
  assert(data.size() <= c.tensors.size() && "more data than tensors");
  // Put back in reverse, so that a descriptor named twice ends as it was.
  llvm::SmallVector<std::pair<amprt_tensor *, void *>, 8> was;
  for (auto [k, p] : llvm::enumerate(data))
    if (p) {
      was.push_back({c.tensors[k], c.tensors[k]->data});
      c.tensors[k]->data = p;
    }
  llvm::Error e = runCall(i);
  for (auto &[t, p] : llvm::reverse(was))
    t->data = p;
  return e;
}

const Program::CallInfo &Program::callInfo(size_t i) const {
  return impl->infos[i];
}

std::vector<unsigned> Program::inputsWrittenInPlace() const {
  return impl->writtenInputs;
}

void *Program::inputData(unsigned i) const { return impl->argData[i]; }

void *Program::output(unsigned i) const {
  int arg = impl->outputArg[i];
  return arg >= 0 ? impl->argData[arg] : impl->outputs[i];
}
