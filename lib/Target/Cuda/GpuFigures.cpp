//===- GpuFigures.cpp - What each NVIDIA GPU Kiln targets can do ----------===//
//
// Part of Kiln.
//
// Datasheet figures: NVIDIA's A100 (SXM4 80 GB), H100 (SXM5) and H200
// (SXM) datasheets, dense. Measured: on an H200 through PyTorch
// (../shared/notes/gpu-toolchain.md): a bf16 8192^3 GEMM 770-800 TFLOP/s
// (the lower end is taken), a device-to-device copy 4.3 TB/s read plus
// written. Nothing was measured on an A100 or an H100, nor an f32 GEMM on
// any of them.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/Cuda/GpuFigures.h"

using namespace kiln;
using namespace kiln::cuda;

static const GpuFigures kAmpere[] = {
    {"A100 SXM4 80GB", "sm_80", 2.039e12, 19.5e12, 312e12, std::nullopt,
     std::nullopt},
};

static const GpuFigures kHopper[] = {
    {"H100 SXM5", "sm_90", 3.35e12, 66.9e12, 989.4e12, std::nullopt,
     std::nullopt},
    {"H200 SXM", "sm_90", 4.8e12, 66.9e12, 989.4e12, 4.3e12, 770e12},
};

llvm::ArrayRef<GpuFigures> cuda::getGpusForArch(llvm::StringRef arch) {
  if (arch == "sm_80")
    return kAmpere;
  if (arch == "sm_90")
    return kHopper;
  return {};
}
