//===- NNToKernel.cpp - Neural-network graph ops to row kernels
//------------===//
//
// Part of Kiln. embedding, layer_norm, softmax and cross_entropy as row
// templates: one parallel iteration per row (or per gathered id), the row's
// reductions in registers in increasing index order, exactly the loops of
// the reference interpreter (lib/Interpreter/NN.cpp). Bad ids and targets
// are recorded in the status buffer rather than crashing.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;

using kb::isOutside;
using kb::stdMax;
using kb::toI64;

namespace {
/// Row n of the result is row ids[n] of the table.
struct EmbeddingToKernel : OpToKernelPattern<graph::EmbeddingOp> {
  LogicalResult lowerOp(graph::EmbeddingOp op,
                        KernelLowering &lowering) const override {
    int64_t vocab = op.getTable().getType().getDimSize(0);
    int64_t width = op.getTable().getType().getDimSize(1);
    int64_t count = op.getIds().getType().getNumElements();
    Type elementType = op.getType().getElementType();
    Value result = lowering.allocateResult(op.getResult());
    Value buffers[] = {lowering.lookup(op.getTable()),
                       lowering.view(lowering.lookup(op.getIds()), {count}),
                       lowering.view(result, {count, width}),
                       lowering.getStatus()};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, count, width,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, count, [&](OpBuilder &b, Location loc, Value n) {
                Value id =
                    toI64(b, loc, memref::LoadOp::create(b, loc, args[1], n));
                auto ifOp =
                    scf::IfOp::create(b, loc, isOutside(b, loc, id, vocab),
                                      /*withElseRegion=*/true);
                {
                  OpBuilder::InsertionGuard guard(b);
                  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                  kb::recordStatus(b, loc, args[3],
                                   KernelStatus::BadEmbeddingId, id);
                  Value zero = kb::floatConst(b, loc, elementType, 0.0);
                  kb::forLoop(b, loc, width, {},
                              [&](OpBuilder &b, Location loc, Value d,
                                  ValueRange) -> SmallVector<Value> {
                                memref::StoreOp::create(b, loc, zero, args[2],
                                                        ValueRange{n, d});
                                return {};
                              });
                  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
                  Value row =
                      arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
                  kb::forLoop(b, loc, width, {},
                              [&](OpBuilder &b, Location loc, Value d,
                                  ValueRange) -> SmallVector<Value> {
                                Value x = memref::LoadOp::create(
                                    b, loc, args[0], ValueRange{row, d});
                                memref::StoreOp::create(b, loc, x, args[2],
                                                        ValueRange{n, d});
                                return {};
                              });
                }
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// A parallel iteration per result element: the first largest along the
/// axis, a NaN counting as the largest (graph.argmax).
struct ArgmaxToKernel : OpToKernelPattern<graph::ArgmaxOp> {
  LogicalResult lowerOp(graph::ArgmaxOp op,
                        KernelLowering &lowering) const override {
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    // Plain names (lambdas capture them; C++17 captures no bindings).
    kb::AxisSplit split = kb::splitAroundAxis(shape, op.getAxis());
    int64_t outer = split.outer, count = split.length, inner = split.inner;
    Type indexType = op.getType().getElementType();
    Value result = lowering.allocateResult(op.getResult());
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getInput()), {outer, count, inner}),
        lowering.view(result, {outer, inner})};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, outer * inner,
        count, [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, outer * inner, [&](OpBuilder &b, Location loc, Value n) {
                Value o =
                    arith::DivUIOp::create(b, loc, n, kb::index(b, loc, inner));
                Value i =
                    arith::RemUIOp::create(b, loc, n, kb::index(b, loc, inner));
                auto at = [&](OpBuilder &b, Location loc, Value k) {
                  return kb::widen(b, loc,
                                   memref::LoadOp::create(b, loc, args[0],
                                                          ValueRange{o, k, i}));
                };
                Value zero = kb::index(b, loc, 0);
                SmallVector<Value> best = kb::forLoop(
                    b, loc, kb::index(b, loc, 1), kb::index(b, loc, count),
                    {zero, at(b, loc, zero)},
                    [&](OpBuilder &b, Location loc, Value k,
                        ValueRange carried) -> SmallVector<Value> {
                      Value value = at(b, loc, k);
                      // Once the best is a NaN it stays; a NaN or a larger
                      // value takes over.
                      Value bestIsNan = arith::CmpFOp::create(
                          b, loc, arith::CmpFPredicate::UNO, carried[1],
                          carried[1]);
                      Value takes = arith::CmpFOp::create(
                          b, loc, arith::CmpFPredicate::UGT, value, carried[1]);
                      Value notNan =
                          arith::XOrIOp::create(b, loc, bestIsNan,
                                                arith::ConstantIntOp::create(
                                                    b, loc, b.getI1Type(), 1));
                      Value better =
                          arith::AndIOp::create(b, loc, notNan, takes);
                      return {arith::SelectOp::create(b, loc, better, k,
                                                      carried[0]),
                              arith::SelectOp::create(b, loc, better, value,
                                                      carried[1])};
                    });
                memref::StoreOp::create(
                    b, loc,
                    arith::IndexCastOp::create(b, loc, indexType, best[0]),
                    args[1], ValueRange{o, i});
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// A parallel iteration per id: its row of zeros with a one at the id
/// (none for an id outside the classes).
struct OneHotToKernel : OpToKernelPattern<graph::OneHotOp> {
  LogicalResult lowerOp(graph::OneHotOp op,
                        KernelLowering &lowering) const override {
    int64_t count = op.getIds().getType().getNumElements();
    int64_t classes = op.getType().getShape().back();
    Type elementType = op.getType().getElementType();
    Value result = lowering.allocateResult(op.getResult());
    Value buffers[] = {lowering.view(lowering.lookup(op.getIds()), {count}),
                       lowering.view(result, {count, classes})};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, count, classes,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, count, [&](OpBuilder &b, Location loc, Value n) {
                Value id =
                    toI64(b, loc, memref::LoadOp::create(b, loc, args[0], n));
                Value one = kb::floatConst(b, loc, elementType, 1.0);
                Value zero = kb::floatConst(b, loc, elementType, 0.0);
                kb::forLoop(
                    b, loc, classes, {},
                    [&](OpBuilder &b, Location loc, Value c,
                        ValueRange) -> SmallVector<Value> {
                      Value hit = arith::CmpIOp::create(
                          b, loc, arith::CmpIPredicate::eq, id,
                          arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                                     c));
                      memref::StoreOp::create(
                          b, loc,
                          arith::SelectOp::create(b, loc, hit, one, zero),
                          args[1], ValueRange{n, c});
                      return {};
                    });
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// Per row: mean, biased variance (two passes), then
/// y = (x - mean) * (1 / sqrt(var + eps)) * gamma + beta.
struct LayerNormToKernel : OpToKernelPattern<graph::LayerNormOp> {
  LogicalResult lowerOp(graph::LayerNormOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getType();
    Type elementType = type.getElementType();
    int64_t width = type.getShape().back();
    int64_t rows = type.getNumElements() / width;
    Value result = lowering.allocateResult(op.getResult());
    // The input through an ElementSource: inside a fusion region, its
    // producers are computed here; the sum pass reads each element once.
    ElementSource input =
        lowering.getElementSource(op.getInput(), {rows, width});
    SmallVector<Value> buffers = {lowering.lookup(op.getGamma()),
                                  lowering.lookup(op.getBeta()),
                                  lowering.view(result, {rows, width})};
    llvm::append_range(buffers, input.getBuffers());
    double eps = op.getEps().convertToDouble();
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, rows, width,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, rows, [&](OpBuilder &b, Location loc, Value r) {
                auto load = [&](OpBuilder &b, Location loc, Value d,
                                bool covering = false) -> Value {
                  return input.read(b, loc, args.drop_front(3), {r, d},
                                    covering);
                };
                Value zero = kb::floatConst(b, loc, elementType, 0.0);
                Value count = kb::floatConst(b, loc, elementType,
                                             static_cast<double>(width));
                Value sum = kb::forLoop(
                    b, loc, width, zero,
                    [&](OpBuilder &b, Location loc, Value d,
                        ValueRange acc) -> SmallVector<Value> {
                      return {arith::AddFOp::create(
                          b, loc, acc[0], load(b, loc, d, /*covering=*/true))};
                    })[0];
                Value mean = arith::DivFOp::create(b, loc, sum, count);
                Value squares = kb::forLoop(
                    b, loc, width, zero,
                    [&](OpBuilder &b, Location loc, Value d,
                        ValueRange acc) -> SmallVector<Value> {
                      Value centered =
                          arith::SubFOp::create(b, loc, load(b, loc, d), mean);
                      return {arith::AddFOp::create(
                          b, loc, acc[0],
                          arith::MulFOp::create(b, loc, centered, centered))};
                    })[0];
                Value variance = arith::DivFOp::create(b, loc, squares, count);
                Value invStd = arith::DivFOp::create(
                    b, loc, kb::floatConst(b, loc, elementType, 1.0),
                    math::SqrtOp::create(
                        b, loc,
                        arith::AddFOp::create(
                            b, loc, variance,
                            kb::floatConst(b, loc, elementType, eps))));
                kb::forLoop(
                    b, loc, width, {},
                    [&](OpBuilder &b, Location loc, Value d,
                        ValueRange) -> SmallVector<Value> {
                      Value centered =
                          arith::SubFOp::create(b, loc, load(b, loc, d), mean);
                      Value scaled = arith::MulFOp::create(
                          b, loc,
                          arith::MulFOp::create(b, loc, centered, invStd),
                          memref::LoadOp::create(b, loc, args[0], d));
                      Value y = arith::AddFOp::create(
                          b, loc, scaled,
                          memref::LoadOp::create(b, loc, args[1], d));
                      memref::StoreOp::create(b, loc, y, args[2],
                                              ValueRange{r, d});
                      return {};
                    });
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// Along the axis: y = exp(x - max) / sum(exp(x - max)); one parallel
/// iteration per (outer, inner) position.
struct SoftmaxToKernel : OpToKernelPattern<graph::SoftmaxOp> {
  LogicalResult lowerOp(graph::SoftmaxOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getType();
    Type elementType = type.getElementType();
    ArrayRef<int64_t> shape = type.getShape();
    kb::AxisSplit split = kb::splitAroundAxis(shape, op.getAxis());
    int64_t outer = split.outer, length = split.length, inner = split.inner;
    Value result = lowering.allocateResult(op.getResult());
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getInput()), {outer, length, inner}),
        lowering.view(result, {outer, length, inner})};
    int64_t range = outer * inner;
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, range, length,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, range, [&](OpBuilder &b, Location loc, Value p) {
                SmallVector<Value> position =
                    kb::delinearize(b, loc, p, {outer, inner});
                auto at = [&](Value a) {
                  return SmallVector<Value>{position[0], a, position[1]};
                };
                Value max = kb::forLoop(
                    b, loc, length, kb::negativeInfinity(b, loc, elementType),
                    [&](OpBuilder &b, Location loc, Value a,
                        ValueRange acc) -> SmallVector<Value> {
                      Value x = memref::LoadOp::create(b, loc, args[0], at(a));
                      return {stdMax(b, loc, acc[0], x)};
                    })[0];
                Value total = kb::forLoop(
                    b, loc, length, kb::floatConst(b, loc, elementType, 0.0),
                    [&](OpBuilder &b, Location loc, Value a,
                        ValueRange acc) -> SmallVector<Value> {
                      Value x = memref::LoadOp::create(b, loc, args[0], at(a));
                      Value e = math::ExpOp::create(
                          b, loc, arith::SubFOp::create(b, loc, x, max));
                      memref::StoreOp::create(b, loc, e, args[1], at(a));
                      return {arith::AddFOp::create(b, loc, acc[0], e)};
                    })[0];
                kb::forLoop(
                    b, loc, length, {},
                    [&](OpBuilder &b, Location loc, Value a,
                        ValueRange) -> SmallVector<Value> {
                      Value e = memref::LoadOp::create(b, loc, args[1], at(a));
                      memref::StoreOp::create(
                          b, loc, arith::DivFOp::create(b, loc, e, total),
                          args[1], at(a));
                      return {};
                    });
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// Two kernels: the loss of each row (parallel over rows) into a transient,
/// then their mean in row order (one sequential iteration), so the sum is
/// the interpreter's whatever the chunking.
struct CrossEntropyToKernel : OpToKernelPattern<graph::CrossEntropyOp> {
  LogicalResult lowerOp(graph::CrossEntropyOp op,
                        KernelLowering &lowering) const override {
    auto logitsType = op.getLogits().getType();
    Type elementType = logitsType.getElementType();
    int64_t classes = logitsType.getShape().back();
    int64_t rows = logitsType.getNumElements() / classes;
    double smoothing = op.getLabelSmoothing().convertToDouble();
    // The target weights, computed in the element type as the interpreter
    // does: on = 1 - s, per class = s / C, the target's = per class + on.
    llvm::APFloat onTarget = kb::roundTo(elementType, 1.0);
    onTarget.subtract(kb::roundTo(elementType, smoothing),
                      llvm::APFloat::rmNearestTiesToEven);
    llvm::APFloat perClass = kb::roundTo(elementType, smoothing);
    perClass.divide(kb::roundTo(elementType, static_cast<double>(classes)),
                    llvm::APFloat::rmNearestTiesToEven);
    llvm::APFloat targetWeight = perClass;
    targetWeight.add(onTarget, llvm::APFloat::rmNearestTiesToEven);

    Value rowLosses =
        lowering.allocateTransient(MemRefType::get({rows}, elementType));
    // The logits through an ElementSource: inside a fusion region (a cast
    // up from the low precision), their producers are computed here.
    ElementSource logits =
        lowering.getElementSource(op.getLogits(), {rows, classes});
    SmallVector<Value> buffers = {
        lowering.view(lowering.lookup(op.getTargets()), {rows}), rowLosses,
        lowering.getStatus()};
    llvm::append_range(buffers, logits.getBuffers());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, rows, classes,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, rows, [&](OpBuilder &b, Location loc, Value r) {
                Value target =
                    toI64(b, loc, memref::LoadOp::create(b, loc, args[0], r));
                auto ifOp = scf::IfOp::create(
                    b, loc, isOutside(b, loc, target, classes), false);
                {
                  OpBuilder::InsertionGuard guard(b);
                  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                  kb::recordStatus(b, loc, args[2], KernelStatus::BadTarget,
                                   target);
                }
                auto load = [&](OpBuilder &b, Location loc, Value c,
                                bool covering = false) -> Value {
                  return logits.read(b, loc, args.drop_front(3), {r, c},
                                     covering);
                };
                Value max = kb::forLoop(
                    b, loc, classes, kb::negativeInfinity(b, loc, elementType),
                    [&](OpBuilder &b, Location loc, Value c,
                        ValueRange acc) -> SmallVector<Value> {
                      return {stdMax(b, loc, acc[0],
                                     load(b, loc, c, /*covering=*/true))};
                    })[0];
                Value sumExp = kb::forLoop(
                    b, loc, classes, kb::floatConst(b, loc, elementType, 0.0),
                    [&](OpBuilder &b, Location loc, Value c,
                        ValueRange acc) -> SmallVector<Value> {
                      Value e = math::ExpOp::create(
                          b, loc,
                          arith::SubFOp::create(b, loc, load(b, loc, c), max));
                      return {arith::AddFOp::create(b, loc, acc[0], e)};
                    })[0];
                Value logSumExp = arith::AddFOp::create(
                    b, loc, max, math::LogOp::create(b, loc, sumExp));
                Value onWeight =
                    kb::floatConst(b, loc, elementType, targetWeight);
                Value offWeight = kb::floatConst(b, loc, elementType, perClass);
                Value loss = kb::forLoop(
                    b, loc, classes, kb::floatConst(b, loc, elementType, 0.0),
                    [&](OpBuilder &b, Location loc, Value c,
                        ValueRange acc) -> SmallVector<Value> {
                      Value isTarget = arith::CmpIOp::create(
                          b, loc, arith::CmpIPredicate::eq,
                          arith::IndexCastOp::create(b, loc, b.getI64Type(), c),
                          target);
                      Value weight = arith::SelectOp::create(
                          b, loc, isTarget, onWeight, offWeight);
                      Value term = arith::MulFOp::create(
                          b, loc, weight,
                          arith::SubFOp::create(b, loc, load(b, loc, c),
                                                logSumExp));
                      return {arith::SubFOp::create(b, loc, acc[0], term)};
                    })[0];
                memref::StoreOp::create(b, loc, loss, args[1], r);
              });
        });

    Value result = lowering.allocateResult(op.getResult());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), {rowLosses, result}, 1, 1,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value total = kb::forLoop(
              b, loc, rows, kb::floatConst(b, loc, elementType, 0.0),
              [&](OpBuilder &b, Location loc, Value r,
                  ValueRange acc) -> SmallVector<Value> {
                return {arith::AddFOp::create(
                    b, loc, acc[0],
                    memref::LoadOp::create(b, loc, args[0], r))};
              })[0];
          Value mean = arith::DivFOp::create(
              b, loc, total,
              kb::floatConst(b, loc, elementType, static_cast<double>(rows)));
          memref::StoreOp::create(b, loc, mean, args[1], ValueRange{});
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};
} // namespace

void kiln::populateNNToKernelPatterns(GraphToKernelPatternSet &patterns) {
  patterns.add<EmbeddingToKernel>();
  patterns.add<ArgmaxToKernel>();
  patterns.add<OneHotToKernel>();
  patterns.add<LayerNormToKernel>();
  patterns.add<SoftmaxToKernel>();
  patterns.add<CrossEntropyToKernel>();
}
