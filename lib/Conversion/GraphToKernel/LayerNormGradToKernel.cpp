//===- LayerNormGradToKernel.cpp - graph.layer_norm_grad to kernels -------===//
//
// Part of Kiln. Two kernels, as the row and column templates of DESIGN.md:
// - rows: one parallel iteration per row recomputes the row's mean and
//   1/std exactly as the forward does, writes xhat into a scratch buffer and
//   dx = rstd (dy gamma - mean(dy gamma) - xhat mean(dy gamma xhat));
// - columns: one parallel iteration per block of columns sums dy xhat and
//   dy over the rows in increasing order into dgamma and dbeta.
// Every sum has the interpreter's terms in the interpreter's order
// (lib/Interpreter/GradOps.cpp), and no sum crosses a chunk.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kiln;

namespace {
struct LayerNormGradToKernel : OpToKernelPattern<graph::LayerNormGradOp> {
  LogicalResult lowerOp(graph::LayerNormGradOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getInput().getType();
    Type elementType = type.getElementType();
    int64_t width = type.getShape().back();
    int64_t rows = width == 0 ? 0 : type.getNumElements() / width;
    double eps = op.getEps().convertToDouble();
    StringRef origin = op->getName().getStringRef();

    Value dx = lowering.allocateResult(op.getInputGrad());
    Value dgamma = lowering.allocateResult(op.getGammaGrad());
    Value dbeta = lowering.allocateResult(op.getBetaGrad());
    lowering.bind(op.getInputGrad(), dx);
    lowering.bind(op.getGammaGrad(), dgamma);
    lowering.bind(op.getBetaGrad(), dbeta);
    if (width == 0)
      return success();
    if (rows == 0) {
      for (Value buffer : {dgamma, dbeta})
        lowering.setOrigin(
            kernel::ZeroOp::create(lowering.getBuilder(), op.getLoc(), buffer),
            origin);
      return success();
    }
    Value dy =
        lowering.view(lowering.lookup(op.getResultGrad()), {rows, width});
    Value xhat =
        lowering.allocateTransient(MemRefType::get({rows, width}, elementType));

    // Rows: statistics, xhat and dx.
    Value rowBuffers[] = {
        dy, lowering.view(lowering.lookup(op.getInput()), {rows, width}),
        lowering.lookup(op.getGamma()), xhat, lowering.view(dx, {rows, width})};
    lowering.launch(
        op.getLoc(), origin, rowBuffers, rows, 5 * width,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, rows, [&](OpBuilder &b, Location loc, Value r) {
                auto load = [&](Value buffer, Value d) -> Value {
                  return memref::LoadOp::create(b, loc, buffer,
                                                ValueRange{r, d});
                };
                auto add = [&](Value x, Value y) -> Value {
                  return arith::AddFOp::create(b, loc, x, y);
                };
                auto sub = [&](Value x, Value y) -> Value {
                  return arith::SubFOp::create(b, loc, x, y);
                };
                auto mul = [&](Value x, Value y) -> Value {
                  return arith::MulFOp::create(b, loc, x, y);
                };
                auto div = [&](Value x, Value y) -> Value {
                  return arith::DivFOp::create(b, loc, x, y);
                };
                Value zero = kb::floatConst(b, loc, elementType, 0.0);
                Value count = kb::floatConst(b, loc, elementType,
                                             static_cast<double>(width));
                Value sum =
                    kb::forLoop(b, loc, width, zero,
                                [&](OpBuilder &, Location, Value d,
                                    ValueRange acc) -> SmallVector<Value> {
                                  return {add(acc[0], load(args[1], d))};
                                })[0];
                Value mean = div(sum, count);
                Value squares =
                    kb::forLoop(b, loc, width, zero,
                                [&](OpBuilder &, Location, Value d,
                                    ValueRange acc) -> SmallVector<Value> {
                                  Value centered = sub(load(args[1], d), mean);
                                  return {add(acc[0], mul(centered, centered))};
                                })[0];
                Value invStd =
                    div(kb::floatConst(b, loc, elementType, 1.0),
                        math::SqrtOp::create(
                            b, loc,
                            add(div(squares, count),
                                kb::floatConst(b, loc, elementType, eps))));
                SmallVector<Value> sums = kb::forLoop(
                    b, loc, width, {zero, zero},
                    [&](OpBuilder &, Location, Value d,
                        ValueRange acc) -> SmallVector<Value> {
                      Value normalized =
                          mul(sub(load(args[1], d), mean), invStd);
                      memref::StoreOp::create(b, loc, normalized, args[3],
                                              ValueRange{r, d});
                      Value g = mul(load(args[0], d),
                                    memref::LoadOp::create(b, loc, args[2], d));
                      return {add(acc[0], g), add(acc[1], mul(g, normalized))};
                    });
                Value meanG = div(sums[0], count);
                Value meanGXhat = div(sums[1], count);
                kb::forLoop(
                    b, loc, width, {},
                    [&](OpBuilder &, Location, Value d,
                        ValueRange) -> SmallVector<Value> {
                      Value g = mul(load(args[0], d),
                                    memref::LoadOp::create(b, loc, args[2], d));
                      Value centered =
                          sub(sub(g, meanG), mul(load(args[3], d), meanGXhat));
                      memref::StoreOp::create(b, loc, mul(invStd, centered),
                                              args[4], ValueRange{r, d});
                      return {};
                    });
              });
        });

    // Columns: dgamma = sum_r dy xhat, dbeta = sum_r dy.
    // Columns one iteration owns (the target's normColumnBlock).
    int64_t blockWidth =
        std::min(width, lowering.getSchedule().normColumnBlock);
    int64_t blocks = (width + blockWidth - 1) / blockWidth;
    Value columnBuffers[] = {dy, xhat, dgamma, dbeta};
    lowering.launch(
        op.getLoc(), origin, columnBuffers, blocks, 2 * rows * blockWidth,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, blocks, [&](OpBuilder &b, Location loc, Value block) {
                Value begin, end;
                std::tie(begin, end) =
                    kb::blockRange(b, loc, block, blockWidth, width);
                kb::forLoop(
                    b, loc, begin, end, {},
                    [&](OpBuilder &b, Location loc, Value d,
                        ValueRange) -> SmallVector<Value> {
                      Value zero = kb::floatConst(b, loc, elementType, 0.0);
                      SmallVector<Value> sums = kb::forLoop(
                          b, loc, rows, {zero, zero},
                          [&](OpBuilder &b, Location loc, Value r,
                              ValueRange acc) -> SmallVector<Value> {
                            Value dyValue = memref::LoadOp::create(
                                b, loc, args[0], ValueRange{r, d});
                            Value x = memref::LoadOp::create(b, loc, args[1],
                                                             ValueRange{r, d});
                            return {
                                arith::AddFOp::create(
                                    b, loc, acc[0],
                                    arith::MulFOp::create(b, loc, dyValue, x)),
                                arith::AddFOp::create(b, loc, acc[1], dyValue)};
                          });
                      memref::StoreOp::create(b, loc, sums[0], args[2], d);
                      memref::StoreOp::create(b, loc, sums[1], args[3], d);
                      return {};
                    });
              });
        });
    return success();
  }
};
} // namespace

void kiln::populateLayerNormGradToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<LayerNormGradToKernel>();
}
