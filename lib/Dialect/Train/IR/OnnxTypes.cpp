//===- OnnxTypes.cpp - ONNX <-> MLIR type mapping -------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/OnnxTypes.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace amp::train;

namespace {
/// One row per ONNX data type: number, ONNX name, bits per element.
struct DataTypeInfo {
  int32_t number;
  const char *name;
  unsigned bits;
};
// Numbers from onnx.proto TensorProto.DataType.
constexpr DataTypeInfo kDataTypes[] = {
    {1, "float", 32},      {2, "uint8", 8},           {3, "int8", 8},
    {4, "uint16", 16},     {5, "int16", 16},          {6, "int32", 32},
    {7, "int64", 64},      {8, "string", 0},          {9, "bool", 8},
    {10, "float16", 16},   {11, "double", 64},        {12, "uint32", 32},
    {13, "uint64", 64},    {14, "complex64", 64},     {15, "complex128", 128},
    {16, "bfloat16", 16},  {17, "float8e4m3fn", 8},   {18, "float8e4m3fnuz", 8},
    {19, "float8e5m2", 8}, {20, "float8e5m2fnuz", 8}, {21, "uint4", 4},
    {22, "int4", 4},       {23, "float4e2m1", 4},     {24, "float8e8m0", 8},
    {25, "uint2", 2},      {26, "int2", 2},           {27, "float6e2m3", 6},
    {28, "float6e3m2", 6},
};

const DataTypeInfo *findInfo(int32_t number) {
  for (const DataTypeInfo &info : kDataTypes)
    if (info.number == number)
      return &info;
  return nullptr;
}
} // namespace

Type amp::train::getElementTypeForOnnxDataType(MLIRContext *ctx,
                                               int32_t dataType) {
  Builder b(ctx);
  auto uint = [&](unsigned w) {
    return IntegerType::get(ctx, w, IntegerType::Unsigned);
  };
  switch (dataType) {
  case 1:
    return b.getF32Type();
  case 2:
    return uint(8);
  case 3:
    return b.getIntegerType(8);
  case 4:
    return uint(16);
  case 5:
    return b.getIntegerType(16);
  case 6:
    return b.getIntegerType(32);
  case 7:
    return b.getIntegerType(64);
  case 8:
    return StringType::get(ctx);
  case 9:
    return b.getI1Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 12:
    return uint(32);
  case 13:
    return uint(64);
  case 14:
    return ComplexType::get(b.getF32Type());
  case 15:
    return ComplexType::get(b.getF64Type());
  case 16:
    return b.getBF16Type();
  case 17:
    return b.getType<Float8E4M3FNType>();
  case 18:
    return b.getType<Float8E4M3FNUZType>();
  case 19:
    return b.getType<Float8E5M2Type>();
  case 20:
    return b.getType<Float8E5M2FNUZType>();
  case 21:
    return uint(4);
  case 22:
    return b.getIntegerType(4);
  case 23:
    return b.getType<Float4E2M1FNType>();
  case 24:
    return b.getType<Float8E8M0FNUType>();
  case 25:
    return uint(2);
  case 26:
    return b.getIntegerType(2);
  case 27:
    return b.getType<Float6E2M3FNType>();
  case 28:
    return b.getType<Float6E3M2FNType>();
  default:
    return {};
  }
}

std::optional<int32_t> amp::train::getOnnxDataType(Type t) {
  if (!t)
    return std::nullopt;
  if (t.isF32())
    return 1;
  if (t.isF16())
    return 10;
  if (t.isBF16())
    return 16;
  if (t.isF64())
    return 11;
  if (isa<Float8E4M3FNType>(t))
    return 17;
  if (isa<Float8E4M3FNUZType>(t))
    return 18;
  if (isa<Float8E5M2Type>(t))
    return 19;
  if (isa<Float8E5M2FNUZType>(t))
    return 20;
  if (isa<Float4E2M1FNType>(t))
    return 23;
  if (isa<Float8E8M0FNUType>(t))
    return 24;
  if (isa<Float6E2M3FNType>(t))
    return 27;
  if (isa<Float6E3M2FNType>(t))
    return 28;
  if (isa<StringType>(t))
    return 8;
  if (isa<UnknownType>(t))
    return 0; // UNDEFINED, as some files have in value_info
  if (auto c = dyn_cast<ComplexType>(t)) {
    if (c.getElementType().isF32())
      return 14;
    if (c.getElementType().isF64())
      return 15;
    return std::nullopt;
  }
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    if (i.isSigned())
      return std::nullopt;
    switch (i.getWidth()) {
    case 1:
      return u ? std::nullopt : std::optional<int32_t>(9);
    case 2:
      return u ? 25 : 26;
    case 4:
      return u ? 21 : 22;
    case 8:
      return u ? 2 : 3;
    case 16:
      return u ? 4 : 5;
    case 32:
      return u ? 12 : 6;
    case 64:
      return u ? 13 : 7;
    default:
      return std::nullopt;
    }
  }
  return std::nullopt;
}

llvm::StringRef amp::train::getOnnxElementTypeName(Type elementType) {
  std::optional<int32_t> dt = getOnnxDataType(elementType);
  const DataTypeInfo *info = dt ? findInfo(*dt) : nullptr;
  return info ? info->name : "";
}

unsigned amp::train::getOnnxDataTypeBits(int32_t dataType) {
  const DataTypeInfo *info = findInfo(dataType);
  return info ? info->bits : 0;
}

std::string amp::train::getOnnxTypeString(Type type) {
  if (auto t = dyn_cast<TensorType>(type)) {
    llvm::StringRef elt = getOnnxElementTypeName(t.getElementType());
    return elt.empty() ? std::string() : ("tensor(" + elt + ")").str();
  }
  if (auto s = dyn_cast<SeqType>(type)) {
    std::string inner = getOnnxTypeString(s.getElementType());
    return inner.empty() ? inner : "seq(" + inner + ")";
  }
  if (auto o = dyn_cast<OptType>(type)) {
    std::string inner = getOnnxTypeString(o.getElementType());
    return inner.empty() ? inner : "optional(" + inner + ")";
  }
  if (auto m = dyn_cast<MapType>(type)) {
    llvm::StringRef key = getOnnxElementTypeName(m.getKeyType());
    std::string value = getOnnxTypeString(m.getValueType());
    if (key.empty() || value.empty())
      return "";
    return ("map(" + key + "," + value + ")").str();
  }
  if (auto sp = dyn_cast<SparseTensorType>(type)) {
    auto t = dyn_cast<TensorType>(sp.getTensorType());
    llvm::StringRef elt =
        t ? getOnnxElementTypeName(t.getElementType()) : llvm::StringRef();
    return elt.empty() ? std::string() : ("sparse_tensor(" + elt + ")").str();
  }
  return "";
}
