//===- ReferenceGemm.cpp - Kiln's own plain GEMM kernel -------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// The GEMM every build has: what runs when no library is built in (the
// runtime built for a machine without oneDNN or OpenBLAS), and a reference
// for the libraries' tests. A panel of op(B)'s columns is packed once, in
// the accumulation type, so the inner loop runs along contiguous memory and
// the compiler vectorizes it; each element of C sums its k products in
// order. It is correct for every shape, but several times slower than a
// library's kernels, which is why the session warns when it runs.
//
//===----------------------------------------------------------------------===//

#include "GemmLibrary.h"

#include <algorithm>
#include <vector>

using namespace kiln;
using namespace kiln::cpu;

namespace {

/// Columns of op(B) packed at a time.
constexpr int64_t kPanelColumns = 256;

template <typename In, typename Acc, typename Out = Acc>
void multiply(const GemmProblem &problem) {
  const In *a = static_cast<const In *>(problem.a);
  const In *b = static_cast<const In *>(problem.b);
  Out *c = static_cast<Out *>(problem.c);
  int64_t m = problem.m, n = problem.n, k = problem.k;
  Acc alpha = static_cast<Acc>(problem.alpha);
  Acc beta = static_cast<Acc>(problem.beta);
  std::vector<Acc> panel(static_cast<size_t>(k * std::min(n, kPanelColumns)));
  std::vector<Acc> row(static_cast<size_t>(std::min(n, kPanelColumns)));
  for (int64_t first = 0; first < n; first += kPanelColumns) {
    int64_t width = std::min(kPanelColumns, n - first);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < width; ++j) {
        int64_t column = first + j;
        const In *element = problem.transposeB ? b + column * problem.ldb + p
                                               : b + p * problem.ldb + column;
        panel[p * width + j] = widenElement(element);
      }
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.begin() + width, Acc(0));
      for (int64_t p = 0; p < k; ++p) {
        const In *element = problem.transposeA ? a + p * problem.lda + i
                                               : a + i * problem.lda + p;
        Acc factor = widenElement(element);
        const Acc *source = panel.data() + p * width;
        for (int64_t j = 0; j < width; ++j)
          row[j] += factor * source[j];
      }
      Out *target = c + i * problem.ldc + first;
      if (beta == Acc(0))
        for (int64_t j = 0; j < width; ++j)
          target[j] = narrowElement<Out>(alpha * row[j]);
      else
        for (int64_t j = 0; j < width; ++j)
          target[j] = narrowElement<Out>(alpha * row[j] +
                                         beta * widenElement(target + j));
    }
  }
}

class ReferenceGemm final : public GemmLibrary {
public:
  const char *name() const override { return "reference"; }
  std::string version() const override { return "Kiln reference GEMM"; }
  std::string isa() const override { return "generic C++"; }
  bool supports(GemmTypes) const override { return true; }
  std::string fallbackWarning() const override {
    return std::string("GEMMs run Kiln's plain reference kernel (KILN_GEMM="
                       "reference, or no library built in), several times "
                       "slower than a library's on this CPU (") +
           cpuIsaRankName(cpuIsaRank()) + ")";
  }
  void run(const GemmProblem &problem) const override {
    if (problem.m <= 0 || problem.n <= 0)
      return;
    switch (problem.types) {
    case GemmTypes::F32:
      return multiply<float, float>(problem);
    case GemmTypes::F64:
      return multiply<double, double>(problem);
    case GemmTypes::BF16_F32:
      return multiply<uint16_t, float>(problem);
    case GemmTypes::BF16:
      return multiply<uint16_t, float, uint16_t>(problem);
    case GemmTypes::F16_F32:
      return multiply<Half, float>(problem);
    case GemmTypes::F16:
      return multiply<Half, float, Half>(problem);
    }
  }
};

} // namespace

std::shared_ptr<const GemmLibrary> kiln::cpu::createReferenceGemm() {
  return std::make_shared<ReferenceGemm>();
}
