//===- EmulateBlock.cpp - One GPU block's threads as host loops -----------===//
//
// Part of Kiln. The emulator's schedule of a block, after PoCL's work-item
// loops: the kernel's ops are cut at split points into steps, each step a
// loop over the threads that run it together.
//
//   block level   steps between gpu.barrier ops: every thread of the block
//                 finishes one before any starts the next;
//   warp level    inside those, steps between warp collectives (gpu.shuffle,
//                 nvvm.mma.sync), warp by warp: a collective reads what the
//                 lanes of its warp left behind;
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

#include "BlockEmulator.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::emulator;

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
          else if (auto mma = dyn_cast<NVVM::MmaOp>(op))
            emitMma(mma, inside, thread, lane, warpId);
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
    if (!split && (isa<gpu::BarrierOp>(nested) || isWarpCollective(nested)))
      split = nested;
  });
  std::string message =
      level == Level::Block
          ? std::string("divergent barrier: the threads of a block reach "
                        "this gpu.barrier differently (the condition or "
                        "bounds of the control flow around it differ "
                        "between them)")
          : "divergent " +
                std::string(isa<gpu::ShuffleOp>(split) ? "shuffle"
                                                       : "warp collective") +
                ": the lanes of a warp reach this " +
                split->getName().getStringRef().str() +
                " differently (the condition or bounds of the control flow "
                "around it differ between them)";
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
