//===- AttentionToKernel.cpp - graph.attention to GEMMs and a row kernel --===//
//
// Part of Kiln. Where the target has fused attention kernels, they take it
// (FusedAttentionToKernel.cpp); otherwise
// out = softmax(q k^T * scale [+ mask] [causal]) v as two batched
// library GEMMs around a row kernel: the scores go into a scratch buffer of
// [batch, queries, keys] (a transient, not an allocation inside a kernel),
// the row kernel adds the mask (read in place, broadcast by its layout)
// and turns each row into probabilities -- the max-subtracted
// exponentials of the visible keys and their sum in increasing key order,
// zeros where masked -- and the second GEMM weighs the values. The
// gradient (AttentionGradToKernel.cpp) recomputes the probabilities the same
// way. Sums inside a GEMM follow the library's order: f32 results agree
// with the interpreter's loops to rounding (~1e-7), not bit for bit, and do
// not depend on the thread count. With 16-bit inputs (mixed precision) the
// scores are f32 (the GEMM accumulates and stores in f32), the row kernel
// computes in f32, and only the probabilities, which the second GEMM
// reads, are rounded to the inputs' type.
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

void kiln::setAttentionMask(KernelLowering &lowering, Value query, Value key,
                            Value maskTensor, AttentionShape &shape) {
  if (!maskTensor)
    return;
  auto shapeOf = [](Value tensor) {
    return cast<RankedTensorType>(tensor.getType()).getShape();
  };
  std::string error;
  FailureOr<graph::AttentionMaskLayout> layout = graph::getAttentionMaskLayout(
      shapeOf(maskTensor),
      graph::getAttentionScoreShape(shapeOf(query), shapeOf(key)), error);
  assert(succeeded(layout) && "the verifier checks the mask's layout");
  shape.maskLayout = *layout;
  shape.mask = lowering.view(lowering.lookup(maskTensor),
                             {layout->batches * layout->queries, layout->keys});
}

std::pair<Value, Value>
kiln::buildAttentionMaskIndex(OpBuilder &b, Location loc,
                              const AttentionShape &shape, Value batch,
                              Value query, Value key) {
  const graph::AttentionMaskLayout &mask = shape.maskLayout;
  // Batch (b / divisor) % batches; query i, or the mask's only row.
  Value row = arith::MulIOp::create(
      b, loc,
      arith::RemUIOp::create(
          b, loc,
          arith::DivUIOp::create(b, loc, batch,
                                 kb::index(b, loc, mask.divisor)),
          kb::index(b, loc, mask.batches)),
      kb::index(b, loc, mask.queries));
  if (mask.queries != 1)
    row = arith::AddIOp::create(b, loc, row, query);
  return {row, mask.keys == 1 ? kb::index(b, loc, 0) : key};
}

void kiln::computeAttentionProbabilities(KernelLowering &lowering, Location loc,
                                         StringRef origin, Value query,
                                         Value key, Value probabilities,
                                         const AttentionShape &shape) {
  Type storage = cast<MemRefType>(probabilities.getType()).getElementType();
  Type elementType = kb::computeType(storage);
  int64_t queries = shape.queries, keys = shape.keys;
  bool causal = shape.causal;
  // The scores, in the compute type: the probabilities themselves (in
  // place) unless those are rounded to a narrower type.
  Value scores = probabilities;
  if (elementType != storage)
    scores = lowering.allocateTransient(
        MemRefType::get({shape.batches, queries, keys}, elementType));
  if (shape.keyDim > 0) {
    auto product = kernel::GemmOp::create(
        lowering.getBuilder(), loc, query, key, scores, queries, keys,
        shape.keyDim, shape.batches, queries * shape.keyDim,
        keys * shape.keyDim, queries * keys, /*transpose_a=*/false,
        /*transpose_b=*/true, llvm::APFloat(shape.scale), llvm::APFloat(0.0));
    lowering.setOrigin(product, origin);
  } else {
    lowering.setOrigin(
        kernel::ZeroOp::create(lowering.getBuilder(), loc, scores), origin);
  }
  int64_t rows = shape.batches * queries;
  SmallVector<Value> buffers = {lowering.view(scores, {rows, keys})};
  if (shape.mask)
    buffers.push_back(shape.mask);
  if (scores != probabilities)
    buffers.push_back(lowering.view(probabilities, {rows, keys}));
  lowering.launch(
      loc, origin, buffers, rows, 4 * keys + (shape.mask ? keys : 0),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        kb::parallelFor(
            b, loc, rows, [&](OpBuilder &b, Location loc, Value row) {
              Value batch, query;
              if (shape.mask) {
                Value count = kb::index(b, loc, queries);
                batch = arith::DivUIOp::create(b, loc, row, count);
                query = arith::RemUIOp::create(b, loc, row, count);
              }
              // A score, with its mask added.
              auto load = [&](Value j) -> Value {
                Value score =
                    memref::LoadOp::create(b, loc, args[0], ValueRange{row, j});
                if (!shape.mask)
                  return score;
                auto [maskRow, maskColumn] =
                    buildAttentionMaskIndex(b, loc, shape, batch, query, j);
                Value bias = kb::widen(
                    b, loc,
                    memref::LoadOp::create(b, loc, args[1],
                                           ValueRange{maskRow, maskColumn}));
                return arith::AddFOp::create(b, loc, score, bias);
              };
              auto loadStored = [&](Value j) -> Value {
                return memref::LoadOp::create(b, loc, args[0],
                                              ValueRange{row, j});
              };
              auto store = [&](Value value, Value j) {
                memref::StoreOp::create(b, loc, value, args[0],
                                        ValueRange{row, j});
              };
              // A probability, rounded to its storage.
              auto storeOut = [&](Value value, Value j) {
                memref::StoreOp::create(
                    b, loc, kb::narrow(b, loc, value, storage),
                    args[scores == probabilities ? 0 : args.size() - 1],
                    ValueRange{row, j});
              };
              Value zeroIndex = kb::index(b, loc, 0);
              Value visible = kb::index(b, loc, keys);
              if (causal) {
                Value i = arith::RemUIOp::create(b, loc, row,
                                                 kb::index(b, loc, queries));
                visible = arith::MinUIOp::create(
                    b, loc,
                    arith::AddIOp::create(b, loc, i, kb::index(b, loc, 1)),
                    visible);
              }
              Value max =
                  kb::forLoop(b, loc, zeroIndex, visible,
                              kb::negativeInfinity(b, loc, elementType),
                              [&](OpBuilder &b, Location loc, Value j,
                                  ValueRange acc) -> SmallVector<Value> {
                                return {kb::stdMax(b, loc, acc[0], load(j))};
                              })[0];
              Value total = kb::forLoop(
                  b, loc, zeroIndex, visible,
                  kb::floatConst(b, loc, elementType, 0.0),
                  [&](OpBuilder &b, Location loc, Value j,
                      ValueRange acc) -> SmallVector<Value> {
                    Value e = math::ExpOp::create(
                        b, loc, arith::SubFOp::create(b, loc, load(j), max));
                    store(e, j);
                    return {arith::AddFOp::create(b, loc, acc[0], e)};
                  })[0];
              kb::forLoop(
                  b, loc, zeroIndex, visible, {},
                  [&](OpBuilder &b, Location loc, Value j,
                      ValueRange) -> SmallVector<Value> {
                    storeOut(
                        arith::DivFOp::create(b, loc, loadStored(j), total), j);
                    return {};
                  });
              Value zero = kb::floatConst(b, loc, elementType, 0.0);
              kb::forLoop(b, loc, visible, kb::index(b, loc, keys), {},
                          [&](OpBuilder &b, Location loc, Value j,
                              ValueRange) -> SmallVector<Value> {
                            storeOut(zero, j);
                            return {};
                          });
            });
      });
}

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
    StringRef origin = op->getName().getStringRef();

    Value result = lowering.allocateResult(op.getResult());
    lowering.bind(op.getResult(), result);
    if (batches == 0 || queries == 0 || valueDim == 0)
      return success();
    if (keys == 0) {
      // No key to attend to: an empty sum.
      lowering.setOrigin(
          kernel::ZeroOp::create(lowering.getBuilder(), op.getLoc(), result),
          origin);
      return success();
    }
    AttentionShape shape{batches, queries,        keys,
                         keyDim,  op.getCausal(), op.getEffectiveScale()};
    setAttentionMask(lowering, op.getQuery(), op.getKey(), op.getMask(), shape);
    if (canFuseAttention(lowering, shape, valueDim, elementType)) {
      // The log-sum-exp of each row, for the gradient.
      Value lse = lowering.allocateTransient(
          MemRefType::get({batches, queries}, kb::computeType(elementType)));
      lowerFusedAttention(
          lowering, op.getLoc(), origin, lowering.lookup(op.getQuery()),
          lowering.lookup(op.getKey()), lowering.lookup(op.getValue()), result,
          lse, shape, valueDim);
      lowering.bindStatistics(op.getResult(), lse);
      return success();
    }
    Value probabilities = lowering.allocateTransient(
        MemRefType::get({batches, queries, keys}, elementType));
    computeAttentionProbabilities(
        lowering, op.getLoc(), origin, lowering.lookup(op.getQuery()),
        lowering.lookup(op.getKey()), probabilities, shape);
    auto weighted = kernel::GemmOp::create(
        lowering.getBuilder(), op.getLoc(), probabilities,
        lowering.lookup(op.getValue()), result, queries, valueDim, keys,
        batches, queries * keys, keys * valueDim, queries * valueDim,
        /*transpose_a=*/false, /*transpose_b=*/false, llvm::APFloat(1.0),
        llvm::APFloat(0.0));
    lowering.setOrigin(weighted, origin);
    return success();
  }
};
} // namespace

void kiln::populateAttentionToKernelPatterns(
    GraphToKernelPatternSet &patterns) {
  patterns.add<AttentionToKernel>();
}
