//===- GemmEpilogue.cpp - What a GEMM call does after its product ---------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "GemmEpilogue.h"

#include <cassert>

#include <cmath>

using namespace kiln;

namespace {

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the gelu op's form.
template <typename T> T gelu(T x) {
  const T c = static_cast<T>(std::sqrt(2.0 / M_PI));
  const T a = static_cast<T>(0.044715);
  return T(0.5) * x * (T(1) + std::tanh(c * (x + a * x * x * x)));
}

/// Its derivative, as the gelu_grad op computes it.
template <typename T> T geluDerivative(T x) {
  const T c = static_cast<T>(std::sqrt(2.0 / M_PI));
  const T a = static_cast<T>(0.044715);
  T t = std::tanh(c * (x + a * x * x * x));
  T du = c * (T(1) + T(3) * a * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

/// bias[j] = sum over p of op(B)[p, j] for the tile's columns.
template <typename In, typename T>
void sumColumnsOfB(const cpu::GemmProblem &tile, T *bias) {
  const In *b = static_cast<const In *>(tile.b);
  for (int64_t j = 0; j < tile.n; ++j) {
    T sum = T(0);
    for (int64_t p = 0; p < tile.k; ++p)
      sum += cpu::widenElement(tile.transposeB ? b + j * tile.ldb + p
                                               : b + p * tile.ldb + j);
    bias[j] = sum;
  }
}

/// `update(i, j, element)` over the tile's elements.
template <typename T, typename Update>
void forEachElement(const cpu::GemmProblem &tile, Update update) {
  T *c = static_cast<T *>(tile.c);
  for (int64_t i = 0; i < tile.m; ++i)
    for (int64_t j = 0; j < tile.n; ++j)
      update(i, j, c[i * tile.ldc + j]);
}

template <typename T>
void applyToElements(const cpu::GemmProblem &tile,
                     const GemmEpilogueTile &epilogue) {
  using Kind = plan::GemmEpilogue;
  const T *bias = static_cast<const T *>(epilogue.bias);
  // aux has C's layout.
  T *aux = static_cast<T *>(epilogue.aux);
  auto auxAt = [&](int64_t i, int64_t j) -> T & {
    return aux[i * tile.ldc + j];
  };
  switch (epilogue.kind) {
  case Kind::Bias:
    return forEachElement<T>(
        tile, [&](int64_t, int64_t j, T &element) { element += bias[j]; });
  case Kind::Gelu:
    return forEachElement<T>(tile, [&](int64_t i, int64_t j, T &element) {
      if (aux)
        auxAt(i, j) = element;
      element = gelu(element);
    });
  case Kind::BiasGelu:
    return forEachElement<T>(tile, [&](int64_t i, int64_t j, T &element) {
      T input = element + bias[j];
      if (aux)
        auxAt(i, j) = input;
      element = gelu(input);
    });
  case Kind::DGelu:
    return forEachElement<T>(tile, [&](int64_t i, int64_t j, T &element) {
      element = element * geluDerivative(auxAt(i, j));
    });
  default:
    return;
  }
}

} // namespace

void kiln::applyGemmEpilogue(const cpu::GemmProblem &tile,
                             const GemmEpilogueTile &epilogue) {
  switch (epilogue.kind) {
  case plan::GemmEpilogue::None:
    return;
  case plan::GemmEpilogue::BiasGrad:
    if (!epilogue.firstRow)
      return;
    switch (tile.types) {
    case cpu::GemmTypes::F32:
      return sumColumnsOfB<float>(tile, static_cast<float *>(epilogue.bias));
    case cpu::GemmTypes::F64:
      return sumColumnsOfB<double>(tile, static_cast<double *>(epilogue.bias));
    case cpu::GemmTypes::BF16_F32:
      return sumColumnsOfB<uint16_t>(tile, static_cast<float *>(epilogue.bias));
    case cpu::GemmTypes::F16_F32:
      return sumColumnsOfB<cpu::Half>(tile,
                                      static_cast<float *>(epilogue.bias));
    case cpu::GemmTypes::BF16:
    case cpu::GemmTypes::F16:
      assert(false && "the cpu executor refuses epilogues of a 16-bit C");
      return;
    }
    return;
  default:
    if (tile.types == cpu::GemmTypes::F64)
      applyToElements<double>(tile, epilogue);
    else
      applyToElements<float>(tile, epilogue);
  }
}

std::string kiln::checkGemmEpilogue(const plan::GemmCall &call) {
  using Kind = plan::GemmEpilogue;
  Kind kind = call.epilogue();
  if (kind == Kind::None)
    return "";
  std::string name = plan::EnumNameGemmEpilogue(kind);
  if (kind == Kind::BiasGrad && call.batch() > 1)
    return "the epilogue BiasGrad sums one matrix's rows; this GEMM has a "
           "batch of " +
           std::to_string(call.batch());
  // cuBLASLt's GELU auxiliary matrix: a leading dimension and batch stride
  // that are multiples of 8 elements (cublasLt.h, EPILOGUE_AUX_LD).
  bool auxiliary =
      kind == Kind::Gelu || kind == Kind::BiasGelu || kind == Kind::DGelu;
  if (auxiliary && call.ldc() % 8 != 0)
    return "the epilogue " + name +
           " keeps its auxiliary matrix with C's leading dimension, " +
           std::to_string(call.ldc()) + ", which is not a multiple of 8";
  if (auxiliary && call.batch() > 1 && call.stride_c() % 8 != 0)
    return "the epilogue " + name +
           " keeps its auxiliary matrix with C's batch stride, " +
           std::to_string(call.stride_c()) + ", which is not a multiple of 8";
  return "";
}
