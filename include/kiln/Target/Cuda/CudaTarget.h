//===- CudaTarget.h - The cuda backend: kernels to PTX ----------*- C++ -*-===//
//
// Part of Kiln. Turns the kernel.func ops of a kernel-dialect module into GPU
// code: the gpu dialect (--convert-kernel-to-gpu: blocks and threads), NVVM
// (--convert-gpu-to-nvvm, bare pointers), PTX through LLVM's NVPTX backend
// with libdevice linked, one module per architecture (sm_80, sm_90), and a
// cubin from the toolkit's ptxas when it is present.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_CUDATARGET_H
#define KILN_TARGET_CUDA_CUDATARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace kiln {

class TargetInfo;

/// How GPU code is generated.
struct CudaTargetOptions {
  /// sm_80 or sm_90 (a TargetInfo's arch).
  std::string arch = "sm_90";
  /// Threads per block of a kernel whose range fills one.
  int64_t blockSize = 256;
  /// The bytes of consecutive elements a thread of an elementwise kernel
  /// takes (128-bit accesses).
  int64_t vectorBytes = 16;
  /// A small range's block is whole warps of this many threads.
  int64_t warpSize = 32;
};

/// The options of `target` (a cuda TargetInfo).
CudaTargetOptions getCudaTargetOptions(const TargetInfo &target);

/// On a gpu.func of the elementwise template (a thread per element or
/// vector of elements, no loop inside): the consecutive elements a thread
/// takes. Absent: a thread runs a loop, a row's or a column block's, or a
/// whole sequential kernel.
inline constexpr llvm::StringLiteral kElementwiseAttr = "kiln.elementwise";

/// The grid and block of a kernel of `range` iterations, one per thread.
struct LaunchShape {
  int64_t grid = 1;
  int64_t block = 1;
};
LaunchShape getLaunchShape(int64_t range, int64_t blockSize,
                           int64_t warpSize = 32);
/// The blocks one chunk of the emulator's run of a kernel holds: a few
/// thousand threads, the thread pool's unit of work.
int64_t getEmulatorGrain(int64_t grid, int64_t block);

/// The kernels of a module from buildGpuModule, and which of them run a
/// thread per iteration of their range (neither template took them, and
/// they are not a scalar kernel: one block, no loop).
struct GpuTemplateCounts {
  int64_t kernels = 0;
  int64_t perIteration = 0;
  std::vector<std::string> perIterationNames;
};
GpuTemplateCounts countGpuTemplates(mlir::ModuleOp gpuModule);

/// The launch of each kernel of a module from buildGpuModule, by its
/// exported name (kiln_kN).
std::map<std::string, LaunchShape> getGpuLaunches(mlir::ModuleOp gpuModule);

/// Turns a module from buildGpuModule into the GPU emulator's host kernels
/// (--convert-gpu-to-emulator), in place: kernel.func ops the cpu backend
/// compiles into kernels.emu.so.
mlir::LogicalResult convertToEmulator(mlir::ModuleOp gpuModule, bool checked);

/// The PTX ISA version an architecture's code is written in: "+ptx70" for
/// sm_80, "+ptx80" for sm_90 (the oldest that knows it).
llvm::StringRef getPtxFeatures(llvm::StringRef arch);

/// Registers what GPU code generation needs: the GPU and NVVM translations
/// to LLVM IR and the NVVM target's serialization.
void registerCudaTranslations(mlir::DialectRegistry &registry);

/// A module holding `kernelModule`'s kernels as `gpu.module @kiln_kernels`,
/// mapped onto blocks and threads (the --emit=gpu stage).
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildGpuModule(mlir::ModuleOp kernelModule, const CudaTargetOptions &options);

/// Lowers a module from buildGpuModule to the NVVM and LLVM dialects in
/// place (the --emit=nvvm stage).
mlir::LogicalResult lowerGpuModuleToNvvm(mlir::ModuleOp gpuModule);

/// PTX for `options.arch` from a module from lowerGpuModuleToNvvm, with
/// libdevice linked (the --emit=ptx stage).
mlir::FailureOr<std::string> translateToPtx(mlir::ModuleOp nvvmModule,
                                            const CudaTargetOptions &options);

/// `kernelModule`'s kernels as PTX for `options.arch`: the three stages.
mlir::FailureOr<std::string> buildPtx(mlir::ModuleOp kernelModule,
                                      const CudaTargetOptions &options);

/// The CUDA toolkit's directory (CUDA_HOME, CUDA_PATH, CUDA_ROOT, else the
/// one found at configure time), or empty.
std::string findCudaToolkit();

/// The toolkit's ptxas (or one on PATH), or empty.
std::string findPtxas();

/// The cubin the toolkit's ptxas makes of `ptx` for `arch`. Fails with
/// ptxas's messages in `error`.
mlir::FailureOr<std::string> runPtxas(llvm::StringRef ptx, llvm::StringRef arch,
                                      std::string &error);

} // namespace kiln

#endif // KILN_TARGET_CUDA_CUDATARGET_H
