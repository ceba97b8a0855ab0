//===- CudaTargetInfo.cpp - NVIDIA GPUs: sm_80 and sm_90 ------------------===//
//
// Part of Kiln. The limits are CUDA's for compute capabilities 8.0 and 9.0
// (the programming guide's table of technical specifications).
//
//===----------------------------------------------------------------------===//

#include "AttentionTemplate.h"

#include "kiln/Target/Cuda/GpuFigures.h"
#include "kiln/Target/TargetInfo.h"

using namespace kiln;

namespace {
class CudaTargetInfo final : public TargetInfo {
public:
  explicit CudaTargetInfo(llvm::StringRef arch)
      : TargetInfo(TargetKind::Cuda, arch) {}

  // Until the column-reduction template exists, a column reduction runs a
  // column block per thread: one column each gives a thread per column
  // instead of one per 64 (2 threads for a bias of 128), and each column
  // still sums its rows in the same order. An update block of 256
  // elements gives a thread per 256 instead of per 1024 (64 made ptxas
  // spill in the merged AdamW kernels); the norm's partials stay 4096
  // long, since one thread sums them all.
  ScheduleParameters getScheduleParameters() const override {
    ScheduleParameters parameters;
    parameters.columnBlock = 1;
    parameters.normColumnBlock = 1;
    parameters.embeddingColumnBlock = 1;
    parameters.updateBlock = 256;
    // Each tensor's partial sums are a block reduction here; a kernel of
    // all of GPT-2 small's 148 made one function whose emulator build
    // took most of a 20-second compile (LLVM's register allocator).
    parameters.normTensorsPerKernel = 16;
    return parameters;
  }
  // A launch covers the whole range: no chunks, no grain.
  std::optional<int64_t> getWorkPerChunk() const override {
    return std::nullopt;
  }
  // cuBLASLt runs each call whole.
  std::optional<GemmTiling> getGemmTiling() const override {
    return std::nullopt;
  }
  // Merged kernels are as large on the GPU as on the host; the bound is
  // LLVM's work per function either way.
  int64_t getMaxMergedOps() const override { return 800; }

  int64_t getWarpSize() const override { return 32; }
  // ld.global.v4.f32: 128-bit accesses.
  int64_t getMaxVectorBytes() const override { return 16; }
  // Eight warps: enough to hide memory latency, small enough to fill
  // every SM with several blocks.
  int64_t getElementwiseBlockSize() const override { return 256; }
  llvm::ArrayRef<cuda::GpuFigures> getGpus() const override {
    return cuda::getGpusForArch(getArch());
  }
  // What the attention template takes (AttentionTemplate.h).
  bool hasFusedAttention(llvm::StringRef elementType, int64_t keyDim,
                         int64_t valueDim) const override {
    return attentionTemplateTakes(elementType, keyDim, valueDim);
  }
  // cuBLASLt's epilogues: BIAS, GELU_AUX_BIAS, DGELU, BGRADA/B; the GELU
  // aux leading dimension a multiple of 8 (cublasLt.h, EPILOGUE_AUX_LD).
  int64_t getGemmEpilogueAuxAlignment() const override { return 8; }
  // GPT-2's 50257 classes become 50304, as llm.c pads them.
  int64_t getLogitsAlignment() const override { return 128; }
  /// fp16 trains with dynamic loss scaling (TrainStep.h).
  llvm::ArrayRef<llvm::StringRef> getTrainingPrecisions() const override {
    static const llvm::StringRef precisions[] = {"fp32", "bf16", "fp16"};
    return precisions;
  }
};
} // namespace

std::unique_ptr<TargetInfo> kiln::createCudaTargetInfo(llvm::StringRef arch,
                                                       std::string &error) {
  if (arch != "sm_80" && arch != "sm_90") {
    error = "unsupported CUDA architecture '" + arch.str() +
            "': expected sm_80 (A100) or sm_90 (H100, H200)";
    return nullptr;
  }
  return std::make_unique<CudaTargetInfo>(arch);
}
