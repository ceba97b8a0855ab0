//===- ElementwiseToKernel.cpp - Elementwise graph ops to kernels ----------===//
//
// Part of Kiln. Unary and binary math, casts and constants. An elementwise
// kernel sees its buffers flattened to one dim, so its range is the element
// count and any chunking splits the work evenly. Scalar formulas follow the
// reference interpreter operation for operation, so results agree to the
// rounding of the math library.
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
  lowering.launch(
      op->getLoc(), op->getName().getStringRef(), buffers, count,
      kb::chooseGrain(count, workPerElement),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        SmallVector<AffineMap> maps(args.size() - 1,
                                    b.getMultiDimIdentityMap(1));
        kb::parallelGeneric(b, loc, args.drop_back(), maps, args.back(),
                            scalar);
      });
  lowering.bind(op->getResult(0), result);
}

/// The scalar formula of a unary op, as the interpreter evaluates it.
static Value buildUnary(Operation *op, OpBuilder &b, Location loc, Value x) {
  Type type = x.getType();
  auto c = [&](double value) { return kb::floatConst(b, loc, type, value); };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](graph::NegOp) { return arith::NegFOp::create(b, loc, x); })
      .Case([&](graph::ExpOp) { return math::ExpOp::create(b, loc, x); })
      .Case([&](graph::LogOp) { return math::LogOp::create(b, loc, x); })
      .Case([&](graph::TanhOp) { return math::TanhOp::create(b, loc, x); })
      .Case([&](graph::SqrtOp) { return math::SqrtOp::create(b, loc, x); })
      .Case([&](graph::RsqrtOp) {
        return arith::DivFOp::create(b, loc, c(1.0),
                                     math::SqrtOp::create(b, loc, x));
      })
      .Case([&](graph::ReluOp) {
        // NaN or positive: x; otherwise 0 (NaN propagates).
        Value keep = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGT,
                                           x, c(0.0));
        return arith::SelectOp::create(b, loc, keep, x, c(0.0));
      })
      .Case([&](graph::GeluOp) {
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in this order.
        Value cube = arith::MulFOp::create(
            b, loc,
            arith::MulFOp::create(b, loc,
                                  arith::MulFOp::create(b, loc, c(0.044715), x),
                                  x),
            x);
        Value inner = arith::MulFOp::create(
            b, loc, c(0.7978845608028654), arith::AddFOp::create(b, loc, x, cube));
        Value halfX = arith::MulFOp::create(b, loc, c(0.5), x);
        return arith::MulFOp::create(
            b, loc, halfX,
            arith::AddFOp::create(b, loc, c(1.0),
                                  math::TanhOp::create(b, loc, inner)));
      })
      .Default([](Operation *) { return Value(); });
}

static Value buildBinary(Operation *op, OpBuilder &b, Location loc, Value x,
                         Value y) {
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](graph::AddOp) { return arith::AddFOp::create(b, loc, x, y); })
      .Case([&](graph::SubOp) { return arith::SubFOp::create(b, loc, x, y); })
      .Case([&](graph::MulOp) { return arith::MulFOp::create(b, loc, x, y); })
      .Case([&](graph::DivOp) { return arith::DivFOp::create(b, loc, x, y); })
      .Case([&](graph::PowOp) { return math::PowFOp::create(b, loc, x, y); })
      .Default([](Operation *) { return Value(); });
}

/// The grain weight of an element that costs a math function.
static constexpr int64_t kTranscendentalWork = 4;

namespace {
template <typename OpTy>
struct UnaryToKernel : OpToKernelPattern<OpTy> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(OpTy op, KernelLowering &lowering) const override {
    // exp, log, tanh and gelu cost a math function per element.
    bool transcendental =
        isa<graph::ExpOp, graph::LogOp, graph::TanhOp, graph::GeluOp>(op);
    launchElementwise(
        op, lowering,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return buildUnary(op, b, loc, args[0]);
        },
        transcendental ? kTranscendentalWork : 1);
    return success();
  }
};

template <typename OpTy>
struct BinaryToKernel : OpToKernelPattern<OpTy> {
  bool readsAtResultIndex() const override { return true; }
  LogicalResult lowerOp(OpTy op, KernelLowering &lowering) const override {
    launchElementwise(
        op, lowering,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return buildBinary(op, b, loc, args[0], args[1]);
        },
        isa<graph::PowOp>(op) ? kTranscendentalWork : 1);
    return success();
  }
};

/// Float to float rounds to nearest even, float to integer truncates toward
/// zero, integer to float rounds, i64 to i32 wraps, i32 to i64 extends.
struct CastToKernel : OpToKernelPattern<graph::CastOp> {
  LogicalResult lowerOp(graph::CastOp op,
                        KernelLowering &lowering) const override {
    Type from = op.getInput().getType().getElementType();
    Type to = op.getType().getElementType();
    if (from == to) {
      lowering.bind(op.getResult(), lowering.lookup(op.getInput()));
      return success();
    }
    launchElementwise(op, lowering,
                      [&](OpBuilder &b, Location loc, ValueRange args) {
                        return convertScalar(b, loc, args[0], from, to);
                      });
    return success();
  }

  static Value convertScalar(OpBuilder &b, Location loc, Value x, Type from,
                             Type to) {
    bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
    if (fromFloat && toFloat) {
      if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
        return arith::ExtFOp::create(b, loc, to, x);
      return arith::TruncFOp::create(b, loc, to, x);
    }
    if (fromFloat)
      return arith::FPToSIOp::create(b, loc, to, x);
    if (toFloat)
      return arith::SIToFPOp::create(b, loc, to, x);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncIOp::create(b, loc, to, x);
    return arith::ExtSIOp::create(b, loc, to, x);
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
  patterns.add<UnaryToKernel<graph::NegOp>>();
  patterns.add<UnaryToKernel<graph::ExpOp>>();
  patterns.add<UnaryToKernel<graph::LogOp>>();
  patterns.add<UnaryToKernel<graph::TanhOp>>();
  patterns.add<UnaryToKernel<graph::SqrtOp>>();
  patterns.add<UnaryToKernel<graph::RsqrtOp>>();
  patterns.add<UnaryToKernel<graph::ReluOp>>();
  patterns.add<UnaryToKernel<graph::GeluOp>>();
  patterns.add<BinaryToKernel<graph::AddOp>>();
  patterns.add<BinaryToKernel<graph::SubOp>>();
  patterns.add<BinaryToKernel<graph::MulOp>>();
  patterns.add<BinaryToKernel<graph::DivOp>>();
  patterns.add<BinaryToKernel<graph::PowOp>>();
  patterns.add<CastToKernel>();
  patterns.add<ConstantToKernel>();
}
