//===- AttentionGradToKernel.cpp - graph.attention_grad to GEMMs ----------===//
//
// Part of Kiln. After a fused forward (which saved each row's log-sum-exp),
// the fused backward of FusedAttentionToKernel.cpp. Otherwise the matrix
// products of the attention gradient are library
// GEMMs, batched over (batch x head), and the row work between them is two
// row kernels:
//   S  = q k^T * scale                      (GEMM)
//   P  = softmax(S + mask) over the visible keys (rows: zero where masked)
//   dv = P^T dout                           (GEMM)
//   dP = dout v^T                           (GEMM)
//   dS = P (dP - rowsum(dout out)) * scale  (rows)
//   dq = dS k,  dk = dS^T q                 (GEMMs)
// P is recomputed from q and k, with the forward's max-subtracted
// exponentials and increasing key order; of the forward only its result
// `out` is read (rowsum(dout out) = rowsum(dP P), over the value dim
// rather than the keys). S, P, dP
// and dS live in two transients of [batch, queries, keys]. Sums inside a
// GEMM follow the library's order, so f32 results agree with the
// interpreter's loops to rounding (~1e-7), not bit for bit; nothing
// depends on the thread count (one BLAS call per batch entry, row kernels
// with one row per iteration). With 16-bit inputs (mixed precision), dP is
// f32 and the row kernel computes in f32; P and dS, which GEMMs read, are
// rounded to the inputs' type, dS in a transient of its own.
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
    StringRef origin = op->getName().getStringRef();

    Value dq = lowering.allocateResult(op.getQueryGrad());
    Value dk = lowering.allocateResult(op.getKeyGrad());
    Value dv = lowering.allocateResult(op.getValueGrad());
    lowering.bind(op.getQueryGrad(), dq);
    lowering.bind(op.getKeyGrad(), dk);
    lowering.bind(op.getValueGrad(), dv);
    OpBuilder &builder = lowering.getBuilder();
    Location loc = op.getLoc();
    if (batches == 0 || queries == 0 || keys == 0)
      return success();
    if (keyDim == 0 || valueDim == 0) {
      // Nothing to multiply: every gradient is zero.
      for (Value buffer : {dq, dk, dv})
        lowering.setOrigin(kernel::ZeroOp::create(builder, loc, buffer),
                           origin);
      return success();
    }

    Value q = lowering.lookup(op.getQuery()), k = lowering.lookup(op.getKey()),
          v = lowering.lookup(op.getValue()),
          dout = lowering.lookup(op.getResultGrad()),
          out = lowering.lookup(op.getOut());
    // The forward's fused kernel saved its log-sum-exp: the fused backward.
    AttentionShape shape{batches, queries, keys, keyDim, causal, scale};
    setAttentionMask(lowering, op.getQuery(), op.getKey(), op.getMask(), shape);
    if (Value lse = lowering.lookupStatistics(op.getOut());
        lse && canFuseAttention(lowering, shape, valueDim, elementType)) {
      lowerFusedAttentionGrad(lowering, loc, origin, q, k, v, out, lse, dout,
                              dq, dk, dv, shape, valueDim);
      return success();
    }
    auto matrices = MemRefType::get({batches, queries, keys}, elementType);
    Type computeType = kb::computeType(elementType);
    Value probabilities = lowering.allocateTransient(matrices);
    Value products = lowering.allocateTransient(
        MemRefType::get({batches, queries, keys}, computeType));
    // dS over dP in place, unless it is rounded to a narrower type.
    Value scoreGrads = computeType == elementType
                           ? products
                           : lowering.allocateTransient(matrices);
    int64_t scoreStride = queries * keys;
    auto gemm = [&](Value a, Value b, Value c, int64_t m, int64_t n, int64_t kk,
                    int64_t strideA, int64_t strideB, bool transposeA,
                    bool transposeB, double alpha) {
      auto call = kernel::GemmOp::create(
          builder, loc, a, b, c, m, n, kk, batches, strideA, strideB, m * n,
          transposeA, transposeB, llvm::APFloat(alpha), llvm::APFloat(0.0));
      lowering.setOrigin(call, origin);
    };

    // S = q k^T * scale, then P in place.
    computeAttentionProbabilities(lowering, loc, origin, q, k, probabilities,
                                  shape);
    int64_t rows = batches * queries;
    Value rowsView = lowering.view(probabilities, {rows, keys});

    // dv = P^T dout; dP = dout v^T.
    gemm(probabilities, dout, dv, keys, valueDim, queries, scoreStride,
         queries * valueDim, true, false, 1.0);
    gemm(dout, v, products, queries, keys, valueDim, queries * valueDim,
         keys * valueDim, false, true, 1.0);

    // dS = P (dP - rowsum(dout out)) * scale.
    SmallVector<Value> buffers = {rowsView,
                                  lowering.view(products, {rows, keys}),
                                  lowering.view(dout, {rows, valueDim}),
                                  lowering.view(out, {rows, valueDim})};
    if (scoreGrads != products)
      buffers.push_back(lowering.view(scoreGrads, {rows, keys}));
    lowering.launch(
        loc, origin, buffers, rows, 2 * keys + 2 * valueDim,
        [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelFor(
              b, loc, rows, [&](OpBuilder &b, Location loc, Value row) {
                auto load = [&](Value buffer, Value j) -> Value {
                  return kb::widen(b, loc,
                                   memref::LoadOp::create(b, loc, buffer,
                                                          ValueRange{row, j}));
                };
                Value dot = kb::forLoop(
                    b, loc, valueDim, kb::floatConst(b, loc, computeType, 0.0),
                    [&](OpBuilder &b, Location loc, Value e,
                        ValueRange acc) -> SmallVector<Value> {
                      Value term = arith::MulFOp::create(
                          b, loc, load(args[2], e), load(args[3], e));
                      return {arith::AddFOp::create(b, loc, acc[0], term)};
                    })[0];
                Value scaleValue = kb::floatConst(b, loc, computeType, scale);
                kb::forLoop(b, loc, keys, {},
                            [&](OpBuilder &b, Location loc, Value j,
                                ValueRange) -> SmallVector<Value> {
                              Value ds = arith::MulFOp::create(
                                  b, loc,
                                  arith::MulFOp::create(
                                      b, loc, load(args[0], j),
                                      arith::SubFOp::create(
                                          b, loc, load(args[1], j), dot)),
                                  scaleValue);
                              memref::StoreOp::create(
                                  b, loc, kb::narrow(b, loc, ds, elementType),
                                  args.size() > 4 ? args[4] : args[1],
                                  ValueRange{row, j});
                              return {};
                            });
              });
        });

    // dq = dS k; dk = dS^T q.
    gemm(scoreGrads, k, dq, queries, keyDim, keys, scoreStride, keys * keyDim,
         false, false, 1.0);
    gemm(scoreGrads, q, dk, keys, keyDim, queries, scoreStride,
         queries * keyDim, true, false, 1.0);
    return success();
  }
};
} // namespace

void kiln::populateAttentionGradToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<AttentionGradToKernel>();
}
