//===- GpuFigures.h - What each NVIDIA GPU Kiln targets can do -*- C++ -*-===//
//
// Part of Kiln.
//
// The peaks the roofline model of the cuda target (kiln compile --stats
// --target=cuda) holds each kernel and GEMM against: the datasheet's
// (SXM parts, dense, no sparsity) and, where one was measured on such a
// GPU, the ceiling Kiln's kernels can reach (docs/cuda.md says where each
// figure comes from).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_CUDA_GPUFIGURES_H
#define KILN_TARGET_CUDA_GPUFIGURES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace kiln {
namespace cuda {

struct GpuFigures {
  llvm::StringRef name;
  /// The compute capability its kernels are compiled for.
  llvm::StringRef arch;
  /// Datasheet peaks: HBM bytes per second, and FLOP/s on the CUDA cores
  /// (f32) and the tensor cores (bf16 with f32 accumulation).
  double hbmBytesPerSecond;
  double fp32Flops;
  double bf16Flops;
  /// Measured ceilings, where known: a device-to-device copy's bytes read
  /// plus written per second, and a large bf16 GEMM's FLOP/s.
  std::optional<double> measuredBytesPerSecond;
  std::optional<double> measuredBf16Flops;
};

/// The GPUs compiled for by `arch` (sm_80: A100; sm_90: H100 and H200).
llvm::ArrayRef<GpuFigures> getGpusForArch(llvm::StringRef arch);

} // namespace cuda
} // namespace kiln

#endif // KILN_TARGET_CUDA_GPUFIGURES_H
