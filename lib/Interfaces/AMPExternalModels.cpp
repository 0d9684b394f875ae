//===- AMPExternalModels.cpp - AMPOpInterface for upstream dialects -------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// External models that let the auto-mixed-precision pass paint ops of
// upstream dialects: linalg named ops (their scalar body is retyped with the
// op), arith and math float ops, and tosa (casts are tosa.cast). Every float
// operand and result of such an op is one type constraint, as in their op
// definitions (SameOperandsAndResultElementType or its linalg equivalent).
//
//===----------------------------------------------------------------------===//

#include "amp/Interfaces/AMPOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"

using namespace mlir;
using namespace amp;

/// One group of every operand and result whose element type is a float.
static void addFloatPortsGroup(Operation *op,
                               SmallVectorImpl<AMPTypeGroup> &groups) {
  AMPTypeGroup g;
  for (OpOperand &o : op->getOpOperands())
    if (isa<FloatType>(getAMPElementType(o.get().getType())))
      g.operands.push_back(o.getOperandNumber());
  for (OpResult r : op->getResults())
    if (isa<FloatType>(getAMPElementType(r.getType())))
      g.results.push_back(r.getResultNumber());
  if (!g.operands.empty() || !g.results.empty())
    groups.push_back(std::move(g));
}

namespace {

/// Every model below: all float ports are one group.
template <typename Model, typename OpT>
struct FloatPortsModel : public AMPOpInterface::ExternalModel<Model, OpT> {
  void getAMPTypeGroups(Operation *op,
                        SmallVectorImpl<AMPTypeGroup> &groups) const {
    addFloatPortsGroup(op, groups);
  }
};

/// arith / math float ops: one group, arith casts.
template <typename OpT>
struct FloatOpModel : public FloatPortsModel<FloatOpModel<OpT>, OpT> {};

/// linalg structured ops with a scalar body: one group (ins, outs,
/// results); the body's block arguments and float results follow.
template <typename OpT>
struct LinalgOpModel : public FloatPortsModel<LinalgOpModel<OpT>, OpT> {
  /// Only bodies of plain float arithmetic retype safely: every block
  /// argument and every result inside is the group's float type.
  bool canUseAMPType(Operation *op, const AMPTypeGroup &group,
                     Type type) const {
    if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock())
      return false;
    Block &body = op->getRegion(0).front();
    Type f32 = Float32Type::get(op->getContext());
    auto isF32 = [&](Type t) { return t == f32; };
    if (!llvm::all_of(body.getArgumentTypes(), isF32))
      return false;
    for (Operation &inner : body) {
      if (isa<linalg::YieldOp>(inner))
        continue;
      if (!isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()))
        return false;
      if (!llvm::all_of(inner.getResultTypes(), isF32) ||
          !llvm::all_of(inner.getOperandTypes(), isF32))
        return false;
      if (isa<arith::ConstantOp>(inner))
        return false; // a body constant would need its attribute rebuilt
    }
    return true;
  }
  void updateAfterAMPTypeChange(Operation *op, const AMPTypeGroup &group,
                                Type type) const {
    Block &body = op->getRegion(0).front();
    for (BlockArgument arg : body.getArguments())
      arg.setType(type);
    for (Operation &inner : body)
      for (OpResult r : inner.getResults())
        r.setType(type);
  }
};

/// tosa ops: one group of float ports (zero points included, as their
/// verifiers want the input's element type), tosa.cast.
template <typename OpT>
struct TosaOpModel : public FloatPortsModel<TosaOpModel<OpT>, OpT> {
  /// Float attributes that must have the ports' element type (tosa.clamp's
  /// bounds) are converted, saturating at the low type's largest finite
  /// value (a ReLU's max of FLT_MAX stays "no upper bound").
  void updateAfterAMPTypeChange(Operation *op, const AMPTypeGroup &group,
                                Type type) const {
    auto clamp = dyn_cast<tosa::ClampOp>(op);
    auto floatType = dyn_cast<FloatType>(type);
    if (!clamp || !floatType)
      return;
    auto convert = [&](Attribute a) -> Attribute {
      auto f = dyn_cast<FloatAttr>(a);
      if (!f)
        return a;
      APFloat v = f.getValue();
      bool lost = false;
      APFloat::opStatus st = v.convert(floatType.getFloatSemantics(),
                                       APFloat::rmNearestTiesToEven, &lost);
      if ((st & APFloat::opOverflow) || v.isInfinity())
        v = APFloat::getLargest(floatType.getFloatSemantics(), v.isNegative());
      return FloatAttr::get(floatType, v);
    };
    clamp.setMinValAttr(convert(clamp.getMinValAttr()));
    clamp.setMaxValAttr(convert(clamp.getMaxValAttr()));
  }
  Value buildAMPCast(Operation *op, OpBuilder &builder, Location loc,
                     Value value, Type type) const {
    return tosa::CastOp::create(
        builder, loc, withAMPElementType(value.getType(), type), value);
  }
};

template <template <typename> class Model, typename... Ops>
void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<Model<Ops>>(*ctx), ...);
}

} // namespace

void amp::registerAMPExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    attach<FloatOpModel, arith::AddFOp, arith::SubFOp, arith::MulFOp,
           arith::DivFOp, arith::RemFOp, arith::NegFOp, arith::MaximumFOp,
           arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
           arith::SelectOp>(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, math::MathDialect *) {
    attach<FloatOpModel, math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp,
           math::Log1pOp, math::Log2Op, math::Log10Op, math::PowFOp,
           math::SqrtOp, math::RsqrtOp, math::TanhOp, math::ErfOp, math::AbsFOp,
           math::FmaOp, math::CeilOp, math::FloorOp>(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    attach<LinalgOpModel, linalg::MatmulOp, linalg::BatchMatmulOp,
           linalg::MatvecOp, linalg::Conv2DNhwcHwcfOp, linalg::Conv2DNchwFchwOp,
           linalg::DepthwiseConv2DNhwcHwcOp, linalg::FillOp, linalg::AddOp,
           linalg::SubOp, linalg::MulOp, linalg::DivOp, linalg::ExpOp,
           linalg::LogOp, linalg::MaxOp, linalg::MinOp, linalg::CopyOp,
           linalg::TransposeOp, linalg::BroadcastOp>(ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tosa::TosaDialect *) {
    attach<TosaOpModel, tosa::MatMulOp, tosa::Conv2DOp, tosa::DepthwiseConv2DOp,
           tosa::AddOp, tosa::SubOp, tosa::MulOp, tosa::ExpOp, tosa::LogOp,
           tosa::PowOp, tosa::TanhOp, tosa::SigmoidOp, tosa::ReciprocalOp,
           tosa::ReduceSumOp, tosa::ReduceMaxOp, tosa::MaximumOp,
           tosa::MinimumOp, tosa::ClampOp, tosa::ReshapeOp, tosa::TransposeOp,
           tosa::SliceOp, tosa::ConcatOp, tosa::NegateOp, tosa::AbsOp>(ctx);
  });
}
