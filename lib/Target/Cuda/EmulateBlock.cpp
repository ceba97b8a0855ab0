//===- EmulateBlock.cpp - One GPU block's threads as host loops -----------===//
//
// Part of Kiln. The emulator's schedule of a block, after PoCL's work-item
// loops: the kernel's ops are cut at split points into steps, each step a
// loop over the threads that run it together.
//
//   block level   steps between gpu.barrier ops: every thread of the block
//                 finishes one before any starts the next;
//   warp level    inside those, steps between gpu.shuffle ops, warp by warp:
//                 a shuffle reads what the lanes of its warp left behind;
//   uniform ops   an scf.if or scf.for holding a split point runs once for
//                 the threads that reach it together (the block for a
//                 barrier, the warp for a shuffle), their condition and
//                 bounds those of the first thread; the checked build traps
//                 threads that disagree (a divergent barrier or shuffle).
//
// A value used in another step than the one defining it (or by a uniform
// op, or carried by one) is kept per thread in a buffer of the block. No
// step relies on the lanes of a warp running in lockstep.
//
//===----------------------------------------------------------------------===//

#include "EmulateBlock.h"
#include "EmulatorChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace kiln;

namespace {
enum class Level { Block, Warp };

struct Step;
using Steps = std::vector<Step>;

/// One loop over threads, or what separates such loops.
struct Step {
  enum Kind { Warps, Lanes, Barrier, Uniform, Yield } kind;
  /// Lanes: the ops a thread runs in order (a shuffle first or reading
  /// only values of earlier steps); the others: their one op (the barrier,
  /// the uniform op, the region's terminator).
  SmallVector<Operation *> ops;
  /// Warps: the steps of each warp; Uniform: those of each region.
  std::vector<std::vector<Step>> regions;
  /// Uniform and Yield: the threads that run it together.
  Level level = Level::Block;
};

bool isLaunchId(Operation *op) {
  return isa<gpu::BlockIdOp, gpu::ThreadIdOp, gpu::BlockDimOp, gpu::GridDimOp,
             gpu::LaneIdOp, gpu::SubgroupIdOp>(op);
}

/// Per-thread launch ids: their value depends on the thread.
bool isThreadId(Operation *op) {
  return isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::SubgroupIdOp>(op);
}

/// Ops moved to the top of the kernel and defined once per block (or
/// computed from the thread's index where they are used).
bool isHoisted(Operation *op) {
  return isLaunchId(op) ||
         (op->hasTrait<OpTrait::ConstantLike>() && op->getNumOperands() == 0 &&
          op->getNumRegions() == 0);
}

class BlockEmulator {
public:
  BlockEmulator(gpu::GPUFuncOp func, const EmulatedBlock &block,
                IRMapping &mapping)
      : func(func), block(block), mapping(mapping),
        warps(block.blockSize / kEmulatedWarpSize) {}

  LogicalResult build(OpBuilder &b);

private:
  LogicalResult analyze();
  FailureOr<Steps> scheduleBlock(Block &source);
  FailureOr<Steps> scheduleWarp(ArrayRef<Operation *> ops, Block *yielding);
  FailureOr<Step> scheduleUniform(Operation *op, Level level);
  Step scheduleYield(Operation *terminator, Level level);
  unsigned siteOf(Operation *user) const;
  LogicalResult allocateStorage(OpBuilder &b);
  LogicalResult keep(OpBuilder &b, Value value, Value storage = {});

  void emit(ArrayRef<Step> steps, OpBuilder &b, Value warp);
  void emitLanes(const Step &step, OpBuilder &b, Value warp);
  void emitShuffle(gpu::ShuffleOp shuffle, OpBuilder &b, Value thread,
                   Value lane, Value warp);
  void emitUniform(const Step &step, OpBuilder &b, Value warp);
  void emitYield(const Step &step, OpBuilder &b, Value warp);
  void emitBarrier(OpBuilder &b, Location loc);
  void checkUniform(OpBuilder &b, Operation *op, Level level, Value warp,
                    ValueRange operands);

  /// Runs `body(b, thread, lane, warp)` for the block's threads (Block) or
  /// the lanes of `warp` (Warp).
  void
  forThreads(OpBuilder &b, Location loc, Level level, Value warp,
             llvm::function_ref<void(OpBuilder &, Value, Value, Value)> body);
  /// The first thread of the block (Block) or of `warp` (Warp).
  Value getLeader(OpBuilder &b, Location loc, Level level, Value warp) {
    if (level == Level::Block)
      return constant(b, loc, 0);
    return arith::MulIOp::create(b, loc, warp,
                                 constant(b, loc, kEmulatedWarpSize));
  }
  /// `value` as thread `thread` has it.
  Value valueAt(OpBuilder &b, Location loc, Value value, Value thread);
  void mapThreadIds(OpBuilder &b, Location loc, Value thread, Value lane,
                    Value warp);
  Value constant(OpBuilder &b, Location loc, int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }

  gpu::GPUFuncOp func;
  const EmulatedBlock &block;
  IRMapping &mapping;
  int64_t warps;

  llvm::DenseSet<Operation *> withBarrier, withShuffle;
  /// The step of each op a thread runs (top-level ops of Lanes, shuffles,
  /// the terminators of Yield steps); kUniformSite for uniform ops.
  llvm::DenseMap<Operation *, unsigned> stepOf;
  /// The keys of stepOf in schedule order (the storage's order).
  SmallVector<Operation *> scheduled;
  unsigned nextStep = 0;
  static constexpr unsigned kUniformSite = ~0u;
  /// Values every thread has alike: the arguments, the hoisted ops, the
  /// uniform loops' indices.
  llvm::DenseSet<Value> uniform;
  SmallVector<Operation *> threadIds;
  /// Value -> its per-thread buffer.
  llvm::MapVector<Value, Value> kept;
  llvm::DenseMap<Value, SharedShadow> shadows;
  /// Checked: the block's barrier epoch (memref<1xi64>).
  Value epoch;
  Steps schedule;
};
} // namespace

//===----------------------------------------------------------------------===//
// The schedule
//===----------------------------------------------------------------------===//

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
    if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
      if (getConstantIntValue(shuffle.getWidth()) != kEmulatedWarpSize)
        return shuffle.emitError()
               << "the emulator runs gpu.shuffle over whole warps: its width "
                  "must be the constant "
               << kEmulatedWarpSize;
      // A shuffle reads what the other lanes left behind: a value of an
      // earlier step. The step it opens runs on from there.
      Operation *definer = shuffle.getValue().getDefiningOp();
      if (definer && op->getBlock()->findAncestorOpInBlock(*definer) &&
          llvm::is_contained(run.ops,
                             op->getBlock()->findAncestorOpInBlock(*definer)))
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
           << "holds a gpu.barrier or gpu.shuffle, which the emulator runs "
              "only inside scf.if and scf.for";
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
    if (!isa<gpu::BarrierOp, gpu::ShuffleOp>(op))
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
  if (!type.isIntOrIndexOrFloat())
    return emitError(value.getLoc())
           << "a value of type " << type
           << " is used across a gpu.barrier or gpu.shuffle, which the "
              "emulator keeps only for numbers";
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

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

void BlockEmulator::forThreads(
    OpBuilder &b, Location loc, Level level, Value warp,
    llvm::function_ref<void(OpBuilder &, Value, Value, Value)> body) {
  Value zero = constant(b, loc, 0);
  Value one = constant(b, loc, 1);
  Value lanes = constant(b, loc, kEmulatedWarpSize);
  if (level == Level::Block) {
    auto loop = scf::ForOp::create(b, loc, zero,
                                   constant(b, loc, block.blockSize), one);
    OpBuilder inside(loop.getBody()->getTerminator());
    Value thread = loop.getInductionVar();
    body(inside, thread, arith::RemUIOp::create(inside, loc, thread, lanes),
         arith::DivUIOp::create(inside, loc, thread, lanes));
    return;
  }
  auto loop = scf::ForOp::create(b, loc, zero, lanes, one);
  OpBuilder inside(loop.getBody()->getTerminator());
  Value lane = loop.getInductionVar();
  Value thread = arith::AddIOp::create(
      inside, loc, arith::MulIOp::create(inside, loc, warp, lanes), lane);
  body(inside, thread, lane, warp);
}

Value BlockEmulator::valueAt(OpBuilder &b, Location loc, Value value,
                             Value thread) {
  if (uniform.count(value))
    return mapping.lookup(value);
  Operation *definer = value.getDefiningOp();
  if (definer && isThreadId(definer)) {
    Value lanes = constant(b, loc, kEmulatedWarpSize);
    if (auto id = dyn_cast<gpu::ThreadIdOp>(definer))
      return id.getDimension() == gpu::Dimension::x ? thread
                                                    : constant(b, loc, 0);
    if (isa<gpu::LaneIdOp>(definer))
      return arith::RemUIOp::create(b, loc, thread, lanes);
    return arith::DivUIOp::create(b, loc, thread, lanes);
  }
  auto found = kept.find(value);
  if (found != kept.end())
    return memref::LoadOp::create(b, loc, found->second, ValueRange{thread});
  return mapping.lookup(value);
}

void BlockEmulator::mapThreadIds(OpBuilder &b, Location loc, Value thread,
                                 Value lane, Value warp) {
  for (Operation *op : threadIds) {
    Value value = thread;
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      if (id.getDimension() != gpu::Dimension::x)
        value = constant(b, loc, 0);
    } else if (isa<gpu::LaneIdOp>(op)) {
      value = lane;
    } else {
      value = warp;
    }
    mapping.map(op->getResult(0), value);
  }
}

void BlockEmulator::emit(ArrayRef<Step> steps, OpBuilder &b, Value warp) {
  Location loc = func.getLoc();
  for (const Step &step : steps) {
    switch (step.kind) {
    case Step::Warps: {
      auto loop =
          scf::ForOp::create(b, loc, constant(b, loc, 0),
                             constant(b, loc, warps), constant(b, loc, 1));
      OpBuilder inside(loop.getBody()->getTerminator());
      emit(step.regions.front(), inside, loop.getInductionVar());
      break;
    }
    case Step::Lanes:
      emitLanes(step, b, warp);
      break;
    case Step::Barrier:
      emitBarrier(b, step.ops.front()->getLoc());
      break;
    case Step::Uniform:
      emitUniform(step, b, warp);
      break;
    case Step::Yield:
      emitYield(step, b, warp);
      break;
    }
  }
}

void BlockEmulator::emitLanes(const Step &step, OpBuilder &b, Value warp) {
  Location loc = step.ops.front()->getLoc();
  llvm::SmallPtrSet<Operation *, 16> inRun(step.ops.begin(), step.ops.end());
  Block *runBlock = step.ops.front()->getBlock();
  auto definedInRun = [&](Value value) {
    Operation *owner = value.getDefiningOp();
    if (!owner)
      owner = value.getParentBlock()->getParentOp();
    Operation *top = owner ? runBlock->findAncestorOpInBlock(*owner) : nullptr;
    return top && inRun.count(top);
  };
  forThreads(
      b, loc, Level::Warp, warp,
      [&](OpBuilder &inside, Value thread, Value lane, Value warpId) {
        mapThreadIds(inside, loc, thread, lane, warpId);
        // Values of earlier steps, as this thread left them.
        llvm::SmallPtrSet<Value, 16> loaded;
        for (Operation *op : step.ops)
          op->walk([&](Operation *nested) {
            for (Value operand : nested->getOperands())
              if (kept.count(operand) && !definedInRun(operand) &&
                  loaded.insert(operand).second)
                mapping.map(operand, memref::LoadOp::create(
                                         inside, loc, kept.lookup(operand),
                                         ValueRange{thread}));
          });
        for (Operation *op : step.ops) {
          if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op))
            emitShuffle(shuffle, inside, thread, lane, warpId);
          else
            inside.clone(*op, mapping);
        }
        for (Operation *op : step.ops)
          for (Value result : op->getResults())
            if (kept.count(result))
              memref::StoreOp::create(inside, loc, mapping.lookup(result),
                                      kept.lookup(result), ValueRange{thread});
        if (block.checked && !shadows.empty())
          instrumentSharedAccesses(*inside.getBlock()->getParent(), thread,
                                   epoch, shadows);
      });
}

/// Lane `lane` of `warp` reads the value its source lane left behind (its
/// own where the source is outside the warp, with valid = false), as
/// shfl.sync does.
void BlockEmulator::emitShuffle(gpu::ShuffleOp shuffle, OpBuilder &b,
                                Value thread, Value lane, Value warp) {
  Location loc = shuffle.getLoc();
  Type i32 = b.getI32Type();
  Value lane32 = arith::IndexCastOp::create(b, loc, i32, lane);
  Value offset = mapping.lookupOrDefault(shuffle.getOffset());
  if (!mapping.contains(shuffle.getOffset()))
    offset = valueAt(b, loc, shuffle.getOffset(), thread);
  Value lanes = arith::ConstantIntOp::create(b, loc, i32, kEmulatedWarpSize);
  Value source;
  Value valid;
  switch (shuffle.getMode()) {
  case gpu::ShuffleMode::XOR:
    source = arith::XOrIOp::create(b, loc, lane32, offset);
    break;
  case gpu::ShuffleMode::DOWN:
    source = arith::AddIOp::create(b, loc, lane32, offset);
    break;
  case gpu::ShuffleMode::UP:
    source = arith::SubIOp::create(b, loc, lane32, offset);
    valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, lane32,
                                  offset);
    break;
  case gpu::ShuffleMode::IDX:
    source = offset;
    break;
  }
  if (!valid)
    valid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, source, lanes);
  Value from = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      arith::SelectOp::create(b, loc, valid, source, lane32));
  Value fromThread = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, warp, constant(b, loc, kEmulatedWarpSize)),
      from);
  mapping.map(shuffle.getShuffleResult(),
              valueAt(b, loc, shuffle.getValue(), fromThread));
  mapping.map(shuffle.getValid(), valid);
}

void BlockEmulator::emitBarrier(OpBuilder &b, Location loc) {
  if (!epoch)
    return;
  Value zero = constant(b, loc, 0);
  Value now = memref::LoadOp::create(b, loc, epoch, ValueRange{zero});
  Value next = arith::AddIOp::create(
      b, loc, now, arith::ConstantIntOp::create(b, loc, b.getI64Type(), 1));
  memref::StoreOp::create(b, loc, next, epoch, ValueRange{zero});
}

/// Checked: every thread that reaches `op` together sees its `operands` as
/// the first one does, else the split point inside it is divergent.
void BlockEmulator::checkUniform(OpBuilder &b, Operation *op, Level level,
                                 Value warp, ValueRange operands) {
  Operation *split = nullptr;
  op->walk([&](Operation *nested) {
    if (!split && isa<gpu::BarrierOp, gpu::ShuffleOp>(nested))
      split = nested;
  });
  std::string message =
      level == Level::Block
          ? "divergent barrier: the threads of a block reach this gpu.barrier "
            "differently (the condition or bounds of the control flow around "
            "it differ between them)"
          : "divergent shuffle: the lanes of a warp reach this gpu.shuffle "
            "differently (the condition or bounds of the control flow around "
            "it differ between them)";
  message += "\n" + split->getName().getStringRef().str() +
             "\nLocation: " + printLocation(split->getLoc());
  Location loc = op->getLoc();
  Value leader = getLeader(b, loc, level, warp);
  forThreads(
      b, loc, level, warp, [&](OpBuilder &inside, Value thread, Value, Value) {
        for (Value operand : operands) {
          if (uniform.count(operand) || !operand.getType().isIntOrIndex())
            continue;
          Value same =
              arith::CmpIOp::create(inside, loc, arith::CmpIPredicate::eq,
                                    valueAt(inside, loc, operand, thread),
                                    valueAt(inside, loc, operand, leader));
          cf::AssertOp::create(inside, loc, same, message);
        }
      });
}

void BlockEmulator::emitUniform(const Step &step, OpBuilder &b, Value warp) {
  Operation *op = step.ops.front();
  Location loc = op->getLoc();
  Value leader = getLeader(b, loc, step.level, warp);
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    if (block.checked)
      checkUniform(b, op, step.level, warp, ifOp.getCondition());
    bool withElse = !ifOp.getElseRegion().empty();
    auto emulated = scf::IfOp::create(
        b, loc, valueAt(b, loc, ifOp.getCondition(), leader), withElse);
    OpBuilder inThen(emulated.thenBlock()->getTerminator());
    emit(step.regions[0], inThen, warp);
    if (withElse) {
      OpBuilder inElse(emulated.elseBlock()->getTerminator());
      emit(step.regions[1], inElse, warp);
    }
    return;
  }
  auto loop = cast<scf::ForOp>(op);
  Value bounds[] = {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()};
  if (block.checked)
    checkUniform(b, op, step.level, warp, bounds);
  // The carried values start as each thread's initial values.
  if (loop.getNumRegionIterArgs() != 0)
    forThreads(b, loc, step.level, warp,
               [&](OpBuilder &inside, Value thread, Value, Value) {
                 SmallVector<Value> initial;
                 for (Value init : loop.getInitArgs())
                   initial.push_back(valueAt(inside, loc, init, thread));
                 for (auto [value, carried] :
                      llvm::zip(initial, loop.getRegionIterArgs()))
                   memref::StoreOp::create(inside, loc, value,
                                           kept.lookup(carried),
                                           ValueRange{thread});
               });
  auto emulated = scf::ForOp::create(b, loc, valueAt(b, loc, bounds[0], leader),
                                     valueAt(b, loc, bounds[1], leader),
                                     valueAt(b, loc, bounds[2], leader));
  mapping.map(loop.getInductionVar(), emulated.getInductionVar());
  uniform.insert(loop.getInductionVar());
  OpBuilder inside(emulated.getBody()->getTerminator());
  emit(step.regions[0], inside, warp);
}

/// Each thread's yielded values into the results (and carried values) of
/// the uniform op: all read before any is written, so that a loop may swap
/// its carried values.
void BlockEmulator::emitYield(const Step &step, OpBuilder &b, Value warp) {
  Operation *terminator = step.ops.front();
  Operation *owner = terminator->getParentOp();
  Location loc = terminator->getLoc();
  forThreads(
      b, loc, step.level, warp,
      [&](OpBuilder &inside, Value thread, Value, Value) {
        SmallVector<Value> yielded;
        for (Value value : terminator->getOperands())
          yielded.push_back(valueAt(inside, loc, value, thread));
        for (auto [value, result] : llvm::zip(yielded, owner->getResults()))
          memref::StoreOp::create(inside, loc, value, kept.lookup(result),
                                  ValueRange{thread});
      });
}

LogicalResult BlockEmulator::build(OpBuilder &b) {
  Location loc = func.getLoc();
  if (block.blockSize % kEmulatedWarpSize != 0)
    return func.emitError()
           << "the emulator runs blocks of whole warps (" << kEmulatedWarpSize
           << " threads), got " << block.blockSize;
  if (failed(analyze()))
    return failure();

  // Launch ids and constants, once per block.
  Block &entry = func.getBody().front();
  for (Operation &op : entry) {
    if (!isHoisted(&op))
      break;
    if (isThreadId(&op)) {
      threadIds.push_back(&op);
      continue;
    }
    Value result = op.getResult(0);
    uniform.insert(result);
    auto pick = [&](gpu::Dimension dim, Value x, int64_t other) {
      return dim == gpu::Dimension::x ? x : constant(b, loc, other);
    };
    if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      mapping.map(result, pick(id.getDimension(), block.blockId, 0));
    else if (auto dim = dyn_cast<gpu::BlockDimOp>(op))
      mapping.map(result, pick(dim.getDimension(),
                               constant(b, loc, block.blockSize), 1));
    else if (auto dim = dyn_cast<gpu::GridDimOp>(op))
      mapping.map(result, pick(dim.getDimension(),
                               constant(b, loc, block.gridSize), 1));
    else
      b.clone(op, mapping);
  }
  for (BlockArgument argument : func.getArguments())
    uniform.insert(argument);

  // Shared memory: one buffer per block (and, checked, its shadows).
  Value zero = constant(b, loc, 0);
  if (block.checked) {
    epoch = memref::AllocaOp::create(*block.allocator, loc,
                                     MemRefType::get({1}, b.getI64Type()));
    memref::StoreOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0), epoch,
        ValueRange{zero});
  }
  for (BlockArgument attribution : func.getWorkgroupAttributions()) {
    auto shared = cast<MemRefType>(attribution.getType());
    Value buffer = memref::AllocaOp::create(
        *block.allocator, loc,
        MemRefType::get(shared.getShape(), shared.getElementType()));
    mapping.map(attribution, buffer);
    uniform.insert(attribution);
    if (!block.checked)
      continue;
    shadows[buffer] =
        createSharedShadow(*block.allocator, b, loc, shared.getNumElements());
  }

  if (failed(allocateStorage(b)))
    return failure();
  emit(schedule, b, Value());
  return success();
}

LogicalResult kiln::emulateBlock(gpu::GPUFuncOp func, OpBuilder &builder,
                                 const EmulatedBlock &block,
                                 IRMapping &mapping) {
  BlockEmulator emulator(func, block, mapping);
  return emulator.build(builder);
}
