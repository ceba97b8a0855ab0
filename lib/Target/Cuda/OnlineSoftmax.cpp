//===- OnlineSoftmax.cpp - A row's maximum and exp-sum in one pass --------===//
//
// Part of Kiln. fuseOnlineSoftmax (RowReduction.h): softmax, log-softmax
// and cross-entropy rows read their inputs once for the maximum, once for
// the sum of exponentials, and (softmax) once more to normalize what the
// second pass stored. The first two become one loop carrying the running
// maximum m and the sum s of exp(x - m), rescaled whenever m grows
// (Milakov and Gimelshein's online normalizer); the second pass's stores,
// which the third overwrites, go, and the third recomputes exp(x - m) from
// the input. One read of the row fewer, and one write fewer for softmax.
//
//===----------------------------------------------------------------------===//

#include "RowReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::row;

namespace {
/// Whether `value` is the constant `expected` (a float).
bool isFloatConstant(Value value, double expected) {
  auto constant = value.getDefiningOp<arith::ConstantFloatOp>();
  return constant && constant.value().convertToDouble() == expected;
}

/// Whether `a` in `aLoop` and `b` in `bLoop` read the same element for the
/// same iteration: one buffer, each index the loops' induction variables
/// or one value from outside both.
bool readsAlike(memref::LoadOp a, scf::ForOp aLoop, memref::LoadOp b,
                scf::ForOp bLoop) {
  if (a.getMemRef() != b.getMemRef() ||
      a.getIndices().size() != b.getIndices().size())
    return false;
  for (auto [x, y] : llvm::zip(a.getIndices(), b.getIndices())) {
    if (x == aLoop.getInductionVar() && y == bLoop.getInductionVar())
      continue;
    if (x != y || !aLoop.isDefinedOutsideOfLoop(x) ||
        !bLoop.isDefinedOutsideOfLoop(y))
      return false;
  }
  return true;
}

bool sameBounds(scf::ForOp a, scf::ForOp b) {
  return a.getLowerBound() == b.getLowerBound() &&
         a.getUpperBound() == b.getUpperBound() && a.getStep() == b.getStep();
}

/// The load whose maximum `loop` carries: `m = select(m < x, x, m)` over
/// `x = load A[...]` from -inf, and nothing else.
memref::LoadOp matchMaximumLoop(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() != 1 ||
      matchReduction(loop, 0) != Combine::StdMax ||
      !isFloatConstant(loop.getInitArgs()[0],
                       -std::numeric_limits<double>::infinity()) ||
      !loop.getRegionIterArg(0).getType().isF32() ||
      loop.getBody()->getOperations().size() != 4)
    return {};
  auto select = loop.getYieldedValues()[0].getDefiningOp<arith::SelectOp>();
  auto load = select.getTrueValue().getDefiningOp<memref::LoadOp>();
  if (!load || load->getBlock() != loop.getBody())
    return {};
  return load;
}

/// The pass after the maximum `m`: `s += e` from 0 with e = exp(x - m) and
/// x read as the maximum's loop reads it; e may be stored at x's indices.
struct ExpSumLoop {
  memref::LoadOp load;
  math::ExpOp exp;
  memref::StoreOp store;
};
std::optional<ExpSumLoop> matchExpSumLoop(scf::ForOp loop, scf::ForOp maximum,
                                          memref::LoadOp maximumLoad) {
  if (loop.getNumRegionIterArgs() != 1 || !sameBounds(loop, maximum) ||
      matchReduction(loop, 0) != Combine::AddF ||
      !isFloatConstant(loop.getInitArgs()[0], 0.0))
    return std::nullopt;
  auto add = loop.getYieldedValues()[0].getDefiningOp<arith::AddFOp>();
  Value term =
      add.getLhs() == loop.getRegionIterArg(0) ? add.getRhs() : add.getLhs();
  ExpSumLoop match;
  match.exp = term.getDefiningOp<math::ExpOp>();
  if (!match.exp || match.exp->getBlock() != loop.getBody())
    return std::nullopt;
  auto shifted = match.exp.getOperand().getDefiningOp<arith::SubFOp>();
  if (!shifted || shifted.getRhs() != maximum.getResult(0))
    return std::nullopt;
  match.load = shifted.getLhs().getDefiningOp<memref::LoadOp>();
  if (!match.load || match.load->getBlock() != loop.getBody() ||
      !readsAlike(maximumLoad, maximum, match.load, loop))
    return std::nullopt;
  // Nothing else: the load, the shift, the exponential, its store, the sum.
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (&op == match.load || &op == shifted || &op == match.exp || &op == add)
      continue;
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store || match.store || store.getValue() != match.exp.getResult() ||
        store.getIndices() != match.load.getIndices())
      return std::nullopt;
    match.store = store;
  }
  return match;
}

/// Whether `op` (or an op inside it) reads or writes `buffer`.
bool touches(Operation *op, Value buffer) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (getAccessedMemref(inner) == buffer)
      found = true;
  });
  return found;
}

/// Whether `op` (or an op inside it) writes `buffer`.
bool writes(Operation *op, Value buffer) {
  bool found = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::StoreOp, memref::AtomicRMWOp>(inner) &&
        getAccessedMemref(inner) == buffer)
      found = true;
  });
  return found;
}

/// The pass that overwrites what the exp-sum loop stored, element by
/// element: the first op after it to touch the buffer, a loop of the same
/// bounds whose only accesses to the buffer are loads at the stored
/// element and then an unconditional store there. Its loads of the buffer.
std::optional<SmallVector<memref::LoadOp>>
matchOverwritingLoop(scf::ForOp expSum, ExpSumLoop match,
                     scf::ForOp &overwriting) {
  Value buffer = match.store.getMemRef(), input = match.load.getMemRef();
  // Nothing on the way writes the input, which the pass will read again.
  Operation *next = expSum->getNextNode();
  while (next && !touches(next, buffer)) {
    if (writes(next, input))
      return std::nullopt;
    next = next->getNextNode();
  }
  overwriting = next ? dyn_cast<scf::ForOp>(next) : scf::ForOp();
  if (!overwriting || !sameBounds(overwriting, expSum))
    return std::nullopt;
  // The store's element at this loop's iteration.
  auto atStoredElement = [&](ValueRange indices) {
    if (indices.size() != match.store.getIndices().size())
      return false;
    for (auto [index, stored] : llvm::zip(indices, match.store.getIndices())) {
      if (stored == expSum.getInductionVar()
              ? index != overwriting.getInductionVar()
              : index != stored)
        return false;
    }
    return true;
  };
  SmallVector<memref::LoadOp> loads;
  bool stored = false, fits = true;
  for (Operation &op : overwriting.getBody()->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && load.getMemRef() == buffer) {
      fits &= !stored && atStoredElement(load.getIndices());
      loads.push_back(load);
      continue;
    }
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store && store.getMemRef() == buffer) {
      fits &= !stored && atStoredElement(store.getIndices());
      stored = true;
      continue;
    }
    // The exponential is recomputed from the input where the loads were:
    // nothing in between may write the input.
    fits &= !touches(&op, buffer) && !writes(&op, input);
  }
  if (!fits || !stored)
    return std::nullopt;
  return loads;
}

/// `scale(from, to)`: exp(from - to), exactly 1 when they are equal (both
/// -inf: nothing summed yet, where exp would give NaN).
Value rescale(OpBuilder &b, Location loc, Value from, Value to) {
  Value same =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, from, to);
  Value one = arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                             llvm::APFloat(1.0f));
  Value exp = math::ExpOp::create(
      b, loc, arith::SubFOp::create(b, loc, from, to).getResult());
  return arith::SelectOp::create(b, loc, same, one, exp);
}
} // namespace

std::pair<Value, Value>
kiln::row::combineOnlineSoftmax(OpBuilder &b, Location loc, Value maximum,
                                Value sum, Value otherMaximum, Value otherSum) {
  Value less = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, maximum,
                                     otherMaximum);
  Value combined = arith::SelectOp::create(b, loc, less, otherMaximum, maximum);
  // One statement each: the IR's order does not depend on the compiler's
  // order of evaluating arguments.
  Value scaled =
      arith::MulFOp::create(b, loc, sum, rescale(b, loc, maximum, combined));
  Value otherScaled = arith::MulFOp::create(
      b, loc, otherSum, rescale(b, loc, otherMaximum, combined));
  Value total = arith::AddFOp::create(b, loc, scaled, otherScaled);
  return {combined, total};
}

void kiln::row::fuseOnlineSoftmax(Block &row) {
  // Each rewrite erases the two passes after putting the fused one where
  // the first was; the walk goes on after it.
  Operation *next = nullptr;
  for (Operation *op = &row.front(); op; op = next) {
    next = op->getNextNode();
    auto maximum = dyn_cast<scf::ForOp>(op);
    memref::LoadOp maximumLoad = maximum ? matchMaximumLoop(maximum) : nullptr;
    if (!maximumLoad)
      continue;
    // The exp-sum pass: the next op with memory effects, only pure ops
    // between.
    Operation *after = maximum->getNextNode();
    while (after && isMemoryEffectFree(after) && !isa<scf::ForOp>(after))
      after = after->getNextNode();
    auto expSum = after ? dyn_cast<scf::ForOp>(after) : scf::ForOp();
    std::optional<ExpSumLoop> match =
        expSum ? matchExpSumLoop(expSum, maximum, maximumLoad) : std::nullopt;
    if (!match)
      continue;
    scf::ForOp overwriting;
    SmallVector<memref::LoadOp> overwritten;
    if (match->store) {
      std::optional<SmallVector<memref::LoadOp>> loads =
          matchOverwritingLoop(expSum, *match, overwriting);
      if (!loads)
        continue;
      overwritten = std::move(*loads);
    }

    // One loop where the maximum's was: (m, s) from (-inf, 0), per element
    // m' = max(m, x), s' = s exp(m - m') + exp(x - m'), the term 0 while m'
    // is -inf (every x so far -inf: exp(x - m') would be NaN).
    Location loc = expSum.getLoc();
    OpBuilder b(maximum);
    Value zero = arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                                llvm::APFloat(0.0f));
    auto fused = scf::ForOp::create(b, loc, maximum.getLowerBound(),
                                    maximum.getUpperBound(), maximum.getStep(),
                                    ValueRange{maximum.getInitArgs()[0], zero});
    fused->setAttr(kOnlineSoftmaxAttr, b.getUnitAttr());
    {
      OpBuilder inside = atEndWithoutTerminator(fused.getBody());
      IRMapping mapping;
      mapping.map(maximum.getInductionVar(), fused.getInductionVar());
      Value x = inside.clone(*maximumLoad, mapping)->getResult(0);
      Value m = fused.getRegionIterArg(0), s = fused.getRegionIterArg(1);
      Value less =
          arith::CmpFOp::create(inside, loc, arith::CmpFPredicate::OLT, m, x);
      Value grown = arith::SelectOp::create(inside, loc, less, x, m);
      Value empty =
          arith::CmpFOp::create(inside, loc, arith::CmpFPredicate::OEQ, grown,
                                maximum.getInitArgs()[0]);
      Value term = arith::SelectOp::create(
          inside, loc, empty, zero,
          math::ExpOp::create(inside, loc,
                              arith::SubFOp::create(inside, loc, x, grown))
              .getResult());
      Value summed = arith::AddFOp::create(
          inside, loc,
          arith::MulFOp::create(inside, loc, s, rescale(inside, loc, m, grown)),
          term);
      scf::YieldOp::create(inside, loc, ValueRange{grown, summed});
    }
    maximum.getResult(0).replaceAllUsesWith(fused.getResult(0));
    expSum.getResult(0).replaceAllUsesWith(fused.getResult(1));

    // The overwriting pass reads exp(x - m) recomputed from the input.
    for (memref::LoadOp load : overwritten) {
      OpBuilder at(load);
      IRMapping mapping;
      mapping.map(expSum.getInductionVar(), overwriting.getInductionVar());
      Value x = at.clone(*match->load, mapping)->getResult(0);
      Value e = math::ExpOp::create(
          at, load.getLoc(),
          arith::SubFOp::create(at, load.getLoc(), x, fused.getResult(0))
              .getResult());
      load.replaceAllUsesWith(e);
      load.erase();
    }
    expSum.erase();
    maximum.erase();
    next = fused->getNextNode();
  }
}
