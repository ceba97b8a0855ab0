//===- HostTargetInfo.cpp - The cpu backend's schedule parameters ---------===//
//
// Part of Kiln. The cpu executor runs a kernel's range in chunks on its
// thread pool and a GEMM in fixed tiles, one single-threaded library call
// each (DESIGN.md, "Kernel code generation").
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/TargetInfo.h"

using namespace kiln;

namespace {
class HostTargetInfo final : public TargetInfo {
public:
  explicit HostTargetInfo(llvm::StringRef cpu)
      : TargetInfo(TargetKind::Cpu, cpu) {}

  // Column blocks of 64 f32 results are 256 bytes, a few vector registers;
  // layer_norm's and the embedding's gradients own 16 columns (two
  // accumulators each); updates and norm partials are long enough to
  // vectorize and short enough to spread over the pool.
  ScheduleParameters getScheduleParameters() const override { return {}; }

  // Several microseconds of work on one core, against about a microsecond
  // to hand a chunk to a pool thread: a kernel splits across the pool once
  // it has twice this much work, and small kernels run on the calling
  // thread.
  std::optional<int64_t> getWorkPerChunk() const override { return 16384; }

  // About 2M multiply-adds per tile keeps a tile's call overhead small and
  // gives the pool work to share on the GPT step's shapes. oneDNN's sgemm
  // packs A and B only for tiles with 1/tile_m + 1/tile_n below 0.0038 (on
  // AVX2; 0.00196 on AVX-512) and otherwise runs its no-copy kernels, which
  // took up to twice as long on GPT-2 small's products on an AVX2 machine
  // once k reached 256 (bench/gemm_tiles.sh): tiles keep below it, with a
  // margin, where the whole product does.
  std::optional<GemmTiling> getGemmTiling() const override {
    GemmTiling tiling;
    tiling.maxTraffic = 0.0036;
    tiling.trafficMinK = 256;
    return tiling;
  }

  // About eight AdamW updates (~45 ops each): one kernel of all 148 updates
  // of GPT-2 small cost more code-generation time, on one core, than every
  // other kernel (before --share-loop-bodies compiled each body once).
  int64_t getMaxMergedOps() const override { return 800; }

  int64_t getWarpSize() const override { return 0; }
  // AVX-512's zmm registers: LLVM's vectorizers choose the width.
  int64_t getMaxVectorBytes() const override { return 64; }
  int64_t getElementwiseBlockSize() const override { return 0; }
  llvm::ArrayRef<cuda::GpuFigures> getGpus() const override { return {}; }
  // The GEMM library's attention (two batched GEMMs around a row kernel)
  // is faster here than a row of scalar loops per iteration.
  bool hasFusedAttention(llvm::StringRef, int64_t, int64_t) const override {
    return false;
  }
  // The cpu executor has the epilogues, but measured, a library's fused
  // post-op was no faster than the fused elementwise kernel after it.
  int64_t getGemmEpilogueAuxAlignment() const override { return 0; }
  // Nothing measured says the cpu GEMM libraries gain from it.
  int64_t getLogitsAlignment() const override { return 0; }
  /// fp16 trains with dynamic loss scaling (TrainStep.h).
  llvm::ArrayRef<llvm::StringRef> getTrainingPrecisions() const override {
    static const llvm::StringRef precisions[] = {"fp32", "bf16", "fp16"};
    return precisions;
  }
};
} // namespace

std::unique_ptr<TargetInfo> kiln::createHostTargetInfo(llvm::StringRef cpu) {
  return std::make_unique<HostTargetInfo>(cpu);
}
