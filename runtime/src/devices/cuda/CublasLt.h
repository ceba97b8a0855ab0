//===- CublasLt.h - A plan's GEMMs through cuBLASLt -------------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// The cuda device's GEMMs are cuBLASLt calls. libcublasLt.so.13 is loaded
// with dlopen (KILN_LIBCUBLASLT names another file: the tests' fake, which
// computes with the host executor's reference GEMM). cuBLASLt is
// column-major and a plan row-major, so a plan's C = op(A) op(B) is asked
// for as its transpose, C^T = op(B)^T op(A)^T: the operands swap, each
// buffer read as the transpose of what it stores, and the bias (n elements,
// one per column of C) is per row of cuBLASLt's D. A bias gradient, the sum
// over the k rows of op(B), is then BGRADA: over the k columns of the
// swapped A.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_CUBLASLT_H
#define KILN_DEVICES_CUDA_CUBLASLT_H

#include "DynamicLibrary.h"
#include "kiln/plan_generated.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace cuda {

/// cuBLASLt's types and values (cublasLt.h, cublas_api.h and
/// library_types.h; CublasLtTest checks them against the toolkit's).
namespace lt {
using Status = int;
constexpr Status kSuccess = 0;
constexpr Status kNotSupported = 15;
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;
constexpr int kCompute32F = 68, kCompute64F = 70;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7,
              kDescBiasPointer = 8, kDescAuxPointer = 11, kDescAuxLd = 12,
              kDescAuxBatchStride = 13;
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
constexpr int kPreferenceMaxWorkspaceBytes = 1;
constexpr int kEpilogueDefault = 1, kEpilogueBias = 4, kEpilogueGelu = 32,
              kEpilogueGeluAux = 160, kEpilogueGeluBias = 36,
              kEpilogueGeluAuxBias = 164, kEpilogueDGelu = 192,
              kEpilogueBGradA = 256, kEpilogueBGradB = 512;
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};
using Handle = struct Context *;
using MatmulDesc = struct MatmulDescOpaque *;
using Layout = struct LayoutOpaque *;
using Preference = struct PreferenceOpaque *;
using Stream = struct StreamOpaque *;
} // namespace lt

/// The entry points Kiln calls.
struct CublasLtApi {
  lt::Status (*create)(lt::Handle *) = nullptr;
  lt::Status (*destroy)(lt::Handle) = nullptr;
  lt::Status (*descCreate)(lt::MatmulDesc *, int computeType,
                           int scaleType) = nullptr;
  lt::Status (*descDestroy)(lt::MatmulDesc) = nullptr;
  lt::Status (*descSetAttribute)(lt::MatmulDesc, int attribute,
                                 const void *value, size_t bytes) = nullptr;
  lt::Status (*layoutCreate)(lt::Layout *, int type, uint64_t rows,
                             uint64_t columns, int64_t ld) = nullptr;
  lt::Status (*layoutDestroy)(lt::Layout) = nullptr;
  lt::Status (*layoutSetAttribute)(lt::Layout, int attribute, const void *value,
                                   size_t bytes) = nullptr;
  lt::Status (*preferenceCreate)(lt::Preference *) = nullptr;
  lt::Status (*preferenceDestroy)(lt::Preference) = nullptr;
  lt::Status (*preferenceSetAttribute)(lt::Preference, int attribute,
                                       const void *value,
                                       size_t bytes) = nullptr;
  lt::Status (*heuristic)(lt::Handle, lt::MatmulDesc, lt::Layout a,
                          lt::Layout b, lt::Layout c, lt::Layout d,
                          lt::Preference, int requested,
                          lt::HeuristicResult *results,
                          int *returned) = nullptr;
  lt::Status (*matmul)(lt::Handle, lt::MatmulDesc, const void *alpha,
                       const void *a, lt::Layout, const void *b, lt::Layout,
                       const void *beta, const void *c, lt::Layout, void *d,
                       lt::Layout, const lt::Algo *, void *workspace,
                       size_t workspaceBytes, lt::Stream) = nullptr;
  const char *(*statusName)(lt::Status) = nullptr;
  const char *(*statusString)(lt::Status) = nullptr;
};

/// One GemmCall described to cuBLASLt, its algorithm chosen: made once per
/// call of a plan, run every step.
class LtGemm {
public:
  ~LtGemm();
  LtGemm(const LtGemm &) = delete;
  LtGemm &operator=(const LtGemm &) = delete;
  /// What cuBLASLt was given, for messages and the profile:
  /// "m=256 n=2048 k=128 A^T B epilogue BIAS (bias length 256)".
  const std::string &describe() const { return description_; }
  size_t getWorkspaceBytes() const {
    return candidates_[chosen_].workspaceSize;
  }
  /// The algorithms the heuristic offered, best first; the one run.
  size_t getCandidateCount() const { return candidates_.size(); }
  size_t getChosen() const { return chosen_; }
  void choose(size_t candidate) { chosen_ = candidate; }
  /// "algorithm 2 of 8 (timed: 0.041 ms, the heuristic's first 0.057 ms)"
  /// or "algorithm 1 of 1 (the heuristic's first)".
  const std::string &describeChoice() const { return choice_; }
  void setChoiceText(std::string text) { choice_ = std::move(text); }

private:
  friend class CublasLt;
  explicit LtGemm(const CublasLtApi &api) : api_(api) {}
  const CublasLtApi &api_;
  lt::MatmulDesc desc_ = nullptr;
  lt::Layout a_ = nullptr, b_ = nullptr, d_ = nullptr;
  std::vector<lt::HeuristicResult> candidates_;
  size_t chosen_ = 0;
  std::string choice_;
  int scaleType_ = lt::kR32F;
  double alpha_ = 1, beta_ = 0;
  plan::GemmEpilogue epilogue_ = plan::GemmEpilogue::None;
  std::string description_;
};

/// The device pointers of one GEMM's operands (the epilogue's or null).
struct LtGemmPointers {
  const void *a = nullptr, *b = nullptr;
  void *c = nullptr;
  void *bias = nullptr, *aux = nullptr;
};

/// libcublasLt, loaded, with one handle.
class CublasLt {
public:
  /// Loads it (KILN_LIBCUBLASLT, else libcublasLt.so.13) and creates a
  /// handle; null with the reason in `error`.
  static std::unique_ptr<CublasLt> load(std::string &error);
  ~CublasLt();
  CublasLt(const CublasLt &) = delete;
  CublasLt &operator=(const CublasLt &) = delete;
  const std::string &getPath() const { return path_; }

  /// Describes `call` (its types, layouts, batch and epilogue) and asks
  /// the heuristic for up to `candidates` algorithms within
  /// `workspaceBytes`, choosing its first; "" or why cuBLASLt cannot
  /// compute it.
  std::string prepare(const plan::GemmCall &call, size_t workspaceBytes,
                      int candidates, std::unique_ptr<LtGemm> &gemm) const;
  /// Queues `gemm` on `pointers` with `workspace` (at least
  /// gemm.getWorkspaceBytes()) on `stream` (a CUstream; null: the legacy
  /// default stream).
  std::string run(const LtGemm &gemm, const LtGemmPointers &pointers,
                  void *workspace, void *stream) const;
  /// "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (the functionality ...)".
  std::string describeError(const char *call, lt::Status status) const;

private:
  CublasLt() = default;
  runtime::DynamicLibrary library_;
  std::string path_;
  CublasLtApi api_;
  lt::Handle handle_ = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUBLASLT_H
