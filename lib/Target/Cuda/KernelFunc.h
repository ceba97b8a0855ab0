//===- KernelFunc.h - The gpu.func every template starts from ---*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: what --convert-kernel-to-gpu's
// templates (ConvertKernelToGpu.cpp, RowTemplate.cpp, TransposeTemplate.cpp)
// share when they build a kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_KERNELFUNC_H
#define KILN_LIB_TARGET_CUDA_KERNELFUNC_H

#include "kiln/Target/Cuda/CudaTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// A buffer of `shape` x `element` in a block's shared memory.
mlir::MemRefType getSharedBufferType(mlir::MLIRContext *context,
                                     llvm::ArrayRef<int64_t> shape,
                                     mlir::Type element);

/// An empty kernel `gpu.func @name` at `builder` taking the buffers of the
/// outlined `body` (its arguments but the range's begin and end), with the
/// shared buffers `workgroup`, known to run on `shape` (one-dimensional).
mlir::gpu::GPUFuncOp createKernelFunc(mlir::OpBuilder &builder,
                                      mlir::Location loc, llvm::StringRef name,
                                      mlir::func::FuncOp body,
                                      mlir::TypeRange workgroup,
                                      LaunchShape shape);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_KERNELFUNC_H
