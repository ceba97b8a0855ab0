//===- EmulateSchedule.cpp - A GPU block's ops cut into steps -------------===//
//
// Part of Kiln. The first half of the emulator of a block (BlockEmulator.h):
// its ops cut at the split points into steps (the file comment of
// EmulateBlock.cpp says what the steps are), and the values that cross
// steps given per-thread buffers.
//
//===----------------------------------------------------------------------===//

#include "BlockEmulator.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::emulator;

//===----------------------------------------------------------------------===//
// The schedule
//===----------------------------------------------------------------------===//

/// What the emulator runs of a warp collective: shuffles over whole warps,
/// the mma shapes EmulateMma.cpp models.
static LogicalResult verifyEmulatedCollective(Operation *op) {
  if (auto mma = dyn_cast<NVVM::MmaOp>(op))
    return verifyEmulatedMma(mma);
  auto shuffle = cast<gpu::ShuffleOp>(op);
  if (getConstantIntValue(shuffle.getWidth()) != kEmulatedWarpSize)
    return shuffle.emitError()
           << "the emulator runs gpu.shuffle over whole warps: its width "
              "must be the constant "
           << kEmulatedWarpSize;
  return success();
}

/// The operands a warp collective reads from the other lanes: a shuffle's
/// value (its offset is the lane's own), every register of an mma.
static OperandRange getOtherLanesOperands(Operation *op) {
  // gpu.shuffle's operands: value, offset, width.
  if (isa<gpu::ShuffleOp>(op))
    return op->getOperands().take_front(1);
  return op->getOperands();
}

FailureOr<Steps> BlockEmulator::scheduleBlock(Block &source) {
  Steps steps;
  SmallVector<Operation *> pending;
  auto flush = [&]() -> LogicalResult {
    if (pending.empty())
      return success();
    FailureOr<Steps> inWarp = scheduleWarp(pending, nullptr);
    if (failed(inWarp))
      return failure();
    Step warpsStep{Step::Warps, {}, {}};
    warpsStep.regions.push_back(std::move(*inWarp));
    steps.push_back(std::move(warpsStep));
    pending.clear();
    return success();
  };
  for (Operation &op : source.without_terminator()) {
    if (isHoisted(&op))
      continue;
    if (!isa<gpu::BarrierOp>(op) && !withBarrier.count(&op)) {
      pending.push_back(&op);
      continue;
    }
    if (failed(flush()))
      return failure();
    if (isa<gpu::BarrierOp>(op)) {
      steps.push_back({Step::Barrier, {&op}, {}});
      continue;
    }
    FailureOr<Step> step = scheduleUniform(&op, Level::Block);
    if (failed(step))
      return failure();
    steps.push_back(std::move(*step));
  }
  if (failed(flush()))
    return failure();
  Operation *terminator = source.getTerminator();
  if (isa<scf::YieldOp>(terminator) && terminator->getNumOperands() != 0)
    steps.push_back(scheduleYield(terminator, Level::Block));
  return steps;
}

FailureOr<Steps> BlockEmulator::scheduleWarp(ArrayRef<Operation *> ops,
                                             Block *yielding) {
  Steps steps;
  Step run{Step::Lanes, {}, {}};
  auto flush = [&] {
    if (run.ops.empty())
      return;
    unsigned id = nextStep++;
    for (Operation *op : run.ops) {
      stepOf[op] = id;
      scheduled.push_back(op);
    }
    steps.push_back(std::move(run));
    run = Step{Step::Lanes, {}, {}};
  };
  for (Operation *op : ops) {
    if (isHoisted(op))
      continue;
    if (isWarpCollective(op)) {
      if (failed(verifyEmulatedCollective(op)))
        return failure();
      // A collective reads what the other lanes left behind: values of an
      // earlier step. The step it opens runs on from there.
      if (llvm::any_of(getOtherLanesOperands(op), [&](Value operand) {
            Operation *definer = operand.getDefiningOp();
            Operation *top =
                definer ? op->getBlock()->findAncestorOpInBlock(*definer)
                        : nullptr;
            return top && llvm::is_contained(run.ops, top);
          }))
        flush();
      run.ops.push_back(op);
      continue;
    }
    if (!withShuffle.count(op)) {
      run.ops.push_back(op);
      continue;
    }
    flush();
    FailureOr<Step> step = scheduleUniform(op, Level::Warp);
    if (failed(step))
      return failure();
    steps.push_back(std::move(*step));
  }
  flush();
  if (yielding) {
    Operation *terminator = yielding->getTerminator();
    if (isa<scf::YieldOp>(terminator) && terminator->getNumOperands() != 0)
      steps.push_back(scheduleYield(terminator, Level::Warp));
  }
  return steps;
}

FailureOr<Step> BlockEmulator::scheduleUniform(Operation *op, Level level) {
  if (!isa<scf::IfOp, scf::ForOp>(op))
    return op->emitError()
           << "holds a gpu.barrier, gpu.shuffle or nvvm.mma.sync, which the "
              "emulator runs only inside scf.if and scf.for";
  stepOf[op] = kUniformSite;
  scheduled.push_back(op);
  Step step{Step::Uniform, {op}, {}, level};
  for (Region &region : op->getRegions()) {
    if (region.empty()) {
      step.regions.emplace_back();
      continue;
    }
    Block &body = region.front();
    FailureOr<Steps> steps;
    if (level == Level::Block) {
      steps = scheduleBlock(body);
    } else {
      SmallVector<Operation *> ops;
      for (Operation &nested : body.without_terminator())
        ops.push_back(&nested);
      steps = scheduleWarp(ops, &body);
    }
    if (failed(steps))
      return failure();
    step.regions.push_back(std::move(*steps));
  }
  return step;
}

Step BlockEmulator::scheduleYield(Operation *terminator, Level level) {
  stepOf[terminator] = nextStep++;
  scheduled.push_back(terminator);
  return Step{Step::Yield, {terminator}, {}, level};
}

/// The step in which `user` reads its operands.
unsigned BlockEmulator::siteOf(Operation *user) const {
  for (Operation *op = user; op && op != func; op = op->getParentOp()) {
    auto found = stepOf.find(op);
    if (found != stepOf.end())
      return found->second;
  }
  return kUniformSite;
}

LogicalResult BlockEmulator::analyze() {
  // Constants and launch ids to the top: they are defined once.
  Block &entry = func.getBody().front();
  SmallVector<Operation *> hoisted;
  func.walk([&](Operation *op) {
    if (op != func && isHoisted(op))
      hoisted.push_back(op);
  });
  for (Operation *op : llvm::reverse(hoisted))
    op->moveBefore(&entry, entry.begin());
  func.walk([&](Operation *op) {
    if (!isa<gpu::BarrierOp>(op) && !isWarpCollective(op))
      return;
    auto &marked = isa<gpu::BarrierOp>(op) ? withBarrier : withShuffle;
    for (Operation *parent = op->getParentOp(); parent && parent != func;
         parent = parent->getParentOp())
      marked.insert(parent);
  });
  FailureOr<Steps> steps = scheduleBlock(entry);
  if (failed(steps))
    return failure();
  schedule = std::move(*steps);
  return success();
}

LogicalResult BlockEmulator::keep(OpBuilder &b, Value value, Value storage) {
  if (kept.count(value))
    return success();
  Type type = value.getType();
  auto vector = dyn_cast<VectorType>(type);
  bool numbers = type.isIntOrIndexOrFloat() ||
                 (vector && vector.getElementType().isIntOrFloat() &&
                  !vector.isScalable());
  if (!numbers)
    return emitError(value.getLoc())
           << "a value of type " << type
           << " is used across a gpu.barrier or a warp collective, which "
              "the emulator keeps only for numbers and vectors of them";
  if (!storage)
    storage =
        memref::AllocaOp::create(*block.allocator, value.getLoc(),
                                 MemRefType::get({block.blockSize}, type));
  kept[value] = storage;
  return success();
}

/// Buffers for the values that cross steps: results of thread ops used in
/// another step or by a uniform op, and the results (and, for loops, the
/// carried values) of uniform ops.
LogicalResult BlockEmulator::allocateStorage(OpBuilder &b) {
  for (Operation *op : scheduled) {
    unsigned site = stepOf.lookup(op);
    if (site == kUniformSite) {
      for (Value result : op->getResults())
        if (failed(keep(b, result)))
          return failure();
      if (auto loop = dyn_cast<scf::ForOp>(op))
        for (auto [carried, result] :
             llvm::zip(loop.getRegionIterArgs(), loop.getResults()))
          if (failed(keep(b, carried, kept.lookup(result))))
            return failure();
      continue;
    }
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (siteOf(user) != site) {
          if (failed(keep(b, result)))
            return failure();
          break;
        }
  }
  return success();
}
