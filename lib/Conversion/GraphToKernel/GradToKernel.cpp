//===- GradToKernel.cpp - Gradient graph ops to kernels
//--------------------===//
//
// Part of Kiln. graph.pad and the gradients of the activations, softmax,
// reduce max, cross_entropy and embedding, written as the loops of the
// reference interpreter (lib/Interpreter/GradOps.cpp) so that every sum runs
// in the same order. Each kernel's parallel iterations own disjoint parts of
// the results: rows, reduced groups, or column blocks of the embedding
// table, whose scatter-add thus never races and never depends on the
// chunking. layer_norm_grad and attention_grad have files of their own.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t dim : dims)
    result *= dim;
  return result;
}

namespace {
/// Result element offsets + i is input element i; the rest is zero: the
/// result is zeroed, then the input copied into its box.
struct PadToKernel : OpToKernelPattern<graph::PadOp> {
  LogicalResult lowerOp(graph::PadOp op,
                        KernelLowering &lowering) const override {
    ArrayRef<int64_t> box = op.getInput().getType().getShape();
    ArrayRef<int64_t> offsets = op.getOffsets();
    Value result = lowering.allocateResult(op.getResult());
    auto zero =
        kernel::ZeroOp::create(lowering.getBuilder(), op.getLoc(), result);
    lowering.setOrigin(zero, op->getName().getStringRef());
    if (product(box) == 0) {
      lowering.bind(op.getResult(), result);
      return success();
    }
    int64_t range = kb::rangeOfShape(box);
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(),
        {lowering.lookup(op.getInput()), result}, range, product(box) / range,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          SmallVector<int64_t> strides(box.size(), 1);
          Value into =
              memref::SubViewOp::create(b, loc, args[1], offsets, box, strides);
          kb::parallelGeneric(
              b, loc, args[0], b.getMultiDimIdentityMap(box.size()), into,
              [](OpBuilder &, Location, ValueRange in) { return in[0]; });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// Along the axis: dot = sum(dy y), then dx = y (dy - dot); one parallel
/// iteration per (outer, inner) position, as the forward softmax.
struct SoftmaxGradToKernel : OpToKernelPattern<graph::SoftmaxGradOp> {
  LogicalResult lowerOp(graph::SoftmaxGradOp op,
                        KernelLowering &lowering) const override {
    auto type = op.getType();
    Type elementType = type.getElementType();
    ArrayRef<int64_t> shape = type.getShape();
    int64_t axis = op.getAxis();
    int64_t length = shape[axis];
    int64_t outer = product(shape.take_front(axis));
    int64_t inner = product(shape.drop_front(axis + 1));
    int64_t range = outer * inner;
    // The op names its softmax operand `result`: the gradient is input_grad.
    Value result = lowering.allocateResult(op.getInputGrad());
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getResultGrad()),
                      {outer, length, inner}),
        lowering.view(lowering.lookup(op.getResult()), {outer, length, inner}),
        lowering.view(result, {outer, length, inner})};
    if (range > 0)
      lowering.launch(
          op.getLoc(), op->getName().getStringRef(), buffers, range, 3 * length,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            kb::parallelFor(
                b, loc, range, [&](OpBuilder &b, Location loc, Value p) {
                  SmallVector<Value> position =
                      kb::delinearize(b, loc, p, {outer, inner});
                  auto at = [&](Value a) {
                    return SmallVector<Value>{position[0], a, position[1]};
                  };
                  Value dot = kb::forLoop(
                      b, loc, length, kb::floatConst(b, loc, elementType, 0.0),
                      [&](OpBuilder &b, Location loc, Value a,
                          ValueRange acc) -> SmallVector<Value> {
                        Value dy =
                            memref::LoadOp::create(b, loc, args[0], at(a));
                        Value y =
                            memref::LoadOp::create(b, loc, args[1], at(a));
                        return {arith::AddFOp::create(
                            b, loc, acc[0],
                            arith::MulFOp::create(b, loc, dy, y))};
                      })[0];
                  kb::forLoop(
                      b, loc, length, {},
                      [&](OpBuilder &b, Location loc, Value a,
                          ValueRange) -> SmallVector<Value> {
                        Value dy =
                            memref::LoadOp::create(b, loc, args[0], at(a));
                        Value y =
                            memref::LoadOp::create(b, loc, args[1], at(a));
                        Value dx = arith::MulFOp::create(
                            b, loc, y, arith::SubFOp::create(b, loc, dy, dot));
                        memref::StoreOp::create(b, loc, dx, args[2], at(a));
                        return {};
                      });
                });
          });
    lowering.bind(op.getInputGrad(), result);
    return success();
  }
};

/// One parallel iteration per reduced group (the kept dims, row-major):
/// the group's elements in row-major order (the reduced dims, row-major),
/// the first strict maximum taking dy, every other element 0.
struct ReduceMaxGradToKernel : OpToKernelPattern<graph::ReduceMaxGradOp> {
  LogicalResult lowerOp(graph::ReduceMaxGradOp op,
                        KernelLowering &lowering) const override {
    auto inputType = op.getInput().getType();
    ArrayRef<int64_t> shape = inputType.getShape();
    int64_t rank = shape.size();
    llvm::SmallVector<bool> reduced(rank, false);
    for (int64_t axis : op.getAxes())
      reduced[axis] = true;
    SmallVector<int64_t> keptDims, reducedDims, keptShape, reducedShape;
    for (int64_t d = 0; d < rank; ++d) {
      (reduced[d] ? reducedDims : keptDims).push_back(d);
      (reduced[d] ? reducedShape : keptShape).push_back(shape[d]);
    }
    int64_t groups = product(keptShape), length = product(reducedShape);
    Value result = lowering.allocateResult(op.getResult());
    if (groups == 0 || length == 0) {
      auto zero =
          kernel::ZeroOp::create(lowering.getBuilder(), op.getLoc(), result);
      lowering.setOrigin(zero, op->getName().getStringRef());
      lowering.bind(op.getResult(), result);
      return success();
    }
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getResultGrad()), {groups}),
        lowering.lookup(op.getInput()), result};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, groups, 2 * length,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, groups, [&](OpBuilder &b, Location loc, Value g) {
                SmallVector<Value> kept = kb::delinearize(b, loc, g, keptShape);
                // The full index of element r of the group.
                auto indexOf = [&](OpBuilder &b, Location loc, Value r) {
                  SmallVector<Value> inGroup =
                      kb::delinearize(b, loc, r, reducedShape);
                  SmallVector<Value> index(rank);
                  for (auto [i, d] : llvm::enumerate(keptDims))
                    index[d] = kept[i];
                  for (auto [i, d] : llvm::enumerate(reducedDims))
                    index[d] = inGroup[i];
                  return index;
                };
                Value zeroIndex = kb::index(b, loc, 0);
                Value first = memref::LoadOp::create(
                    b, loc, args[1], indexOf(b, loc, zeroIndex));
                Value zero = kb::floatConst(b, loc, first.getType(), 0.0);
                // Zero the group while looking for its first maximum.
                memref::StoreOp::create(b, loc, zero, args[2],
                                        indexOf(b, loc, zeroIndex));
                SmallVector<Value> best = kb::forLoop(
                    b, loc, kb::index(b, loc, 1), kb::index(b, loc, length),
                    {first, zeroIndex},
                    [&](OpBuilder &b, Location loc, Value r,
                        ValueRange acc) -> SmallVector<Value> {
                      SmallVector<Value> index = indexOf(b, loc, r);
                      Value x = memref::LoadOp::create(b, loc, args[1], index);
                      memref::StoreOp::create(b, loc, zero, args[2], index);
                      Value greater = arith::CmpFOp::create(
                          b, loc, arith::CmpFPredicate::OGT, x, acc[0]);
                      return {
                          arith::SelectOp::create(b, loc, greater, x, acc[0]),
                          arith::SelectOp::create(b, loc, greater, r, acc[1])};
                    });
                Value dy = memref::LoadOp::create(b, loc, args[0], g);
                memref::StoreOp::create(b, loc, dy, args[2],
                                        indexOf(b, loc, best[1]));
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// Per row: the max, the sum of exponentials, then
/// dx_c = (dloss / N) (exp(x_c - max) / sum - q_c), q the smoothed target,
/// its weights computed in the element type as the interpreter computes
/// them. A target outside [0, C) is recorded in the status buffer.
struct CrossEntropyGradToKernel : OpToKernelPattern<graph::CrossEntropyGradOp> {
  LogicalResult lowerOp(graph::CrossEntropyGradOp op,
                        KernelLowering &lowering) const override {
    auto logitsType = op.getLogits().getType();
    Type elementType = logitsType.getElementType();
    int64_t classes = logitsType.getShape().back();
    int64_t rows = op.getTargets().getType().getNumElements();
    double smoothing = op.getLabelSmoothing().convertToDouble();
    llvm::APFloat onTarget = kb::roundTo(elementType, 1.0);
    onTarget.subtract(kb::roundTo(elementType, smoothing),
                      llvm::APFloat::rmNearestTiesToEven);
    llvm::APFloat perClass = kb::roundTo(elementType, smoothing);
    perClass.divide(kb::roundTo(elementType, static_cast<double>(classes)),
                    llvm::APFloat::rmNearestTiesToEven);
    llvm::APFloat targetWeight = perClass;
    targetWeight.add(onTarget, llvm::APFloat::rmNearestTiesToEven);

    Value result = lowering.allocateResult(op.getResult());
    // The logits through an ElementSource: inside a fusion region (a cast
    // up from the low precision), their producers are computed here.
    ElementSource logits =
        lowering.getElementSource(op.getLogits(), {rows, classes});
    SmallVector<Value> buffers = {
        lowering.lookup(op.getResultGrad()),
        lowering.view(lowering.lookup(op.getTargets()), {rows}),
        lowering.view(result, {rows, classes}), lowering.getStatus()};
    llvm::append_range(buffers, logits.getBuffers());
    if (rows > 0)
      lowering.launch(
          op.getLoc(), op->getName().getStringRef(), buffers, rows, 3 * classes,
          [&](OpBuilder &b, Location loc, ValueRange args) {
            kb::parallelFor(
                b, loc, rows, [&](OpBuilder &b, Location loc, Value r) {
                  Value target = kb::toI64(
                      b, loc, memref::LoadOp::create(b, loc, args[1], r));
                  auto ifOp = scf::IfOp::create(
                      b, loc, kb::isOutside(b, loc, target, classes), false);
                  {
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                    kb::recordStatus(b, loc, args[3], KernelStatus::BadTarget,
                                     target);
                  }
                  auto load = [&](OpBuilder &b, Location loc, Value c,
                                  bool covering = false) -> Value {
                    return logits.read(b, loc, args.drop_front(4), {r, c},
                                       covering);
                  };
                  Value max = kb::forLoop(
                      b, loc, classes,
                      kb::negativeInfinity(b, loc, elementType),
                      [&](OpBuilder &b, Location loc, Value c,
                          ValueRange acc) -> SmallVector<Value> {
                        return {kb::stdMax(b, loc, acc[0],
                                           load(b, loc, c, /*covering=*/true))};
                      })[0];
                  Value sumExp = kb::forLoop(
                      b, loc, classes, kb::floatConst(b, loc, elementType, 0.0),
                      [&](OpBuilder &b, Location loc, Value c,
                          ValueRange acc) -> SmallVector<Value> {
                        Value e = math::ExpOp::create(
                            b, loc,
                            arith::SubFOp::create(b, loc, load(b, loc, c),
                                                  max));
                        return {arith::AddFOp::create(b, loc, acc[0], e)};
                      })[0];
                  Value rowScale = arith::DivFOp::create(
                      b, loc,
                      memref::LoadOp::create(b, loc, args[0], ValueRange{}),
                      kb::floatConst(b, loc, elementType,
                                     static_cast<double>(rows)));
                  Value onWeight =
                      kb::floatConst(b, loc, elementType, targetWeight);
                  Value offWeight =
                      kb::floatConst(b, loc, elementType, perClass);
                  kb::forLoop(
                      b, loc, classes, {},
                      [&](OpBuilder &b, Location loc, Value c,
                          ValueRange) -> SmallVector<Value> {
                        Value probability = arith::DivFOp::create(
                            b, loc,
                            math::ExpOp::create(
                                b, loc,
                                arith::SubFOp::create(b, loc, load(b, loc, c),
                                                      max)),
                            sumExp);
                        Value isTarget = arith::CmpIOp::create(
                            b, loc, arith::CmpIPredicate::eq,
                            arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                                       c),
                            target);
                        Value weight = arith::SelectOp::create(
                            b, loc, isTarget, onWeight, offWeight);
                        Value dx = arith::MulFOp::create(
                            b, loc, rowScale,
                            arith::SubFOp::create(b, loc, probability, weight));
                        memref::StoreOp::create(b, loc, dx, args[2],
                                                ValueRange{r, c});
                        return {};
                      });
                });
          });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// table[ids[i]] += dy[i] for every i in order, as a gather-free loop: one
/// parallel iteration per block of table columns, which zeroes its columns
/// and adds every dy row's part in increasing i. Each table element thus
/// sums exactly the interpreter's terms in the interpreter's order, and no
/// two iterations touch the same element. Ids outside [0, V) are recorded
/// in the status buffer and skipped.
struct EmbeddingGradToKernel : OpToKernelPattern<graph::EmbeddingGradOp> {
  LogicalResult lowerOp(graph::EmbeddingGradOp op,
                        KernelLowering &lowering) const override {
    auto tableType = op.getType();
    Type elementType = tableType.getElementType();
    int64_t vocab = tableType.getDimSize(0), width = tableType.getDimSize(1);
    int64_t count = op.getIds().getType().getNumElements();
    // Columns of the table one iteration owns (the target's
    // embeddingColumnBlock; on the cpu a 64-byte line of f32, so that
    // iterations never share a cache line).
    int64_t blockWidth =
        std::min(width, lowering.getSchedule().embeddingColumnBlock);
    int64_t blocks =
        blockWidth == 0 ? 0 : (width + blockWidth - 1) / blockWidth;
    Value result = lowering.allocateResult(op.getResult());
    if (blocks == 0 || vocab == 0) {
      lowering.bind(op.getResult(), result);
      return success();
    }
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getResultGrad()), {count, width}),
        lowering.view(lowering.lookup(op.getIds()), {count}), result,
        lowering.getStatus()};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, blocks,
        (vocab + count) * blockWidth,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, blocks, [&](OpBuilder &b, Location loc, Value block) {
                Value begin, end;
                std::tie(begin, end) =
                    kb::blockRange(b, loc, block, blockWidth, width);
                Value zero = kb::floatConst(b, loc, elementType, 0.0);
                kb::forLoop(b, loc, vocab, {},
                            [&](OpBuilder &b, Location loc, Value v,
                                ValueRange) -> SmallVector<Value> {
                              kb::forLoop(
                                  b, loc, begin, end, {},
                                  [&](OpBuilder &b, Location loc, Value d,
                                      ValueRange) -> SmallVector<Value> {
                                    memref::StoreOp::create(b, loc, zero,
                                                            args[2],
                                                            ValueRange{v, d});
                                    return {};
                                  });
                              return {};
                            });
                kb::forLoop(
                    b, loc, count, {},
                    [&](OpBuilder &b, Location loc, Value i,
                        ValueRange) -> SmallVector<Value> {
                      Value id = kb::toI64(
                          b, loc, memref::LoadOp::create(b, loc, args[1], i));
                      auto ifOp = scf::IfOp::create(
                          b, loc, kb::isOutside(b, loc, id, vocab),
                          /*withElseRegion=*/true);
                      OpBuilder::InsertionGuard guard(b);
                      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                      kb::recordStatus(b, loc, args[3],
                                       KernelStatus::BadEmbeddingId, id);
                      b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
                      Value row = arith::IndexCastOp::create(
                          b, loc, b.getIndexType(), id);
                      kb::forLoop(b, loc, begin, end, {},
                                  [&](OpBuilder &b, Location loc, Value d,
                                      ValueRange) -> SmallVector<Value> {
                                    Value sum = memref::LoadOp::create(
                                        b, loc, args[2], ValueRange{row, d});
                                    Value dy = memref::LoadOp::create(
                                        b, loc, args[0], ValueRange{i, d});
                                    memref::StoreOp::create(
                                        b, loc,
                                        arith::AddFOp::create(b, loc, sum, dy),
                                        args[2], ValueRange{row, d});
                                    return {};
                                  });
                      return {};
                    });
              });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};
} // namespace

void kiln::populateGradToKernelPatterns(GraphToKernelPatternSet &patterns) {
  patterns.add<PadToKernel>();
  patterns.add<SoftmaxGradToKernel>();
  patterns.add<ReduceMaxGradToKernel>();
  patterns.add<CrossEntropyGradToKernel>();
  patterns.add<EmbeddingGradToKernel>();
}
