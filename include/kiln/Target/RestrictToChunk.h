//===- RestrictToChunk.h - A kernel body over [begin, end) ------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_RESTRICTTOCHUNK_H
#define KILN_TARGET_RESTRICTTOCHUNK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {
namespace kernel {
class FuncOp;
} // namespace kernel

/// The passes both backends start a kernel body's lowering with: affine
/// maps and strided metadata to arithmetic, structured control flow to
/// branches, and bf16/f16 arithmetic expanded through f32.
void addKernelBodyToBranchesPasses(mlir::OpPassManager &pm);

/// Replaces `kernel` by a private func.func `name` taking its memrefs then
/// `begin` and `end` (index), with the same body.
mlir::func::FuncOp outlineKernelBody(kernel::FuncOp kernel,
                                     llvm::StringRef name);

/// Makes `body` (a kernel's body whose linalg ops are already loops, ending
/// in `begin` and `end` index arguments) compute only iterations [begin,
/// end) of its parallel range `range`: the first dim of every top-level loop
/// over [0, range) is restricted; a body with `range == 1` runs only when
/// begin < end. Fails, with an error, on a top-level op with side effects
/// outside such a loop.
mlir::LogicalResult restrictToChunk(mlir::func::FuncOp body, int64_t range);
} // namespace kiln

#endif // KILN_TARGET_RESTRICTTOCHUNK_H
