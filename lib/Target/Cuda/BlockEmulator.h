//===- BlockEmulator.h - The emulator of one GPU block -------*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: the schedule of a block's
// threads (EmulateSchedule.cpp) and its emission as host loops
// (EmulateBlock.cpp), the two halves of emulateBlock (EmulateBlock.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_BLOCKEMULATOR_H
#define KILN_LIB_TARGET_CUDA_BLOCKEMULATOR_H

#include "EmulateBlock.h"
#include "EmulatorChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

#include <vector>

namespace kiln::emulator {
using namespace mlir;

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

inline bool isLaunchId(Operation *op) {
  return isa<gpu::BlockIdOp, gpu::ThreadIdOp, gpu::BlockDimOp, gpu::GridDimOp,
             gpu::LaneIdOp, gpu::SubgroupIdOp>(op);
}

/// Warp collectives: each lane reads what the other lanes of its warp hold
/// (gpu.shuffle, nvvm.mma.sync); the split points of a warp's steps.
inline bool isWarpCollective(Operation *op) {
  return isa<gpu::ShuffleOp, NVVM::MmaOp>(op);
}

/// Whether the emulator runs `mma` (EmulateMma.cpp): m16n8k16, A row-major
/// and B column-major, bf16 (packed in i32) or f16 (vector<2xf16>)
/// multiplicands, f32 accumulators.
LogicalResult verifyEmulatedMma(NVVM::MmaOp mma);

/// Per-thread launch ids: their value depends on the thread.
inline bool isThreadId(Operation *op) {
  return isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::SubgroupIdOp>(op);
}

inline bool isConstant(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() && op->getNumOperands() == 0 &&
         op->getNumRegions() == 0;
}

/// A view of a kernel argument (a merged kernel's subview of one of its
/// buffers) whose operands are the kernel's arguments or constants: the
/// same for every thread.
inline bool isUniformView(Operation *op) {
  if (!isa<ViewLikeOpInterface>(op) || op->getNumRegions() != 0 ||
      op->getNumResults() != 1 || !isa<MemRefType>(op->getResult(0).getType()))
    return false;
  auto func = op->getParentOfType<gpu::GPUFuncOp>();
  return func && llvm::all_of(op->getOperands(), [&](Value operand) {
           if (auto argument = dyn_cast<BlockArgument>(operand))
             return argument.getOwner() == &func.getBody().front();
           Operation *definer = operand.getDefiningOp();
           return definer && isConstant(definer);
         });
}

/// Ops moved to the top of the kernel and defined once per block (or
/// computed from the thread's index where they are used).
inline bool isHoisted(Operation *op) {
  return isLaunchId(op) || isConstant(op) || isUniformView(op);
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
  /// Lane `lane` of `warp` computes its four elements of D = A B + C from
  /// the fragments its warp's lanes hold, by the PTX ISA's layouts.
  void emitMma(NVVM::MmaOp mma, OpBuilder &b, Value thread, Value lane,
               Value warp);
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
} // namespace kiln::emulator

#endif // KILN_LIB_TARGET_CUDA_BLOCKEMULATOR_H
