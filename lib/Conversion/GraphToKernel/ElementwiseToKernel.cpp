//===- ElementwiseToKernel.cpp - Elementwise graph ops to kernels
//----------===//
//
// Part of Kiln. Unary and binary math, activation gradients, casts and
// constants. An elementwise kernel sees its buffers flattened to one dim, so
// its range is the element count and any chunking splits the work evenly.
// Scalar formulas are the ops' (FusibleOpInterface, GraphFusible.cpp),
// which follow the reference interpreter operation for operation.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

void kiln::launchElementwise(Operation *op, KernelLowering &lowering,
                             ElementwiseScalarFn scalar,
                             int64_t workPerElement) {
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t count = resultType.getNumElements();
  SmallVector<Value> buffers;
  for (Value operand : op->getOperands())
    buffers.push_back(lowering.view(lowering.lookup(operand), {count}));
  Value result = lowering.allocateResult(op->getResult(0));
  buffers.push_back(lowering.view(result, {count}));
  lowering.launch(op->getLoc(), op->getName().getStringRef(), buffers, count,
                  workPerElement,
                  [&](OpBuilder &b, Location loc, ValueRange args) {
                    SmallVector<AffineMap> maps(args.size() - 1,
                                                b.getMultiDimIdentityMap(1));
                    kb::parallelGeneric(b, loc, args.drop_back(), maps,
                                        args.back(), scalar);
                  });
  lowering.bind(op->getResult(0), result);
}

/// The grain weight of an element that costs a math function.
static constexpr int64_t kTranscendentalWork = 4;

namespace {
/// Unary and binary math and the activation gradients: one kernel computing
/// the op's scalar formula (FusibleOpInterface) per element.
template <typename OpTy> struct ElementwiseToKernel : OpToKernelPattern<OpTy> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(OpTy op, KernelLowering &lowering) const override {
    auto fusible = cast<graph::FusibleOpInterface>(op.getOperation());
    // A math function per element (exp, log, tanh, gelu and their kind).
    bool transcendental =
        fusible.getFlopsPerElement() >= graph::kExpensiveFlopsPerElement;
    Type storage =
        cast<ShapedType>(op->getResult(0).getType()).getElementType();
    launchElementwise(
        op, lowering,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          SmallVector<Value> elements;
          for (Value arg : args)
            elements.push_back(kb::widen(b, loc, arg));
          return kb::narrow(
              b, loc, kb::buildComputeScalar(b, loc, op, 0, elements), storage);
        },
        transcendental ? kTranscendentalWork : 1);
    return success();
  }
};

/// A cast to the same type is the operand; otherwise elementwise.
struct CastToKernel : ElementwiseToKernel<graph::CastOp> {
  LogicalResult lowerOp(graph::CastOp op,
                        KernelLowering &lowering) const override {
    if (op.getInput().getType().getElementType() ==
        op.getType().getElementType()) {
      lowering.bind(op.getResult(), lowering.lookup(op.getInput()));
      return success();
    }
    return ElementwiseToKernel::lowerOp(op, lowering);
  }
};

/// A constant becomes a read-only buffer of the plan.
struct ConstantToKernel : OpToKernelPattern<graph::ConstantOp> {
  LogicalResult lowerOp(graph::ConstantOp op,
                        KernelLowering &lowering) const override {
    auto buffer = kernel::ConstantOp::create(
        lowering.getBuilder(), op.getLoc(),
        KernelLowering::getBufferType(op.getType()), op.getValue());
    lowering.bind(op.getResult(), buffer);
    return success();
  }
};
} // namespace

void kiln::populateElementwiseToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<ElementwiseToKernel<graph::NegOp>>();
  patterns.add<ElementwiseToKernel<graph::ExpOp>>();
  patterns.add<ElementwiseToKernel<graph::LogOp>>();
  patterns.add<ElementwiseToKernel<graph::TanhOp>>();
  patterns.add<ElementwiseToKernel<graph::AbsOp>>();
  patterns.add<ElementwiseToKernel<graph::SinOp>>();
  patterns.add<ElementwiseToKernel<graph::CosOp>>();
  patterns.add<ElementwiseToKernel<graph::ErfOp>>();
  patterns.add<ElementwiseToKernel<graph::SigmoidOp>>();
  patterns.add<ElementwiseToKernel<graph::SiluOp>>();
  patterns.add<ElementwiseToKernel<graph::SqrtOp>>();
  patterns.add<ElementwiseToKernel<graph::RsqrtOp>>();
  patterns.add<ElementwiseToKernel<graph::ReluOp>>();
  patterns.add<ElementwiseToKernel<graph::GeluOp>>();
  patterns.add<ElementwiseToKernel<graph::AddOp>>();
  patterns.add<ElementwiseToKernel<graph::SubOp>>();
  patterns.add<ElementwiseToKernel<graph::MulOp>>();
  patterns.add<ElementwiseToKernel<graph::DivOp>>();
  patterns.add<ElementwiseToKernel<graph::PowOp>>();
  patterns.add<ElementwiseToKernel<graph::MaximumOp>>();
  patterns.add<ElementwiseToKernel<graph::MinimumOp>>();
  patterns.add<ElementwiseToKernel<graph::CompareOp>>();
  patterns.add<ElementwiseToKernel<graph::SelectOp>>();
  patterns.add<ElementwiseToKernel<graph::ReluGradOp>>();
  patterns.add<ElementwiseToKernel<graph::GeluGradOp>>();
  patterns.add<CastToKernel>();
  patterns.add<ConstantToKernel>();
}
