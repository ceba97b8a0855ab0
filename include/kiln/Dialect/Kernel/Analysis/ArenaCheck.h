//===- ArenaCheck.h - Proof that an arena placement is sound ----*- C++ -*-===//
//
// Part of Kiln. Checks the arena offsets of an entry against its liveness:
// no two transients that are live at one program point share a byte, except
// an in-place pair, which shares all of its bytes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_ANALYSIS_ARENACHECK_H
#define KILN_DIALECT_KERNEL_ANALYSIS_ARENACHECK_H

#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"

#include "mlir/Support/LogicalResult.h"

#include <optional>

namespace kiln::kernel {

/// Checks that every transient of the analyzed entry has an arena offset (a
/// multiple of the arena alignment) and, when `arenaBytes` is given, ends
/// within it; and that transients live at a common point occupy disjoint
/// bytes unless they belong to one slot and start at the same offset.
/// Emits an error at the first offending kernel.alloc (with a note at the
/// other buffer) and fails.
mlir::LogicalResult verifyArenaPlacement(const BufferLiveness &liveness,
                                         std::optional<int64_t> arenaBytes);

} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_ANALYSIS_ARENACHECK_H
