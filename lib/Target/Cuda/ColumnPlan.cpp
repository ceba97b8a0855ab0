//===- ColumnPlan.cpp - Rows that are columns, and where blocks go --------===//
//
// Part of Kiln. The column case of the row template (RowTemplate.h): a row
// whose shared loops walk down a column (a bias or norm-weight gradient,
// `sum over r of f(x[r, c])` for row c) is taken a warp's width of rows at
// a time, so that the lanes of a warp read consecutive columns of one
// matrix row (coalesced) and the warps of the block split the rows of the
// sum. And the blocks of a kernel: each segment of a merged kernel gets
// its own run of blocks.
//
//===----------------------------------------------------------------------===//

#include "RowReduction.h"
#include "RowTemplate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <map>

using namespace mlir;
using namespace kiln;
using namespace kiln::row;

namespace {
/// Whether `value` may differ as `target` (an induction variable of
/// `scope`) does: it is the target or computed from it inside `scope`.
/// Values carried by loops or produced by ops with regions count as
/// depending.
class Dependence {
public:
  Dependence(Value target, Operation *scope) : target(target), scope(scope) {}

  bool operator()(Value value) {
    if (value == target)
      return true;
    if (!scope->isAncestor(value.getParentRegion()->getParentOp()))
      return false;
    if (auto it = memo.find(value); it != memo.end())
      return it->second;
    memo[value] = true; // Cycles only through carried values: depending.
    bool depends = compute(value);
    memo[value] = depends;
    return depends;
  }

private:
  bool compute(Value value) {
    if (auto argument = dyn_cast<BlockArgument>(value)) {
      auto loop = dyn_cast<scf::ForOp>(argument.getOwner()->getParentOp());
      if (!loop || argument != loop.getInductionVar())
        return true;
      return (*this)(loop.getLowerBound()) || (*this)(loop.getUpperBound()) ||
             (*this)(loop.getStep());
    }
    Operation *op = value.getDefiningOp();
    if (op->getNumRegions() != 0)
      return true;
    return llvm::any_of(op->getOperands(),
                        [&](Value operand) { return (*this)(operand); });
  }

  Value target;
  Operation *scope;
  llvm::DenseMap<Value, bool> memo;
};

/// Whether `loop` runs exactly once for each `iv` in [0, rows): from `iv`
/// to `min(iv + 1, K)` (or to `iv + 1`) in steps of 1, with K >= rows.
bool runsOnce(scf::ForOp loop, Value iv, int64_t rows) {
  if (loop.getLowerBound() != iv || getConstantIntValue(loop.getStep()) != 1)
    return false;
  auto isNext = [&](Value value) {
    auto add = value.getDefiningOp<arith::AddIOp>();
    return add &&
           ((add.getLhs() == iv && isConstantIntValue(add.getRhs(), 1)) ||
            (add.getRhs() == iv && isConstantIntValue(add.getLhs(), 1)));
  };
  Value upper = loop.getUpperBound();
  if (isNext(upper))
    return true;
  auto min = upper.getDefiningOp<arith::MinUIOp>();
  if (!min)
    return false;
  for (auto [next, bound] : {std::pair(min.getLhs(), min.getRhs()),
                             std::pair(min.getRhs(), min.getLhs())}) {
    std::optional<int64_t> limit = getConstantIntValue(bound);
    if (isNext(next) && limit && *limit >= rows)
      return true;
  }
  return false;
}
} // namespace

void kiln::row::inlineSingleIterationLoops(Block &row, Value iv, int64_t rows) {
  SmallVector<scf::ForOp> once;
  row.walk([&](scf::ForOp loop) {
    // Only around loops: an innermost one would itself become a loop
    // over the rows, shared where its body may not be.
    bool holdsLoops = false;
    loop.getBody()->walk([&](scf::ForOp) { holdsLoops = true; });
    if (holdsLoops && loop.getNumRegionIterArgs() == 0 &&
        runsOnce(loop, iv, rows))
      once.push_back(loop);
  });
  for (scf::ForOp loop : once) {
    loop.getInductionVar().replaceAllUsesWith(iv);
    Block *body = loop.getBody();
    body->getTerminator()->erase();
    loop->getBlock()->getOperations().splice(Block::iterator(loop),
                                             body->getOperations());
    loop.erase();
  }
}

bool kiln::row::isColumnShaped(scf::ParallelOp rows, const RowPlan &plan) {
  Value iv = rows.getInductionVars()[0];
  Dependence onRow(iv, rows);
  bool column = false;
  WalkResult result = rows.getBody()->walk([&](scf::ForOp loop) {
    if (!plan.sharedLoops.count(loop))
      return WalkResult::advance();
    // Every column of a block reaches the loop together: the block's
    // threads then meet at the barrier after it.
    for (Operation *parent = loop->getParentOp(); parent != rows;
         parent = parent->getParentOp()) {
      if (auto ifOp = dyn_cast<scf::IfOp>(parent)) {
        if (onRow(ifOp.getCondition()))
          return WalkResult::interrupt();
      } else if (auto outer = dyn_cast<scf::ForOp>(parent)) {
        if (onRow(outer.getLowerBound()) || onRow(outer.getUpperBound()) ||
            onRow(outer.getStep()))
          return WalkResult::interrupt();
      } else {
        return WalkResult::interrupt();
      }
    }
    Dependence onLoop(loop.getInductionVar(), loop);
    WalkResult accesses = loop.getBody()->walk([&](Operation *op) {
      if (!isa<memref::LoadOp, memref::StoreOp>(op))
        return WalkResult::advance();
      ValueRange indices = isa<memref::LoadOp>(op)
                               ? cast<memref::LoadOp>(op).getIndices()
                               : cast<memref::StoreOp>(op).getIndices();
      if (indices.empty())
        return WalkResult::advance();
      // The loop walking the fastest dim is a row's, not a column's.
      if (onLoop(indices.back()))
        return WalkResult::interrupt();
      // The row's index, or its low part (a row split as (i / K, i % K)),
      // last: neighbouring rows at neighbouring addresses.
      auto low = indices.back().getDefiningOp<arith::RemUIOp>();
      bool rowLast = indices.back() == iv || (low && low.getLhs() == iv);
      if (rowLast && llvm::any_of(indices.drop_back(),
                                  [&](Value index) { return onLoop(index); }))
        column = true;
      return WalkResult::advance();
    });
    return accesses.wasInterrupted() ? WalkResult::interrupt()
                                     : WalkResult::advance();
  });
  return column && !result.wasInterrupted();
}

bool kiln::row::layOutBlocks(RowPlan &plan) {
  if (plan.rows.empty()) {
    plan.grid = 1;
    return true;
  }
  // The segments by offset (a merged kernel's loops at one offset run one
  // after the other on the same rows).
  std::map<int64_t, SmallVector<RowPlan::Rows *>> segments;
  for (RowPlan::Rows &rows : plan.rows)
    segments[rows.offset].push_back(&rows);
  int64_t block = 0;
  for (auto it = segments.begin(); it != segments.end(); ++it) {
    int64_t end =
        std::next(it) == segments.end() ? plan.range : std::next(it)->first;
    int64_t size = 0;
    bool columns = true;
    for (RowPlan::Rows *rows : it->second) {
      if (rows->offset + rows->size > end)
        return false;
      size = std::max(size, rows->size);
      columns &= rows->columns;
    }
    for (RowPlan::Rows *rows : it->second)
      rows->columns = columns;
    int64_t perBlock = plan.getRowsPerBlock(*it->second.front());
    int64_t blocks = (size + perBlock - 1) / perBlock;
    for (RowPlan::Rows *rows : it->second) {
      rows->firstBlock = block;
      rows->blocks = blocks;
    }
    block += blocks;
  }
  plan.grid = block;
  return true;
}
