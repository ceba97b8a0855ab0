//===- GemmLibrary.h - The cpu device's GEMM libraries ----------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Every GEMM of a cpu plan runs through one GemmLibrary: oneDNN (its own
// JIT kernels, chosen from the CPU's features: AVX-512, AVX512-BF16, AMX),
// OpenBLAS (kernels chosen from a table of CPU models), or Kiln's reference
// kernel (plain C++, the fallback when no library was built in). Each is
// called on one thread per call: the session's pool splits a GEMM into the
// tiles of C that the compiler fixed in the plan, so the bytes computed do
// not depend on the thread count, and no library runs threads of its own
// that would fight the pool.
//
// `KILN_GEMM=onednn|openblas|reference` picks one of those built in; the
// default is the first built in, in that order.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CPU_GEMMLIBRARY_H
#define KILN_DEVICES_CPU_GEMMLIBRARY_H

#include "kiln/HalfFloats.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace cpu {

/// The element types of one GEMM: A and B, then C. Every type accumulates
/// in f32 (f64 in f64); BF16 and F16 round each element of C to bf16 or
/// IEEE half as they store it (mixed precision's GEMMs).
enum class GemmTypes { F32, F64, BF16_F32, BF16, F16_F32, F16 };

/// "f32", "f64", "bf16 x bf16 -> f32", "bf16 x bf16 -> bf16",
/// "f16 x f16 -> f32", "f16 x f16 -> f16".
const char *gemmTypesName(GemmTypes types);

/// The bytes of an element of A and B, and of C.
inline size_t gemmOperandBytes(GemmTypes types) {
  return types == GemmTypes::F64 ? 8 : types == GemmTypes::F32 ? 4 : 2;
}
inline size_t gemmResultBytes(GemmTypes types) {
  return types == GemmTypes::F64                                  ? 8
         : types == GemmTypes::BF16 || types == GemmTypes::F16 ? 2
                                                                  : 4;
}
/// Whether A and B are IEEE halves (else bf16 where they are 16-bit).
inline bool gemmOperandsAreHalves(GemmTypes types) {
  return types == GemmTypes::F16 || types == GemmTypes::F16_F32;
}

/// One row-major C = alpha * op(A) * op(B) + beta * C, with op(A) m x k and
/// op(B) k x n; A is stored k x m when transposeA (likewise B). With beta 0,
/// C is only written (NaNs in it do not propagate), as in BLAS.
struct GemmProblem {
  GemmTypes types = GemmTypes::F32;
  bool transposeA = false, transposeB = false;
  int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  const void *a = nullptr;
  int64_t lda = 0;
  const void *b = nullptr;
  int64_t ldb = 0;
  void *c = nullptr;
  int64_t ldc = 0;
};

class GemmLibrary {
public:
  virtual ~GemmLibrary();
  /// The name KILN_GEMM takes: "onednn", "openblas", "reference".
  virtual const char *name() const = 0;
  /// The library and its version as a person reads it: "oneDNN 2.6.3".
  virtual std::string version() const = 0;
  /// The instruction set its kernels run here: "avx512_core_amx".
  virtual std::string isa() const = 0;
  virtual bool supports(GemmTypes types) const = 0;
  /// Non-empty when it computes `types` some other way than with kernels of
  /// their own: "widened to f32" (said in the session's header when used).
  virtual std::string typesNote(GemmTypes types) const { return ""; }
  /// Non-empty when the library runs generic kernels on a CPU that has
  /// better ones: what it runs, what the CPU has, and what to do.
  virtual std::string fallbackWarning() const = 0;
  /// Readies the library for `problem` (oneDNN creates its primitive) so
  /// that run() cannot fail; the reason when it cannot compute it.
  virtual std::string prepare(const GemmProblem &problem) const { return ""; }
  /// Computes `problem` on the calling thread. Thread-safe: the pool calls
  /// it from every thread at once, on disjoint tiles of C.
  virtual void run(const GemmProblem &problem) const = 0;
  /// Whether its kernels point the stack pointer away from the stack while
  /// they run, so that no signal may be delivered meanwhile
  /// (runtime/SignalMask.h).
  virtual bool movesStackPointer() const { return false; }
};

/// The names of the libraries built into this runtime, in order of
/// preference.
std::vector<std::string> builtInGemmLibraries();

/// The library `name` ("" means $KILN_GEMM, or the preferred one when that
/// is unset or empty), or an empty pointer and `error` set when it is not
/// built in. Libraries are created once per process and shared.
std::shared_ptr<const GemmLibrary> getGemmLibrary(const std::string &name,
                                                  std::string &error);

/// The library that computes `types` for a session whose choice is
/// `chosen`: `chosen` itself when it supports them, else the first built-in
/// one that does (the reference kernel supports every type).
std::shared_ptr<const GemmLibrary>
getGemmLibraryFor(GemmTypes types,
                  const std::shared_ptr<const GemmLibrary> &chosen);

/// The best x86 vector ISA this CPU and its OS support, by rank:
/// 0 scalar/SSE, 1 AVX2, 2 AVX-512, 3 AVX512-BF16, 4 AMX-BF16.
int cpuIsaRank();
/// "AVX-512 with AMX-BF16" and the like, for cpuIsaRank's value.
const char *cpuIsaRankName(int rank);

/// The plain C++ kernel every build has (ReferenceGemm.cpp).
std::shared_ptr<const GemmLibrary> createReferenceGemm();
#ifdef KILN_HAVE_ONEDNN
std::shared_ptr<const GemmLibrary> createOneDnnGemm();
#endif
#ifdef KILN_HAVE_OPENBLAS
/// OpenBLAS, loaded on first use; empty with `error` set if it cannot be.
std::shared_ptr<const GemmLibrary> createOpenBlasGemm(std::string &error);
#endif

/// An IEEE half as the GEMM templates store it (bf16 is a plain uint16_t).
struct Half {
  uint16_t bits;
};

/// An operand element in its accumulation type: f32 and f64 as they are,
/// bf16 (stored as uint16_t) and halves widened to f32.
inline float widenElement(const float *element) { return *element; }
inline double widenElement(const double *element) { return *element; }
inline float widenElement(const uint16_t *element) {
  return bf16ToFloat(*element);
}
inline float widenElement(const Half *element) {
  return halfToFloat(element->bits);
}

/// An accumulated value stored as element type `Out`: itself, or rounded to
/// nearest even into a bf16 or a half.
template <typename Out, typename Acc> inline Out narrowElement(Acc value) {
  return static_cast<Out>(value);
}
template <> inline uint16_t narrowElement<uint16_t, float>(float value) {
  return floatToBf16(value);
}
template <> inline Half narrowElement<Half, float>(float value) {
  return Half{floatToHalf(value)};
}

} // namespace cpu
} // namespace kiln

#endif // KILN_DEVICES_CPU_GEMMLIBRARY_H
