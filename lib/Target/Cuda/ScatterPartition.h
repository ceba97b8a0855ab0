//===- ScatterPartition.h - A scatter-add split by destination --*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: what --convert-kernel-to-gpu
// does with a scatter-add kernel neither template takes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_SCATTERPARTITION_H
#define KILN_LIB_TARGET_CUDA_SCATTERPARTITION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace kiln {

/// On a gpu.func whose scatter-add partitionScatter split: the partitions.
inline constexpr llvm::StringLiteral kScatterAttr = "kiln.scatter";

/// When `body` (linalg lowered to loops) is a scatter-add over its `range`
/// of columns (`G[id, c] += x` with `id` loaded from memory, `G` zeroed
/// row by row and written nowhere else, status atomics aside), splits each
/// column's destination rows into P partitions by `id % P`: the range
/// becomes `range * P` (iteration i is column i % range of partition
/// i / range), each iteration zeroing and adding into its own rows only.
/// Returns P, or nullopt (the body unchanged) when the pattern is absent.
std::optional<int64_t> partitionScatter(mlir::func::FuncOp body, int64_t range);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_SCATTERPARTITION_H
