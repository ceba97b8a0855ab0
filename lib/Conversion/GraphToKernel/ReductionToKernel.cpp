//===- ReductionToKernel.cpp - graph.reduce to kernels
//---------------------===//
//
// Part of Kiln. Every reduction sums each result element's inputs in
// increasing row-major order, as the interpreter does, and no sum crosses
// a parallel iteration, so the result does not depend on how the range is
// chunked. Three templates:
// - rows (the reduced dims trail the kept ones, as in a sum over the last
//   dim): one iteration per result element over its contiguous row;
// - columns (the reduced dims lead, as in a bias gradient summed over batch
//   and time): one iteration per block of result columns, walking the rows
//   in order and adding each row's contiguous part into the block's
//   accumulators (the result itself), which vectorizes and reads memory in
//   order;
// - any other set of axes: one iteration per result element, indexing its
//   inputs through the delinearized reduced index.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kiln;

namespace {
struct ReduceToKernel : OpToKernelPattern<graph::ReduceOp> {
  LogicalResult lowerOp(graph::ReduceOp op,
                        KernelLowering &lowering) const override {
    ArrayRef<int64_t> shape = op.getInput().getType().getShape();
    Type elementType = op.getType().getElementType();
    SmallVector<bool> reduced(shape.size(), false);
    for (int64_t axis : op.getAxes())
      reduced[axis] = true;
    SmallVector<int64_t> keptShape, reducedShape;
    for (auto [d, dim] : llvm::enumerate(shape))
      (reduced[d] ? reducedShape : keptShape).push_back(dim);
    int64_t kept = 1, count = 1;
    for (int64_t dim : keptShape)
      kept *= dim;
    for (int64_t dim : reducedShape)
      count *= dim;
    graph::ReduceKind kind = op.getKind();

    Value result = lowering.allocateResult(op.getResult());
    lowering.bind(op.getResult(), result);
    if (kept == 0)
      return success();
    // The reduced dims lead (the op walks columns) or trail the kept ones.
    int64_t firstKept = 0, lastKept = -1;
    for (auto [d, isReduced] : llvm::enumerate(reduced))
      if (!isReduced) {
        if (lastKept < 0)
          firstKept = d;
        lastKept = d;
      }
    bool keptContiguous =
        lastKept < 0 || llvm::none_of(ArrayRef<bool>(reduced).slice(
                                          firstKept, lastKept - firstKept + 1),
                                      [](bool isReduced) { return isReduced; });
    if (count > 0 && op.walksColumns()) {
      lowerColumns(op, lowering, result, kept, count, kind, elementType);
      return success();
    }
    if (count > 0 && keptContiguous && (lastKept < 0 || firstKept == 0)) {
      lowerRows(op, lowering, result, kept, count, kind, elementType);
      return success();
    }
    ElementSource input = lowering.getElementSource(op.getInput(), shape);
    SmallVector<Value> buffers = {lowering.view(result, {kept})};
    llvm::append_range(buffers, input.getBuffers());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, kept, count,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, kept, [&](OpBuilder &b, Location loc, Value keptIndex) {
                SmallVector<Value> keptIndices =
                    kb::delinearize(b, loc, keptIndex, keptShape);
                Value init = kind == graph::ReduceKind::Max
                                 ? kb::negativeInfinity(b, loc, elementType)
                                 : kb::floatConst(b, loc, elementType, 0.0);
                Value acc = kb::forLoop(
                    b, loc, count, init,
                    [&](OpBuilder &b, Location loc, Value r,
                        ValueRange carried) -> SmallVector<Value> {
                      SmallVector<Value> reducedIndices =
                          kb::delinearize(b, loc, r, reducedShape);
                      SmallVector<Value> indices;
                      unsigned nextKept = 0, nextReduced = 0;
                      for (bool isReduced : reduced)
                        indices.push_back(isReduced
                                              ? reducedIndices[nextReduced++]
                                              : keptIndices[nextKept++]);
                      Value x = input.read(b, loc, args.drop_front(), indices,
                                           /*covering=*/true);
                      Value acc = carried[0];
                      if (kind == graph::ReduceKind::Max) {
                        // NaN propagates: x wins when unordered or greater.
                        Value greater = arith::CmpFOp::create(
                            b, loc, arith::CmpFPredicate::UGT, x, acc);
                        return {
                            arith::SelectOp::create(b, loc, greater, x, acc)};
                      }
                      return {arith::AddFOp::create(b, loc, acc, x)};
                    })[0];
                if (kind == graph::ReduceKind::Mean)
                  acc = arith::DivFOp::create(
                      b, loc, acc,
                      kb::floatConst(b, loc, elementType,
                                     static_cast<double>(count)));
                memref::StoreOp::create(b, loc, acc, args[0], keptIndex);
              });
        });
    return success();
  }

  /// The accumulator's next value after `x`: NaN propagates through max.
  static Value combine(OpBuilder &b, Location loc, graph::ReduceKind kind,
                       Value acc, Value x) {
    if (kind == graph::ReduceKind::Max) {
      Value greater =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGT, x, acc);
      return arith::SelectOp::create(b, loc, greater, x, acc);
    }
    return arith::AddFOp::create(b, loc, acc, x);
  }

  static Value initialValue(OpBuilder &b, Location loc, graph::ReduceKind kind,
                            Type elementType) {
    return kind == graph::ReduceKind::Max
               ? kb::negativeInfinity(b, loc, elementType)
               : kb::floatConst(b, loc, elementType, 0.0);
  }

  static Value finalValue(OpBuilder &b, Location loc, graph::ReduceKind kind,
                          Value acc, int64_t count) {
    if (kind != graph::ReduceKind::Mean)
      return acc;
    return arith::DivFOp::create(
        b, loc, acc,
        kb::floatConst(b, loc, acc.getType(), static_cast<double>(count)));
  }

  /// The input seen as [kept, count]: one iteration per row.
  static void lowerRows(graph::ReduceOp op, KernelLowering &lowering,
                        Value result, int64_t kept, int64_t count,
                        graph::ReduceKind kind, Type elementType) {
    ElementSource input =
        lowering.getElementSource(op.getInput(), {kept, count});
    SmallVector<Value> buffers = {lowering.view(result, {kept})};
    llvm::append_range(buffers, input.getBuffers());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, kept, count,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, kept, [&](OpBuilder &b, Location loc, Value k) {
                Value acc = kb::forLoop(
                    b, loc, count, initialValue(b, loc, kind, elementType),
                    [&](OpBuilder &b, Location loc, Value r,
                        ValueRange carried) -> SmallVector<Value> {
                      Value x = input.read(b, loc, args.drop_front(), {k, r},
                                           /*covering=*/true);
                      return {combine(b, loc, kind, carried[0], x)};
                    })[0];
                memref::StoreOp::create(
                    b, loc, finalValue(b, loc, kind, acc, count), args[0], k);
              });
        });
  }

  /// The input seen as [count, kept]: one iteration per block of result
  /// columns (the target's ScheduleParameters::columnBlock), accumulating
  /// row after row into them.
  static void lowerColumns(graph::ReduceOp op, KernelLowering &lowering,
                           Value result, int64_t kept, int64_t count,
                           graph::ReduceKind kind, Type elementType) {
    int64_t blockWidth = std::min(kept, lowering.getSchedule().columnBlock);
    int64_t blocks = (kept + blockWidth - 1) / blockWidth;
    ElementSource input =
        lowering.getElementSource(op.getInput(), {count, kept});
    SmallVector<Value> buffers = {lowering.view(result, {kept})};
    llvm::append_range(buffers, input.getBuffers());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, blocks,
        count * blockWidth, [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, blocks, [&](OpBuilder &b, Location loc, Value block) {
                Value begin, end;
                std::tie(begin, end) =
                    kb::blockRange(b, loc, block, blockWidth, kept);
                auto overBlock =
                    [&](llvm::function_ref<void(OpBuilder &, Location, Value)>
                            body) {
                      kb::forLoop(b, loc, begin, end, {},
                                  [&](OpBuilder &b, Location loc, Value c,
                                      ValueRange) -> SmallVector<Value> {
                                    body(b, loc, c);
                                    return {};
                                  });
                    };
                overBlock([&](OpBuilder &b, Location loc, Value c) {
                  memref::StoreOp::create(
                      b, loc, initialValue(b, loc, kind, elementType), args[0],
                      c);
                });
                kb::forLoop(
                    b, loc, count, {},
                    [&](OpBuilder &b, Location loc, Value r,
                        ValueRange) -> SmallVector<Value> {
                      overBlock([&](OpBuilder &b, Location loc, Value c) {
                        Value x = input.read(b, loc, args.drop_front(), {r, c},
                                             /*covering=*/true);
                        Value acc = memref::LoadOp::create(b, loc, args[0], c);
                        memref::StoreOp::create(
                            b, loc, combine(b, loc, kind, acc, x), args[0], c);
                      });
                      return {};
                    });
                if (kind == graph::ReduceKind::Mean)
                  overBlock([&](OpBuilder &b, Location loc, Value c) {
                    Value acc = memref::LoadOp::create(b, loc, args[0], c);
                    memref::StoreOp::create(
                        b, loc, finalValue(b, loc, kind, acc, count), args[0],
                        c);
                  });
              });
        });
  }
};
} // namespace

void kiln::populateReductionToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<ReduceToKernel>();
}
