//===- KernelInsertCollectives.cpp - Gradient sums during the backward ----===//
//
// Part of Kiln. --kernel-insert-collectives: a data-parallel step's
// gradient accumulators, bucketed in the order the backward finishes them,
// each bucket's sum started right after its last op and waited for at the
// entry's end.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace kiln::kernel {
#define GEN_PASS_DEF_KERNELINSERTCOLLECTIVES
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

using namespace mlir;
using namespace kiln::kernel;

namespace {

/// The accumulators of one bucket and the op after which its sum starts
/// (null: before the entry's first op).
struct Bucket {
  SmallVector<Value> buffers;
  Operation *after = nullptr;
  int64_t afterIndex = -1;
  int64_t bytes = 0;
};

/// Moves each op of `entry` that writes a gradient accumulator up to just
/// after the last op it depends on (the one that defines an operand, or
/// a scheduled op that writes what it touches or reads what it writes),
/// views first to just after their source: the step adds a gradient into
/// its accumulator as soon as the backward has produced it, instead of
/// after the whole backward, so that its bucket can start early (and the
/// gradient's transient dies at once).
void hoistAccumulations(EntryOp entry, BufferAccessAnalysis &access) {
  Block &body = entry.getBody().front();
  for (ViewOp view : llvm::make_early_inc_range(body.getOps<ViewOp>())) {
    if (Operation *source = view.getSource().getDefiningOp())
      view->moveAfter(source);
    else
      view->moveBefore(&body.front());
  }
  auto touches = [&](Operation *op, llvm::DenseSet<Value> &read,
                     llvm::DenseSet<Value> &written) {
    for (auto [operand, operandAccess] :
         llvm::zip_equal(op->getOperands(), access.getOperandAccess(op))) {
      if (reads(operandAccess))
        read.insert(getRootBuffer(operand));
      if (writes(operandAccess))
        written.insert(getRootBuffer(operand));
    }
  };
  SmallVector<Operation *> accumulations;
  for (Operation &op : body) {
    if (!isScheduledOp(&op))
      continue;
    llvm::DenseSet<Value> read, written;
    touches(&op, read, written);
    if (llvm::any_of(written, [&](Value root) {
          auto argument = dyn_cast<BlockArgument>(root);
          return argument &&
                 entry.isGradientAccumulator(argument.getArgNumber());
        }))
      accumulations.push_back(&op);
  }
  // The op hoisted last to just after each blocking op (null: the block's
  // start), so that those hoisted to one place keep their order.
  llvm::DenseMap<Operation *, Operation *> placedAfter;
  for (Operation *op : accumulations) {
    llvm::DenseSet<Value> read, written;
    touches(op, read, written);
    Operation *after = op->getPrevNode();
    for (; after; after = after->getPrevNode()) {
      if (llvm::any_of(after->getResults(), [&](Value result) {
            return llvm::is_contained(op->getOperands(), result);
          }))
        break;
      if (!isScheduledOp(after))
        continue;
      llvm::DenseSet<Value> otherRead, otherWritten;
      touches(after, otherRead, otherWritten);
      if (llvm::any_of(otherWritten,
                       [&](Value root) {
                         return read.count(root) || written.count(root);
                       }) ||
          llvm::any_of(otherRead,
                       [&](Value root) { return written.count(root); }))
        break;
    }
    Operation *&placed = placedAfter[after];
    Operation *previous = placed ? placed : after;
    if (previous == op->getPrevNode() || previous == op) {
      placed = op;
      continue;
    }
    if (previous)
      op->moveAfter(previous);
    else
      op->moveBefore(&body.front());
    placed = op;
  }
}

/// The world the module's train step was built for (`graph.train`'s
/// `world`), else 1.
int64_t getTrainWorld(ModuleOp module) {
  auto train = module->getAttrOfType<DictionaryAttr>("graph.train");
  if (!train)
    return 1;
  auto world = train.getAs<IntegerAttr>("world");
  return world ? world.getInt() : 1;
}

struct KernelInsertCollectivesPass
    : kiln::kernel::impl::KernelInsertCollectivesBase<
          KernelInsertCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t trained = getTrainWorld(module);
    int64_t asked = world;
    if (asked < 0 || bucketBytes < 0) {
      module.emitError() << "kernel-insert-collectives: world and "
                            "bucket-bytes must not be negative";
      return signalPassFailure();
    }
    if (asked != 0 && asked != trained &&
        getOperation()->hasAttr("graph.train")) {
      module.emitError() << "kernel-insert-collectives: world " << asked
                         << " differs from the train step's world " << trained;
      return signalPassFailure();
    }
    int64_t ranks = asked != 0 ? asked : trained;
    if (ranks <= 1)
      return;
    EntryOp accumulate;
    for (EntryOp entry : module.getOps<EntryOp>())
      if (entry.getSymName() == "accumulate_step")
        accumulate = entry;
    if (!accumulate) {
      module.emitError() << "kernel-insert-collectives: a step for " << ranks
                         << " ranks sums the gradients of its "
                            "'accumulate_step', and the module has none";
      return signalPassFailure();
    }
    if (failed(insertInto(accumulate)))
      return signalPassFailure();
  }

  LogicalResult insertInto(EntryOp entry) {
    Block &body = entry.getBody().front();
    if (!body.getOps<CollectiveStartOp>().empty())
      return entry.emitOpError()
             << "has collectives already (kernel-insert-collectives ran)";
    BufferAccessAnalysis access;
    hoistAccumulations(entry, access);
    // The last scheduled op touching each buffer (through its views too).
    llvm::DenseMap<Value, std::pair<Operation *, int64_t>> lastTouch;
    int64_t index = 0;
    for (Operation &op : body) {
      if (!isScheduledOp(&op))
        continue;
      for (Value operand : op.getOperands())
        lastTouch[getRootBuffer(operand)] = {&op, index};
      ++index;
    }
    SmallVector<BlockArgument> accumulators;
    for (BlockArgument argument : body.getArguments())
      if (entry.isGradientAccumulator(argument.getArgNumber())) {
        if (!cast<MemRefType>(argument.getType()).getElementType().isF32())
          return entry.emitOpError()
                 << "has the gradient accumulator '"
                 << entry.getBufferName(argument.getArgNumber()) << "' in "
                 << argument.getType()
                 << ": the sums over the ranks run in f32";
        accumulators.push_back(argument);
      }
    auto lastIndex = [&](Value buffer) {
      auto found = lastTouch.find(buffer);
      return found == lastTouch.end() ? int64_t(-1) : found->second.second;
    };
    std::stable_sort(accumulators.begin(), accumulators.end(),
                     [&](BlockArgument a, BlockArgument b) {
                       return lastIndex(a) < lastIndex(b);
                     });
    SmallVector<Bucket> buckets;
    for (BlockArgument accumulator : accumulators) {
      if (buckets.empty() || buckets.back().bytes >= bucketBytes)
        buckets.emplace_back();
      Bucket &bucket = buckets.back();
      bucket.buffers.push_back(accumulator);
      bucket.bytes +=
          getBufferSizeInBytes(cast<MemRefType>(accumulator.getType()));
      auto found = lastTouch.find(accumulator);
      if (found != lastTouch.end() && found->second.second > bucket.afterIndex)
        bucket.after = found->second.first,
        bucket.afterIndex = found->second.second;
    }
    Operation *terminator = body.getTerminator();
    OpBuilder builder(entry.getContext());
    SmallVector<CollectiveStartOp> starts;
    // The start placed last after each op, so that buckets starting after
    // the same op keep their order.
    llvm::DenseMap<Operation *, Operation *> lastPlacedAfter;
    Operation *lastAtFront = nullptr;
    for (auto [number, bucket] : llvm::enumerate(buckets)) {
      if (!overlap) {
        builder.setInsertionPoint(terminator);
      } else if (!bucket.after) {
        if (lastAtFront)
          builder.setInsertionPointAfter(lastAtFront);
        else
          builder.setInsertionPointToStart(&body);
      } else {
        Operation *&placed = lastPlacedAfter[bucket.after];
        builder.setInsertionPointAfter(placed ? placed : bucket.after);
      }
      Location loc = bucket.after ? bucket.after->getLoc() : entry.getLoc();
      auto start = CollectiveStartOp::create(
          builder, loc, CollectiveType::get(entry.getContext()), bucket.buffers,
          static_cast<int64_t>(number));
      if (overlap && !bucket.after)
        lastAtFront = start;
      else if (overlap)
        lastPlacedAfter[bucket.after] = start;
      starts.push_back(start);
    }
    builder.setInsertionPoint(terminator);
    for (CollectiveStartOp start : starts)
      CollectiveWaitOp::create(builder, start.getLoc(), start.getToken(),
                               start.getBuffers());
    return success();
  }
};

} // namespace
