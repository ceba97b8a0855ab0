//===- RowPlan.cpp - Which kernels the row template takes -----------------===//
//
// Part of Kiln. planRowKernel (RowTemplate.h): the rows of a kernel, the
// loops of each row that its group of threads share (and the memory
// accumulations rewritten so that they can), and the proof that no two
// threads of a group touch one element the row writes.
//
//===----------------------------------------------------------------------===//

#include "RowReduction.h"
#include "RowTemplate.h"

#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"
#include "kiln/Dialect/Kernel/IR/KernelDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::row;

/// The reduction carried in `loop`'s `index`-th value, when its only uses
/// are one combining op whose only use is the loop's yield.
std::optional<Combine> kiln::row::matchReduction(scf::ForOp loop,
                                                 unsigned index) {
  // The running maximum and exp-sum of an online softmax, built by
  // fuseOnlineSoftmax.
  if (loop->hasAttr(kOnlineSoftmaxAttr) && loop.getNumRegionIterArgs() == 2)
    return index == 0 ? Combine::OnlineMax : Combine::OnlineSum;
  BlockArgument carried = loop.getRegionIterArg(index);
  Value yielded = loop.getYieldedValues()[index];
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || combiner->getBlock() != loop.getBody() ||
      !yielded.hasOneUse())
    return std::nullopt;
  Type type = carried.getType();
  bool wide =
      type.isF32() || type.isF64() || type.isInteger(32) || type.isInteger(64);
  if (!wide)
    return std::nullopt;
  // kb::stdMax: select(acc < x, x, acc).
  if (auto select = dyn_cast<arith::SelectOp>(combiner)) {
    auto less = select.getCondition().getDefiningOp<arith::CmpFOp>();
    if (less && less.getPredicate() == arith::CmpFPredicate::OLT &&
        less.getLhs() == carried && select.getFalseValue() == carried &&
        select.getTrueValue() == less.getRhs() && less->hasOneUse() &&
        llvm::all_of(carried.getUsers(), [&](Operation *user) {
          return user == less || user == select;
        }))
      return Combine::StdMax;
    return std::nullopt;
  }
  if (!carried.hasOneUse() || combiner->getNumOperands() != 2)
    return std::nullopt;
  bool first = combiner->getOperand(0) == carried;
  if (isa<arith::SubFOp>(combiner))
    return first ? std::optional(Combine::SubF) : std::nullopt;
  if (isa<arith::AddFOp>(combiner))
    return Combine::AddF;
  if (isa<arith::MulFOp>(combiner))
    return Combine::MulF;
  if (isa<arith::MaximumFOp>(combiner))
    return Combine::MaximumF;
  if (isa<arith::MinimumFOp>(combiner))
    return Combine::MinimumF;
  if (isa<arith::AddIOp>(combiner))
    return Combine::AddI;
  return std::nullopt;
}

Value kiln::row::getAccessedMemref(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemRef();
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return store.getMemRef();
  if (auto atomic = dyn_cast<memref::AtomicRMWOp>(op))
    return atomic.getMemref();
  return {};
}

namespace {
/// Rows of at most this many elements take a warp (up to 32 per lane).
constexpr int64_t kWarpRowLimit = 1024;

/// At most how many iterations `loop` runs: its constant bounds, or an
/// upper bound min(lower + k, c) (a block of a range, k of them) or
/// min(x, c) above a constant lower bound.
std::optional<int64_t> getMaxTripCount(scf::ForOp loop) {
  if (getConstantIntValue(loop.getStep()) != 1)
    return std::nullopt;
  Value lowerBound = loop.getLowerBound();
  std::optional<int64_t> lower = getConstantIntValue(lowerBound);
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  // Index loops here start at zero or above.
  if (upper)
    return std::max<int64_t>(*upper - lower.value_or(0), 0);
  auto min = loop.getUpperBound().getDefiningOp<arith::MinUIOp>();
  if (!min)
    return std::nullopt;
  std::optional<int64_t> count;
  for (Value side : {min.getLhs(), min.getRhs()}) {
    std::optional<int64_t> bound;
    if (std::optional<int64_t> constant = getConstantIntValue(side)) {
      if (lower)
        bound = std::max<int64_t>(*constant - *lower, 0);
    } else if (auto add = side.getDefiningOp<arith::AddIOp>()) {
      if (add.getLhs() == lowerBound)
        bound = getConstantIntValue(add.getRhs());
      else if (add.getRhs() == lowerBound)
        bound = getConstantIntValue(add.getLhs());
    }
    if (bound)
      count = count ? std::min(*count, *bound) : *bound;
  }
  return count;
}

bool carriesOnlyReductions(scf::ForOp loop) {
  for (unsigned i = 0; i < loop.getNumRegionIterArgs(); ++i)
    if (!matchReduction(loop, i))
      return false;
  return true;
}

/// A read-modify-write `M[I] = M[I] + y` (or y + M[I]) in `loop`'s body:
/// its load, add and store.
struct Accumulation {
  memref::LoadOp load;
  arith::AddFOp add;
  memref::StoreOp store;
};

/// Where `indices` place `iv`, so that distinct values of `iv` reach
/// distinct elements: the position of `iv` itself, or of the pair
/// (iv / K, iv % K) of a delinearized index (encoded past the positions,
/// with K); nullopt when neither is there.
std::optional<int64_t> findOwnerPosition(ValueRange indices, Value iv) {
  if (auto at = llvm::find(indices, iv); at != indices.end())
    return at - indices.begin();
  for (auto [p, quotient] : llvm::enumerate(indices)) {
    auto div = quotient.getDefiningOp<arith::DivUIOp>();
    std::optional<int64_t> k =
        div ? getConstantIntValue(div.getRhs()) : std::nullopt;
    if (!div || div.getLhs() != iv || !k)
      continue;
    for (auto [q, remainder] : llvm::enumerate(indices)) {
      auto rem = remainder.getDefiningOp<arith::RemUIOp>();
      if (rem && rem.getLhs() == iv && getConstantIntValue(rem.getRhs()) == k)
        return (((*k << 8) | static_cast<int64_t>(p)) << 8 |
                static_cast<int64_t>(q)) +
               (1 << 16);
    }
  }
  return std::nullopt;
}

/// Whether `store` in `inner` (inside `outer`) writes an element no other
/// iteration of the nest writes, to a buffer nothing else in `outer`
/// touches: a map's output, which the loops may run in any order.
bool isIndependentStore(memref::StoreOp store, scf::ForOp outer,
                        scf::ForOp inner) {
  ValueRange indices = store.getIndices();
  if (!findOwnerPosition(indices, inner.getInductionVar()) ||
      !findOwnerPosition(indices, outer.getInductionVar()))
    return false;
  WalkResult elsewhere = outer.walk([&](Operation *op) {
    return op != store && getAccessedMemref(op) == store.getMemRef()
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return !elsewhere.wasInterrupted();
}

/// The accumulations of `inner` (a column block inside a loop `outer` over
/// rows) when all else it writes are independent stores: each
/// accumulation's value the sum of a load of the same element and a value
/// of the row, its indices `inner`'s index or values from outside `outer`,
/// its buffer touched nowhere else in `outer`.
std::optional<SmallVector<Accumulation>> matchAccumulations(scf::ForOp outer,
                                                            scf::ForOp inner) {
  SmallVector<Accumulation> found;
  for (Operation &op : inner.getBody()->without_terminator()) {
    if (isMemoryEffectFree(&op) || isa<memref::LoadOp>(op))
      continue;
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store)
      return std::nullopt;
    auto add = store.getValueToStore().getDefiningOp<arith::AddFOp>();
    if (!add || !add->hasOneUse() || add->getBlock() != inner.getBody()) {
      if (isIndependentStore(store, outer, inner))
        continue;
      return std::nullopt;
    }
    memref::LoadOp load;
    for (Value side : {add.getLhs(), add.getRhs()})
      if (auto candidate = side.getDefiningOp<memref::LoadOp>();
          candidate && candidate.getMemRef() == store.getMemRef() &&
          candidate.getIndices() == store.getIndices() &&
          candidate->hasOneUse())
        load = candidate;
    if (!load)
      return std::nullopt;
    for (Value index : store.getIndices())
      if (index != inner.getInductionVar() &&
          outer->isAncestor(index.getParentRegion()->getParentOp()))
        return std::nullopt;
    found.push_back({load, add, store});
  }
  for (Accumulation &accumulation : found) {
    Value memref = accumulation.store.getMemRef();
    WalkResult elsewhere = outer.walk([&](Operation *op) {
      if (op == accumulation.load || op == accumulation.store)
        return WalkResult::advance();
      if (getAccessedMemref(op) == memref)
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (elsewhere.wasInterrupted())
      return std::nullopt;
  }
  if (found.empty())
    return std::nullopt;
  return found;
}

/// Column sums accumulated through memory (`for r: for c in a column
/// block: M[c] += f(r, c)`, the bias and norm-weight gradients) as sums the
/// row template can spread: `for c: { s = sum over r of f(r, c) in a
/// carried value; M[c] += s }`. The rows are summed first and added to
/// M[c] once, not one at a time: the same sums in another order.
void rewriteColumnAccumulations(Block &row) {
  for (Operation &op : llvm::make_early_inc_range(row.without_terminator())) {
    auto outer = dyn_cast<scf::ForOp>(op);
    if (!outer || outer.getNumRegionIterArgs() != 0 ||
        !llvm::hasSingleElement(outer.getBody()->without_terminator()))
      continue;
    auto inner = dyn_cast<scf::ForOp>(outer.getBody()->front());
    if (!inner || inner.getNumRegionIterArgs() != 0 ||
        llvm::any_of(inner->getOperands(), [&](Value bound) {
          return outer->isAncestor(bound.getParentRegion()->getParentOp());
        }))
      continue;
    std::optional<SmallVector<Accumulation>> accumulations =
        matchAccumulations(outer, inner);
    if (!accumulations)
      continue;
    Location loc = outer.getLoc();
    OpBuilder b(outer);
    auto columns = scf::ForOp::create(b, loc, inner.getLowerBound(),
                                      inner.getUpperBound(), inner.getStep());
    OpBuilder inColumns(columns.getBody()->getTerminator());
    SmallVector<Value> zeros;
    for (Accumulation &accumulation : *accumulations) {
      Type type = accumulation.add.getType();
      zeros.push_back(arith::ConstantOp::create(
          inColumns, loc, type, inColumns.getFloatAttr(type, 0.0)));
    }
    auto sums =
        scf::ForOp::create(inColumns, loc, outer.getLowerBound(),
                           outer.getUpperBound(), outer.getStep(), zeros);
    OpBuilder inSums = atEndWithoutTerminator(sums.getBody());
    IRMapping mapping;
    mapping.map(outer.getInductionVar(), sums.getInductionVar());
    mapping.map(inner.getInductionVar(), columns.getInductionVar());
    llvm::SmallPtrSet<Operation *, 8> skipped;
    for (Accumulation &accumulation : *accumulations)
      skipped.insert({accumulation.load, accumulation.add, accumulation.store});
    for (Operation &nested : inner.getBody()->without_terminator())
      if (!skipped.count(&nested))
        inSums.clone(nested, mapping);
    SmallVector<Value> yielded;
    for (auto [index, accumulation] : llvm::enumerate(*accumulations)) {
      Value term = accumulation.add.getLhs() == accumulation.load.getResult()
                       ? accumulation.add.getRhs()
                       : accumulation.add.getLhs();
      yielded.push_back(arith::AddFOp::create(inSums, loc,
                                              sums.getRegionIterArgs()[index],
                                              mapping.lookupOrDefault(term)));
    }
    scf::YieldOp::create(inSums, loc, yielded);
    // Each column's sum into its element once: a read-modify-write.
    for (auto [index, accumulation] : llvm::enumerate(*accumulations)) {
      SmallVector<Value> indices;
      for (Value value : accumulation.store.getIndices())
        indices.push_back(mapping.lookupOrDefault(value));
      Value old = memref::LoadOp::create(
          inColumns, loc, accumulation.store.getMemRef(), indices);
      Value updated =
          arith::AddFOp::create(inColumns, loc, old, sums.getResult(index));
      memref::StoreOp::create(inColumns, loc, updated,
                              accumulation.store.getMemRef(), indices);
    }
    outer.erase();
  }
}

/// Sorts the loops of `block` (a row, or a region of an scf.if or of a
/// loop every thread runs): an innermost loop of two or more iterations
/// carrying only reductions is spread over the group; a loop holding
/// loops, or of at most one iteration, runs on every thread and its body
/// is sorted in turn. False when an op of the row is none of these.
bool sortRowLoops(Block &block, RowPlan &plan) {
  for (Operation &op : block.without_terminator()) {
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      bool nested = false;
      loop.getBody()->walk([&](scf::ForOp) { nested = true; });
      std::optional<int64_t> trips = getMaxTripCount(loop);
      if (!nested && trips && *trips >= 2 && carriesOnlyReductions(loop)) {
        plan.sharedLoops.insert(loop);
        plan.longestLoop = std::max(plan.longestLoop, *trips);
        continue;
      }
      if ((nested || (trips && *trips <= 1)) &&
          sortRowLoops(*loop.getBody(), plan))
        continue;
      return false;
    }
    if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
      for (Region &region : ifOp->getRegions())
        if (!region.empty() && !sortRowLoops(region.front(), plan))
          return false;
      continue;
    }
    // A merged sequential kernel's own loops: every thread runs them.
    if (auto nested = dyn_cast<scf::ParallelOp>(op)) {
      if (nested.getNumReductions() != 0 ||
          !sortRowLoops(*nested.getBody(), plan))
        return false;
      continue;
    }
    if (op.getNumRegions() != 0)
      return false;
    // A store, or an atomic whose result nothing reads, on the first
    // thread; anything else with effects it cannot say is refused.
    if (!isMemoryEffectFree(&op) && !isa<memref::LoadOp, memref::StoreOp>(op) &&
        !(isa<memref::AtomicRMWOp>(op) && op.use_empty()))
      return false;
  }
  return true;
}

ValueRange getAccessIndices(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getIndices();
  return cast<memref::StoreOp>(op).getIndices();
}

/// The value a load outside the shared loops reads when the same thread
/// stored it just before, in the same block at the same indices.
Value findStoredValue(memref::LoadOp load) {
  Value memref = load.getMemRef();
  for (Operation *op = load->getPrevNode(); op; op = op->getPrevNode()) {
    auto store = dyn_cast<memref::StoreOp>(op);
    if (store && store.getMemRef() == memref &&
        store.getIndices() == load.getIndices())
      return store.getValueToStore();
    bool writes = false;
    op->walk([&](Operation *nested) {
      writes |=
          !isa<memref::LoadOp>(nested) && getAccessedMemref(nested) == memref;
    });
    if (writes)
      return {};
  }
  return {};
}

/// The store of `load`'s read-modify-write outside the shared loops (load,
/// one pure op, a store of its result to the same element, in one block),
/// which the group's first thread runs whole; else null.
Operation *findReadModifyWrite(memref::LoadOp load) {
  if (!load->hasOneUse())
    return nullptr;
  Operation *update = *load->getUsers().begin();
  if (update->getBlock() != load->getBlock() || !isMemoryEffectFree(update) ||
      update->getNumResults() != 1 || !update->hasOneUse() ||
      update->getNumRegions() != 0)
    return nullptr;
  auto store = dyn_cast<memref::StoreOp>(*update->getUsers().begin());
  if (!store || store->getBlock() != load->getBlock() ||
      store.getMemRef() != load.getMemRef() ||
      store.getIndices() != load.getIndices() ||
      store.getValueToStore() != update->getResult(0))
    return nullptr;
  for (Operation *op = load->getNextNode(); op != store; op = op->getNextNode())
    if (op != update && !isMemoryEffectFree(op))
      return nullptr;
  return store;
}

/// Whether no two threads of a group touch one element of a buffer the
/// rows write. Each such buffer is either the shared loops' (every access
/// inside one, with the loop's index at one position: one owner per
/// element) or the row's own (written outside the shared loops by the
/// first thread, read back only where that thread just stored it). Fills
/// `plan.forwarded`.
bool isThreadPrivate(ArrayRef<Block *> rows, Block &kernel, RowPlan &plan) {
  llvm::DenseSet<Value> written;
  bool unknown = false;
  for (Block *row : rows)
    row->walk([&](Operation *op) {
      Value memref = getAccessedMemref(op);
      if (!memref) {
        if (!isMemoryEffectFree(op) &&
            !isa<scf::ForOp, scf::IfOp, scf::ParallelOp, scf::YieldOp,
                 scf::ReduceOp>(op))
          unknown = true;
        return;
      }
      // Accesses through views would need their offsets: only the
      // kernel's own buffers.
      auto argument = dyn_cast<BlockArgument>(memref);
      if (!argument || argument.getOwner() != &kernel)
        unknown = true;
      if (!isa<memref::LoadOp>(op))
        written.insert(memref);
    });
  if (unknown)
    return false;
  // Per buffer: the claims on it, each the owner position of a shared
  // loop's accesses (or kRowOwned) and the loop's range. A loop's iteration
  // i runs on thread (i - start) mod group, so two loops at one position
  // agree on the owners when they start together, or touch different
  // elements when one ends where the other starts (a causal row's
  // [0, t] and (t, n)).
  constexpr int64_t kRowOwned = -1;
  struct Claim {
    int64_t position;
    Value start, end;
  };
  auto same = [](Value a, Value b) {
    if (a == b)
      return true;
    std::optional<int64_t> constant = getConstantIntValue(a);
    return constant && constant == getConstantIntValue(b);
  };
  auto compatible = [&](const Claim &a, const Claim &b) {
    if (a.position != b.position)
      return false;
    return a.position == kRowOwned || same(a.start, b.start) ||
           same(a.end, b.start) || same(b.end, a.start);
  };
  llvm::DenseMap<Value, SmallVector<Claim, 2>> claims;
  auto claim = [&](Value memref, int64_t position, scf::ForOp loop = {}) {
    Claim wanted{position, loop ? loop.getLowerBound() : Value(),
                 loop ? loop.getUpperBound() : Value()};
    SmallVector<Claim, 2> &held = claims[memref];
    if (!llvm::all_of(held,
                      [&](const Claim &c) { return compatible(c, wanted); }))
      return false;
    held.push_back(wanted);
    return true;
  };
  for (Block *row : rows) {
    WalkResult result = row->walk([&](Operation *op) {
      Value memref = getAccessedMemref(op);
      if (!memref || !written.count(memref) || isa<memref::AtomicRMWOp>(op))
        return WalkResult::advance();
      scf::ForOp loop;
      for (Operation *parent = op->getParentOp(); parent && !loop;
           parent = parent->getParentOp())
        if (plan.sharedLoops.count(parent))
          loop = cast<scf::ForOp>(parent);
      if (!loop) {
        if (auto load = dyn_cast<memref::LoadOp>(op)) {
          if (Operation *store = findReadModifyWrite(load)) {
            plan.firstThreadUpdates[op] = store;
          } else if (Value stored = findStoredValue(load)) {
            plan.forwarded[op] = stored;
          } else {
            return WalkResult::interrupt();
          }
        }
        return claim(memref, kRowOwned) ? WalkResult::advance()
                                        : WalkResult::interrupt();
      }
      std::optional<int64_t> position =
          findOwnerPosition(getAccessIndices(op), loop.getInductionVar());
      if (!position || !claim(memref, *position, loop))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return false;
  }
  return true;
}
} // namespace

/// What `loop` (a top-level loop of a kernel of `range`) does to its rows,
/// when the template can take it.
static std::optional<RowPlan::Rows> getRows(scf::ParallelOp loop,
                                            int64_t range) {
  RowPlan::Rows rows{loop};
  if (loop.getNumReductions() != 0)
    return std::nullopt;
  for (auto [dim, lower, upper, step] : llvm::enumerate(
           loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> size = getConstantIntValue(upper);
    if (getConstantIntValue(lower) != 0 || getConstantIntValue(step) != 1 ||
        !size || *size < 1)
      return std::nullopt;
    if (dim == 0)
      rows.size = *size;
    else
      rows.elements = std::max<int64_t>(rows.elements, 1) * *size;
  }
  if (auto offset = loop->getAttrOfType<IntegerAttr>(
          kernel::KernelDialect::kSegmentOffsetAttr))
    rows.offset = offset.getInt();
  else if (rows.size != range)
    return std::nullopt;
  if (rows.offset < 0 || rows.offset + rows.size > range)
    return std::nullopt;
  // Every iteration of an elementwise loop on a thread of its own.
  bool nested = false;
  loop.getBody()->walk([&](LoopLikeOpInterface) { nested = true; });
  if (rows.elements && nested)
    return std::nullopt;
  return rows;
}

/// Marks the rows with no loop to share (a merged kernel's scalar
/// segment): their first thread runs them alone, in program order.
static void markFirstThreadRows(RowPlan &plan) {
  for (RowPlan::Rows &rows : plan.rows) {
    if (rows.elements)
      continue;
    bool shares = false;
    rows.loop->walk(
        [&](scf::ForOp loop) { shares |= plan.sharedLoops.count(loop) != 0; });
    rows.firstThreadOnly = !shares;
  }
}

/// Whether every op of `accesses` lies in one first-thread row of one
/// iteration: one thread then makes them all, in order.
static bool inOneFirstThreadRow(ArrayRef<Operation *> accesses,
                                const RowPlan &plan) {
  return llvm::any_of(plan.rows, [&](const RowPlan::Rows &rows) {
    return rows.firstThreadOnly && rows.size == 1 &&
           llvm::all_of(accesses, [&](Operation *op) {
             return rows.loop->isProperAncestor(op);
           });
  });
}

/// Whether no buffer an elementwise row loop touches is written by another
/// of the kernel's loops or read by another where it writes (its
/// iterations are independent; the others' threads own other elements).
static bool haveDisjointBuffers(const RowPlan &plan) {
  SmallVector<llvm::DenseSet<Value>> reads(plan.rows.size()),
      writes(plan.rows.size());
  for (auto [index, rows] : llvm::enumerate(plan.rows))
    rows.loop->walk([&](Operation *op) {
      // Views of a buffer are the buffer.
      Value memref = getAccessedMemref(op);
      if (memref)
        memref = kernel::getRootBuffer(memref);
      if (memref)
        (isa<memref::LoadOp>(op) ? reads : writes)[index].insert(memref);
    });
  for (auto [i, rows] : llvm::enumerate(plan.rows)) {
    if (!rows.elements)
      continue;
    for (size_t j = 0; j < plan.rows.size(); ++j) {
      if (i == j)
        continue;
      for (Value memref : writes[i])
        if (reads[j].count(memref) || writes[j].count(memref))
          return false;
      for (Value memref : reads[i])
        if (writes[j].count(memref))
          return false;
    }
  }
  return true;
}

std::optional<RowPlan> kiln::planRowKernel(func::FuncOp body, int64_t range,
                                           int64_t blockSize, int64_t warpSize,
                                           ArrayRef<bool> aliasedArguments) {
  if (range < 1)
    return std::nullopt;
  Block &kernel = body.getBody().front();
  // The accesses through arguments that may share a buffer with another:
  // the template's ownership is per argument, so they must be only read
  // or all lie in one row that its first thread runs alone.
  bool aliasedWrite = false;
  SmallVector<Operation *> aliasedAccesses;
  body.walk([&](Operation *op) {
    Value memref = getAccessedMemref(op);
    if (memref)
      memref = kernel::getRootBuffer(memref);
    auto argument = dyn_cast_if_present<BlockArgument>(memref);
    if (!argument || argument.getOwner() != &kernel)
      return;
    unsigned index = argument.getArgNumber();
    if (index < aliasedArguments.size() && !aliasedArguments[index])
      return;
    aliasedAccesses.push_back(op);
    aliasedWrite |= !isa<memref::LoadOp>(op);
  });
  RowPlan plan;
  plan.range = range;
  plan.warpSize = warpSize;
  bool effects = false;
  for (Operation &op : kernel.without_terminator()) {
    auto loop = dyn_cast<scf::ParallelOp>(op);
    if (!loop) {
      effects |= !isMemoryEffectFree(&op);
      continue;
    }
    std::optional<RowPlan::Rows> rows = getRows(loop, range);
    if (!rows)
      return std::nullopt;
    plan.rows.push_back(*rows);
  }
  SmallVector<Block *> rows;
  for (const RowPlan::Rows &loop : plan.rows) {
    if (loop.elements)
      plan.longestLoop = std::max(plan.longestLoop, loop.elements);
    else
      rows.push_back(&loop.loop->getRegion(0).front());
  }
  if (!plan.rows.empty() && !haveDisjointBuffers(plan))
    return std::nullopt;
  if (!plan.rows.empty() && effects)
    return std::nullopt;
  // A sequential kernel is one row.
  if (plan.rows.empty()) {
    if (range != 1)
      return std::nullopt;
    rows.push_back(&kernel);
  }
  for (Block *row : rows) {
    fuseOnlineSoftmax(*row);
    rewriteColumnAccumulations(*row);
    if (auto loop = dyn_cast<scf::ParallelOp>(row->getParentOp()))
      inlineSingleIterationLoops(*row, loop.getInductionVars()[0],
                                 *getConstantIntValue(loop.getUpperBound()[0]));
    if (!sortRowLoops(*row, plan))
      return std::nullopt;
  }
  markFirstThreadRows(plan);
  if (aliasedWrite && !inOneFirstThreadRow(aliasedAccesses, plan))
    return std::nullopt;
  llvm::erase_if(rows, [&](Block *row) {
    return llvm::any_of(plan.rows, [&](const RowPlan::Rows &loop) {
      return loop.firstThreadOnly && &loop.loop->getRegion(0).front() == row;
    });
  });
  if (plan.longestLoop < 2 || !isThreadPrivate(rows, kernel, plan))
    return std::nullopt;
  plan.warpPerRow = range > 1 && plan.longestLoop <= kWarpRowLimit;
  if (plan.warpPerRow) {
    plan.rowsPerBlock = std::min(blockSize / warpSize, range);
    plan.blockSize = plan.rowsPerBlock * warpSize;
  } else {
    plan.blockSize = std::clamp<int64_t>((plan.longestLoop + warpSize - 1) /
                                             warpSize * warpSize,
                                         warpSize, blockSize);
  }
  // Columns need two warps or more to split their sums.
  for (RowPlan::Rows &loop : plan.rows)
    loop.columns = !loop.elements && !loop.firstThreadOnly &&
                   plan.blockSize >= 2 * warpSize &&
                   isColumnShaped(loop.loop, plan);
  if (!layOutBlocks(plan))
    return std::nullopt;
  int64_t warps = plan.blockSize / warpSize;
  auto addSharedReductions = [&](Block &row, int64_t words) {
    row.walk([&](scf::ForOp loop) {
      if (plan.sharedLoops.count(loop))
        for (Value carried : loop.getRegionIterArgs())
          plan.sharedReductions.push_back({carried.getType(), words});
    });
  };
  if (plan.rows.empty())
    addSharedReductions(kernel, warps);
  for (RowPlan::Rows &loop : plan.rows) {
    if (loop.elements || loop.firstThreadOnly)
      continue;
    if (loop.columns)
      addSharedReductions(loop.loop->getRegion(0).front(), warps * warpSize);
    else if (!plan.warpPerRow)
      addSharedReductions(loop.loop->getRegion(0).front(), warps);
  }
  return plan;
}
