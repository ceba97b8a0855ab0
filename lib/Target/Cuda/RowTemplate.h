//===- RowTemplate.h - A warp or a block per row ----------------*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: the row template of
// --convert-kernel-to-gpu (ConvertKernelToGpu.cpp chooses it).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ROWTEMPLATE_H
#define KILN_LIB_TARGET_CUDA_ROWTEMPLATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace kiln {

/// On a gpu.func of the row template: "warp" (a warp per row), "block", or
/// "column" (a warp's width of columns per block), or "warp+column" and
/// "block+column" for a merged kernel with segments of both.
inline constexpr llvm::StringLiteral kRowTemplateAttr = "kiln.row";

/// A kernel whose range's iterations (its rows) each get a group of
/// threads: a warp for rows of at most kWarpRowLimit elements, else a
/// block. The loops of a row (its sums, maxima and maps, scf.for over
/// [0, n)) are spread over the group's threads, each reduction combined
/// through warp shuffles (and, across a block's warps, shared memory) in
/// a fixed order; the rest of the row runs on every thread of the group,
/// its stores on the first.
struct RowPlan {
  /// A parallel loop over rows [offset, offset + size) of the range (a
  /// segment of a merged kernel, else the whole range). One of one dim is
  /// a row body; one of more dims (no loop inside) has each row's
  /// `elements` iterations of its other dims spread over the group.
  struct Rows {
    mlir::scf::ParallelOp loop;
    int64_t offset = 0;
    int64_t size = 0;
    int64_t elements = 0;
    /// No loop of the row is shared (a merged kernel's scalar segment):
    /// the group's first thread runs the whole row alone.
    bool firstThreadOnly = false;
    /// The row's shared loops walk down a column (isColumnShaped): a
    /// block takes a warp's width of rows, one per lane, and its warps
    /// split each loop, combining through shared memory.
    bool columns = false;
    /// The blocks that take these rows (layOutBlocks).
    int64_t firstBlock = 0;
    int64_t blocks = 1;
  };
  /// The kernel's loops over its rows, which a row's group runs one after
  /// the other; empty when the whole body of a kernel of range 1 is its
  /// one row.
  llvm::SmallVector<Rows> rows;
  int64_t range = 1;
  /// The target's warp: the lanes of a row's group, the shuffles' width.
  int64_t warpSize = 32;
  bool warpPerRow = true;
  /// The threads of a block, and the rows one block takes.
  int64_t blockSize = 32;
  int64_t rowsPerBlock = 1;
  int64_t grid = 1;
  /// The loops spread over a group's threads (the others run on every
  /// thread of the group), and the most iterations one of them runs.
  llvm::SmallPtrSet<mlir::Operation *, 8> sharedLoops;
  int64_t longestLoop = 0;
  /// Loads outside the shared loops of what the row's first thread stored
  /// just before: the stored value.
  llvm::DenseMap<mlir::Operation *, mlir::Value> forwarded;
  /// Loads outside the shared loops that start a read-modify-write of one
  /// element (a column's sum added to memory): their stores. The group's
  /// first thread runs them.
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> firstThreadUpdates;
  /// The reductions a block combines through shared memory, each with a
  /// buffer of its element type: a word per warp (a block per row) or per
  /// thread (columns); none for a warp per row.
  struct SharedReduction {
    mlir::Type type;
    int64_t words;
  };
  llvm::SmallVector<SharedReduction> sharedReductions;

  /// The rows of `rows` one block takes: a warp's width of columns, a row
  /// per warp, or one.
  int64_t getRowsPerBlock(const Rows &rows) const {
    return rows.columns ? warpSize : warpPerRow ? rowsPerBlock : 1;
  }
};

/// The row plan of `body` (linalg lowered to loops, not restricted to a
/// chunk) when every loop of its rows can be spread over threads: each
/// carried value a recognized reduction, each buffer the row writes
/// touched by one thread per element (the loop's index in one fixed
/// position) or, outside the loops, only written. `blockSize` bounds a
/// block and `warpSize` (the target's) is a warp; `aliasedArguments` says which
/// arguments a launch may pass a buffer another argument shares (they must be
/// only read).
std::optional<RowPlan> planRowKernel(mlir::func::FuncOp body, int64_t range,
                                     int64_t blockSize, int64_t warpSize,
                                     llvm::ArrayRef<bool> aliasedArguments);

/// Builds `gpu.func @name` of the row template at `builder`.
void buildRowKernel(mlir::OpBuilder &builder, llvm::StringRef name,
                    mlir::Location loc, mlir::func::FuncOp body,
                    const RowPlan &plan);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ROWTEMPLATE_H
