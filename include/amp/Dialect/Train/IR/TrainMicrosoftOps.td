//===- TrainMicrosoftOps.td - ONNX Runtime ops -------------*- tablegen -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// Hand-written typed ops for ONNX Runtime training and contrib operators:
// domain com.microsoft (mnemonic prefix `ms.`), plus five ORT operators
// that ONNX Runtime registers in the default domain (no prefix). Same rules as
// the generated TrainOnnxOps.td: AnyType inputs/outputs (AnyTypeOrNone when
// optional, Variadic<AnyType> when variadic), optional attributes named as
// in ONNX. Signatures follow the ONNX Runtime schemas; the schema tables with
// their type constraints are in lib/Dialect/Train/IR/OnnxSchemasMicrosoft.inc,
// which says where they come from and how they were checked.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINMICROSOFTOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINMICROSOFTOPS_TD

include "amp/Dialect/Train/IR/TrainBase.td"

def Train_MsAdamOptimizerOp : Train_OnnxOp<"com.microsoft", "AdamOptimizer", 1, [], []> {
  let summary = "Adam update of one weight tensor and its two moments (ORTTrainer)";
  let description = [{
    Adam update of one weight tensor and its two moments (ORTTrainer).
  }];
  let arguments = (ins AnyType:$R,
                       AnyType:$T,
                       AnyType:$weights,
                       AnyType:$gradients,
                       AnyType:$moment_1,
                       AnyType:$moment_2,
                       AnyTypeOrNone:$mixed_precision_weights,
                       AnyTypeOrNone:$loss_scale,
                       AnyTypeOrNone:$global_gradient_norm,
                       AnyTypeOrNone:$update_signal,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<F32Attr>:$beta,
                       OptionalAttr<I64Attr>:$do_bias_correction,
                       OptionalAttr<F32Attr>:$epsilon,
                       OptionalAttr<F32Attr>:$lambda,
                       OptionalAttr<F32Attr>:$max_norm_clip,
                       OptionalAttr<I64Attr>:$weight_decay_mode);
  let results = (outs AnyType:$new_T,
                      AnyType:$new_moment_1,
                      AnyType:$new_moment_2,
                      AnyTypeOrNone:$new_weights,
                      AnyTypeOrNone:$new_gradients,
                      AnyTypeOrNone:$new_mixed_precision_weights);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsAdamWOptimizerOp : Train_OnnxOp<"com.microsoft", "AdamWOptimizer", 1, [], []> {
  let summary = "AdamW update of a sequence of weights and their moments, in place";
  let description = [{
    AdamW update of a sequence of weights and their moments, in place.
  }];
  let arguments = (ins AnyType:$lr,
                       AnyType:$step,
                       AnyType:$weights,
                       AnyType:$gradients,
                       AnyType:$momentums_1,
                       AnyType:$momentums_2,
                       AnyTypeOrNone:$update_signal,
                       OptionalAttr<I64Attr>:$adam_mode,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<F32Attr>:$beta,
                       OptionalAttr<I64Attr>:$correct_bias,
                       OptionalAttr<F32Attr>:$epsilon,
                       OptionalAttr<F32Attr>:$weight_decay);
  let results = (outs AnyType:$updated_flag,
                      AnyTypeOrNone:$updated_weights,
                      AnyTypeOrNone:$updated_momentums_1,
                      AnyTypeOrNone:$updated_momentums_2);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBatchNormInternalOp : Train_OnnxOp<"com.microsoft", "BatchNormInternal", 1, [], []> {
  let summary = "BatchNormalization that also returns the batch mean and inverse standard deviation";
  let description = [{
    BatchNormalization that also returns the batch mean and inverse standard
    deviation.
  }];
  let arguments = (ins AnyType:$X,
                       AnyType:$scale,
                       AnyType:$B,
                       AnyType:$input_mean,
                       AnyType:$input_var,
                       OptionalAttr<F32Attr>:$epsilon,
                       OptionalAttr<F32Attr>:$momentum,
                       OptionalAttr<I64Attr>:$training_mode);
  let results = (outs AnyType:$Y,
                      AnyTypeOrNone:$running_mean,
                      AnyTypeOrNone:$running_var,
                      AnyTypeOrNone:$saved_mean,
                      AnyTypeOrNone:$saved_inv_std);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBatchNormalizationGradOp : Train_OnnxOp<"com.microsoft", "BatchNormalizationGrad", 1, [], []> {
  let summary = "Gradient of BatchNormalization (training mode) with respect to X, scale and bias";
  let description = [{
    Gradient of BatchNormalization (training mode) with respect to X, scale
    and bias.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$X,
                       AnyType:$scale,
                       AnyType:$mean,
                       AnyType:$variance,
                       OptionalAttr<F32Attr>:$epsilon);
  let results = (outs AnyType:$X_grad, AnyType:$scale_grad, AnyType:$bias_grad);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBiasDropoutOp : Train_OnnxOp<"com.microsoft", "BiasDropout", 1, [], []> {
  let summary = "Dropout(data + bias) + residual, fused";
  let description = [{
    Dropout(data + bias) + residual, fused. The ONNX Runtime schema accepts
    attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$data,
                       AnyType:$bias,
                       AnyTypeOrNone:$residual,
                       AnyTypeOrNone:$ratio,
                       AnyTypeOrNone:$training_mode,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs AnyType:$output, AnyTypeOrNone:$mask);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBiasFastGeluGrad_dXOp : Train_OnnxOp<"com.microsoft", "BiasFastGeluGrad_dX", 1, [], []> {
  let summary = "Gradient of FastGelu with bias with respect to its input X";
  let description = [{
    Gradient of FastGelu with bias with respect to its input X. The ONNX
    Runtime schema accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X, AnyType:$B);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBiasGeluOp : Train_OnnxOp<"com.microsoft", "BiasGelu", 1, [], []> {
  let summary = "Gelu(A + B) where B is a bias broadcast over the last dimension";
  let description = [{
    Gelu(A + B) where B is a bias broadcast over the last dimension.
  }];
  let arguments = (ins AnyType:$A, AnyType:$B);
  let results = (outs AnyType:$C);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBiasGeluGrad_dXOp : Train_OnnxOp<"com.microsoft", "BiasGeluGrad_dX", 1, [], []> {
  let summary = "Gradient of BiasGelu with respect to its input X (the bias gradient is a reduction of it)";
  let description = [{
    Gradient of BiasGelu with respect to its input X (the bias gradient is a
    reduction of it). The ONNX Runtime schema accepts attributes beyond the
    ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X, AnyType:$B);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBitmaskDropoutOp : Train_OnnxOp<"com.microsoft", "BitmaskDropout", 1, [], []> {
  let summary = "Dropout whose mask output is bit-packed into uint32 words";
  let description = [{
    Dropout whose mask output is bit-packed into uint32 words. The ONNX
    Runtime schema accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$data,
                       AnyTypeOrNone:$ratio,
                       AnyTypeOrNone:$training_mode,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs AnyType:$output, AnyTypeOrNone:$mask);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBitmaskDropoutGradOp : Train_OnnxOp<"com.microsoft", "BitmaskDropoutGrad", 1, [], []> {
  let summary = "Gradient of BitmaskDropout, from its bit-packed mask";
  let description = [{
    Gradient of BitmaskDropout, from its bit-packed mask. The ONNX Runtime
    schema accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dy,
                       AnyType:$mask,
                       AnyTypeOrNone:$ratio,
                       AnyTypeOrNone:$training_mode);
  let results = (outs AnyType:$dx);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsBroadcastGradientArgsOp : Train_OnnxOp<"com.microsoft", "BroadcastGradientArgs", 1, [], []> {
  let summary = "The axes to reduce the gradients of a broadcasting binary op's two inputs over";
  let description = [{
    The axes to reduce the gradients of a broadcasting binary op's two inputs
    over.
  }];
  let arguments = (ins AnyType:$a_shape, AnyType:$b_shape);
  let results = (outs AnyTypeOrNone:$a_axes, AnyTypeOrNone:$b_axes);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsConcatTrainingOp : Train_OnnxOp<"com.microsoft", "ConcatTraining", 1, [], []> {
  let summary = "Concat that also returns the length of each input along the axis";
  let description = [{
    Concat that also returns the length of each input along the axis.
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$concat_result, AnyTypeOrNone:$per_input_length);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsConvGradOp : Train_OnnxOp<"com.microsoft", "ConvGrad", 1, [], []> {
  let summary = "Gradient of Conv with respect to X, W and B; takes the Conv attributes";
  let description = [{
    Gradient of Conv with respect to X, W and B; takes the Conv attributes.
    The ONNX Runtime schema accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X, AnyType:$W);
  let results = (outs AnyTypeOrNone:$dX, AnyTypeOrNone:$dW, AnyTypeOrNone:$dB);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsDivGradOp : Train_OnnxOp<"com.microsoft", "DivGrad", 1, [], []> {
  let summary = "Gradient of Div with respect to the dividend and the divisor";
  let description = [{
    Gradient of Div with respect to the dividend and the divisor.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$A, AnyType:$B);
  let results = (outs AnyTypeOrNone:$dA, AnyTypeOrNone:$dB);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsDropoutGradOp : Train_OnnxOp<"com.microsoft", "DropoutGrad", 1, [], []> {
  let summary = "Gradient of Dropout, from its boolean mask";
  let description = [{
    Gradient of Dropout, from its boolean mask. The ONNX Runtime schema
    accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dy,
                       AnyType:$mask,
                       AnyTypeOrNone:$ratio,
                       AnyTypeOrNone:$training_mode);
  let results = (outs AnyType:$dx);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsFastGeluOp : Train_OnnxOp<"com.microsoft", "FastGelu", 1, [], []> {
  let summary = "Gelu with the tanh approximation, with an optional bias added to X first";
  let description = [{
    Gelu with the tanh approximation, with an optional bias added to X first.
  }];
  let arguments = (ins AnyType:$X, AnyTypeOrNone:$bias);
  let results = (outs AnyType:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsFastGeluGradOp : Train_OnnxOp<"com.microsoft", "FastGeluGrad", 1, [], []> {
  let summary = "Gradient of the tanh approximation of Gelu";
  let description = [{
    Gradient of the tanh approximation of Gelu. The ONNX Runtime schema
    accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsFusedMatMulOp : Train_OnnxOp<"com.microsoft", "FusedMatMul", 1, [], []> {
  let summary = "alpha * MatMul(op(A), op(B)) where op optionally transposes the last two or the batch dimensions";
  let description = [{
    alpha * MatMul(op(A), op(B)) where op optionally transposes the last two
    or the batch dimensions.
  }];
  let arguments = (ins AnyType:$A,
                       AnyType:$B,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<I64Attr>:$transA,
                       OptionalAttr<I64Attr>:$transB,
                       OptionalAttr<I64Attr>:$transBatchA,
                       OptionalAttr<I64Attr>:$transBatchB);
  let results = (outs AnyType:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsGatherElementsGradOp : Train_OnnxOp<"com.microsoft", "GatherElementsGrad", 1, [], []> {
  let summary = "Gradient of GatherElements";
  let description = [{
    Gradient of GatherElements.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$shape,
                       AnyType:$indices,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsGatherGradOp : Train_OnnxOp<"com.microsoft", "GatherGrad", 1, [], []> {
  let summary = "Gradient of Gather: scatter-adds dY into a zero tensor of the given shape";
  let description = [{
    Gradient of Gather: scatter-adds dY into a zero tensor of the given shape.
  }];
  let arguments = (ins AnyType:$shape,
                       AnyType:$indices,
                       AnyType:$dY,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsGatherNDGradOp : Train_OnnxOp<"com.microsoft", "GatherNDGrad", 1, [], []> {
  let summary = "Gradient of GatherND";
  let description = [{
    Gradient of GatherND.
  }];
  let arguments = (ins AnyType:$shape,
                       AnyType:$indices,
                       AnyType:$update,
                       OptionalAttr<I64Attr>:$batch_dims);
  let results = (outs AnyType:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsGeluOp : Train_OnnxOp<"com.microsoft", "Gelu", 1, [], []> {
  let summary = "Gaussian error linear unit (exact, erf based)";
  let description = [{
    Gaussian error linear unit (exact, erf based).
  }];
  let arguments = (ins AnyType:$X);
  let results = (outs AnyType:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsGeluGradOp : Train_OnnxOp<"com.microsoft", "GeluGrad", 1, [], []> {
  let summary = "Gradient of Gelu with respect to its input X";
  let description = [{
    Gradient of Gelu with respect to its input X. The ONNX Runtime schema
    accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsGroupOp : Train_OnnxOp<"com.microsoft", "Group", 1, [], []> {
  let summary = "True once all inputs are available (a scheduling barrier)";
  let description = [{
    True once all inputs are available (a scheduling barrier).
  }];
  let arguments = (ins Variadic<AnyType>:$input_tensors);
  let results = (outs AnyType:$done);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsInPlaceAccumulatorOp : Train_OnnxOp<"com.microsoft", "InPlaceAccumulator", 1, [], []> {
  let summary = "old_sum += value, in place (gradient accumulation)";
  let description = [{
    old_sum += value, in place (gradient accumulation).
  }];
  let arguments = (ins AnyType:$old_sum,
                       AnyType:$value,
                       AnyTypeOrNone:$update_signal);
  let results = (outs AnyType:$new_sum);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsInPlaceAccumulatorV2Op : Train_OnnxOp<"com.microsoft", "InPlaceAccumulatorV2", 1, [], []> {
  let summary = "accumulation_buffer += value (or = value when overwrite_flag), in place";
  let description = [{
    accumulation_buffer += value (or = value when overwrite_flag), in place.
  }];
  let arguments = (ins AnyType:$accumulation_buffer,
                       AnyType:$value,
                       AnyTypeOrNone:$overwrite_flag);
  let results = (outs AnyType:$updated_flag,
                      AnyTypeOrNone:$accumulation_buffer_out);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsIsAllFiniteOp : Train_OnnxOp<"com.microsoft", "IsAllFinite", 1, [], []> {
  let summary = "True iff all elements of all input tensors are finite";
  let description = [{
    True iff all elements of all input tensors are finite.
  }];
  let arguments = (ins Variadic<AnyType>:$input,
                       OptionalAttr<I64Attr>:$isinf_only,
                       OptionalAttr<I64Attr>:$isnan_only);
  let results = (outs AnyType:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsIsFiniteOp : Train_OnnxOp<"com.microsoft", "IsFinite", 1, [], []> {
  let summary = "Elementwise test for finite values";
  let description = [{
    Elementwise test for finite values.
  }];
  let arguments = (ins AnyType:$X);
  let results = (outs AnyType:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsLayerNormalizationGradOp : Train_OnnxOp<"com.microsoft", "LayerNormalizationGrad", 1, [], []> {
  let summary = "Gradient of LayerNormalization with respect to X, scale and bias";
  let description = [{
    Gradient of LayerNormalization with respect to X, scale and bias. The ONNX
    Runtime schema accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$Y_grad,
                       AnyType:$X,
                       AnyType:$scale,
                       AnyType:$mean,
                       AnyType:$inv_std_dev,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$X_grad, AnyType:$scale_grad, AnyType:$bias_grad);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsLogSoftmaxGradOp : Train_OnnxOp<"com.microsoft", "LogSoftmaxGrad", 1, [], []> {
  let summary = "Gradient of LogSoftmax (opset < 13 axis semantics)";
  let description = [{
    Gradient of LogSoftmax (opset < 13 axis semantics).
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X, OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsLogSoftmaxGrad_13Op : Train_OnnxOp<"com.microsoft", "LogSoftmaxGrad_13", 1, [], []> {
  let summary = "Gradient of LogSoftmax-13 (single-axis semantics)";
  let description = [{
    Gradient of LogSoftmax-13 (single-axis semantics).
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X, OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsMixedPrecisionScaleOp : Train_OnnxOp<"com.microsoft", "MixedPrecisionScale", 1, [], []> {
  let summary = "Multiplies each input by the scale S and casts it to the type `to`";
  let description = [{
    Multiplies each input by the scale S and casts it to the type `to`.
  }];
  let arguments = (ins AnyType:$S,
                       Variadic<AnyType>:$X,
                       OptionalAttr<I64Attr>:$fuse_outputs,
                       OptionalAttr<I64Attr>:$to);
  let results = (outs Variadic<AnyType>:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsPassThroughOp : Train_OnnxOp<"com.microsoft", "PassThrough", 1, [], []> {
  let summary = "Barrier that forwards its inputs unchanged";
  let description = [{
    Barrier that forwards its inputs unchanged.
  }];
  let arguments = (ins Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsReduceAllL2Op : Train_OnnxOp<"com.microsoft", "ReduceAllL2", 1, [], []> {
  let summary = "The L2 norm over all elements of all input tensors";
  let description = [{
    The L2 norm over all elements of all input tensors.
  }];
  let arguments = (ins Variadic<AnyType>:$X);
  let results = (outs AnyType:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsReduceSumTrainingOp : Train_OnnxOp<"com.microsoft", "ReduceSumTraining", 1, [], []> {
  let summary = "ReduceSum with the axes as an input (used by gradient graphs before opset 13)";
  let description = [{
    ReduceSum with the axes as an input (used by gradient graphs before opset
    13). The ONNX Runtime schema accepts attributes beyond the ones listed
    here.
  }];
  let arguments = (ins AnyType:$data,
                       AnyType:$axes,
                       OptionalAttr<I64Attr>:$keepdims,
                       OptionalAttr<I64Attr>:$noop_with_empty_axes);
  let results = (outs AnyType:$reduced);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsReluGradOp : Train_OnnxOp<"com.microsoft", "ReluGrad", 1, [], []> {
  let summary = "Gradient of Relu: dX = dY where X > 0, else 0";
  let description = [{
    Gradient of Relu: dX = dY where X > 0, else 0.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$X);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSGDOptimizerV2Op : Train_OnnxOp<"com.microsoft", "SGDOptimizerV2", 1, [], []> {
  let summary = "SGD update of a sequence of weights, in place";
  let description = [{
    SGD update of a sequence of weights, in place.
  }];
  let arguments = (ins AnyType:$lr,
                       AnyType:$weights,
                       AnyType:$gradients,
                       AnyTypeOrNone:$update_signal);
  let results = (outs AnyType:$update_completed,
                      AnyTypeOrNone:$updated_weights);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsScaleOp : Train_OnnxOp<"com.microsoft", "Scale", 1, [], []> {
  let summary = "Multiplies (or, with scale_down, divides) the input by a scalar";
  let description = [{
    Multiplies (or, with scale_down, divides) the input by a scalar.
  }];
  let arguments = (ins AnyType:$input,
                       AnyType:$scale,
                       OptionalAttr<I64Attr>:$scale_down);
  let results = (outs AnyType:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSigmoidGradOp : Train_OnnxOp<"com.microsoft", "SigmoidGrad", 1, [], []> {
  let summary = "Gradient of Sigmoid, computed from its output Y";
  let description = [{
    Gradient of Sigmoid, computed from its output Y. The ONNX Runtime schema
    accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$Y);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSimplifiedLayerNormalizationGradOp : Train_OnnxOp<"com.microsoft", "SimplifiedLayerNormalizationGrad", 1, [], []> {
  let summary = "Gradient of SimplifiedLayerNormalization (RMS norm) with respect to X and scale";
  let description = [{
    Gradient of SimplifiedLayerNormalization (RMS norm) with respect to X and
    scale. The ONNX Runtime schema accepts attributes beyond the ones listed
    here.
  }];
  let arguments = (ins AnyType:$Y_grad,
                       AnyType:$X,
                       AnyType:$scale,
                       AnyType:$inv_std_var,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$X_grad, AnyType:$scale_grad);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSliceGradOp : Train_OnnxOp<"com.microsoft", "SliceGrad", 1, [], []> {
  let summary = "Gradient of Slice: pads dY back to the input shape";
  let description = [{
    Gradient of Slice: pads dY back to the input shape.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$shape,
                       AnyType:$starts,
                       AnyType:$ends,
                       AnyTypeOrNone:$axes,
                       AnyTypeOrNone:$steps);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxCrossEntropyOp : Train_OnnxOp<"com.microsoft", "SoftmaxCrossEntropy", 1, [], []> {
  let summary = "Softmax cross entropy with a one-hot (dense) label";
  let description = [{
    Softmax cross entropy with a one-hot (dense) label.
  }];
  let arguments = (ins AnyType:$logits,
                       AnyType:$label,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$Y, AnyTypeOrNone:$log_prob);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxCrossEntropyGradOp : Train_OnnxOp<"com.microsoft", "SoftmaxCrossEntropyGrad", 1, [], []> {
  let summary = "Gradient of SoftmaxCrossEntropy";
  let description = [{
    Gradient of SoftmaxCrossEntropy.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$log_prob,
                       AnyType:$label,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$d_logits);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxCrossEntropyLossGradOp : Train_OnnxOp<"com.microsoft", "SoftmaxCrossEntropyLossGrad", 1, [], []> {
  let summary = "Gradient of SoftmaxCrossEntropyLoss with respect to the scores";
  let description = [{
    Gradient of SoftmaxCrossEntropyLoss with respect to the scores.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$log_prob,
                       AnyType:$label,
                       AnyTypeOrNone:$weight,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$d_logits);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxCrossEntropyLossInternalOp : Train_OnnxOp<"com.microsoft", "SoftmaxCrossEntropyLossInternal", 1, [], []> {
  let summary = "SoftmaxCrossEntropyLoss with ignore_index as an input and an optional output element type";
  let description = [{
    SoftmaxCrossEntropyLoss with ignore_index as an input and an optional
    output element type.
  }];
  let arguments = (ins AnyType:$scores,
                       AnyType:$labels,
                       AnyTypeOrNone:$weights,
                       AnyTypeOrNone:$ignore_index,
                       OptionalAttr<I64Attr>:$output_type,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$output, AnyType:$log_prob);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxCrossEntropyLossInternalGradOp : Train_OnnxOp<"com.microsoft", "SoftmaxCrossEntropyLossInternalGrad", 1, [], []> {
  let summary = "Gradient of SoftmaxCrossEntropyLossInternal, optionally adding a bias to the result";
  let description = [{
    Gradient of SoftmaxCrossEntropyLossInternal, optionally adding a bias to
    the result.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$log_prob,
                       AnyType:$label,
                       AnyTypeOrNone:$weight,
                       AnyTypeOrNone:$ignore_index,
                       AnyTypeOrNone:$bias,
                       OptionalAttr<I64Attr>:$output_type,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$d_logits);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxGradOp : Train_OnnxOp<"com.microsoft", "SoftmaxGrad", 1, [], []> {
  let summary = "Gradient of Softmax (opset < 13 axis semantics), from its output Y";
  let description = [{
    Gradient of Softmax (opset < 13 axis semantics), from its output Y.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$Y, OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSoftmaxGrad_13Op : Train_OnnxOp<"com.microsoft", "SoftmaxGrad_13", 1, [], []> {
  let summary = "Gradient of Softmax-13 (single-axis semantics), from its output Y";
  let description = [{
    Gradient of Softmax-13 (single-axis semantics), from its output Y.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$Y, OptionalAttr<I64Attr>:$axis);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSplitTrainingOp : Train_OnnxOp<"com.microsoft", "SplitTraining", 1, [], []> {
  let summary = "Split with the split lengths as an input";
  let description = [{
    Split with the split lengths as an input. The ONNX Runtime schema accepts
    attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$input,
                       AnyType:$split,
                       OptionalAttr<I64Attr>:$axis);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsTanhGradOp : Train_OnnxOp<"com.microsoft", "TanhGrad", 1, [], []> {
  let summary = "Gradient of Tanh, computed from its output Y";
  let description = [{
    Gradient of Tanh, computed from its output Y. The ONNX Runtime schema
    accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$Y);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsTransposeMatMulOp : Train_OnnxOp<"com.microsoft", "TransposeMatMul", 1, [], []> {
  let summary = "alpha * MatMul(op(A), op(B)) where op optionally transposes the last two dimensions (older FusedMatMul)";
  let description = [{
    alpha * MatMul(op(A), op(B)) where op optionally transposes the last two
    dimensions (older FusedMatMul).
  }];
  let arguments = (ins AnyType:$A,
                       AnyType:$B,
                       OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<I64Attr>:$transA,
                       OptionalAttr<I64Attr>:$transB);
  let results = (outs AnyType:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsViewOp : Train_OnnxOp<"com.microsoft", "View", 1, [], []> {
  let summary = "Views of the input buffer with the given shapes (no copy)";
  let description = [{
    Views of the input buffer with the given shapes (no copy).
  }];
  let arguments = (ins AnyType:$input, Variadic<AnyType>:$shapes);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsYieldOpOp : Train_OnnxOp<"com.microsoft", "YieldOp", 1, [], []> {
  let summary = "ORTModule boundary between forward and backward: yields module outputs, resumes with their gradients";
  let description = [{
    ORTModule boundary between forward and backward: yields module outputs,
    resumes with their gradients.
  }];
  let arguments = (ins Variadic<AnyType>:$module_outputs,
                       OptionalAttr<DenseI64ArrayAttr>:$full_shape_outputs,
                       OptionalAttr<DenseI64ArrayAttr>:$non_differentiable_outputs);
  let results = (outs Variadic<AnyType>:$module_outputs_grad);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsZeroGradientOp : Train_OnnxOp<"com.microsoft", "ZeroGradient", 1, [], []> {
  let summary = "Resets a gradient accumulator to zero once reset_signal is available";
  let description = [{
    Resets a gradient accumulator to zero once reset_signal is available.
  }];
  let arguments = (ins AnyType:$old_gradient, AnyType:$reset_signal);
  let results = (outs AnyType:$zero_gradient);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsAveragePoolGradOp : Train_OnnxOp<"", "AveragePoolGrad", 9, [], []> {
  let summary = "Gradient of AveragePool";
  let description = [{
    Gradient of AveragePool. ONNX Runtime registers this training operator in
    the default ONNX domain, since_version 9. The ONNX Runtime schema accepts
    attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY,
                       OptionalAttr<StrAttr>:$auto_pad,
                       OptionalAttr<I64Attr>:$count_include_pad,
                       OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsMaxPoolGradOp : Train_OnnxOp<"", "MaxPoolGrad", 9, [], []> {
  let summary = "Gradient of MaxPool, from the argmax indices";
  let description = [{
    Gradient of MaxPool, from the argmax indices. ONNX Runtime registers this
    training operator in the default ONNX domain, since_version 9. The ONNX
    Runtime schema accepts attributes beyond the ones listed here.
  }];
  let arguments = (ins AnyType:$dY, AnyType:$Indices);
  let results = (outs AnyType:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSimplifiedLayerNormalizationOp : Train_OnnxOp<"", "SimplifiedLayerNormalization", 1, [], []> {
  let summary = "RMS normalization: LayerNormalization without mean subtraction and bias";
  let description = [{
    RMS normalization: LayerNormalization without mean subtraction and bias.
    ONNX Runtime registers this training operator in the default ONNX domain,
    since_version 1. The ONNX Runtime schema accepts attributes beyond the
    ones listed here.
  }];
  let arguments = (ins AnyType:$X,
                       AnyType:$scale,
                       OptionalAttr<I64Attr>:$axis,
                       OptionalAttr<F32Attr>:$epsilon,
                       OptionalAttr<I64Attr>:$stash_type);
  let results = (outs AnyType:$Y, AnyTypeOrNone:$inv_std_var);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSparseSoftmaxCrossEntropyOp : Train_OnnxOp<"", "SparseSoftmaxCrossEntropy", 9, [], []> {
  let summary = "Softmax cross entropy with integer class labels";
  let description = [{
    Softmax cross entropy with integer class labels. ONNX Runtime registers
    this training operator in the default ONNX domain, since_version 9.
  }];
  let arguments = (ins AnyType:$logits,
                       AnyType:$label,
                       AnyTypeOrNone:$weight,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$Y, AnyTypeOrNone:$log_prob);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def Train_MsSparseSoftmaxCrossEntropyGradOp : Train_OnnxOp<"", "SparseSoftmaxCrossEntropyGrad", 9, [], []> {
  let summary = "Gradient of SparseSoftmaxCrossEntropy";
  let description = [{
    Gradient of SparseSoftmaxCrossEntropy. ONNX Runtime registers this
    training operator in the default ONNX domain, since_version 9.
  }];
  let arguments = (ins AnyType:$dY,
                       AnyType:$log_prob,
                       AnyType:$label,
                       AnyTypeOrNone:$weight,
                       OptionalAttr<StrAttr>:$reduction);
  let results = (outs AnyType:$d_logits);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINMICROSOFTOPS_TD
