//===- RowTemplate.cpp - A warp or a block per row ------------------------===//
//
// Part of Kiln. The row template (RowTemplate.h) builds the gpu.func of a
// kernel RowPlan.cpp took: softmax, layer_norm, cross_entropy, their
// gradients, embedding rows, column sums and the sequential kernels (a
// whole kernel of range 1 is one row of one block).
//
// Each scf.for over [0, n) of a row becomes `for i = member; i < n;
// i += group` on the group's threads; each value it carries starts at the
// reduction's identity on every thread, and after the loop the threads'
// partial values are combined: a butterfly of gpu.shuffle xor within each
// warp, lane 0's result broadcast to the warp (so every lane holds the same
// bits), and for a block the warps' results through shared memory, read
// back by every thread in warp order. The sums are in a fixed order, so a
// run repeats bit for bit, but not in the cpu target's index order.
//
//===----------------------------------------------------------------------===//

#include "RowTemplate.h"
#include "KernelFunc.h"
#include "RowReduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::row;

namespace {
/// The value a thread's partial result starts from.
Value getIdentity(OpBuilder &b, Location loc, Combine kind, Type type) {
  if (kind == Combine::AddI)
    return arith::ConstantIntOp::create(b, loc, type, 0);
  auto floatType = cast<FloatType>(type);
  const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
  llvm::APFloat value = llvm::APFloat::getZero(semantics);
  if (kind == Combine::MulF)
    value = llvm::APFloat::getOne(semantics);
  else if (kind == Combine::StdMax || kind == Combine::MaximumF ||
           kind == Combine::OnlineMax)
    value = llvm::APFloat::getInf(semantics, /*Negative=*/true);
  else if (kind == Combine::MinimumF)
    value = llvm::APFloat::getInf(semantics, /*Negative=*/false);
  return arith::ConstantOp::create(b, loc, type,
                                   b.getFloatAttr(floatType, value));
}

/// Two partial results as one (a SubF's partials are negated sums: they
/// add).
Value combine(OpBuilder &b, Location loc, Combine kind, Value lhs, Value rhs) {
  switch (kind) {
  case Combine::AddF:
  case Combine::SubF:
    return arith::AddFOp::create(b, loc, lhs, rhs);
  case Combine::MulF:
    return arith::MulFOp::create(b, loc, lhs, rhs);
  case Combine::StdMax: {
    Value less =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, lhs, rhs);
    return arith::SelectOp::create(b, loc, less, rhs, lhs);
  }
  case Combine::MaximumF:
    return arith::MaximumFOp::create(b, loc, lhs, rhs);
  case Combine::MinimumF:
    return arith::MinimumFOp::create(b, loc, lhs, rhs);
  case Combine::AddI:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case Combine::OnlineMax:
  case Combine::OnlineSum:
    break;
  }
  llvm_unreachable("an online softmax's values combine as a pair");
}

/// What the row's threads share while the row is rebuilt.
struct Group {
  Value member;
  int64_t size;
  Value lane, warp;
  int64_t warpSize;
  bool warpPerRow;
  /// The group is one lane of every warp of the block (a column each).
  bool columns = false;
  /// Whether the thread's row exists; null when every row does. A lane
  /// past the last column repeats it, its stores dropped.
  Value valid;
  ArrayRef<BlockArgument> shared;
  unsigned nextShared = 0;
  const RowPlan *plan;
  /// Ops already emitted with an earlier one (a first-thread update).
  llvm::SmallPtrSet<Operation *, 8> done;
};

Value shuffle(OpBuilder &b, Location loc, gpu::ShuffleMode mode, Value value,
              int64_t offset, int64_t warpSize) {
  Value offsetValue =
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), offset);
  Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), warpSize);
  return gpu::ShuffleOp::create(b, loc, value, offsetValue, width, mode)
      .getShuffleResult();
}

/// Whether the thread is its row's first (and the row exists).
Value isFirstOfGroup(OpBuilder &b, Location loc, const Group &group) {
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, group.member,
                            arith::ConstantIndexOp::create(b, loc, 0));
  if (group.valid)
    first = arith::AndIOp::create(b, loc, first, group.valid);
  return first;
}

/// A barrier after the reads of a shared buffer when the builder is inside
/// a loop: the buffer's next use must not overwrite words still unread.
void barrierBeforeReuse(OpBuilder &b, Location loc) {
  for (Operation *op = b.getInsertionBlock()->getParentOp();
       op && !isa<gpu::GPUFuncOp>(op); op = op->getParentOp())
    if (isa<LoopLikeOpInterface>(op)) {
      gpu::BarrierOp::create(b, loc);
      return;
    }
}

/// `partial` combined over a column's group (the same lane of each warp):
/// a word per thread, then every thread combines its column's in warp order.
Value reduceOverColumn(OpBuilder &b, Location loc, Combine kind, Value partial,
                       Group &group) {
  BlockArgument buffer = group.shared[group.nextShared++];
  Value lanes = arith::ConstantIndexOp::create(b, loc, group.warpSize);
  Value own = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, group.warp, lanes), group.lane);
  memref::StoreOp::create(b, loc, partial, buffer, ValueRange{own});
  gpu::BarrierOp::create(b, loc);
  Value total;
  for (int64_t w = 0; w < group.size; ++w) {
    Value word = arith::AddIOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, w * group.warpSize),
        group.lane);
    Value value = memref::LoadOp::create(b, loc, buffer, ValueRange{word});
    total = total ? combine(b, loc, kind, total, value) : value;
  }
  barrierBeforeReuse(b, loc);
  return total;
}

/// `partial` combined over the group; every thread gets the same bits.
Value reduceOverGroup(OpBuilder &b, Location loc, Combine kind, Value partial,
                      Group &group) {
  if (group.columns)
    return reduceOverColumn(b, loc, kind, partial, group);
  Value value = partial;
  for (int64_t offset = group.warpSize / 2; offset >= 1; offset /= 2)
    value = combine(
        b, loc, kind, value,
        shuffle(b, loc, gpu::ShuffleMode::XOR, value, offset, group.warpSize));
  value = shuffle(b, loc, gpu::ShuffleMode::IDX, value, 0, group.warpSize);
  if (group.warpPerRow)
    return value;
  // A word per warp, then every thread combines them in warp order.
  BlockArgument buffer = group.shared[group.nextShared++];
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, group.lane, zero);
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder inside(ifFirst.thenBlock()->getTerminator());
    memref::StoreOp::create(inside, loc, value, buffer, ValueRange{group.warp});
  }
  gpu::BarrierOp::create(b, loc);
  int64_t warps = group.size / group.warpSize;
  Value total = memref::LoadOp::create(b, loc, buffer, ValueRange{zero});
  for (int64_t w = 1; w < warps; ++w)
    total = combine(b, loc, kind, total,
                    memref::LoadOp::create(
                        b, loc, buffer,
                        ValueRange{arith::ConstantIndexOp::create(b, loc, w)}));
  barrierBeforeReuse(b, loc);
  return total;
}

/// An online softmax's partial (maximum, exp-sum) pair combined over the
/// group, as reduceOverGroup combines one value: the pair's butterfly
/// within each warp and lane 0's pair broadcast, then (a block per row or
/// columns) a word of each per warp or thread, one barrier, and every
/// thread combining them in warp order.
std::pair<Value, Value> reducePairOverGroup(OpBuilder &b, Location loc,
                                            Value maximum, Value sum,
                                            Group &group) {
  if (!group.columns) {
    for (int64_t offset = group.warpSize / 2; offset >= 1; offset /= 2) {
      Value otherMaximum = shuffle(b, loc, gpu::ShuffleMode::XOR, maximum,
                                   offset, group.warpSize);
      Value otherSum =
          shuffle(b, loc, gpu::ShuffleMode::XOR, sum, offset, group.warpSize);
      std::tie(maximum, sum) =
          combineOnlineSoftmax(b, loc, maximum, sum, otherMaximum, otherSum);
    }
    maximum =
        shuffle(b, loc, gpu::ShuffleMode::IDX, maximum, 0, group.warpSize);
    sum = shuffle(b, loc, gpu::ShuffleMode::IDX, sum, 0, group.warpSize);
    if (group.warpPerRow)
      return {maximum, sum};
  }
  BlockArgument maxima = group.shared[group.nextShared++];
  BlockArgument sums = group.shared[group.nextShared++];
  Value lanes = arith::ConstantIndexOp::create(b, loc, group.warpSize);
  // Columns: a word per thread, the column's at its lane of each warp;
  // rows: a word per warp, written by its lane 0.
  Value own =
      group.columns
          ? arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, group.warp, lanes),
                group.lane)
                .getResult()
          : group.warp;
  {
    OpBuilder::InsertionGuard guard(b);
    if (!group.columns) {
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, group.lane,
                                arith::ConstantIndexOp::create(b, loc, 0));
      auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
    }
    memref::StoreOp::create(b, loc, maximum, maxima, ValueRange{own});
    memref::StoreOp::create(b, loc, sum, sums, ValueRange{own});
  }
  gpu::BarrierOp::create(b, loc);
  int64_t parts = group.columns ? group.size : group.size / group.warpSize;
  Value totalMaximum, totalSum;
  for (int64_t w = 0; w < parts; ++w) {
    Value word = arith::ConstantIndexOp::create(
        b, loc, group.columns ? w * group.warpSize : w);
    if (group.columns)
      word = arith::AddIOp::create(b, loc, word, group.lane);
    Value partMaximum =
        memref::LoadOp::create(b, loc, maxima, ValueRange{word});
    Value partSum = memref::LoadOp::create(b, loc, sums, ValueRange{word});
    if (w == 0) {
      totalMaximum = partMaximum;
      totalSum = partSum;
      continue;
    }
    std::tie(totalMaximum, totalSum) = combineOnlineSoftmax(
        b, loc, totalMaximum, totalSum, partMaximum, partSum);
  }
  barrierBeforeReuse(b, loc);
  return {totalMaximum, totalSum};
}

/// Each store and atomic under `root` only where the thread's row exists.
void guardStores(Operation *root, Value valid) {
  SmallVector<Operation *> stores;
  root->walk([&](Operation *op) {
    if (isa<memref::StoreOp, memref::AtomicRMWOp>(op))
      stores.push_back(op);
  });
  for (Operation *store : stores) {
    OpBuilder b(store);
    auto ifValid =
        scf::IfOp::create(b, store->getLoc(), valid, /*withElseRegion=*/false);
    store->moveBefore(ifValid.thenBlock()->getTerminator());
  }
}

void emitRow(Block &source, OpBuilder &b, IRMapping &mapping, Group &group);

/// `loop` over the group's threads, then its reductions combined.
void emitSharedLoop(scf::ForOp loop, OpBuilder &b, IRMapping &mapping,
                    Group &group) {
  Location loc = loop.getLoc();
  SmallVector<Combine> kinds;
  SmallVector<Value> identities;
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i) {
    kinds.push_back(*matchReduction(loop, i));
    identities.push_back(
        getIdentity(b, loc, kinds.back(), loop.getRegionIterArg(i).getType()));
  }
  Value first = arith::AddIOp::create(
      b, loc, mapping.lookupOrDefault(loop.getLowerBound()), group.member);
  auto shared = scf::ForOp::create(
      b, loc, first, mapping.lookupOrDefault(loop.getUpperBound()),
      arith::ConstantIndexOp::create(b, loc, group.size), identities);
  {
    OpBuilder inside = atEndWithoutTerminator(shared.getBody());
    mapping.map(loop.getInductionVar(), shared.getInductionVar());
    for (auto [from, to] :
         llvm::zip(loop.getRegionIterArgs(), shared.getRegionIterArgs()))
      mapping.map(from, to);
    for (Operation &op : loop.getBody()->without_terminator())
      inside.clone(op, mapping);
    SmallVector<Value> yielded;
    for (Value value : loop.getYieldedValues())
      yielded.push_back(mapping.lookup(value));
    scf::YieldOp::create(inside, loc, yielded);
  }
  if (group.valid)
    guardStores(shared, group.valid);
  if (loop->hasAttr(kOnlineSoftmaxAttr)) {
    // Its initial values are the pair's identity (fuseOnlineSoftmax).
    auto [maximum, sum] = reducePairOverGroup(b, loc, shared.getResult(0),
                                              shared.getResult(1), group);
    mapping.map(loop.getResult(0), maximum);
    mapping.map(loop.getResult(1), sum);
    return;
  }
  for (auto [index, kind] : llvm::enumerate(kinds)) {
    Value total = reduceOverGroup(b, loc, kind, shared.getResult(index), group);
    Value initial = mapping.lookupOrDefault(loop.getInitArgs()[index]);
    mapping.map(loop.getResult(index), combine(b, loc, kind, initial, total));
  }
}

/// The ops of `source` (a row, or a region of one of its scf.if ops) at
/// `b` for the group's threads.
void emitRow(Block &source, OpBuilder &b, IRMapping &mapping, Group &group) {
  for (Operation &op : source.without_terminator()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (loop && group.plan->sharedLoops.count(loop)) {
      emitSharedLoop(loop, b, mapping, group);
      continue;
    }
    if (loop) {
      // Every thread runs it, the loops inside spread over the group.
      SmallVector<Value> initial;
      for (Value value : loop.getInitArgs())
        initial.push_back(mapping.lookupOrDefault(value));
      auto rebuilt = scf::ForOp::create(
          b, loop.getLoc(), mapping.lookupOrDefault(loop.getLowerBound()),
          mapping.lookupOrDefault(loop.getUpperBound()),
          mapping.lookupOrDefault(loop.getStep()), initial);
      mapping.map(loop.getInductionVar(), rebuilt.getInductionVar());
      mapping.map(loop.getRegionIterArgs(), rebuilt.getRegionIterArgs());
      OpBuilder inside = atEndWithoutTerminator(rebuilt.getBody());
      emitRow(*loop.getBody(), inside, mapping, group);
      SmallVector<Value> yielded;
      for (Value value : loop.getYieldedValues())
        yielded.push_back(mapping.lookupOrDefault(value));
      scf::YieldOp::create(inside, loop.getLoc(), yielded);
      mapping.map(loop.getResults(), rebuilt.getResults());
      continue;
    }
    if (auto nested = dyn_cast<scf::ParallelOp>(op)) {
      // Its iterations in order on every thread, a loop per dim.
      OpBuilder::InsertionGuard guard(b);
      for (auto [index, lower, upper, step] :
           llvm::enumerate(nested.getLowerBound(), nested.getUpperBound(),
                           nested.getStep())) {
        auto dim = scf::ForOp::create(
            b, nested.getLoc(), mapping.lookupOrDefault(lower),
            mapping.lookupOrDefault(upper), mapping.lookupOrDefault(step));
        mapping.map(nested.getInductionVars()[index], dim.getInductionVar());
        b.setInsertionPoint(dim.getBody()->getTerminator());
      }
      emitRow(*nested.getBody(), b, mapping, group);
      continue;
    }
    if (group.done.count(&op))
      continue;
    if (auto update = group.plan->firstThreadUpdates.find(&op);
        update != group.plan->firstThreadUpdates.end()) {
      // The group's result into memory: load, update and store on the
      // first thread only (the others' values were never read).
      Operation *store = update->second;
      Operation *modify = *op.getUsers().begin();
      Location loc = op.getLoc();
      auto ifFirst = scf::IfOp::create(b, loc, isFirstOfGroup(b, loc, group),
                                       /*withElseRegion=*/false);
      OpBuilder inside(ifFirst.thenBlock()->getTerminator());
      for (Operation *part : {&op, modify, store}) {
        inside.clone(*part, mapping);
        group.done.insert(part);
      }
      continue;
    }
    if (auto forwarded = group.plan->forwarded.find(&op);
        forwarded != group.plan->forwarded.end()) {
      mapping.map(op.getResult(0), mapping.lookupOrDefault(forwarded->second));
      continue;
    }
    if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      bool withElse = !ifOp.getElseRegion().empty();
      auto rebuilt = scf::IfOp::create(
          b, ifOp.getLoc(), ifOp.getResultTypes(),
          mapping.lookupOrDefault(ifOp.getCondition()), withElse);
      for (auto [from, to] :
           llvm::zip(ifOp->getRegions(), rebuilt->getRegions())) {
        if (from.empty())
          continue;
        OpBuilder inside = atEndWithoutTerminator(&to.front());
        emitRow(from.front(), inside, mapping, group);
        SmallVector<Value> yielded;
        for (Value value : from.front().getTerminator()->getOperands())
          yielded.push_back(mapping.lookupOrDefault(value));
        scf::YieldOp::create(inside, ifOp.getLoc(), yielded);
      }
      mapping.map(ifOp.getResults(), rebuilt.getResults());
      continue;
    }
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op)) {
      b.clone(op, mapping);
      continue;
    }
    // Stores and atomics of the row itself: once, by its first thread.
    Location loc = op.getLoc();
    auto ifFirst = scf::IfOp::create(b, loc, isFirstOfGroup(b, loc, group),
                                     /*withElseRegion=*/false);
    OpBuilder inside(ifFirst.thenBlock()->getTerminator());
    inside.clone(op, mapping);
  }
}
} // namespace

void kiln::buildRowKernel(OpBuilder &builder, StringRef name, Location loc,
                          func::FuncOp body, const RowPlan &plan) {
  Block &source = body.getBody().front();
  unsigned numBuffers = source.getNumArguments() - 2;
  SmallVector<Type> workgroup;
  for (const RowPlan::SharedReduction &reduction : plan.sharedReductions)
    workgroup.push_back(getSharedBufferType(builder.getContext(),
                                            {reduction.words}, reduction.type));
  gpu::GPUFuncOp func = createKernelFunc(builder, loc, name, body, workgroup,
                                         {plan.grid, plan.blockSize});
  std::string kind = plan.warpPerRow ? "warp" : "block";
  auto isColumns = [](const RowPlan::Rows &rows) { return rows.columns; };
  if (!plan.rows.empty() && llvm::all_of(plan.rows, isColumns))
    kind = "column";
  else if (llvm::any_of(plan.rows, isColumns))
    kind += "+column";
  func->setAttr(kRowTemplateAttr, builder.getStringAttr(kind));

  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value blockId = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value lanes = arith::ConstantIndexOp::create(b, loc, plan.warpSize);
  Group group;
  group.lane = arith::RemUIOp::create(b, loc, thread, lanes);
  group.warp = arith::DivUIOp::create(b, loc, thread, lanes);
  group.warpPerRow = plan.warpPerRow;
  group.member = plan.warpPerRow ? group.lane : thread;
  group.warpSize = plan.warpSize;
  group.size = plan.warpPerRow ? plan.warpSize : plan.blockSize;
  group.shared = func.getWorkgroupAttributions();
  group.plan = &plan;

  IRMapping mapping;
  for (unsigned i = 0; i < numBuffers; ++i)
    mapping.map(source.getArgument(i), entry.getArgument(i));
  auto ret = gpu::ReturnOp::create(b, loc);
  b.setInsertionPoint(ret);
  if (plan.rows.empty()) {
    emitRow(source, b, mapping, group);
    return;
  }
  llvm::SmallPtrSet<Operation *, 4> rowLoops;
  for (const RowPlan::Rows &rows : plan.rows)
    rowLoops.insert(rows.loop);
  for (Operation &op : source.without_terminator())
    if (!rowLoops.count(&op))
      b.clone(op, mapping);
  // A merged kernel's launches, each on its own blocks.
  for (const RowPlan::Rows &rows : plan.rows) {
    OpBuilder::InsertionGuard guard(b);
    Value local = blockId;
    if (rows.blocks != plan.grid) {
      Value first = arith::ConstantIndexOp::create(b, loc, rows.firstBlock);
      Value end =
          arith::ConstantIndexOp::create(b, loc, rows.firstBlock + rows.blocks);
      Value inside = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, blockId,
                                first),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, blockId,
                                end));
      auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      local = arith::SubIOp::create(b, loc, blockId, first);
    }
    Value size = arith::ConstantIndexOp::create(b, loc, rows.size);
    // The block's rows from its first: a column per lane, a row per warp,
    // or its one row.
    Group rowGroup = group;
    int64_t perBlock = plan.getRowsPerBlock(rows);
    Value index = local;
    if (perBlock > 1)
      index = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, local, arith::ConstantIndexOp::create(b, loc, perBlock)),
          rows.columns ? group.lane : group.warp);
    bool ragged = rows.blocks * perBlock > rows.size;
    if (rows.columns) {
      // The lanes past the last column repeat it.
      rowGroup.columns = true;
      rowGroup.member = group.warp;
      rowGroup.size = plan.blockSize / plan.warpSize;
      if (ragged) {
        rowGroup.valid = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, index, size);
        index = arith::MinUIOp::create(
            b, loc, index,
            arith::ConstantIndexOp::create(b, loc, rows.size - 1));
      }
    } else if (ragged) {
      // The last block's extra warps have no row.
      Value inRange =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, index, size);
      auto ifOp = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    }
    scf::ParallelOp loop = rows.loop;
    mapping.map(loop.getInductionVars()[0], index);
    if (rows.firstThreadOnly) {
      auto ifFirst = scf::IfOp::create(b, loc, isFirstOfGroup(b, loc, rowGroup),
                                       /*withElseRegion=*/false);
      OpBuilder inside(ifFirst.thenBlock()->getTerminator());
      for (Operation &op : loop.getBody()->without_terminator())
        inside.clone(op, mapping);
      continue;
    }
    if (!rows.elements) {
      emitRow(*loop.getBody(), b, mapping, rowGroup);
      // The shared buffers are the kernel's, in the order rows use them.
      group.nextShared = rowGroup.nextShared;
      continue;
    }
    // The row's elements over the group, the last dim fastest.
    auto spread = scf::ForOp::create(
        b, loc, group.member,
        arith::ConstantIndexOp::create(b, loc, rows.elements),
        arith::ConstantIndexOp::create(b, loc, group.size));
    OpBuilder inside(spread.getBody()->getTerminator());
    Value rest = spread.getInductionVar();
    for (int64_t d = loop.getNumLoops() - 1; d >= 1; --d) {
      Value size = arith::ConstantIndexOp::create(
          inside, loc, *getConstantIntValue(loop.getUpperBound()[d]));
      mapping.map(
          loop.getInductionVars()[d],
          d == 1 ? rest
                 : arith::RemUIOp::create(inside, loc, rest, size).getResult());
      if (d > 1)
        rest = arith::DivUIOp::create(inside, loc, rest, size);
    }
    for (Operation &op : loop.getBody()->without_terminator())
      inside.clone(op, mapping);
  }
}
