//===- RowReduction.h - What the row template plans and emits --*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: what RowPlan.cpp (which kernels
// and loops the row template takes) and RowTemplate.cpp (the gpu.func it
// builds) share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ROWREDUCTION_H
#define KILN_LIB_TARGET_CUDA_ROWREDUCTION_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace kiln::row {

/// How a loop's carried value combines one element into it.
enum class Combine { AddF, SubF, MulF, StdMax, MaximumF, MinimumF, AddI };

/// The reduction carried in `loop`'s `index`-th value, when its only uses
/// are one combining op whose only use is the loop's yield.
std::optional<Combine> matchReduction(mlir::scf::ForOp loop, unsigned index);

/// The memref a memref.load, memref.store or memref.atomic_rmw accesses;
/// null for any other op.
mlir::Value getAccessedMemref(mlir::Operation *op);

/// A builder at the end of `block`, its terminator (if any) erased.
inline mlir::OpBuilder atEndWithoutTerminator(mlir::Block *block) {
  if (!block->empty() && block->back().hasTrait<mlir::OpTrait::IsTerminator>())
    block->back().erase();
  return mlir::OpBuilder::atBlockEnd(block);
}

} // namespace kiln::row

#endif // KILN_LIB_TARGET_CUDA_ROWREDUCTION_H
