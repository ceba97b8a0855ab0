//===- TargetInfo.h - What a target decides about kernels -------*- C++ -*-===//
//
// Part of Kiln. The target object: the schedule parameters a target-neutral
// pass asks for (chunk grain, column blocks, block sizes, GEMM tiles, the
// size of merged kernels) and the facts of the machine code (warp size,
// widest access, elementwise block), for the host (the cpu backend) and
// cuda.
// The compile driver hands them to the passes as pass options, so that
// `kiln-opt` reproduces a compile from text alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TARGET_TARGETINFO_H
#define KILN_TARGET_TARGETINFO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kiln {

enum class TargetKind { Cpu, Cuda };

/// "cpu" or "cuda".
llvm::StringRef getTargetName(TargetKind kind);
/// The kind named `name`, or nullopt.
std::optional<TargetKind> parseTargetName(llvm::StringRef name);

/// The block sizes the lowering's templates are built with. They fix the
/// order of every sum a kernel makes, so they belong to the target that
/// runs the kernels, not to the conversion.
struct ScheduleParameters {
  /// Result columns one iteration of the column-reduction template owns.
  int64_t columnBlock = 64;
  /// The same for layer_norm's weight gradients (dgamma, dbeta).
  int64_t normColumnBlock = 16;
  /// The same for the embedding table's gradient.
  int64_t embeddingColumnBlock = 16;
  /// Elements per parallel iteration of an optimizer update.
  int64_t updateBlock = 1024;
  /// Elements per partial sum of the global gradient norm.
  int64_t normBlock = 4096;
  /// Tensors whose partial sums one kernel of the global norm computes
  /// (0: all of them in one).
  int64_t normTensorsPerKernel = 0;
};

/// GEMM tiles fixed at compile time (--kernel-tile-gemms): about `tileWork`
/// multiply-adds per tile, whole `block`s of rows first, at most `maxTiles`;
/// each tile reading at most `maxTraffic` A and B elements per multiply-add
/// (1/tile_m + 1/tile_n) where the whole product does and k is at least
/// `trafficMinK` (0: no bound).
struct GemmTiling {
  int64_t tileWork = 1 << 21;
  int64_t maxTiles = 64;
  int64_t block = 64;
  double maxTraffic = 0;
  int64_t trafficMinK = 0;
};

namespace cuda {
struct GpuFigures;
} // namespace cuda

class TargetInfo {
public:
  virtual ~TargetInfo();

  TargetKind getKind() const { return kind; }
  llvm::StringRef getName() const { return getTargetName(kind); }
  /// What code is generated for: the x86-64 CPU (x86-64-v2, native, ...)
  /// or the GPU architecture (sm_80, sm_90).
  llvm::StringRef getArch() const { return arch; }

  /// The lowering's block sizes.
  virtual ScheduleParameters getScheduleParameters() const = 0;
  /// The work a chunk of a kernel's range holds at least when the range is
  /// cut into chunks that a thread pool runs (the kernels' `grain`);
  /// nullopt where kernels are not run in chunks.
  virtual std::optional<int64_t> getWorkPerChunk() const = 0;
  /// GEMM tiles fixed at compile time; nullopt where the GEMM library
  /// runs each call whole.
  virtual std::optional<GemmTiling> getGemmTiling() const = 0;
  /// The most ops --kernel-merge-launches puts into one kernel: a bound on
  /// the code generator's work per kernel.
  virtual int64_t getMaxMergedOps() const = 0;

  /// Threads of a warp (0: the target has no warps).
  virtual int64_t getWarpSize() const = 0;
  /// The widest vector load or store the code generator emits, in bytes.
  virtual int64_t getMaxVectorBytes() const = 0;
  /// Threads per block of an elementwise kernel whose range fills one (0:
  /// no blocks).
  virtual int64_t getElementwiseBlockSize() const = 0;
  /// The GPUs of the arch, whose figures the roofline model holds the
  /// kernels against (cuda/GpuFigures.h); none on the cpu.
  virtual llvm::ArrayRef<cuda::GpuFigures> getGpus() const = 0;
  /// Whether the target's fused attention kernels (kernel/IR/
  /// FusedAttention.h) take heads of `keyDim` and `valueDim` elements of
  /// `elementType` ("f32", "bf16", "f16"); where not, attention is library
  /// GEMMs around a row kernel.
  virtual bool hasFusedAttention(llvm::StringRef elementType, int64_t keyDim,
                                 int64_t valueDim) const = 0;
  /// Where the GEMM library applies bias, GELU and bias-gradient epilogues
  /// as it stores the product (so that the pipeline folds them into the
  /// GEMMs, --graph-fold-gemm-epilogues, before fusing the rest): the
  /// multiple of elements its GELU auxiliary matrix's leading dimension
  /// must be. 0: no epilogues are folded.
  virtual int64_t getGemmEpilogueAuxAlignment() const = 0;
  /// The element types of the products whose epilogues its executor
  /// applies ("f32"; a 16-bit product's would need the epilogue before the
  /// rounding of C, which the executors do not do yet).
  virtual llvm::ArrayRef<llvm::StringRef> getGemmEpilogueElementTypes() const {
    static const llvm::StringRef types[] = {"f32"};
    return types;
  }
  /// The multiple a cross-entropy's class dim is padded to, for aligned
  /// GEMM rows (--graph-pad-logits); 0: none.
  virtual int64_t getLogitsAlignment() const = 0;
  /// The training precisions its kernels are checked in ("fp32", "bf16",
  /// "fp16"; --graph-mixed-precision's policies).
  virtual llvm::ArrayRef<llvm::StringRef> getTrainingPrecisions() const = 0;

  /// The target of `kind` for `arch` (empty: the target's default), or
  /// null with `error` set when `arch` is not one it supports.
  static std::unique_ptr<TargetInfo>
  create(TargetKind kind, llvm::StringRef arch, std::string &error);

protected:
  TargetInfo(TargetKind kind, llvm::StringRef arch)
      : kind(kind), arch(arch.str()) {}

private:
  TargetKind kind;
  std::string arch;
};

/// The cpu backend's target: kernels in chunks of their range on a thread
/// pool, GEMMs in fixed tiles.
std::unique_ptr<TargetInfo> createHostTargetInfo(llvm::StringRef cpu);
/// The CUDA target for `arch` (sm_80, sm_90), or null with `error` set.
std::unique_ptr<TargetInfo> createCudaTargetInfo(llvm::StringRef arch,
                                                 std::string &error);

} // namespace kiln

#endif // KILN_TARGET_TARGETINFO_H
