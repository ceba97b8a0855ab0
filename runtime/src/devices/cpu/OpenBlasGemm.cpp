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
//===----------------------------------------------------------------------===//

#include "GemmLibrary.h"

#include <cblas.h>

#include <algorithm>

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

class OpenBlasGemm final : public GemmLibrary {
public:
  OpenBlasGemm() {
    // Computes on the calling thread: the session's pool spreads the tiles,
    // and OpenBLAS's own threads would spin on the cores the pool uses.
    openblas_set_num_threads(1);
  }
  const char *name() const override { return "openblas"; }
  std::string version() const override {
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64":
    // the first two words.
    std::string config = openblas_get_config();
    size_t space = config.find(' ');
    space = space == std::string::npos ? space : config.find(' ', space + 1);
    return config.substr(0, space);
  }
  std::string isa() const override { return openblas_get_corename(); }
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
      cblas_sgemm(CblasRowMajor, ta, tb, p.m, p.n, p.k,
                  static_cast<float>(p.alpha), static_cast<const float *>(p.a),
                  ld(p.lda), static_cast<const float *>(p.b), ld(p.ldb),
                  static_cast<float>(p.beta), static_cast<float *>(p.c),
                  ld(p.ldc));
    else
      cblas_dgemm(CblasRowMajor, ta, tb, p.m, p.n, p.k, p.alpha,
                  static_cast<const double *>(p.a), ld(p.lda),
                  static_cast<const double *>(p.b), ld(p.ldb), p.beta,
                  static_cast<double *>(p.c), ld(p.ldc));
  }
};

} // namespace

std::shared_ptr<const GemmLibrary> kiln::cpu::createOpenBlasGemm() {
  return std::make_shared<OpenBlasGemm>();
}
