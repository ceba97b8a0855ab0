//===- Passes.h - Passes over the kernel dialect ----------------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_TRANSFORMS_PASSES_H
#define KILN_DIALECT_KERNEL_TRANSFORMS_PASSES_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln::kernel {
/// The module attribute that holds the arena size in bytes once offsets are
/// assigned.
constexpr llvm::StringLiteral kArenaBytesAttr = "kernel.arena_bytes";
/// The module (and entry) attribute that holds the live lower bound in bytes
/// (BufferLiveness), set by the memory planner.
constexpr llvm::StringLiteral kLiveLowerBoundAttr =
    "kernel.live_lower_bound_bytes";
/// The alignment of every arena slice, in bytes.
constexpr int64_t kArenaAlignment = 64;

#define GEN_PASS_DECL
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"

/// What --kernel-check-memory-budget does: fails, with an error at the entry
/// whose arena sets the peak, when the placed module's peak bytes
/// (ResidentBytes::peak) exceed `budget`; 0 checks nothing.
mlir::LogicalResult checkMemoryBudget(mlir::ModuleOp module, int64_t budget);

#define GEN_PASS_REGISTRATION
#include "kiln/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_TRANSFORMS_PASSES_H
