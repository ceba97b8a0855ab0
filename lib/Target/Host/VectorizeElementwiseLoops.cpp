//===- VectorizeElementwiseLoops.cpp - Explicit SIMD for elementwise loops -===//
//
// Part of Kiln. See VectorizeElementwiseLoops.h for why.
//
//===----------------------------------------------------------------------===//

#include "VectorizeElementwiseLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// The number of lanes for `loop`'s body, or 0 when the loop is not an
/// elementwise loop over its index.
static int64_t getLaneCount(scf::ParallelOp loop) {
  if (loop.getNumLoops() != 1 || !loop.getInitVals().empty())
    return 0;
  Value index = loop.getInductionVars()[0];
  unsigned widest = 0;
  bool stores = false;
  auto accessesAtIndex = [&](MemRefType type, ValueRange indices) {
    if (type.getRank() != 1 || !type.getLayout().isIdentity() ||
        indices.size() != 1 || indices[0] != index)
      return false;
    widest = std::max(widest, type.getElementTypeBitWidth());
    return type.getElementType().isIntOrFloat();
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (!accessesAtIndex(load.getMemRefType(), load.getIndices()))
        return 0;
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!accessesAtIndex(store.getMemRefType(), store.getIndices()))
        return 0;
      stores = true;
      continue;
    }
    if (!isLaneWise(&op))
      return 0;
    for (Value operand : op.getOperands())
      if (operand == index)
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

/// Emits one vector iteration of `loop`'s body at `index` into `b`.
static void emitVectorBody(OpBuilder &b, scf::ParallelOp loop, Value index,
                           int64_t lanes) {
  IRMapping vectors;
  // A value defined outside the loop (a constant hoisted by the lowering)
  // is broadcast to the lanes.
  auto vectorOf = [&](Value scalar, Location loc) -> Value {
    if (Value vector = vectors.lookupOrNull(scalar))
      return vector;
    auto type = VectorType::get({lanes}, scalar.getType());
    Value vector = vector::BroadcastOp::create(b, loc, type, scalar);
    vectors.map(scalar, vector);
    return vector;
  };
  for (Operation &op : loop.getBody()->without_terminator()) {
    Location loc = op.getLoc();
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      auto type = VectorType::get({lanes}, load.getType());
      vectors.map(load.getResult(),
                  vector::LoadOp::create(b, loc, type, load.getMemRef(),
                                         ValueRange{index}));
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      vector::StoreOp::create(b, loc, vectorOf(store.getValue(), loc),
                              store.getMemRef(), ValueRange{index});
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

/// loop over [lo, hi) → vector loop over [lo, lo + (hi - lo) / L * L) in
/// steps of L, then the original loop over the rest.
static void vectorize(scf::ParallelOp loop, int64_t lanes) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value lower = loop.getLowerBound()[0], upper = loop.getUpperBound()[0];
  Value laneCount = arith::ConstantIndexOp::create(b, loc, lanes);
  Value length = arith::SubIOp::create(b, loc, upper, lower);
  Value whole = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, length, laneCount), laneCount);
  Value vectorEnd = arith::AddIOp::create(b, loc, lower, whole);
  scf::ForOp::create(b, loc, lower, vectorEnd, laneCount, ValueRange{},
                     [&](OpBuilder &nested, Location, Value index,
                         ValueRange) {
                       emitVectorBody(nested, loop, index, lanes);
                       scf::YieldOp::create(nested, loc);
                     });
  loop.getLowerBoundMutable()[0].set(vectorEnd);
}

void kiln::vectorizeElementwiseLoops(func::FuncOp body) {
  SmallVector<std::pair<scf::ParallelOp, int64_t>> loops;
  for (auto loop : body.getBody().front().getOps<scf::ParallelOp>())
    if (int64_t lanes = getLaneCount(loop))
      loops.push_back({loop, lanes});
  for (auto [loop, lanes] : loops)
    vectorize(loop, lanes);
}
