//===- EmulateBlock.h - One GPU block's threads as host loops ---*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: the emulator's schedule of one
// block (ConvertGpuToEmulator.cpp builds the loop over the grid around it).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_EMULATEBLOCK_H
#define KILN_LIB_TARGET_CUDA_EMULATEBLOCK_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace kiln {

/// The lanes of a warp, as the emulator and the templates take them.
inline constexpr int64_t kEmulatedWarpSize = 32;

/// Where a block runs and how.
struct EmulatedBlock {
  /// The block's index in the grid (inside the loop over the blocks).
  mlir::Value blockId;
  int64_t blockSize = 1;
  int64_t gridSize = 1;
  /// Checks the threads' uniformity at each split point and the shared
  /// buffers' races.
  bool checked = false;
  /// Where the block's buffers are allocated (outside the loop over the
  /// blocks: each block reuses them).
  mlir::OpBuilder *allocator = nullptr;
};

/// Builds at `builder` the threads of one block of `func`: its ops cut at
/// each gpu.barrier (the block's threads) and gpu.shuffle (a warp's lanes)
/// into loops over the threads, the values a later loop reads kept per
/// thread; scf.if and scf.for holding a split point run once for the
/// threads that reach it together, their operands those of the first
/// thread (checked: of every thread). `mapping` holds `func`'s arguments;
/// `func` is changed (its constants and launch ids moved to its top).
mlir::LogicalResult emulateBlock(mlir::gpu::GPUFuncOp func,
                                 mlir::OpBuilder &builder,
                                 const EmulatedBlock &block,
                                 mlir::IRMapping &mapping);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_EMULATEBLOCK_H
