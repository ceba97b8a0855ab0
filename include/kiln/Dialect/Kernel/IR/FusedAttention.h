//===- FusedAttention.h - The parts of a fused attention --------*- C++ -*-===//
//
// Part of Kiln. Where a target has fused attention kernels
// (TargetInfo::hasFusedAttention), graph.attention and its
// gradient lower to kernel.funcs that carry this description as their
// `kernel.attention` attribute. Their bodies are plain reference loops (a
// row of the output per iteration of the range: what the kernel computes,
// which buffers it reads and writes); the target replaces each with its
// tiled kernel (the cuda target: AttentionTemplate.cpp), which never holds
// the [queries, keys] scores in global memory.
//
// Buffers, all [batches, rows, dim] row-major (lse and delta [batches,
// queries], always f32; the others f32, or bf16 or f16 under mixed
// precision, whose sums are still in f32):
//   forward         q, k, v -> out, lse (the log-sum-exp of each row of
//                   scaled scores, which the backward recomputes P from)
//   key_value_grad  q, k, v, dout, lse, delta -> dk, dv  (a row per key)
//   query_grad      q, k, v, dout, lse, delta -> dq      (a row per query)
// where delta = rowsum(dout * out), a row kernel of its own. With an
// additive mask, each part takes it as its last buffer, read in place:
// [maskBatches * maskQueries, maskKeys] in the vectors' type, the row of
// query i of batch b at ((b / maskDivisor) % maskBatches) * maskQueries +
// (maskQueries == 1 ? 0 : i) (graph::AttentionMaskLayout).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_IR_FUSEDATTENTION_H
#define KILN_DIALECT_KERNEL_IR_FUSEDATTENTION_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace kiln::kernel {

struct FusedAttention {
  enum class Part { Forward, KeyValueGrad, QueryGrad };
  Part part = Part::Forward;
  int64_t batches = 1;
  int64_t queries = 1;
  int64_t keys = 1;
  int64_t keyDim = 1;
  int64_t valueDim = 1;
  bool causal = false;
  double scale = 1.0;
  bool masked = false;
  int64_t maskBatches = 1;
  int64_t maskDivisor = 1;
  int64_t maskQueries = 1;
  int64_t maskKeys = 1;

  /// The buffers the part's kernel takes, in order.
  unsigned getNumBuffers() const {
    unsigned vectors = part == Part::Forward        ? 5
                       : part == Part::KeyValueGrad ? 8
                                                    : 7;
    return vectors + (masked ? 1 : 0);
  }
  /// The mask's position among the buffers (when masked).
  unsigned getMaskBuffer() const { return getNumBuffers() - 1; }
  /// The part's rows: queries, or keys for key_value_grad.
  int64_t getRows() const {
    return part == Part::KeyValueGrad ? keys : queries;
  }

  /// The (query, key) pairs the part computes a probability for: every
  /// pair, or under the causal mask those whose key is at most the query.
  int64_t getPairs() const;
  /// The floating-point operations of the part: per pair, the products of
  /// its rows (two per multiply-add) and the softmax's scalar work.
  int64_t getFlops() const;

  /// As a dictionary attribute, and back (nullopt: not one).
  mlir::Attribute toAttr(mlir::MLIRContext *context) const;
  static std::optional<FusedAttention> fromAttr(mlir::Attribute attr);
};

llvm::StringRef getPartName(FusedAttention::Part part);

/// The name of an attention's element type as TargetInfo::hasFusedAttention
/// takes it: "f32", "bf16" or "f16"; empty for any other type.
llvm::StringRef getAttentionTypeName(mlir::Type elementType);

} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_IR_FUSEDATTENTION_H
