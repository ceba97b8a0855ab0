//===- OpenBlasGemm.cpp - GEMMs through OpenBLAS --------------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// OpenBLAS picks its kernels from a table of CPU models; one it does not
// know (Debian 12's 0.3.21 on Sapphire Rapids) gets the generic Prescott
// (SSE3) kernels, several times slower. Kiln never sets OPENBLAS_CORETYPE to
// steer it: the session warns instead, and oneDNN is the default library.
// OpenBLAS has no bf16 x bf16 -> f32 GEMM in Debian's build, so that type
// goes to the next library that has one.
//
// The library is loaded with dlopen when a session first asks for it, not
// linked: Debian's pthreads build starts a thread per core in its load-time
// constructor, which spins on sched_yield for a while. Linked, that thread
// ran in every Kiln process (a `kiln compile` spent about 0.1 s of CPU time
// in it on 2 cores) although Kiln computes on one thread per call.
//
//===----------------------------------------------------------------------===//

#include "DynamicLibrary.h"
#include "GemmLibrary.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#ifndef KILN_OPENBLAS_PATH
#define KILN_OPENBLAS_PATH "libopenblas.so.0"
#endif

using namespace kiln;
using namespace kiln::cpu;

namespace {

/// OpenBLAS core names by the vector ISA of their kernels (cpuIsaRank's
/// scale); a name not listed is not judged.
int coreIsaRank(const std::string &core) {
  static const char *sse[] = {"Prescott",  "Core2",  "Penryn",  "Dunnington",
                              "Nehalem",   "Atom",   "Katmai",  "Coppermine",
                              "Northwood", "Banias", "Opteron", "Barcelona"};
  static const char *avx2[] = {"Haswell", "Zen", "Excavator", "Steamroller",
                               "Sandybridge"};
  static const char *avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  for (const char *name : sse)
    if (core == name)
      return 0;
  for (const char *name : avx2)
    if (core == name)
      return 1;
  for (const char *name : avx512)
    if (core == name)
      return 2;
  return -1;
}

/// The OpenBLAS entry points Kiln calls, from the dlopen'ed library.
struct OpenBlasApi {
  decltype(&::openblas_get_config) getConfig = nullptr;
  decltype(&::openblas_get_corename) getCorename = nullptr;
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::cblas_dgemm) dgemm = nullptr;
};

/// Loads OpenBLAS from the path found when Kiln was configured, else by its
/// soname, or says why not in `error`. Its threads stay unstarted: the
/// constructor reads OPENBLAS_NUM_THREADS, set to 1 around the load (and
/// then restored); Kiln computes on the calling thread, the session's pool
/// spreading the tiles, and OpenBLAS's threads would spin on the cores the
/// pool uses. (setenv is not safe against another thread's getenv: this
/// runs once per process, under createOnce's lock, when a session is made.)
std::optional<OpenBlasApi> loadOpenBlas(std::string &error) {
  const char *variable = "OPENBLAS_NUM_THREADS";
  const char *previous = std::getenv(variable);
  std::optional<std::string> saved;
  if (previous)
    saved = previous;
  ::setenv(variable, "1", /*overwrite=*/1);
  runtime::DynamicLibrary library;
  std::string reason;
  for (const char *path : {KILN_OPENBLAS_PATH, "libopenblas.so.0"})
    if (library.open(path, reason))
      break;
  if (saved)
    ::setenv(variable, saved->c_str(), /*overwrite=*/1);
  else
    ::unsetenv(variable);
  if (!library.isOpen()) {
    error = "OpenBLAS cannot be loaded (" + reason + ")";
    return std::nullopt;
  }
  OpenBlasApi api;
  decltype(&::openblas_set_num_threads) setThreads = nullptr;
  if (!library.resolve("openblas_get_config", api.getConfig) ||
      !library.resolve("openblas_get_corename", api.getCorename) ||
      !library.resolve("cblas_sgemm", api.sgemm) ||
      !library.resolve("cblas_dgemm", api.dgemm) ||
      !library.resolve("openblas_set_num_threads", setThreads)) {
    error = "the OpenBLAS loaded lacks a cblas or openblas_ entry point";
    return std::nullopt;
  }
  // Its kernels may run until the process ends.
  library.keepLoaded();
  // One thread per call even where the variable did not reach it (a
  // library loaded before, by the embedding program).
  setThreads(1);
  return api;
}

class OpenBlasGemm final : public GemmLibrary {
public:
  explicit OpenBlasGemm(OpenBlasApi api) : api(api) {}
  // The library stays loaded: its kernels may run until the process ends.
  const char *name() const override { return "openblas"; }
  std::string version() const override {
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64":
    // the first two words.
    std::string config = api.getConfig();
    size_t space = config.find(' ');
    space = space == std::string::npos ? space : config.find(' ', space + 1);
    return config.substr(0, space);
  }
  std::string isa() const override { return api.getCorename(); }
  bool supports(GemmTypes types) const override {
    return types == GemmTypes::F32 || types == GemmTypes::F64;
  }
  std::string fallbackWarning() const override {
    int cpu = cpuIsaRank();
    int core = coreIsaRank(isa());
    if (core < 0 || core >= std::min(cpu, 2))
      return "";
    return "OpenBLAS runs its generic '" + isa() +
           "' kernels on this CPU, which has " + cpuIsaRankName(cpu) +
           " (its table of CPU models does not know it): use oneDNN "
           "(unset KILN_GEMM)";
  }
  void run(const GemmProblem &p) const override {
    if (p.m <= 0 || p.n <= 0)
      return;
    CBLAS_TRANSPOSE ta = p.transposeA ? CblasTrans : CblasNoTrans;
    CBLAS_TRANSPOSE tb = p.transposeB ? CblasTrans : CblasNoTrans;
    // BLAS requires leading dimensions >= 1 even for empty operands.
    auto ld = [](int64_t value) {
      return static_cast<blasint>(value > 0 ? value : 1);
    };
    if (p.types == GemmTypes::F32)
      api.sgemm(CblasRowMajor, ta, tb, p.m, p.n, p.k,
                static_cast<float>(p.alpha), static_cast<const float *>(p.a),
                ld(p.lda), static_cast<const float *>(p.b), ld(p.ldb),
                static_cast<float>(p.beta), static_cast<float *>(p.c),
                ld(p.ldc));
    else
      api.dgemm(CblasRowMajor, ta, tb, p.m, p.n, p.k, p.alpha,
                static_cast<const double *>(p.a), ld(p.lda),
                static_cast<const double *>(p.b), ld(p.ldb), p.beta,
                static_cast<double *>(p.c), ld(p.ldc));
  }

private:
  OpenBlasApi api;
};

} // namespace

std::shared_ptr<const GemmLibrary>
kiln::cpu::createOpenBlasGemm(std::string &error) {
  std::optional<OpenBlasApi> api = loadOpenBlas(error);
  if (!api)
    return nullptr;
  return std::make_shared<OpenBlasGemm>(*api);
}
