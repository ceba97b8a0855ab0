//===- InitKiln.cpp - Register Kiln's dialects and passes
//------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/InitKiln.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Kernel/IR/KernelDialect.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"
#include "kiln/Pipelines/CompilePipeline.h"
#include "kiln/Target/Cuda/CudaTarget.h"
#include "kiln/Target/Host/HostTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"

void kiln::registerKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<kiln::graph::GraphDialect, mlir::func::FuncDialect>();
  // The kernel dialect and what kernel bodies are made of.
  registry.insert<kiln::kernel::KernelDialect, mlir::arith::ArithDialect,
                  mlir::linalg::LinalgDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect>();
  // What the cuda backend lowers kernels to.
  registry.insert<mlir::gpu::GPUDialect, mlir::NVVM::NVVMDialect,
                  mlir::vector::VectorDialect>();
  kiln::registerHostTranslations(registry);
  kiln::registerCudaTranslations(registry);
}

void kiln::registerKilnPasses() {
  kiln::graph::registerGraphPasses();
  kiln::kernel::registerKernelPasses();
  kiln::registerKilnConversionPasses();
  kiln::registerCompilePipeline();
}
