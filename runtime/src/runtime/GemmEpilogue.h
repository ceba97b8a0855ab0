//===- GemmEpilogue.h - What a GEMM call does after its product -*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// The plan's GEMM epilogues (plan.fbs, GemmEpilogue), run on the host after
// a tile's product: the cpu executor's and the GPU emulator's semantics of
// what cuBLASLt's epilogues compute on the device, and what the fake
// cuBLASLt of the runtime's tests checks against. The GELU is the tanh
// form, as in cuBLASLt and Kiln's gelu op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GEMMEPILOGUE_H
#define KILN_RUNTIME_GEMMEPILOGUE_H

#include "devices/cpu/GemmLibrary.h"
#include "kiln/plan_generated.h"

#include <string>

namespace kiln {

/// The epilogue's operands for one tile of C: `bias` at the tile's first
/// column, `aux` at its first element with C's leading dimension.
struct GemmEpilogueTile {
  plan::GemmEpilogue kind = plan::GemmEpilogue::None;
  void *bias = nullptr;
  void *aux = nullptr;
  /// Whether the tile holds C's first row: a bias gradient, a sum over the
  /// rows of op(B), is written by the tiles of the first row only.
  bool firstRow = false;
};

/// Applies `epilogue` to `tile`, whose product P = alpha op(A) op(B) +
/// beta C the library has just written into its C:
///   Bias:     C = P + bias[j]
///   Gelu:     aux = P, C = gelu(P)
///   BiasGelu: aux = P + bias[j], C = gelu(aux)
///   DGelu:    C = P * gelu'(aux)
///   BiasGrad: bias[j] = the sum over p of op(B)[p, j], in order of p
/// in C's type (bf16 operands widened to f32).
void applyGemmEpilogue(const cpu::GemmProblem &tile,
                       const GemmEpilogueTile &epilogue);

/// Why `call`'s epilogue cannot run (the limits cuBLASLt sets, so that a
/// plan the host runs also runs on the device), or "" when it can.
/// Buffers are checked by the plan's validation.
std::string checkGemmEpilogue(const plan::GemmCall &call);

} // namespace kiln

#endif // KILN_RUNTIME_GEMMEPILOGUE_H
