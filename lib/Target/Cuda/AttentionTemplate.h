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
namespace attention {
/// The buffers' positions among a part's arguments.
enum Argument : unsigned {
  kQuery = 0,
  kKey = 1,
  kValue = 2,
  kOut = 3,        // forward
  kForwardLse = 4, // forward
  kResultGrad = 3, // gradients
  kLse = 4,        // gradients
  kDelta = 5,      // gradients
  kFirstGrad = 6,  // dk (key_value_grad) or dq (query_grad)
  kValueGrad = 7,  // key_value_grad
};
} // namespace attention

/// On a gpu.func of the attention template: the part it computes
/// ("forward", "key_value_grad" or "query_grad").
inline constexpr llvm::StringLiteral kAttentionTemplateAttr = "kiln.attention";

/// Whether the template takes heads of `keyDim` and `valueDim` elements of
/// `elementType`: f32 heads of at most 128 elements, or bf16 and f16 heads
/// of at most 128 in whole 16-element pieces (the k of mma.sync.m16n8k16).
inline bool attentionTemplateTakes(llvm::StringRef elementType, int64_t keyDim,
                                   int64_t valueDim) {
  if (keyDim < 1 || valueDim < 1 || keyDim > 128 || valueDim > 128)
    return false;
  if (elementType == "f32")
    return true;
  return (elementType == "bf16" || elementType == "f16") && keyDim % 16 == 0 &&
         valueDim % 16 == 0;
}

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
  /// bf16 or f16 buffers: the tensor-core variant (MmaAttentionTemplate.cpp),
  /// whose warps hold 16 rows each as mma.sync fragments.
  bool tensorCores = false;
  mlir::Type elementType;
};

/// The plan of a part whose kernel body `body` takes the part's buffers
/// ([batches, rows, dim] vectors, f32 or the tensor-core variant's bf16 or
/// f16, and [batches, rows] f32); nullopt when the buffers are not those,
/// or a head dim is past what the template takes.
std::optional<AttentionPlan> planAttention(const kernel::FusedAttention &part,
                                           mlir::func::FuncOp body,
                                           int64_t warpSize);

/// The tensor-core plan of a part whose vectors are `elementType` (bf16 or
/// f16); nullopt where attentionTemplateTakes says no.
std::optional<AttentionPlan>
planMmaAttention(const kernel::FusedAttention &part, mlir::Type elementType,
                 int64_t warpSize);

/// The tiles [first, end) of the other side's rows that a block whose rows
/// start at `firstRow` walks: under a causal mask, not those none of its
/// rows sees.
std::pair<mlir::Value, mlir::Value> buildTileRange(mlir::OpBuilder &b,
                                                   mlir::Location loc,
                                                   const AttentionPlan &plan,
                                                   mlir::Value firstRow);

/// Stages the other side's rows [start, start + tileRows) of a part between
/// two barriers: its two vectors (keys and values, or queries and result
/// gradients) into shared[0] and shared[1], and for key_value_grad their
/// lse and delta into shared[2] and shared[3]; zeros past the rows. The
/// block's threads (`thread` of the plan's blockSize) share the words.
void stageAttentionTiles(mlir::OpBuilder &b, mlir::Location loc,
                         const AttentionPlan &plan, mlir::ValueRange arguments,
                         mlir::ValueRange shared, mlir::Value batch,
                         mlir::Value thread, mlir::Value start);

/// The tensor-core variant's body at `b`, in a kernel whose arguments start
/// with the part's `buffers` and whose workgroup buffers are `shared` (the
/// tiles, in the vectors' 16-bit type, and key_value_grad's f32 lse and
/// delta).
void buildMmaAttentionBody(mlir::OpBuilder &b, mlir::Location loc,
                           const AttentionPlan &plan, mlir::ValueRange buffers,
                           mlir::ValueRange shared);

/// The mask's term (widened to f32) of the pair of query `query` and key
/// `key` of `batch`, read in place from the part's mask buffer `mask`;
/// indices past the queries or keys are clamped (the pair is dropped by
/// its caller).
mlir::Value loadAttentionMask(mlir::OpBuilder &b, mlir::Location loc,
                              const kernel::FusedAttention &attention,
                              mlir::Value mask, mlir::Value batch,
                              mlir::Value query, mlir::Value key);

/// Builds `gpu.func @name` of the attention template at `builder`.
void buildAttentionKernel(mlir::OpBuilder &builder, llvm::StringRef name,
                          mlir::Location loc, mlir::func::FuncOp body,
                          const AttentionPlan &plan);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ATTENTIONTEMPLATE_H
