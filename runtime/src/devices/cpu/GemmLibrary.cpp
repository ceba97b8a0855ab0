//===- GemmLibrary.cpp - Choosing the cpu device's GEMM library -----------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "GemmLibrary.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

using namespace kiln;
using namespace kiln::cpu;

GemmLibrary::~GemmLibrary() = default;

const char *kiln::cpu::gemmTypesName(GemmTypes types) {
  switch (types) {
  case GemmTypes::F32:
    return "f32";
  case GemmTypes::F64:
    return "f64";
  case GemmTypes::BF16_F32:
    return "bf16 x bf16 -> f32";
  case GemmTypes::BF16:
    return "bf16 x bf16 -> bf16";
  case GemmTypes::F16_F32:
    return "f16 x f16 -> f32";
  case GemmTypes::F16:
    return "f16 x f16 -> f16";
  }
  return "?";
}

std::vector<std::string> kiln::cpu::builtInGemmLibraries() {
  std::vector<std::string> names;
#ifdef KILN_HAVE_ONEDNN
  names.push_back("onednn");
#endif
#ifdef KILN_HAVE_OPENBLAS
  names.push_back("openblas");
#endif
  names.push_back("reference");
  return names;
}

/// Creates library `name`, once per process; an empty pointer with `error`
/// set when it cannot be loaded.
static std::shared_ptr<const GemmLibrary> createOnce(const std::string &name,
                                                     std::string &error) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const GemmLibrary>> created;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &library : created)
    if (name == library->name())
      return library;
  std::shared_ptr<const GemmLibrary> library;
#ifdef KILN_HAVE_ONEDNN
  if (name == "onednn")
    library = createOneDnnGemm();
#endif
#ifdef KILN_HAVE_OPENBLAS
  if (name == "openblas")
    library = createOpenBlasGemm(error);
#endif
  if (name == "reference")
    library = createReferenceGemm();
  if (library)
    created.push_back(library);
  return library;
}

std::shared_ptr<const GemmLibrary>
kiln::cpu::getGemmLibrary(const std::string &name, std::string &error) {
  std::vector<std::string> builtIn = builtInGemmLibraries();
  std::string wanted = name;
  const char *variable = std::getenv("KILN_GEMM");
  bool fromEnvironment = wanted.empty() && variable && *variable;
  if (fromEnvironment)
    wanted = variable;
  if (wanted.empty())
    wanted = builtIn.front();
  for (const std::string &candidate : builtIn)
    if (candidate == wanted)
      return createOnce(candidate, error);
  std::string list;
  for (const std::string &candidate : builtIn)
    list += (list.empty() ? "" : ", ") + candidate;
  error = std::string(fromEnvironment ? "KILN_GEMM=" : "GEMM library ") + "'" +
          wanted + "' is not built into this runtime (built in: " + list + ")";
  return nullptr;
}

std::shared_ptr<const GemmLibrary>
kiln::cpu::getGemmLibraryFor(GemmTypes types,
                             const std::shared_ptr<const GemmLibrary> &chosen) {
  if (chosen && chosen->supports(types))
    return chosen;
  std::string ignored; // A library that cannot load is skipped.
  for (const std::string &name : builtInGemmLibraries()) {
    std::shared_ptr<const GemmLibrary> library = createOnce(name, ignored);
    if (library && library->supports(types))
      return library;
  }
  return createOnce("reference", ignored);
}

#if defined(__x86_64__) || defined(__i386__)
/// XCR0: which register states the OS saves (and so lets programs use).
static uint64_t enabledRegisterStates() {
  uint32_t eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27)))
    return 0; // no OSXSAVE
  uint32_t low, high;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}
#endif

int kiln::cpu::cpuIsaRank() {
#if defined(__x86_64__) || defined(__i386__)
  uint32_t eax, ebx, ecx, edx;
  if (__get_cpuid_max(0, nullptr) < 7)
    return 0;
  uint64_t xcr0 = enabledRegisterStates();
  bool avxState = (xcr0 & 0x6) == 0x6;
  bool avx512State = (xcr0 & 0xe6) == 0xe6;
  bool amxState = (xcr0 & 0x60000) == 0x60000;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  bool avx2 = ebx & (1u << 5);
  // The AVX-512 subset oneDNN's avx512_core needs: F, DQ, BW, VL.
  uint32_t avx512Core = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
  bool avx512 = (ebx & avx512Core) == avx512Core;
  bool amxBf16 = (edx & (1u << 22)) && (edx & (1u << 24));
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  bool avx512Bf16 = eax & (1u << 5);
  if (avx512 && avx512State) {
    if (amxBf16 && amxState && avx512Bf16)
      return 4;
    return avx512Bf16 ? 3 : 2;
  }
  return avx2 && avxState ? 1 : 0;
#else
  return 0;
#endif
}

const char *kiln::cpu::cpuIsaRankName(int rank) {
  static const char *names[] = {"SSE only", "AVX2", "AVX-512",
                                "AVX-512 with AVX512-BF16",
                                "AVX-512 with AVX512-BF16 and AMX-BF16"};
  return names[rank < 0 ? 0 : rank > 4 ? 4 : rank];
}

