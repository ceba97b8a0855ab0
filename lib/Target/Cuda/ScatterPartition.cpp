//===- ScatterPartition.cpp - A scatter-add split by destination row ------===//
//
// Part of Kiln. The embedding gradient adds each token's row of dy into the
// row of its id: `G[id[t], c] += dy[t, c]` for t in order, a column per
// iteration of the range. Ids repeat, so no two tokens can go to two
// threads as they are; but two destination rows can. partitionScatter
// gives each column P threads, thread p owning the rows v with v % P == p:
// it zeroes them, scans every token, and adds those whose id it owns. Each
// element is still summed by one thread in token order (the cpu target's
// order), and neighbouring threads take neighbouring columns of one
// partition, so their loads and stores are coalesced and their branches
// agree.
//
//===----------------------------------------------------------------------===//

#include "ScatterPartition.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kiln;

namespace {
/// The most partitions a column's destination rows are split into.
constexpr int64_t kMaxPartitions = 64;

/// Whether `value` is read from memory (through casts): an index the data
/// chooses.
bool isLoadedIndex(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<memref::LoadOp>(op))
      return true;
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
             arith::ExtUIOp>(op))
      return false;
    value = op->getOperand(0);
  }
  return false;
}

/// A scatter-add of the row: `G[id, ...] = G[id, ...] + x` at `store`, its
/// id loaded from memory.
struct Scatter {
  memref::LoadOp load;
  memref::StoreOp store;
  Value id;
};

std::optional<Scatter> matchScatter(memref::StoreOp store) {
  ValueRange indices = store.getIndices();
  if (indices.empty() || !isLoadedIndex(indices.front()))
    return std::nullopt;
  auto add = store.getValueToStore().getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  for (Value side : {add.getLhs(), add.getRhs()}) {
    auto load = side.getDefiningOp<memref::LoadOp>();
    if (load && load.getMemRef() == store.getMemRef() &&
        load.getIndices() == indices && load->getBlock() == store->getBlock())
      return Scatter{load, store, indices.front()};
  }
  return std::nullopt;
}

/// The top-level loop of `row` over [0, rows) in steps of 1 holding
/// `store` with its index first: the destination's zeroing; else null.
scf::ForOp findRowLoop(memref::StoreOp store, Block &row, int64_t rows) {
  for (Operation *op = store->getParentOp(); op; op = op->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || loop->getBlock() != &row)
      continue;
    if (store.getIndices().front() == loop.getInductionVar() &&
        isConstantIntValue(loop.getLowerBound(), 0) &&
        isConstantIntValue(loop.getStep(), 1) &&
        getConstantIntValue(loop.getUpperBound()) == rows)
      return loop;
    return nullptr;
  }
  return nullptr;
}
} // namespace

std::optional<int64_t> kiln::partitionScatter(func::FuncOp body,
                                              int64_t range) {
  Block &kernel = body.getBody().front();
  scf::ParallelOp rows;
  for (Operation &op : kernel.without_terminator()) {
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      if (rows)
        return std::nullopt;
      rows = loop;
    } else if (!isMemoryEffectFree(&op)) {
      return std::nullopt;
    }
  }
  if (!rows || rows.getNumLoops() != 1 || rows.getNumReductions() != 0 ||
      !isConstantIntValue(rows.getLowerBound()[0], 0) ||
      !isConstantIntValue(rows.getStep()[0], 1) ||
      getConstantIntValue(rows.getUpperBound()[0]) != range)
    return std::nullopt;
  Block &row = *rows.getBody();

  // One destination, written only by scatter-adds and zeroed row by row;
  // the row writes nothing else but status atomics.
  Value destination;
  SmallVector<Scatter> scatters;
  SmallVector<scf::ForOp> zeroing;
  WalkResult walk = row.walk([&](Operation *op) {
    if (isa<memref::AtomicRMWOp>(op) || isa<memref::LoadOp>(op) ||
        isMemoryEffectFree(op) ||
        isa<scf::ForOp, scf::IfOp, scf::YieldOp, scf::ReduceOp>(op))
      return WalkResult::advance();
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store || (destination && store.getMemRef() != destination))
      return WalkResult::interrupt();
    destination = store.getMemRef();
    if (std::optional<Scatter> scatter = matchScatter(store)) {
      scatters.push_back(*scatter);
      return WalkResult::advance();
    }
    auto type = cast<MemRefType>(destination.getType());
    scf::ForOp loop = findRowLoop(store, row, type.getDimSize(0));
    if (!loop)
      return WalkResult::interrupt();
    if (!llvm::is_contained(zeroing, loop))
      zeroing.push_back(loop);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || scatters.empty() || zeroing.empty())
    return std::nullopt;
  // Its loads are the scatter-adds' own.
  WalkResult reads = row.walk([&](memref::LoadOp load) {
    if (load.getMemRef() != destination)
      return WalkResult::advance();
    return llvm::any_of(scatters,
                        [&](const Scatter &s) { return s.load == load; })
               ? WalkResult::advance()
               : WalkResult::interrupt();
  });
  if (reads.wasInterrupted())
    return std::nullopt;
  // Where the scatter-add is guarded: its op in the id's block.
  SmallVector<Operation *> guarded;
  for (Scatter &scatter : scatters) {
    Block *idBlock = scatter.id.getParentBlock();
    Operation *op = scatter.store;
    while (op && op->getBlock() != idBlock)
      op = op->getParentOp();
    if (!op || !row.getParentOp()->isProperAncestor(op))
      return std::nullopt;
    if (!llvm::is_contained(guarded, op))
      guarded.push_back(op);
  }

  int64_t destinationRows =
      cast<MemRefType>(destination.getType()).getDimSize(0);
  int64_t partitions = std::min(kMaxPartitions, destinationRows);
  if (partitions < 2)
    return std::nullopt;

  // The range's iteration i is column i % range of partition i / range.
  Location loc = rows.getLoc();
  Value iv = rows.getInductionVars()[0];
  OpBuilder b = OpBuilder::atBlockBegin(&row);
  Value columns = arith::ConstantIndexOp::create(b, loc, range);
  auto column = arith::RemUIOp::create(b, loc, iv, columns);
  auto partition = arith::DivUIOp::create(b, loc, iv, columns);
  iv.replaceAllUsesExcept(column,
                          llvm::SmallPtrSet<Operation *, 2>{column, partition});
  OpBuilder outside(rows);
  rows.getUpperBoundMutable()[0].assign(
      arith::ConstantIndexOp::create(outside, loc, range * partitions));
  Value count = arith::ConstantIndexOp::create(b, loc, partitions);
  for (scf::ForOp loop : zeroing) {
    loop.getLowerBoundMutable().assign(partition);
    loop.getStepMutable().assign(count);
  }
  for (Operation *op : guarded) {
    OpBuilder at(op);
    Value id;
    for (const Scatter &scatter : scatters)
      if (op->isAncestor(scatter.store))
        id = scatter.id;
    Value owner = arith::RemUIOp::create(at, loc, id, count);
    Value owns = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::eq, owner,
                                       partition);
    auto ifOwns = scf::IfOp::create(at, loc, owns, /*withElseRegion=*/false);
    op->moveBefore(ifOwns.thenBlock()->getTerminator());
  }
  return partitions;
}
