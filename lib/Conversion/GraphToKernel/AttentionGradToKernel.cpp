//===- AttentionGradToKernel.cpp - graph.attention_grad to a kernel -------===//
//
// Part of Kiln. One parallel iteration per batch entry (batch x head): dk
// and dv sum over every query row of the entry, so an entry is the
// smallest unit whose results no other iteration touches. Inside it, the
// interpreter's loops (lib/Interpreter/GradOps.cpp) in its order: for each
// query row, the probabilities are recomputed from q and k exactly as the
// forward computes them, then dv += p dout, dp = dout v^T,
// ds = p (dp - p.dp) scale, dq += ds k, dk += ds q. The probabilities and
// dp of the current row live in scratch rows of the entry (arguments, not
// allocations).
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
struct AttentionGradToKernel : OpToKernelPattern<graph::AttentionGradOp> {
  LogicalResult lowerOp(graph::AttentionGradOp op,
                        KernelLowering &lowering) const override {
    ArrayRef<int64_t> qShape = op.getQuery().getType().getShape();
    ArrayRef<int64_t> kShape = op.getKey().getType().getShape();
    ArrayRef<int64_t> vShape = op.getValue().getType().getShape();
    Type elementType = op.getQuery().getType().getElementType();
    int64_t rank = qShape.size();
    int64_t queries = qShape[rank - 2], keyDim = qShape[rank - 1];
    int64_t keys = kShape[rank - 2], valueDim = vShape[rank - 1];
    int64_t batches = 1;
    for (int64_t dim : qShape.drop_back(2))
      batches *= dim;
    bool causal = op.getCausal();
    double scale = op.getEffectiveScale();

    Value dqBuffer = lowering.allocateResult(op.getQueryGrad());
    Value dkBuffer = lowering.allocateResult(op.getKeyGrad());
    Value dvBuffer = lowering.allocateResult(op.getValueGrad());
    lowering.bind(op.getQueryGrad(), dqBuffer);
    lowering.bind(op.getKeyGrad(), dkBuffer);
    lowering.bind(op.getValueGrad(), dvBuffer);
    if (batches == 0)
      return success();
    Value scratch = lowering.allocateTransient(
        MemRefType::get({batches, 2, std::max<int64_t>(keys, 1)}, elementType));
    Value buffers[] = {
        lowering.view(lowering.lookup(op.getResultGrad()),
                      {batches, queries, valueDim}),
        lowering.view(lowering.lookup(op.getQuery()),
                      {batches, queries, keyDim}),
        lowering.view(lowering.lookup(op.getKey()), {batches, keys, keyDim}),
        lowering.view(lowering.lookup(op.getValue()),
                      {batches, keys, valueDim}),
        scratch, lowering.view(dqBuffer, {batches, queries, keyDim}),
        lowering.view(dkBuffer, {batches, keys, keyDim}),
        lowering.view(dvBuffer, {batches, keys, valueDim})};
    int64_t work = queries * keys * (2 * keyDim + 2 * valueDim);
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(), buffers, batches,
        kb::chooseGrain(batches, work),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value dout = args[0], q = args[1], k = args[2], v = args[3],
                s = args[4], dq = args[5], dk = args[6], dv = args[7];
          kb::parallelFor(b, loc, batches, [&](OpBuilder &b, Location loc,
                                               Value batch) {
            auto add = [&](Value x, Value y) -> Value {
              return arith::AddFOp::create(b, loc, x, y);
            };
            auto sub = [&](Value x, Value y) -> Value {
              return arith::SubFOp::create(b, loc, x, y);
            };
            auto mul = [&](Value x, Value y) -> Value {
              return arith::MulFOp::create(b, loc, x, y);
            };
            auto load = [&](Value buffer, Value i, Value j) -> Value {
              return memref::LoadOp::create(b, loc, buffer,
                                            ValueRange{batch, i, j});
            };
            auto store = [&](Value value, Value buffer, Value i, Value j) {
              memref::StoreOp::create(b, loc, value, buffer,
                                      ValueRange{batch, i, j});
            };
            /// Runs `body(i, j)` over [0, rows) x [0, columns).
            auto forEach = [&](Value rows, int64_t columns,
                               llvm::function_ref<void(Value, Value)> body) {
              kb::forLoop(b, loc, kb::index(b, loc, 0), rows, {},
                          [&](OpBuilder &, Location, Value i,
                              ValueRange) -> SmallVector<Value> {
                            kb::forLoop(b, loc, columns, {},
                                        [&](OpBuilder &, Location, Value j,
                                            ValueRange) -> SmallVector<Value> {
                                          body(i, j);
                                          return {};
                                        });
                            return {};
                          });
            };
            Value zero = kb::floatConst(b, loc, elementType, 0.0);
            Value zeroIndex = kb::index(b, loc, 0);
            Value probabilityRow = zeroIndex, dpRow = kb::index(b, loc, 1);
            Value scaleValue = kb::floatConst(b, loc, elementType, scale);
            // The results accumulate: start from zeros.
            forEach(kb::index(b, loc, queries), keyDim,
                    [&](Value i, Value d) { store(zero, dq, i, d); });
            forEach(kb::index(b, loc, keys), keyDim,
                    [&](Value j, Value d) { store(zero, dk, j, d); });
            forEach(kb::index(b, loc, keys), valueDim,
                    [&](Value j, Value d) { store(zero, dv, j, d); });

            kb::forLoop(b, loc, queries, {}, [&](OpBuilder &, Location,
                                                 Value i,
                                                 ValueRange) -> SmallVector<Value> {
              Value visible =
                  causal ? arith::AddIOp::create(b, loc, i, kb::index(b, loc, 1))
                               .getResult()
                         : kb::index(b, loc, keys);
              auto forVisible =
                  [&](ValueRange init,
                      llvm::function_ref<SmallVector<Value>(Value, ValueRange)>
                          body) {
                    return kb::forLoop(
                        b, loc, zeroIndex, visible, init,
                        [&](OpBuilder &, Location, Value j,
                            ValueRange acc) { return body(j, acc); });
                  };
              auto dot = [&](Value x, Value xRow, Value y, Value yRow,
                             int64_t length) {
                return kb::forLoop(b, loc, length, zero,
                                   [&](OpBuilder &, Location, Value d,
                                       ValueRange acc) -> SmallVector<Value> {
                                     return {add(acc[0],
                                                 mul(load(x, xRow, d),
                                                     load(y, yRow, d)))};
                                   })[0];
              };
              // The probabilities, as the forward computes them.
              Value max = forVisible(
                  kb::negativeInfinity(b, loc, elementType),
                  [&](Value j, ValueRange acc) -> SmallVector<Value> {
                    Value score = mul(dot(q, i, k, j, keyDim), scaleValue);
                    store(score, s, probabilityRow, j);
                    return {kb::stdMax(b, loc, acc[0], score)};
                  })[0];
              Value total = forVisible(
                  zero, [&](Value j, ValueRange acc) -> SmallVector<Value> {
                    Value e = math::ExpOp::create(
                        b, loc, sub(load(s, probabilityRow, j), max));
                    store(e, s, probabilityRow, j);
                    return {add(acc[0], e)};
                  })[0];
              forVisible({}, [&](Value j, ValueRange) -> SmallVector<Value> {
                store(arith::DivFOp::create(b, loc,
                                            load(s, probabilityRow, j), total),
                      s, probabilityRow, j);
                return {};
              });
              // dv_j += p_j dout_i; dp_j = dout_i . v_j; their p-weighted sum.
              Value pDotDp = forVisible(
                  zero, [&](Value j, ValueRange acc) -> SmallVector<Value> {
                    Value p = load(s, probabilityRow, j);
                    Value dp = kb::forLoop(
                        b, loc, valueDim, zero,
                        [&](OpBuilder &, Location, Value d,
                            ValueRange sum) -> SmallVector<Value> {
                          Value o = load(dout, i, d);
                          store(add(load(dv, j, d), mul(p, o)), dv, j, d);
                          return {add(sum[0], mul(o, load(v, j, d)))};
                        })[0];
                    store(dp, s, dpRow, j);
                    return {add(acc[0], mul(p, dp))};
                  })[0];
              // ds_j = p_j (dp_j - p.dp) scale; dq_i += ds_j k_j;
              // dk_j += ds_j q_i.
              forVisible({}, [&](Value j, ValueRange) -> SmallVector<Value> {
                Value ds = mul(mul(load(s, probabilityRow, j),
                                   sub(load(s, dpRow, j), pDotDp)),
                               scaleValue);
                kb::forLoop(b, loc, keyDim, {},
                            [&](OpBuilder &, Location, Value d,
                                ValueRange) -> SmallVector<Value> {
                              store(add(load(dq, i, d), mul(ds, load(k, j, d))),
                                    dq, i, d);
                              store(add(load(dk, j, d), mul(ds, load(q, i, d))),
                                    dk, j, d);
                              return {};
                            });
                return {};
              });
              return {};
            });
          });
        });
    return success();
  }
};
} // namespace

void kiln::populateAttentionGradToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<AttentionGradToKernel>();
}
