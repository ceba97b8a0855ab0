//===- TransposeTemplate.h - Shared-memory tiles for transposes -*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: the transpose template of
// --convert-kernel-to-gpu (ConvertKernelToGpu.cpp chooses it).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_TRANSPOSETEMPLATE_H
#define KILN_LIB_TARGET_CUDA_TRANSPOSETEMPLATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace kiln {

/// On a gpu.func of the transpose template: the tile's side (32).
inline constexpr llvm::StringLiteral kTransposeAttr = "kiln.transpose";

/// An elementwise loop nest whose stores run along its innermost dim (the
/// store dim) while some of its loads run along another (the read dim):
/// `y[b, j, i] = f(x[b, i, j], ...)`. A thread per element would read
/// those loads a row apart across a warp. Each block instead takes a tile
/// of 32 x 32 elements of the two dims (and one index of every other dim):
/// its threads read the tile of each such load with neighbouring lanes on
/// neighbouring elements of the read dim into shared memory, meet at a
/// barrier, then compute the tile's elements with neighbouring lanes on
/// the store dim, those loads taken from shared memory.
struct TransposePlan {
  mlir::scf::ParallelOp loop;
  /// The dim of `loop` the tiled loads' last index walks.
  unsigned readDim = 0;
  /// The loads read through shared memory (at most kMaxTiledLoads).
  llvm::SmallVector<mlir::memref::LoadOp> loads;
  int64_t grid = 1;
};

/// The transpose plan of `body` (linalg lowered to loops) when its one
/// top-level loop `loop` (constant bounds, no loop inside) has such loads:
/// each one's last index the read dim's induction variable, the store dim's
/// at another position, every index an induction variable or a value from
/// outside the loop; every store's last index the store dim's variable; the
/// loads' buffers written nowhere in the kernel and never passed aliased
/// (`aliasedArguments`); both dims at least 16 long.
std::optional<TransposePlan>
planTranspose(mlir::func::FuncOp body, mlir::scf::ParallelOp loop,
              llvm::ArrayRef<bool> aliasedArguments);

/// Builds `gpu.func @name` of the transpose template at `builder`.
void buildTransposeKernel(mlir::OpBuilder &builder, llvm::StringRef name,
                          mlir::Location loc, mlir::func::FuncOp body,
                          const TransposePlan &plan);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_TRANSPOSETEMPLATE_H
