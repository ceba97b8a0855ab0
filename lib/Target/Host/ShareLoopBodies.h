//===- ShareLoopBodies.h - One function for equal loop bodies ---*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_HOST_SHARELOOPBODIES_H
#define KILN_LIB_TARGET_HOST_SHARELOOPBODIES_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace kiln {
/// Outlines the bodies of outermost scf.parallel loops (in every func.func
/// of `module`) that are the same but for the values of their scalar
/// constants and the leading dim of the memrefs they only load from and
/// store to: each group of at least two becomes one private function,
/// which each loop calls with its own induction variables, the values it
/// reads from outside, and its own constants. Only bodies that hold a loop
/// of their own and are not tiny are shared, so that the call costs little
/// next to the work.
///
/// Why: an optimizer's multi-tensor kernels and a global norm repeat one
/// body per parameter, differing only in its size, and code generation
/// pays for every copy (most of GPT-2 small's kernel code). The calls
/// compute what the copies computed, op for op.
///
/// Returns the names of the functions created.
llvm::SmallVector<std::string> shareLoopBodies(mlir::ModuleOp module);
} // namespace kiln

#endif // KILN_LIB_TARGET_HOST_SHARELOOPBODIES_H
