//===- VectorizeElementwiseLoops.h - Explicit SIMD for elementwise loops -*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_HOST_VECTORIZEELEMENTWISELOOPS_H
#define KILN_LIB_TARGET_HOST_VECTORIZEELEMENTWISELOOPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
/// Rewrites each top-level scf.parallel of `body` whose innermost dim is
/// elementwise (after linalg became loops and the chunk restriction) into a
/// loop over whole vectors along that dim followed by the scalar remainder:
/// every store and every load indexed by the innermost variable has it as
/// its last index (contiguous lanes); other loads are the same for all
/// lanes (a broadcast bias) and are loaded once. Every lane computes what
/// the scalar iteration computed, op for op, so results are unchanged.
///
/// Why not leave it to LLVM's loop vectorizer: it cannot prove that the
/// buffers do not overlap and checks at run time; a result that the memory
/// plan places in place of a dying input overlaps it exactly, and the check
/// then sends the whole kernel down the scalar path. Loading a whole vector
/// of every input before storing the vector of results is correct for exact
/// overlap, which is the only overlap the planner creates.
void vectorizeElementwiseLoops(mlir::func::FuncOp body);
} // namespace kiln

#endif // KILN_LIB_TARGET_HOST_VECTORIZEELEMENTWISELOOPS_H
