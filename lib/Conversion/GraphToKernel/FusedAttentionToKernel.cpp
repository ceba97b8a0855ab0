//===- FusedAttentionToKernel.cpp - Attention as fused kernels ------------===//
//
// Part of Kiln. On a target with fused attention kernels
// (TargetInfo::hasFusedAttention), graph.attention is one
// kernel writing out and the log-sum-exp of each row (the mask, where there
// is one, read in place by every part), and its gradient
// three: delta = rowsum(dout * out) (a row kernel like any other), then
// dk and dv (a row per key) and dq (a row per query), which recompute the
// probabilities from q, k and the saved log-sum-exp. No [queries, keys]
// buffer exists. The three attention kernels carry their FusedAttention
// description (kernel.attention); their bodies below are the reference
// loops the target's tiled kernels stand for, and what the analyses of
// the kernel dialect read (each buffer's reads and writes). dq and dk/dv
// are separate kernels so that each output row has one writer: the sums
// are in a fixed order, without atomics.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Kernel/IR/FusedAttention.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kiln;
using kernel::FusedAttention;

bool kiln::canFuseAttention(const KernelLowering &lowering,
                            const AttentionShape &shape, int64_t valueDim,
                            Type elementType) {
  StringRef name = kernel::getAttentionTypeName(elementType);
  return lowering.allowsFusedAttention() && !name.empty() &&
         shape.batches > 0 && shape.queries > 0 && shape.keys > 0 &&
         lowering.getTarget().hasFusedAttention(name, shape.keyDim, valueDim);
}

namespace {
/// The loads and loops the reference bodies share: buffers [batch, row,
/// dim], a row's dot products and scaled scores.
struct Rows {
  OpBuilder &b;
  Location loc;
  Type type;
  Value batch;

  /// Loads widen 16-bit elements to `type` (f32) and stores round them
  /// back: the sums are in f32 whatever the buffers hold.
  Value load(Value buffer, ValueRange indices) {
    return kb::widen(b, loc, memref::LoadOp::create(b, loc, buffer, indices));
  }
  Value at(Value buffer, Value row, Value column) {
    return load(buffer, {batch, row, column});
  }
  void store(Value value, Value buffer, Value row, Value column) {
    Type storage = cast<MemRefType>(buffer.getType()).getElementType();
    memref::StoreOp::create(b, loc, kb::narrow(b, loc, value, storage), buffer,
                            ValueRange{batch, row, column});
  }
  /// Σ_c a[ra, c] * b[rb, c] over [0, dim), in increasing c.
  Value dot(Value a, Value ra, Value bb, Value rb, int64_t dim) {
    return kb::forLoop(b, loc, dim, kb::floatConst(b, loc, type, 0.0),
                       [&](OpBuilder &ib, Location loc, Value c,
                           ValueRange acc) -> SmallVector<Value> {
                         Rows inner{ib, loc, type, batch};
                         Value term = arith::MulFOp::create(
                             ib, loc, inner.at(a, ra, c), inner.at(bb, rb, c));
                         return {arith::AddFOp::create(ib, loc, acc[0], term)};
                       })[0];
  }
  /// row[e] = 0 for e in [0, dim).
  void zero(Value buffer, Value row, int64_t dim) {
    kb::forLoop(b, loc, dim, {},
                [&](OpBuilder &ib, Location loc, Value e,
                    ValueRange) -> SmallVector<Value> {
                  Rows inner{ib, loc, type, batch};
                  inner.store(kb::floatConst(ib, loc, type, 0.0), buffer, row,
                              e);
                  return {};
                });
  }
  /// target[tr, e] += weight * source[sr, e] for e in [0, dim).
  void accumulate(Value target, Value tr, Value weight, Value source, Value sr,
                  int64_t dim) {
    kb::forLoop(
        b, loc, dim, {},
        [&](OpBuilder &ib, Location loc, Value e,
            ValueRange) -> SmallVector<Value> {
          Rows inner{ib, loc, type, batch};
          Value sum = arith::AddFOp::create(
              ib, loc, inner.at(target, tr, e),
              arith::MulFOp::create(ib, loc, weight, inner.at(source, sr, e)));
          inner.store(sum, target, tr, e);
          return {};
        });
  }
};

/// The keys query `i` sees: [0, visible).
Value getVisibleKeys(OpBuilder &b, Location loc, Value i,
                     const AttentionShape &shape) {
  Value keys = kb::index(b, loc, shape.keys);
  if (!shape.causal)
    return keys;
  return arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, i, kb::index(b, loc, 1)), keys);
}

/// Launches one part with its description on its kernel.func; `row`
/// builds the body of one of its rows (queries, or keys for
/// key_value_grad) of one batch.
void launchPart(KernelLowering &lowering, Location loc, StringRef origin,
                FusedAttention part, ValueRange buffers, int64_t work,
                llvm::function_ref<void(OpBuilder &, Location, Value batch,
                                        Value row, ValueRange)>
                    row) {
  int64_t rows = part.getRows();
  int64_t range = part.batches * rows;
  kernel::LaunchOp launch = lowering.launch(
      loc, origin, buffers, range, work,
      [&](OpBuilder &b, Location loc, ValueRange args) {
        kb::parallelFor(
            b, loc, range, [&](OpBuilder &b, Location loc, Value index) {
              Value count = kb::index(b, loc, rows);
              row(b, loc, arith::DivUIOp::create(b, loc, index, count),
                  arith::RemUIOp::create(b, loc, index, count), args);
            });
      });
  auto module = launch->getParentOfType<ModuleOp>();
  auto func = module.lookupSymbol<kernel::FuncOp>(launch.getKernelAttr());
  func->setAttr(kernel::KernelDialect::kAttentionAttr,
                part.toAttr(module.getContext()));
}

FusedAttention describe(const AttentionShape &shape, int64_t valueDim,
                        FusedAttention::Part part) {
  FusedAttention fused;
  fused.part = part;
  fused.batches = shape.batches;
  fused.queries = shape.queries;
  fused.keys = shape.keys;
  fused.keyDim = shape.keyDim;
  fused.valueDim = valueDim;
  fused.causal = shape.causal;
  fused.scale = shape.scale;
  if (shape.mask) {
    fused.masked = true;
    fused.maskBatches = shape.maskLayout.batches;
    fused.maskDivisor = shape.maskLayout.divisor;
    fused.maskQueries = shape.maskLayout.queries;
    fused.maskKeys = shape.maskLayout.keys;
  }
  return fused;
}

/// The score of query i and key j in the row of `at` (its batch): q.k *
/// scale, plus the mask (the part's last buffer) where there is one.
Value buildScore(Rows &at, const AttentionShape &shape, ValueRange args,
                 Value i, Value j) {
  Value scale = kb::floatConst(at.b, at.loc, at.type, shape.scale);
  Value score = arith::MulFOp::create(
      at.b, at.loc, at.dot(args[0], i, args[1], j, shape.keyDim), scale);
  if (!shape.mask)
    return score;
  auto [row, column] =
      buildAttentionMaskIndex(at.b, at.loc, shape, at.batch, i, j);
  return arith::AddFOp::create(at.b, at.loc, score,
                               at.load(args.back(), {row, column}));
}
} // namespace

void kiln::lowerFusedAttention(KernelLowering &lowering, Location loc,
                               StringRef origin, Value query, Value key,
                               Value value, Value out, Value lse,
                               const AttentionShape &shape, int64_t valueDim) {
  int64_t batches = shape.batches, queries = shape.queries, keys = shape.keys;
  Type type = kb::computeType(cast<MemRefType>(out.getType()).getElementType());
  SmallVector<Value> buffers = {
      lowering.view(query, {batches, queries, shape.keyDim}),
      lowering.view(key, {batches, keys, shape.keyDim}),
      lowering.view(value, {batches, keys, valueDim}),
      lowering.view(out, {batches, queries, valueDim}),
      lowering.view(lse, {batches, queries})};
  if (shape.mask)
    buffers.push_back(shape.mask);
  launchPart(
      lowering, loc, origin,
      describe(shape, valueDim, FusedAttention::Part::Forward), buffers,
      keys * (3 * shape.keyDim + valueDim),
      [&](OpBuilder &b, Location loc, Value batch, Value i, ValueRange args) {
        Value v = args[2], o = args[3];
        Rows rows{b, loc, type, batch};
        auto score = [&](Rows &at, Value j) {
          return buildScore(at, shape, args, i, j);
        };
        Value visible = getVisibleKeys(b, loc, i, shape);
        Value zero = kb::index(b, loc, 0);
        Value max = kb::forLoop(
            b, loc, zero, visible, kb::negativeInfinity(b, loc, type),
            [&](OpBuilder &ib, Location loc, Value j,
                ValueRange acc) -> SmallVector<Value> {
              Rows at{ib, loc, type, batch};
              return {kb::stdMax(ib, loc, acc[0], score(at, j))};
            })[0];
        Value total = kb::forLoop(
            b, loc, zero, visible, kb::floatConst(b, loc, type, 0),
            [&](OpBuilder &ib, Location loc, Value j,
                ValueRange acc) -> SmallVector<Value> {
              Rows at{ib, loc, type, batch};
              Value e = math::ExpOp::create(
                  ib, loc, arith::SubFOp::create(ib, loc, score(at, j), max));
              return {arith::AddFOp::create(ib, loc, acc[0], e)};
            })[0];
        rows.zero(o, i, valueDim);
        kb::forLoop(b, loc, zero, visible, {},
                    [&](OpBuilder &ib, Location loc, Value j,
                        ValueRange) -> SmallVector<Value> {
                      Rows at{ib, loc, type, batch};
                      Value p = arith::DivFOp::create(
                          ib, loc,
                          math::ExpOp::create(ib, loc,
                                              arith::SubFOp::create(
                                                  ib, loc, score(at, j), max)),
                          total);
                      at.accumulate(o, i, p, v, j, valueDim);
                      return {};
                    });
        Value logSumExp = arith::AddFOp::create(
            b, loc, max, math::LogOp::create(b, loc, total));
        memref::StoreOp::create(b, loc, logSumExp, args[4],
                                ValueRange{batch, i});
      });
}

void kiln::lowerFusedAttentionGrad(KernelLowering &lowering, Location loc,
                                   StringRef origin, Value query, Value key,
                                   Value value, Value out, Value lse,
                                   Value resultGrad, Value queryGrad,
                                   Value keyGrad, Value valueGrad,
                                   const AttentionShape &shape,
                                   int64_t valueDim) {
  int64_t batches = shape.batches, queries = shape.queries, keys = shape.keys;
  int64_t keyDim = shape.keyDim;
  Type type = kb::computeType(cast<MemRefType>(out.getType()).getElementType());
  int64_t rows = batches * queries;

  // delta = rowsum(dout * out).
  Value delta = lowering.allocateTransient(MemRefType::get({rows}, type));
  lowering.launch(
      loc, origin,
      {lowering.view(resultGrad, {rows, valueDim}),
       lowering.view(out, {rows, valueDim}), delta},
      rows, 2 * valueDim, [&](OpBuilder &b, Location loc, ValueRange args) {
        kb::parallelFor(
            b, loc, rows, [&](OpBuilder &b, Location loc, Value row) {
              Value sum = kb::forLoop(
                  b, loc, valueDim, kb::floatConst(b, loc, type, 0.0),
                  [&](OpBuilder &b, Location loc, Value e,
                      ValueRange acc) -> SmallVector<Value> {
                    Value term = arith::MulFOp::create(
                        b, loc,
                        kb::widen(b, loc,
                                  memref::LoadOp::create(b, loc, args[0],
                                                         ValueRange{row, e})),
                        kb::widen(b, loc,
                                  memref::LoadOp::create(b, loc, args[1],
                                                         ValueRange{row, e})));
                    return {arith::AddFOp::create(b, loc, acc[0], term)};
                  })[0];
              memref::StoreOp::create(b, loc, sum, args[2], ValueRange{row});
            });
      });

  SmallVector<Value> inputs = {
      lowering.view(query, {batches, queries, keyDim}),
      lowering.view(key, {batches, keys, keyDim}),
      lowering.view(value, {batches, keys, valueDim}),
      lowering.view(resultGrad, {batches, queries, valueDim}),
      lowering.view(lse, {batches, queries}),
      lowering.view(delta, {batches, queries})};
  // The gradient of the score of query i and key j, and its probability,
  // in the row of `at` (batch).
  auto scoreGrad = [&](Rows &at, ValueRange args, Value i, Value j,
                       Value &probability) {
    Value v = args[2], dout = args[3];
    Value scale = kb::floatConst(at.b, at.loc, type, shape.scale);
    Value score = buildScore(at, shape, args, i, j);
    Value logSumExp = at.load(args[4], {at.batch, i});
    probability = math::ExpOp::create(
        at.b, at.loc, arith::SubFOp::create(at.b, at.loc, score, logSumExp));
    Value dp = at.dot(dout, i, v, j, valueDim);
    Value d = at.load(args[5], {at.batch, i});
    return arith::MulFOp::create(
        at.b, at.loc,
        arith::MulFOp::create(at.b, at.loc, probability,
                              arith::SubFOp::create(at.b, at.loc, dp, d)),
        scale);
  };

  // dk and dv: a row per key, over the queries that see it.
  SmallVector<Value> keyBuffers(inputs);
  keyBuffers.push_back(lowering.view(keyGrad, {batches, keys, keyDim}));
  keyBuffers.push_back(lowering.view(valueGrad, {batches, keys, valueDim}));
  if (shape.mask)
    keyBuffers.push_back(shape.mask);
  launchPart(
      lowering, loc, origin,
      describe(shape, valueDim, FusedAttention::Part::KeyValueGrad), keyBuffers,
      queries * (2 * keyDim + 3 * valueDim),
      [&](OpBuilder &b, Location loc, Value batch, Value j, ValueRange args) {
        Rows row{b, loc, type, batch};
        row.zero(args[6], j, keyDim);
        row.zero(args[7], j, valueDim);
        Value first = shape.causal ? j : kb::index(b, loc, 0);
        kb::forLoop(b, loc, first, kb::index(b, loc, queries), {},
                    [&](OpBuilder &ib, Location loc, Value i,
                        ValueRange) -> SmallVector<Value> {
                      Rows at{ib, loc, type, batch};
                      Value p;
                      Value ds = scoreGrad(at, args, i, j, p);
                      at.accumulate(args[7], j, p, args[3], i, valueDim);
                      at.accumulate(args[6], j, ds, args[0], i, keyDim);
                      return {};
                    });
      });

  // dq: a row per query, over the keys it sees.
  SmallVector<Value> queryBuffers(inputs);
  queryBuffers.push_back(lowering.view(queryGrad, {batches, queries, keyDim}));
  if (shape.mask)
    queryBuffers.push_back(shape.mask);
  launchPart(
      lowering, loc, origin,
      describe(shape, valueDim, FusedAttention::Part::QueryGrad), queryBuffers,
      keys * (3 * keyDim + valueDim),
      [&](OpBuilder &b, Location loc, Value batch, Value i, ValueRange args) {
        Rows row{b, loc, type, batch};
        row.zero(args[6], i, keyDim);
        kb::forLoop(b, loc, kb::index(b, loc, 0),
                    getVisibleKeys(b, loc, i, shape), {},
                    [&](OpBuilder &ib, Location loc, Value j,
                        ValueRange) -> SmallVector<Value> {
                      Rows at{ib, loc, type, batch};
                      Value p;
                      Value ds = scoreGrad(at, args, i, j, p);
                      at.accumulate(args[6], i, ds, args[1], j, keyDim);
                      return {};
                    });
      });
}
