//===- AttentionToKernel.cpp - graph.attention to a row kernel -------------===//
//
// Part of Kiln. One parallel iteration per (batch..., query row): the scores
// of the visible keys go to that row of a scratch buffer (an argument, not
// an allocation), then the max-subtracted softmax, then the weighted sum of
// the values, each sum in increasing key order as the interpreter computes
// it (lib/Interpreter/Linalg.cpp).
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
struct AttentionToKernel : OpToKernelPattern<graph::AttentionOp> {
  LogicalResult lowerOp(graph::AttentionOp op,
                        KernelLowering &lowering) const override {
    ArrayRef<int64_t> qShape = op.getQuery().getType().getShape();
    ArrayRef<int64_t> kShape = op.getKey().getType().getShape();
    ArrayRef<int64_t> vShape = op.getValue().getType().getShape();
    Type elementType = op.getType().getElementType();
    int64_t rank = qShape.size();
    int64_t queries = qShape[rank - 2], keyDim = qShape[rank - 1];
    int64_t keys = kShape[rank - 2], valueDim = vShape[rank - 1];
    int64_t batches = 1;
    for (int64_t dim : qShape.drop_back(2))
      batches *= dim;
    bool causal = op.getCausal();
    double scale = op.getEffectiveScale();
    int64_t range = batches * queries;

    Value result = lowering.allocateResult(op.getResult());
    Value scores =
        lowering.allocateTransient(MemRefType::get({range, keys}, elementType));
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getQuery()),
                      {batches, queries, keyDim}),
        lowering.view(lowering.lookup(op.getKey()), {batches, keys, keyDim}),
        lowering.view(lowering.lookup(op.getValue()),
                      {batches, keys, valueDim}),
        scores, lowering.view(result, {batches, queries, valueDim})};
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, range,
        kb::chooseGrain(range, keys * (keyDim + valueDim)),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value q = args[0], k = args[1], v = args[2], s = args[3],
                out = args[4];
          kb::parallelFor(b, loc, range, [&](OpBuilder &b, Location loc,
                                             Value p) {
            SmallVector<Value> position =
                kb::delinearize(b, loc, p, {batches, queries});
            Value batch = position[0], i = position[1];
            Value visible =
                causal ? arith::AddIOp::create(b, loc, i, kb::index(b, loc, 1))
                             .getResult()
                       : kb::index(b, loc, keys);
            Value zero = kb::floatConst(b, loc, elementType, 0.0);
            Value zeroIndex = kb::index(b, loc, 0);
            Value scaleValue = kb::floatConst(b, loc, elementType, scale);
            // s_j = (q_i . k_j) * scale, and their max.
            Value max = kb::forLoop(
                b, loc, zeroIndex, visible,
                kb::negativeInfinity(b, loc, elementType),
                [&](OpBuilder &b, Location loc, Value j,
                    ValueRange acc) -> SmallVector<Value> {
                  Value dot = kb::forLoop(
                      b, loc, keyDim, zero,
                      [&](OpBuilder &b, Location loc, Value d,
                          ValueRange sum) -> SmallVector<Value> {
                        Value x = memref::LoadOp::create(
                            b, loc, q, ValueRange{batch, i, d});
                        Value y = memref::LoadOp::create(
                            b, loc, k, ValueRange{batch, j, d});
                        return {arith::AddFOp::create(
                            b, loc, sum[0], arith::MulFOp::create(b, loc, x, y))};
                      })[0];
                  Value score = arith::MulFOp::create(b, loc, dot, scaleValue);
                  memref::StoreOp::create(b, loc, score, s, ValueRange{p, j});
                  Value less = arith::CmpFOp::create(
                      b, loc, arith::CmpFPredicate::OLT, acc[0], score);
                  return {arith::SelectOp::create(b, loc, less, score, acc[0])};
                })[0];
            // w_j = exp(s_j - max) / total.
            Value total = kb::forLoop(
                b, loc, zeroIndex, visible, zero,
                [&](OpBuilder &b, Location loc, Value j,
                    ValueRange acc) -> SmallVector<Value> {
                  Value score =
                      memref::LoadOp::create(b, loc, s, ValueRange{p, j});
                  Value w = math::ExpOp::create(
                      b, loc, arith::SubFOp::create(b, loc, score, max));
                  memref::StoreOp::create(b, loc, w, s, ValueRange{p, j});
                  return {arith::AddFOp::create(b, loc, acc[0], w)};
                })[0];
            kb::forLoop(b, loc, zeroIndex, visible, {},
                        [&](OpBuilder &b, Location loc, Value j,
                            ValueRange) -> SmallVector<Value> {
                          Value w = memref::LoadOp::create(b, loc, s,
                                                           ValueRange{p, j});
                          memref::StoreOp::create(
                              b, loc, arith::DivFOp::create(b, loc, w, total),
                              s, ValueRange{p, j});
                          return {};
                        });
            // out_i = sum_j w_j v_j.
            kb::forLoop(
                b, loc, valueDim, {},
                [&](OpBuilder &b, Location loc, Value d,
                    ValueRange) -> SmallVector<Value> {
                  Value sum = kb::forLoop(
                      b, loc, zeroIndex, visible, zero,
                      [&](OpBuilder &b, Location loc, Value j,
                          ValueRange acc) -> SmallVector<Value> {
                        Value w = memref::LoadOp::create(b, loc, s,
                                                         ValueRange{p, j});
                        Value x = memref::LoadOp::create(
                            b, loc, v, ValueRange{batch, j, d});
                        return {arith::AddFOp::create(
                            b, loc, acc[0], arith::MulFOp::create(b, loc, w, x))};
                      })[0];
                  memref::StoreOp::create(b, loc, sum, out,
                                          ValueRange{batch, i, d});
                  return {};
                });
          });
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};
} // namespace

void kiln::populateAttentionToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<AttentionToKernel>();
}
