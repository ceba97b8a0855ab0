//===- RowReduction.h - What the row template plans and emits --*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: what RowPlan.cpp (which kernels
// and loops the row template takes) and RowTemplate.cpp (the gpu.func it
// builds) share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ROWREDUCTION_H
#define KILN_LIB_TARGET_CUDA_ROWREDUCTION_H

#include "RowTemplate.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace kiln::row {

/// How a loop's carried value combines one element into it. OnlineMax and
/// OnlineSum are the two values of a loop fuseOnlineSoftmax built (marked
/// kOnlineSoftmaxAttr), combined together (combineOnlineSoftmax).
enum class Combine {
  AddF,
  SubF,
  MulF,
  StdMax,
  MaximumF,
  MinimumF,
  AddI,
  OnlineMax,
  OnlineSum
};

/// On an scf.for of a row: it carries a running maximum and the sum of
/// exp(x - maximum) (fuseOnlineSoftmax).
inline constexpr llvm::StringLiteral kOnlineSoftmaxAttr = "kiln.online_softmax";

/// In `row` (a row's body), a maximum pass followed by a sum of exp(x - m)
/// over the same elements as one online pass (OnlineSoftmax.cpp), and the
/// exponentials that pass stored, when a later pass overwrites each one,
/// recomputed where that pass reads them.
void fuseOnlineSoftmax(mlir::Block &row);

/// Two partial (maximum, sum of exp(x - maximum)) pairs as one.
std::pair<mlir::Value, mlir::Value>
combineOnlineSoftmax(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Value maximum, mlir::Value sum,
                     mlir::Value otherMaximum, mlir::Value otherSum);

/// The reduction carried in `loop`'s `index`-th value, when its only uses
/// are one combining op whose only use is the loop's yield.
std::optional<Combine> matchReduction(mlir::scf::ForOp loop, unsigned index);

/// The memref a memref.load, memref.store or memref.atomic_rmw accesses;
/// null for any other op.
mlir::Value getAccessedMemref(mlir::Operation *op);

/// Inlines the loops of `row` (the body of a row loop with induction
/// variable `iv` over [0, rows)) that run exactly once for every row and
/// hold loops: a column block of one, `for c = iv to min(iv + 1, K)`
/// around the column's sums.
void inlineSingleIterationLoops(mlir::Block &row, mlir::Value iv, int64_t rows);

/// Whether the shared loops of `rows` walk down columns: some access in
/// them has the row's index last and the loop's before it, none has the
/// loop's index last, and every column of a block reaches each shared loop
/// together (no enclosing condition or bound depends on the row).
bool isColumnShaped(mlir::scf::ParallelOp rows, const RowPlan &plan);

/// Gives each segment of `plan` (its loops at one offset) its own run of
/// blocks: a row per block, `rowsPerBlock` rows (a warp each), or, when
/// every loop of the segment is column-shaped, a warp's width of columns
/// per block. Sets `plan.grid`; false when a loop overruns its segment.
bool layOutBlocks(RowPlan &plan);

/// A builder at the end of `block`, its terminator (if any) erased.
inline mlir::OpBuilder atEndWithoutTerminator(mlir::Block *block) {
  if (!block->empty() && block->back().hasTrait<mlir::OpTrait::IsTerminator>())
    block->back().erase();
  return mlir::OpBuilder::atBlockEnd(block);
}

} // namespace kiln::row

#endif // KILN_LIB_TARGET_CUDA_ROWREDUCTION_H
