//===- VectorizeElementwiseLoops.cpp - Explicit SIMD for elementwise loops -===//
//
// Part of Kiln. See VectorizeElementwiseLoops.h for why.
//
//===----------------------------------------------------------------------===//

#include "VectorizeElementwiseLoops.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

/// The bits of a vector register the lanes fill (AVX-512; narrower targets
/// split the vectors in LLVM's legalization).
static constexpr unsigned kVectorBits = 512;

/// Whether `op` computes elementwise on scalars: one lane of it is the
/// scalar op, so the vector op computes the same values.
static bool isLaneWise(Operation *op) {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return false;
  if (!isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return false;
  for (Type type : op->getResultTypes())
    if (!type.isIntOrFloat())
      return false;
  return true;
}

namespace {
/// How an access indexes along the vectorized (innermost) loop.
enum class LaneAccess {
  /// Its last index is the innermost induction variable: lanes read or
  /// write consecutive elements.
  Contiguous,
  /// No index is the innermost variable: every lane reads one element.
  Invariant,
};
} // namespace

/// How far `index` moves when `lane` (the innermost induction variable of
/// `loop`) moves by one: 0 (independent of it), 1 (the variable plus
/// terms independent of it: an induction variable, or an affine.apply of
/// induction variables and outer values such as a fused transpose or
/// reshape produces), or nothing when it is computed otherwise.
static std::optional<int64_t> getLaneStep(scf::ParallelOp loop, Value lane,
                                          Value index) {
  if (index == lane)
    return 1;
  if (index.getParentRegion() != &loop.getRegion() ||
      llvm::is_contained(loop.getInductionVars(), index))
    return 0;
  auto apply = index.getDefiningOp<affine::AffineApplyOp>();
  if (!apply || apply->getBlock() != loop.getBody())
    return std::nullopt;
  AffineExpr expr = apply.getAffineMap().getResult(0);
  std::optional<unsigned> laneDim;
  for (auto [position, operand] : llvm::enumerate(apply.getMapOperands())) {
    if (operand == lane) {
      if (laneDim)
        return std::nullopt;
      laneDim = position;
      continue;
    }
    if (operand.getParentRegion() == &loop.getRegion() &&
        !llvm::is_contained(loop.getInductionVars(), operand))
      return std::nullopt;
  }
  if (apply.getAffineMap().getNumSymbols() != 0)
    return std::nullopt;
  if (!laneDim || !expr.isFunctionOfDim(*laneDim))
    return 0;
  AffineExpr rest = simplifyAffineExpr(
      expr - getAffineDimExpr(*laneDim, expr.getContext()),
      apply.getAffineMap().getNumDims(), 0);
  if (rest.isFunctionOfDim(*laneDim))
    return std::nullopt;
  return 1;
}

/// How a load or store with `indices` into `type` indexes along `lane`
/// (the innermost induction variable of `loop`), or nothing when it cannot
/// be vectorized: an index computed inside the loop, or `lane` elsewhere
/// than last.
static std::optional<LaneAccess> classifyAccess(scf::ParallelOp loop,
                                                Value lane, MemRefType type,
                                                ValueRange indices) {
  if (!type.getLayout().isIdentity() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  if (indices.empty())
    return LaneAccess::Invariant;
  for (Value index : indices.drop_back())
    if (getLaneStep(loop, lane, index) != 0)
      return std::nullopt;
  std::optional<int64_t> step = getLaneStep(loop, lane, indices.back());
  if (step == 1)
    return LaneAccess::Contiguous;
  if (step == 0)
    return LaneAccess::Invariant;
  return std::nullopt;
}

/// The number of lanes for `loop`'s body, or 0 when the loop is not an
/// elementwise loop along its innermost variable.
static int64_t getLaneCount(scf::ParallelOp loop) {
  if (!loop.getInitVals().empty())
    return 0;
  Value lane = loop.getInductionVars().back();
  unsigned widest = 0;
  bool stores = false;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!classifyAccess(loop, lane, load.getMemRefType(), load.getIndices()))
        return 0;
      widest = std::max(widest, load.getMemRefType().getElementTypeBitWidth());
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (classifyAccess(loop, lane, store.getMemRefType(),
                         store.getIndices()) != LaneAccess::Contiguous)
        return 0;
      widest =
          std::max(widest, store.getMemRefType().getElementTypeBitWidth());
      stores = true;
      continue;
    }
    if (auto apply = dyn_cast<affine::AffineApplyOp>(op)) {
      // Index arithmetic: only loads and stores may use it (checked there).
      for (Operation *user : apply->getUsers())
        if (!isa<memref::LoadOp, memref::StoreOp>(user))
          return 0;
      continue;
    }
    if (!isLaneWise(&op))
      return 0;
    for (Value operand : op.getOperands())
      if (llvm::is_contained(loop.getInductionVars(), operand))
        return 0;
  }
  if (!stores || widest == 0)
    return 0;
  return kVectorBits / widest;
}

/// A constant of `type` splat over `lanes`.
static Value splatConstant(OpBuilder &b, arith::ConstantOp constant,
                           int64_t lanes) {
  auto type = VectorType::get({lanes}, constant.getType());
  auto value = DenseElementsAttr::get(type, constant.getValue());
  return arith::ConstantOp::create(b, constant.getLoc(), type, value);
}

/// Emits one vector iteration of `loop`'s body into `b`; `indices` maps
/// the loop's induction variables (the innermost to the first lane's
/// index).
static void emitVectorBody(OpBuilder &b, scf::ParallelOp loop,
                           const IRMapping &indices, int64_t lanes) {
  Value lane = loop.getInductionVars().back();
  IRMapping vectors;
  // A value defined outside the loop (a constant hoisted by the lowering)
  // or loaded once for all lanes is broadcast to them.
  auto vectorOf = [&](Value scalar, Location loc) -> Value {
    if (Value vector = vectors.lookupOrNull(scalar))
      return vector;
    auto type = VectorType::get({lanes}, scalar.getType());
    Value vector = vector::BroadcastOp::create(b, loc, type, scalar);
    vectors.map(scalar, vector);
    return vector;
  };
  // The scalar indices of the first lane, index arithmetic included.
  IRMapping scalarIndices = indices;
  auto mapIndices = [&](ValueRange original) {
    SmallVector<Value> mapped;
    for (Value index : original)
      mapped.push_back(scalarIndices.lookupOrDefault(index));
    return mapped;
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    Location loc = op.getLoc();
    if (isa<affine::AffineApplyOp>(op)) {
      // The index of the first lane.
      b.clone(op, scalarIndices);
      continue;
    }
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      SmallVector<Value> at = mapIndices(load.getIndices());
      if (classifyAccess(loop, lane, load.getMemRefType(),
                         load.getIndices()) == LaneAccess::Invariant) {
        Value scalar = memref::LoadOp::create(b, loc, load.getMemRef(), at);
        vectors.map(load.getResult(), vectorOf(scalar, loc));
        continue;
      }
      auto type = VectorType::get({lanes}, load.getType());
      vectors.map(load.getResult(), vector::LoadOp::create(
                                        b, loc, type, load.getMemRef(), at));
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      vector::StoreOp::create(b, loc, vectorOf(store.getValue(), loc),
                              store.getMemRef(),
                              mapIndices(store.getIndices()));
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      vectors.map(constant.getResult(), splatConstant(b, constant, lanes));
      continue;
    }
    for (Value operand : op.getOperands())
      (void)vectorOf(operand, loc);
    Operation *clone = b.clone(op, vectors);
    for (OpResult result : clone->getResults())
      result.setType(VectorType::get({lanes}, result.getType()));
  }
}

/// Emits the scalar body of `loop` into `b` with its variables mapped by
/// `indices`.
static void emitScalarBody(OpBuilder &b, scf::ParallelOp loop,
                           IRMapping &indices) {
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, indices);
}

/// The innermost dim [lo, hi) of `loop` becomes a vector loop over
/// [lo, lo + (hi - lo) / L * L) in steps of L, then a scalar loop over the
/// rest; the outer dims stay one parallel loop around them.
static void vectorize(scf::ParallelOp loop, int64_t lanes) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  unsigned outerDims = loop.getNumLoops() - 1;
  Value lower = loop.getLowerBound().back(), upper = loop.getUpperBound().back();

  auto emitInnermost = [&](OpBuilder &b, IRMapping indices) {
    Value laneCount = arith::ConstantIndexOp::create(b, loc, lanes);
    Value length = arith::SubIOp::create(b, loc, upper, lower);
    Value whole = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, length, laneCount), laneCount);
    Value vectorEnd = arith::AddIOp::create(b, loc, lower, whole);
    Value lane = loop.getInductionVars().back();
    scf::ForOp::create(b, loc, lower, vectorEnd, laneCount, ValueRange{},
                       [&](OpBuilder &nested, Location, Value index,
                           ValueRange) {
                         IRMapping inner = indices;
                         inner.map(lane, index);
                         emitVectorBody(nested, loop, inner, lanes);
                         scf::YieldOp::create(nested, loc);
                       });
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    scf::ForOp::create(b, loc, vectorEnd, upper, one, ValueRange{},
                       [&](OpBuilder &nested, Location, Value index,
                           ValueRange) {
                         IRMapping inner = indices;
                         inner.map(lane, index);
                         emitScalarBody(nested, loop, inner);
                         scf::YieldOp::create(nested, loc);
                       });
  };

  if (outerDims == 0) {
    emitInnermost(b, IRMapping());
  } else {
    scf::ParallelOp::create(
        b, loc, loop.getLowerBound().drop_back(),
        loop.getUpperBound().drop_back(), loop.getStep().drop_back(),
        [&](OpBuilder &nested, Location, ValueRange outer) {
          IRMapping indices;
          for (auto [original, index] :
               llvm::zip(ValueRange(loop.getInductionVars()).drop_back(),
                         outer))
            indices.map(original, index);
          emitInnermost(nested, indices);
        });
  }
  loop.erase();
}

void kiln::vectorizeElementwiseLoops(func::FuncOp body) {
  SmallVector<std::pair<scf::ParallelOp, int64_t>> loops;
  for (auto loop : body.getBody().front().getOps<scf::ParallelOp>()) {
    if (!isConstantIntValue(loop.getStep().back(), 1))
      continue;
    if (int64_t lanes = getLaneCount(loop))
      loops.push_back({loop, lanes});
  }
  for (auto [loop, lanes] : loops)
    vectorize(loop, lanes);
}
