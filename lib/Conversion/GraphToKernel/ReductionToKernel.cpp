//===- ReductionToKernel.cpp - graph.reduce to kernels ---------------------===//
//
// Part of Kiln. A reduction kernel runs one parallel iteration per result
// element; each visits its reduced elements in increasing row-major order
// with the accumulator in a register, as the interpreter does, so the result
// does not depend on how the range is chunked.
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
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(),
        {lowering.lookup(op.getInput()), lowering.view(result, {kept})}, kept,
        kb::chooseGrain(kept, count),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(b, loc, kept, [&](OpBuilder &b, Location loc,
                                            Value keptIndex) {
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
                  Value x = memref::LoadOp::create(b, loc, args[0], indices);
                  Value acc = carried[0];
                  if (kind == graph::ReduceKind::Max) {
                    // NaN propagates: x wins when unordered or greater.
                    Value greater = arith::CmpFOp::create(
                        b, loc, arith::CmpFPredicate::UGT, x, acc);
                    return {arith::SelectOp::create(b, loc, greater, x, acc)};
                  }
                  return {arith::AddFOp::create(b, loc, acc, x)};
                })[0];
            if (kind == graph::ReduceKind::Mean)
              acc = arith::DivFOp::create(
                  b, loc, acc,
                  kb::floatConst(b, loc, elementType,
                                 static_cast<double>(count)));
            memref::StoreOp::create(b, loc, acc, args[1], keptIndex);
          });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};
} // namespace

void kiln::populateReductionToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<ReduceToKernel>();
}
