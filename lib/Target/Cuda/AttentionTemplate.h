//===- AttentionTemplate.h - Flash attention on the GPU ---------*- C++ -*-===//
//
// Part of Kiln. Private to the CUDA target: the attention template of
// --convert-kernel-to-gpu, which replaces the reference body of each part
// of a fused attention (kernel/IR/FusedAttention.h) with a tiled kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ATTENTIONTEMPLATE_H
#define KILN_LIB_TARGET_CUDA_ATTENTIONTEMPLATE_H

#include "kiln/Dialect/Kernel/IR/FusedAttention.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace kiln {

/// On a gpu.func of the attention template: the part it computes
/// ("forward", "key_value_grad" or "query_grad").
inline constexpr llvm::StringLiteral kAttentionTemplateAttr = "kiln.attention";

/// How a part's kernel lays its rows (queries, or keys for key_value_grad)
/// on threads. A group of `lanes` neighbouring lanes holds one row: lane m
/// keeps columns m, m + lanes, m + 2 lanes, ... of each of the row's
/// vectors in registers (at most kMaxColumnsPerLane each). A block takes
/// `rowsPerBlock` rows of one batch and walks the other side's rows
/// (keys, or queries for key_value_grad) in tiles of `tileRows`, staged in
/// shared memory by all its threads. For each row of a tile, a group's dot
/// products are its lanes' partial sums combined by a butterfly of
/// shuffles; the forward keeps a running maximum and exp-sum (online
/// softmax) and rescales its output row; the gradients recompute each
/// probability from the saved log-sum-exp. No [queries, keys] value is
/// ever stored, in global or in shared memory; causal blocks skip the
/// tiles that no row of theirs sees.
struct AttentionPlan {
  kernel::FusedAttention attention;
  int64_t lanes = 1;
  /// The target's warp: the shuffles' width.
  int64_t warpSize = 32;
  int64_t rowsPerBlock = 1;
  int64_t tileRows = 32;
  int64_t blockSize = 32;
  int64_t grid = 1;
  /// Shared memory the tiles take, in bytes.
  int64_t sharedBytes = 0;
};

/// The plan of a part whose kernel body `body` takes the part's buffers
/// (f32, [batches, rows, dim] and [batches, rows]); nullopt when the
/// buffers are not those, or a head dim is past what the lanes of a warp
/// can hold.
std::optional<AttentionPlan> planAttention(const kernel::FusedAttention &part,
                                           mlir::func::FuncOp body,
                                           int64_t warpSize);

/// Builds `gpu.func @name` of the attention template at `builder`.
void buildAttentionKernel(mlir::OpBuilder &builder, llvm::StringRef name,
                          mlir::Location loc, mlir::func::FuncOp body,
                          const AttentionPlan &plan);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ATTENTIONTEMPLATE_H
