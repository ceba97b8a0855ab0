//===- GraphShapes.h - Shape rules of the graph ops -------------*- C++ -*-===//
//
// Part of Kiln. The shape rules of the graph ops, written once and shared by
// the op verifiers and the DSL front end.
//
// These are plain functions over `int64_t` shapes. They never emit MLIR
// diagnostics: on failure they return `llvm::failure()` and set `error` to a
// sentence that names the offending dims and both shapes, so that the caller
// can attach it to its own location (an MLIR op, or a `file:line:col` in a
// model file). Shapes are printed by `formatShape`, as `4x64` (and `scalar`
// for rank 0), the way MLIR spells a tensor type's shape.
//
// Axes: the functions that take an `axis` or `axes` expect them normalized
// (in `[0, rank)`), which is what the ops store. The front end turns user
// axes such as `-1` into that form with `normalizeAxis` / `normalizeAxes`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_IR_GRAPHSHAPES_H
#define KILN_DIALECT_GRAPH_IR_GRAPHSHAPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/LogicalResult.h"

#include <cstdint>
#include <string>

namespace kiln::graph {

/// A shape, or a failure whose reason was written to the `error` argument.
using ShapeOrError = llvm::FailureOr<llvm::SmallVector<int64_t>>;

/// Formats a shape as MLIR spells it in a tensor type: `4x64`; `scalar` for
/// rank 0; a dynamic dim as `?`.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The number of elements of a shape (1 for a scalar).
int64_t getNumElements(llvm::ArrayRef<int64_t> shape);

//===----------------------------------------------------------------------===//
// Axes
//===----------------------------------------------------------------------===//

/// Maps an axis in `[-rank, rank)` to `[0, rank)`, counting negative axes
/// from the back as NumPy does.
llvm::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                       std::string &error);

/// Normalizes each axis as `normalizeAxis` does, then sorts them; repeated
/// axes (also `1` and `-1` of a rank-2 shape) are an error.
llvm::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank, std::string &error);

/// Checks that `axes` are in `[0, rank)`, strictly increasing (so distinct):
/// the form `graph.reduce` stores.
llvm::LogicalResult checkNormalizedAxes(llvm::ArrayRef<int64_t> axes,
                                        int64_t rank, std::string &error);

//===----------------------------------------------------------------------===//
// Broadcasting and linear algebra
//===----------------------------------------------------------------------===//

/// The NumPy broadcast of two shapes: dims align from the right and each pair
/// is equal or contains a 1.
ShapeOrError inferBroadcastShape(llvm::ArrayRef<int64_t> lhs,
                                 llvm::ArrayRef<int64_t> rhs,
                                 std::string &error);

/// Whether `from` broadcasts to exactly `to` (`graph.broadcast`): `from` has
/// no more dims than `to`, and aligned from the right each dim of `from`
/// equals that of `to` or is 1.
llvm::LogicalResult checkBroadcastTo(llvm::ArrayRef<int64_t> from,
                                     llvm::ArrayRef<int64_t> to,
                                     std::string &error);

/// `graph.matmul`: `lhs` `[..., M, K]` (`[..., K, M]` transposed), `rhs`
/// `[..., K, N]` (`[..., N, K]` transposed), both of rank >= 2; the batch
/// dims broadcast. Returns `broadcast(batch) + [M, N]`.
ShapeOrError inferMatmulShape(llvm::ArrayRef<int64_t> lhs,
                              llvm::ArrayRef<int64_t> rhs, bool transposeLhs,
                              bool transposeRhs, std::string &error);

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

/// `graph.reduce` over normalized `axes`; with `keepDims` the reduced dims
/// stay as 1, otherwise they are dropped.
ShapeOrError inferReduceShape(llvm::ArrayRef<int64_t> input,
                              llvm::ArrayRef<int64_t> axes, bool keepDims,
                              std::string &error);

/// `graph.reshape`: `target` may hold one `-1`, inferred from the element
/// count; the element counts must be equal. Returns the complete target.
ShapeOrError inferReshapeShape(llvm::ArrayRef<int64_t> input,
                               llvm::ArrayRef<int64_t> target,
                               std::string &error);

/// `graph.transpose`: `perm` is a permutation of `[0, rank)`; result dim i is
/// input dim `perm[i]`.
ShapeOrError inferTransposeShape(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> perm,
                                 std::string &error);

/// `graph.slice`: one non-negative offset and one size per dim, with
/// `offset + size <= dim`. The result shape is `sizes`.
llvm::LogicalResult checkSlice(llvm::ArrayRef<int64_t> input,
                               llvm::ArrayRef<int64_t> offsets,
                               llvm::ArrayRef<int64_t> sizes,
                               std::string &error);

/// `graph.concat` along normalized `axis`: at least one input, all of one
/// rank, equal in every dim but `axis`.
ShapeOrError inferConcatShape(llvm::ArrayRef<llvm::SmallVector<int64_t>> inputs,
                              int64_t axis, std::string &error);

/// `graph.split` into `numParts` equal pieces along normalized `axis` (the
/// DSL's `split(x, 3, axis=-1)`); the dim must be divisible by `numParts`.
llvm::FailureOr<llvm::SmallVector<llvm::SmallVector<int64_t>>>
inferEqualSplitShapes(llvm::ArrayRef<int64_t> input, int64_t numParts,
                      int64_t axis, std::string &error);

/// `graph.split` into pieces of the given `sizes` along normalized `axis`:
/// each size is positive and they add up to the dim.
llvm::FailureOr<llvm::SmallVector<llvm::SmallVector<int64_t>>>
inferSplitShapes(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> sizes,
                 int64_t axis, std::string &error);

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

/// `graph.embedding`: `table` is `[V, D]`; returns `ids + [D]`.
ShapeOrError inferEmbeddingShape(llvm::ArrayRef<int64_t> table,
                                 llvm::ArrayRef<int64_t> ids,
                                 std::string &error);

/// `graph.layer_norm`: `input` has rank >= 1; `gamma` and `beta` are both
/// `[last dim of input]`. Returns the input shape.
ShapeOrError inferLayerNormShape(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> gamma,
                                 llvm::ArrayRef<int64_t> beta,
                                 std::string &error);

/// `graph.softmax` along normalized `axis`. Returns the input shape.
ShapeOrError inferSoftmaxShape(llvm::ArrayRef<int64_t> input, int64_t axis,
                               std::string &error);

/// `graph.attention`: `query` `[..., Tq, Dk]`, `key` `[..., Tk, Dk]`, `value`
/// `[..., Tk, Dv]` with equal leading dims; `causal` needs `Tq == Tk`.
/// Returns `[..., Tq, Dv]`.
ShapeOrError inferAttentionShape(llvm::ArrayRef<int64_t> query,
                                 llvm::ArrayRef<int64_t> key,
                                 llvm::ArrayRef<int64_t> value, bool causal,
                                 std::string &error);

/// The shape of an attention's scores [..., Tq, Tk] from `query` [..., Tq,
/// Dk] and `key` [..., Tk, Dk] (both of rank >= 2).
llvm::SmallVector<int64_t> getAttentionScoreShape(llvm::ArrayRef<int64_t> query,
                                                  llvm::ArrayRef<int64_t> key);

/// How an attention mask of `mask`'s shape is read against scores of
/// `scores`' shape ([..., Tq, Tk]): as a [batches, queries, keys] buffer
/// (queries 1 or Tq, keys 1 or Tk) whose batch for the scores' flattened
/// leading index b is (b / divisor) % batches.
struct AttentionMaskLayout {
  int64_t batches = 1;
  int64_t divisor = 1;
  int64_t queries = 1;
  int64_t keys = 1;
};

/// The layout of an attention mask: `mask` has rank at most the scores',
/// broadcasts to them, and its leading dims (aligned from the right) equal
/// the scores' over one contiguous run and are 1 elsewhere.
llvm::FailureOr<AttentionMaskLayout>
getAttentionMaskLayout(llvm::ArrayRef<int64_t> mask,
                       llvm::ArrayRef<int64_t> scores, std::string &error);

/// `graph.cross_entropy`: `logits` `[..., C]` with rank >= 1, `targets`
/// `[...]`. Returns the scalar shape `[]` (the mean over rows).
ShapeOrError inferCrossEntropyShape(llvm::ArrayRef<int64_t> logits,
                                    llvm::ArrayRef<int64_t> targets,
                                    std::string &error);

} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_IR_GRAPHSHAPES_H
