//===- AMPPolicy.cpp - Op lists of the AMP pass ---------------------------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/AMPPolicy.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdlib>

using namespace llvm;
using namespace amp::train;

StringRef amp::train::getAMPListName(AMPList list) {
  switch (list) {
  case AMPList::Allow:
    return "allow";
  case AMPList::Deny:
    return "deny";
  case AMPList::Infer:
    return "infer";
  case AMPList::Clear:
    return "clear";
  case AMPList::None:
    break;
  }
  return "none";
}

StringRef amp::train::getAMPModeName(AMPMode mode) {
  return mode == AMPMode::BF16 ? "bf16" : "fp16";
}

std::optional<AMPMode> amp::train::parseAMPMode(StringRef name) {
  if (name.equals_insensitive("fp16") || name.equals_insensitive("float16"))
    return AMPMode::FP16;
  if (name.equals_insensitive("bf16") || name.equals_insensitive("bfloat16"))
    return AMPMode::BF16;
  return std::nullopt;
}

std::string amp::train::normalizeAMPListKey(StringRef entry) {
  entry = entry.trim();
  auto [domain, opType] = entry.rsplit(':');
  if (opType.empty() && !entry.contains(':'))
    return (":" + entry).str();
  if (domain == "ai.onnx")
    domain = "";
  return (domain + ":" + opType).str();
}

namespace {
constexpr AMPList A = AMPList::Allow, D = AMPList::Deny, I = AMPList::Infer,
                  C = AMPList::Clear;
} // namespace

// Each row: key, fp16 list, bf16 list, reason. Keep docs/AutoMixedPrecision.md
// in step with this table.
static const AMPDefaultEntry kDefaultEntries[] = {
    // --- allow: matrix multiplies and convolutions (Tensor Core work).
    {":MatMul", A, A, "matrix multiply: Tensor Core GEMM"},
    {":Gemm", A, A, "GEMM (forward and its gradient GEMMs): Tensor Cores"},
    {":Conv", A, A, "convolution: Tensor Core implicit GEMM"},
    {":ConvTranspose", A, A, "transposed convolution (conv data gradient)"},
    {":Einsum", A, A, "contractions are GEMMs"},
    {":Attention", A, A, "attention = two batched GEMMs + softmax"},
    {"com.microsoft:FusedMatMul", A, A, "MatMul with fused transpose/scale"},
    {"com.microsoft:TransposeMatMul", A, A, "MatMul gradient form"},
    {"com.microsoft:ConvGrad", A, A, "convolution gradient (dX, dW)"},
    {"com.microsoft:Attention", A, A, "fused attention GEMMs"},
    {"com.microsoft:MultiHeadAttention", A, A, "fused attention GEMMs"},
    // --- deny: range or accumulation sensitive, losses, optimizer state.
    {":Exp", D, D, "overflows fp16 above ~11"},
    {":Pow", D, D, "large exponents overflow"},
    {":ReduceSum", D, I,
     "long sums lose precision in fp16 (Grappler: Sum); bf16 keeps range"},
    {":ReduceMean", D, I, "long sums (Grappler: Mean); infer in bf16"},
    {":ReduceSumSquare", D, I, "squares then sums: overflow"},
    {":ReduceL2", D, I, "sum of squares: overflow"},
    {":ReduceLogSumExp", D, D, "exp inside"},
    {":CumSum", D, D, "running sums lose precision (PyTorch autocast: fp32)"},
    {":SoftmaxCrossEntropyLoss", D, D, "loss stays fp32"},
    {":NegativeLogLikelihoodLoss", D, D, "loss stays fp32"},
    {"com.microsoft:SoftmaxCrossEntropy", D, D, "loss stays fp32"},
    {"com.microsoft:SoftmaxCrossEntropyGrad", D, D, "loss gradient stays fp32"},
    {"com.microsoft:SoftmaxCrossEntropyLossGrad", D, D,
     "loss gradient stays fp32"},
    {"com.microsoft:SoftmaxCrossEntropyLossInternal", D, D, "loss stays fp32"},
    {"com.microsoft:SoftmaxCrossEntropyLossInternalGrad", D, D,
     "loss gradient stays fp32"},
    {"com.microsoft:ReduceSumTraining", D, I, "long sums (bias gradients)"},
    {"com.microsoft:ReduceAllL2", D, D, "global gradient norm: fp32"},
    {"com.microsoft:GatherGrad", D, D, "scatter-add accumulation"},
    {"com.microsoft:GatherElementsGrad", D, D, "scatter-add accumulation"},
    {"com.microsoft:GatherNDGrad", D, D, "scatter-add accumulation"},
    {"com.microsoft:InPlaceAccumulator", D, D, "gradient accumulation buffer"},
    {"com.microsoft:InPlaceAccumulatorV2", D, D,
     "gradient accumulation buffer"},
    {"com.microsoft:ZeroGradient", D, D, "gradient accumulation buffer"},
    {"com.microsoft:AdamOptimizer", D, D, "optimizer updates fp32 masters"},
    {"com.microsoft:AdamWOptimizer", D, D, "optimizer updates fp32 masters"},
    {"com.microsoft:SGDOptimizerV2", D, D, "optimizer updates fp32 masters"},
    {"com.microsoft:IsAllFinite", D, D, "loss-scaler check on fp32 grads"},
    {"ai.onnx.preview.training:Adam", D, D, "optimizer updates fp32 masters"},
    {"ai.onnx.preview.training:Adagrad", D, D,
     "optimizer updates fp32 masters"},
    {"ai.onnx.preview.training:Momentum", D, D,
     "optimizer updates fp32 masters"},
    // --- infer: elementwise math, follows its inputs.
    {":Add", I, I, "elementwise, safe in either precision"},
    {":Sub", I, I, "elementwise"},
    {":Mul", I, I, "elementwise"},
    {":Div", I, I, "elementwise"},
    {":Sum", I, I, "elementwise n-ary add (not a reduction)"},
    {":Mean", I, I, "elementwise n-ary mean"},
    {":Softmax", I, I, "normalized exp; kernels accumulate in fp32"},
    {":LogSoftmax", I, I, "kernels accumulate in fp32"},
    {":Sigmoid", I, I, "bounded activation"},
    {":Tanh", I, I, "bounded activation"},
    {":Log", I, I, "Grappler infer list"},
    {":Sqrt", I, I, "Grappler infer list"},
    {":Reciprocal", I, I, "Grappler infer list (Inv)"},
    {":Erf", I, I, "bounded"},
    {":Elu", I, I, "activation"},
    {":LeakyRelu", I, I, "activation"},
    {":Swish", I, I, "activation"},
    {":Selu", I, I, "activation"},
    {":Softplus", I, I, "activation"},
    {":Softsign", I, I, "activation"},
    {":HardSigmoid", I, I, "activation"},
    {":HardSwish", I, I, "activation"},
    {":Gelu", I, I, "activation"},
    {":AveragePool", I, I, "small-window mean"},
    {":GlobalAveragePool", I, I, "mean over spatial dims (fp32 accumulation)"},
    {":BatchNormalization", I, I, "statistics kept in fp32 by kernels"},
    {":LayerNormalization", I, I, "statistics kept in fp32 by kernels"},
    {":RMSNormalization", I, I, "statistics kept in fp32 by kernels"},
    {":InstanceNormalization", I, I, "statistics kept in fp32 by kernels"},
    {":ScatterND", I, I,
     "writes updates into a copy of its data: follows its inputs"},
    {":ScatterElements", I, I,
     "writes updates into a copy of its data: follows its inputs"},
    {"com.microsoft:Gelu", I, I, "activation"},
    {"com.microsoft:FastGelu", I, I, "activation"},
    {"com.microsoft:BiasGelu", I, I, "bias add + activation"},
    {"com.microsoft:GeluGrad", I, I, "gradient of an infer op"},
    {"com.microsoft:FastGeluGrad", I, I, "gradient of an infer op"},
    {"com.microsoft:BiasGeluGrad_dX", I, I, "gradient of an infer op"},
    {"com.microsoft:BiasFastGeluGrad_dX", I, I, "gradient of an infer op"},
    {"com.microsoft:SoftmaxGrad", I, I, "gradient of Softmax"},
    {"com.microsoft:SoftmaxGrad_13", I, I, "gradient of Softmax"},
    {"com.microsoft:LogSoftmaxGrad", I, I, "gradient of LogSoftmax"},
    {"com.microsoft:LogSoftmaxGrad_13", I, I, "gradient of LogSoftmax"},
    {"com.microsoft:SigmoidGrad", I, I, "gradient of Sigmoid"},
    {"com.microsoft:TanhGrad", I, I, "gradient of Tanh"},
    {"com.microsoft:DivGrad", I, I, "gradient of Div"},
    {"com.microsoft:BatchNormInternal", I, I, "BatchNormalization (training)"},
    {"com.microsoft:BatchNormalizationGrad", I, I,
     "gradient of BatchNormalization"},
    {"com.microsoft:LayerNormalizationGrad", I, I,
     "gradient of LayerNormalization"},
    {"com.microsoft:SimplifiedLayerNormalizationGrad", I, I,
     "gradient of RMS norm"},
    {"com.microsoft:BiasDropout", I, I, "bias add + dropout"},
    {"com.microsoft:Scale", I, I, "multiply by a scalar"},
    // --- clear: data movement and precision-neutral ops.
    {":Relu", C, C, "max(x,0): exact in any precision"},
    {":Reshape", C, C, "data movement"},
    {":Transpose", C, C, "data movement"},
    {":Identity", C, C, "data movement"},
    {":If", C, C, "control flow: a result is a branch output, one type"},
    {":Loop", C, C, "control flow: a loop-carried value has one type"},
    {":Scan", C, C, "control flow: state and scan slices keep one type"},
    {":Flatten", C, C, "data movement"},
    {":Squeeze", C, C, "data movement"},
    {":Unsqueeze", C, C, "data movement"},
    {":Concat", C, C, "data movement"},
    {":Slice", C, C, "data movement"},
    {":Split", C, C, "data movement"},
    {":Gather", C, C, "data movement"},
    {":GatherElements", C, C, "data movement"},
    {":GatherND", C, C, "data movement"},
    {":Expand", C, C, "data movement"},
    {":Tile", C, C, "data movement"},
    {":Pad", C, C, "data movement"},
    {":DepthToSpace", C, C, "data movement"},
    {":SpaceToDepth", C, C, "data movement"},
    {":Dropout", C, C, "mask multiply, scale is exact enough"},
    {":MaxPool", C, C, "selects an input value"},
    {":GlobalMaxPool", C, C, "selects an input value"},
    {":MaxPoolGrad", C, C, "gradient of MaxPool (ONNX Runtime): a scatter"},
    {":ReduceMax", C, C, "selects an input value"},
    {":ReduceMin", C, C, "selects an input value"},
    {":Max", C, C, "selects an input value"},
    {":Min", C, C, "selects an input value"},
    {":Abs", C, C, "exact"},
    {":Neg", C, C, "exact"},
    {":Sign", C, C, "exact"},
    {":Ceil", C, C, "exact"},
    {":Floor", C, C, "exact"},
    {":Round", C, C, "exact"},
    {":Clip", C, C, "selects a value"},
    {":Where", C, C, "selects a value"},
    {":Equal", C, C, "comparison"},
    {":Greater", C, C, "comparison"},
    {":Less", C, C, "comparison"},
    {":GreaterOrEqual", C, C, "comparison"},
    {":LessOrEqual", C, C, "comparison"},
    {":ArgMax", C, C, "index of a value"},
    {":ArgMin", C, C, "index of a value"},
    {":TopK", C, C, "selects values"},
    {":IsNaN", C, C, "classification"},
    {":IsInf", C, C, "classification"},
    {":Shape", C, C, "reads the shape only"},
    {":Size", C, C, "reads the shape only"},
    {":OneHot", C, AMPList::None, "writes on/off values (Grappler: fp16 only)"},
    {":Resize", AMPList::None, C, "interpolation (Grappler: bf16 only)"},
    {"com.microsoft:ReluGrad", C, C, "gradient of Relu: a select"},
    {"com.microsoft:DropoutGrad", C, C, "gradient of Dropout: a mask"},
    {"com.microsoft:BitmaskDropout", C, C, "dropout"},
    {"com.microsoft:BitmaskDropoutGrad", C, C, "gradient of dropout"},
    {"com.microsoft:ConcatTraining", C, C, "data movement"},
    {"com.microsoft:SplitTraining", C, C, "data movement"},
    {"com.microsoft:SliceGrad", C, C, "data movement"},
    {"com.microsoft:View", C, C, "data movement"},
    {"com.microsoft:PassThrough", C, C, "data movement"},
    {"com.microsoft:IsFinite", C, C, "classification"},
    // --- upstream MLIR dialects, through AMPOpInterface (amp/Interfaces).
    {"linalg:matmul", A, A, "matrix multiply: Tensor Core GEMM"},
    {"linalg:batch_matmul", A, A, "batched GEMM"},
    {"linalg:matvec", A, A, "GEMV"},
    {"linalg:conv_2d_nhwc_hwcf", A, A, "convolution: implicit GEMM"},
    {"linalg:conv_2d_nchw_fchw", A, A, "convolution: implicit GEMM"},
    {"linalg:depthwise_conv_2d_nhwc_hwc", A, A, "depthwise convolution"},
    {"tosa:matmul", A, A, "matrix multiply: Tensor Core GEMM"},
    {"tosa:conv2d", A, A, "convolution: implicit GEMM"},
    {"tosa:depthwise_conv2d", A, A, "depthwise convolution"},
    {"linalg:exp", D, D, "overflows fp16 above ~11"},
    {"linalg:log", D, D, "large range of results"},
    {"math:exp", D, D, "overflows fp16 above ~11"},
    {"math:exp2", D, D, "overflows fp16"},
    {"math:expm1", D, D, "overflows fp16"},
    {"math:log", D, D, "large range of results"},
    {"math:log1p", D, D, "large range of results"},
    {"math:log2", D, D, "large range of results"},
    {"math:log10", D, D, "large range of results"},
    {"math:powf", D, D, "large exponents overflow"},
    {"math:rsqrt", D, D, "small inputs overflow"},
    {"tosa:exp", D, D, "overflows fp16 above ~11"},
    {"tosa:log", D, D, "large range of results"},
    {"tosa:pow", D, D, "large exponents overflow"},
    {"tosa:reciprocal", D, D, "small inputs overflow"},
    {"tosa:reduce_sum", D, I, "long sums lose precision in fp16"},
    {"linalg:add", I, I, "elementwise: follows its inputs"},
    {"linalg:sub", I, I, "elementwise: follows its inputs"},
    {"linalg:mul", I, I, "elementwise: follows its inputs"},
    {"linalg:div", I, I, "elementwise: follows its inputs"},
    {"arith:addf", I, I, "elementwise: follows its inputs"},
    {"arith:subf", I, I, "elementwise: follows its inputs"},
    {"arith:mulf", I, I, "elementwise: follows its inputs"},
    {"arith:divf", I, I, "elementwise: follows its inputs"},
    {"arith:remf", I, I, "elementwise: follows its inputs"},
    {"math:tanh", I, I, "bounded output"},
    {"math:erf", I, I, "bounded output"},
    {"math:sqrt", I, I, "halves the exponent"},
    {"math:fma", I, I, "elementwise: follows its inputs"},
    {"tosa:add", I, I, "elementwise: follows its inputs"},
    {"tosa:sub", I, I, "elementwise: follows its inputs"},
    {"tosa:mul", I, I, "elementwise: follows its inputs"},
    {"tosa:tanh", I, I, "bounded output"},
    {"tosa:sigmoid", I, I, "bounded output"},
    {"linalg:fill", C, C, "writes one value"},
    {"linalg:copy", C, C, "data movement"},
    {"linalg:transpose", C, C, "data movement"},
    {"linalg:broadcast", C, C, "data movement"},
    {"linalg:max", C, C, "selects an input value"},
    {"linalg:min", C, C, "selects an input value"},
    {"arith:negf", C, C, "exact"},
    {"arith:maximumf", C, C, "selects an input value"},
    {"arith:minimumf", C, C, "selects an input value"},
    {"arith:maxnumf", C, C, "selects an input value"},
    {"arith:minnumf", C, C, "selects an input value"},
    {"arith:select", C, C, "selects a value"},
    {"math:absf", C, C, "exact"},
    {"math:ceil", C, C, "exact"},
    {"math:floor", C, C, "exact"},
    {"tosa:maximum", C, C, "selects an input value"},
    {"tosa:minimum", C, C, "selects an input value"},
    {"tosa:clamp", C, C, "selects a value (ReLU)"},
    {"tosa:reduce_max", C, C, "selects an input value"},
    {"tosa:reshape", C, C, "data movement"},
    {"tosa:transpose", C, C, "data movement"},
    {"tosa:slice", C, C, "data movement"},
    {"tosa:concat", C, C, "data movement"},
    {"tosa:negate", C, C, "exact"},
    {"tosa:abs", C, C, "exact"},
};

ArrayRef<AMPDefaultEntry> amp::train::getDefaultAMPEntries() {
  return kDefaultEntries;
}

StringMap<char> &AMPLists::get(AMPList list) {
  switch (list) {
  case AMPList::Allow:
    return allow;
  case AMPList::Deny:
    return deny;
  case AMPList::Infer:
    return infer;
  default:
    return clear;
  }
}

const StringMap<char> &AMPLists::get(AMPList list) const {
  return const_cast<AMPLists *>(this)->get(list);
}

AMPLists AMPLists::getDefaults(AMPMode mode) {
  AMPLists lists;
  for (const AMPDefaultEntry &e : kDefaultEntries) {
    AMPList list = mode == AMPMode::BF16 ? e.bf16 : e.fp16;
    if (list != AMPList::None)
      lists.add(list, e.key);
  }
  return lists;
}

void AMPLists::add(AMPList list, StringRef entry) {
  if (entry.trim().empty() || list == AMPList::None)
    return;
  get(list)[normalizeAMPListKey(entry)] = 1;
}

void AMPLists::remove(AMPList list, StringRef entry) {
  if (entry.trim().empty() || list == AMPList::None)
    return;
  get(list).erase(normalizeAMPListKey(entry));
}

Expected<AMPLists> AMPLists::loadJSON(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError(buffer.getError(),
                             "cannot read AMP list file '" + path +
                                 "': " + buffer.getError().message());
  Expected<json::Value> parsed = json::parse((*buffer)->getBuffer());
  if (!parsed)
    return createStringError(
        inconvertibleErrorCode(),
        "AMP list file '" + path +
            "' is not valid JSON: " + toString(parsed.takeError()));
  const json::Object *obj = parsed->getAsObject();
  if (!obj)
    return createStringError(inconvertibleErrorCode(),
                             "AMP list file '" + path +
                                 "' must hold a JSON object");
  AMPLists lists;
  for (const auto &kv : *obj) {
    StringRef name = kv.first;
    AMPList list = StringSwitch<AMPList>(name)
                       .Case("allow", AMPList::Allow)
                       .Case("deny", AMPList::Deny)
                       .Case("infer", AMPList::Infer)
                       .Case("clear", AMPList::Clear)
                       .Default(AMPList::None);
    if (list == AMPList::None)
      return createStringError(inconvertibleErrorCode(),
                               "AMP list file '" + path + "': unknown key '" +
                                   name +
                                   "' (expected allow, deny, infer, "
                                   "clear)");
    const json::Array *arr = kv.second.getAsArray();
    if (!arr)
      return createStringError(inconvertibleErrorCode(),
                               "AMP list file '" + path + "': '" + name +
                                   "' must be an array of strings");
    for (const json::Value &v : *arr) {
      std::optional<StringRef> s = v.getAsString();
      if (!s)
        return createStringError(inconvertibleErrorCode(),
                                 "AMP list file '" + path + "': '" + name +
                                     "' must be an array of strings");
      lists.add(list, *s);
    }
  }
  return lists;
}

void AMPLists::applyEnvironment() {
  static const struct {
    AMPList list;
    const char *names[2];
  } kEnv[] = {{AMPList::Allow, {"ALLOWLIST", "WHITELIST"}},
              {AMPList::Deny, {"DENYLIST", "BLACKLIST"}},
              {AMPList::Infer, {"INFERLIST", "GRAYLIST"}},
              {AMPList::Clear, {"CLEARLIST", nullptr}}};
  for (const auto &e : kEnv) {
    for (const char *name : e.names) {
      if (!name)
        continue;
      for (bool isAdd : {true, false}) {
        std::string var =
            std::string("TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_") + name +
            (isAdd ? "_ADD" : "_REMOVE");
        const char *value = std::getenv(var.c_str());
        if (!value)
          continue;
        SmallVector<StringRef> items;
        StringRef(value).split(items, ',', -1, /*KeepEmpty=*/false);
        for (StringRef item : items)
          isAdd ? add(e.list, item) : remove(e.list, item);
      }
    }
  }
}

AMPList AMPLists::classify(StringRef domain, StringRef opType) const {
  if (domain == "ai.onnx")
    domain = "";
  std::string key = (domain + ":" + opType).str();
  for (AMPList list :
       {AMPList::Allow, AMPList::Deny, AMPList::Infer, AMPList::Clear})
    if (get(list).count(key))
      return list;
  return AMPList::None;
}

SmallVector<std::string> AMPLists::findConflicts() const {
  SmallVector<std::string> messages;
  const AMPList order[] = {AMPList::Allow, AMPList::Deny, AMPList::Infer,
                           AMPList::Clear};
  for (unsigned i = 0; i < 4; ++i) {
    SmallVector<StringRef> keys;
    for (const auto &kv : get(order[i]))
      keys.push_back(kv.getKey());
    llvm::sort(keys);
    for (StringRef key : keys)
      for (unsigned j = i + 1; j < 4; ++j)
        if (get(order[j]).count(key))
          messages.push_back(("op '" + key + "' is in both the " +
                              getAMPListName(order[i]) + " list and the " +
                              getAMPListName(order[j]) + " list")
                                 .str());
  }
  return messages;
}
