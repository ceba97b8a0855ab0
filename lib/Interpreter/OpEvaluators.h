//===- OpEvaluators.h - Per-op evaluation of the interpreter ----*- C++ -*-===//
//
// Part of Kiln. Internal to the interpreter: one function per op (or op
// family), grouped in files by family. Each takes the op and its operand
// tensors, checks what it relies on (shapes, ranges) and returns the result
// or an InterpreterError located at the op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_INTERPRETER_OPEVALUATORS_H
#define KILN_LIB_INTERPRETER_OPEVALUATORS_H

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"
#include "kiln/Interpreter/Interpreter.h"
#include "kiln/Interpreter/Tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::interp::eval {

/// A zero tensor of `op`'s result `resultIndex` type, or an error at `op`.
llvm::Expected<Tensor> makeResult(mlir::Operation *op,
                                  unsigned resultIndex = 0);
/// A zero tensor of `type`, or an error at `op` if the type is unsupported.
llvm::Expected<Tensor> makeTensor(mlir::Operation *op, mlir::Type type);
/// An error at `op` unless `tensor` is a floating-point tensor.
llvm::Error requireFloat(mlir::Operation *op, const Tensor &tensor,
                         llvm::StringRef what);
/// An error at `op` unless `tensor` holds integers (ids, targets).
llvm::Error requireIntegers(mlir::Operation *op, const Tensor &tensor,
                            llvm::StringRef what);

/// Calls `body(T{})` with T the storage type of float element type `type`
/// (float for f16, bf16, f32; double for f64).
template <typename Body> auto dispatchFloat(ElementType type, Body body) {
  if (type == ElementType::F64)
    return body(double{});
  return body(float{});
}

// Elementwise.cpp
/// An attention's mask as kernels read it (graph::AttentionMaskLayout);
/// empty without one.
template <typename T> struct AttentionMaskRows {
  const T *data = nullptr;
  graph::AttentionMaskLayout layout;

  /// The mask row that query `i` of flattened batch `b` adds (null without
  /// a mask); its key j is at j * getKeyStride().
  const T *getRow(int64_t b, int64_t i) const {
    if (!data)
      return nullptr;
    int64_t batch = (b / layout.divisor) % layout.batches;
    int64_t row = layout.queries == 1 ? 0 : i;
    return data + (batch * layout.queries + row) * layout.keys;
  }
  int64_t getKeyStride() const { return layout.keys == 1 ? 0 : 1; }
};

/// The attention probabilities of one query row over its `visible` keys:
/// p_j = softmax_j(scale * q . k_j + mask_j), max-subtracted, every sum in
/// increasing j (`mask` null: no mask; its key j at j * maskStride). The
/// forward and the gradient evaluate them with this one definition.
template <typename T>
void attentionProbabilities(const T *query, const T *keys, int64_t keyDim,
                            int64_t visible, T scale, T *probabilities,
                            const T *mask = nullptr, int64_t maskStride = 0) {
  T maxScore = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    T dot = T(0);
    for (int64_t d = 0; d < keyDim; ++d)
      dot += query[d] * keys[j * keyDim + d];
    probabilities[j] = dot * scale;
    if (mask)
      probabilities[j] += mask[j * maskStride];
    maxScore = std::max(maxScore, probabilities[j]);
  }
  T total = T(0);
  for (int64_t j = 0; j < visible; ++j) {
    probabilities[j] = std::exp(probabilities[j] - maxScore);
    total += probabilities[j];
  }
  for (int64_t j = 0; j < visible; ++j)
    probabilities[j] /= total;
}

/// The mask rows of an attention with `mask` (null: none) against scores
/// [batches..., queries, keys]; an error at `op` when its shape does not
/// fit them.
llvm::Expected<graph::AttentionMaskLayout>
getAttentionMaskLayout(mlir::Operation *op, const Tensor *mask,
                       llvm::ArrayRef<int64_t> queryShape,
                       llvm::ArrayRef<int64_t> keyShape);

llvm::Expected<Tensor> evaluateUnary(mlir::Operation *op, const Tensor &input);
llvm::Expected<Tensor> evaluateBinary(mlir::Operation *op, const Tensor &lhs,
                                      const Tensor &rhs);
/// `condition != 0 ? on_true : on_false` per element (graph.select).
llvm::Expected<Tensor> evaluateSelect(mlir::Operation *op,
                                      const Tensor &condition,
                                      const Tensor &onTrue,
                                      const Tensor &onFalse);
llvm::Expected<Tensor> evaluateCast(graph::CastOp op, const Tensor &input);
llvm::Expected<Tensor> evaluateConstant(graph::ConstantOp op);

// Linalg.cpp
llvm::Expected<Tensor> evaluateMatmul(graph::MatmulOp op, const Tensor &lhs,
                                      const Tensor &rhs);
/// `mask` is null when the op has none.
llvm::Expected<Tensor> evaluateAttention(graph::AttentionOp op,
                                         const Tensor &query, const Tensor &key,
                                         const Tensor &value,
                                         const Tensor *mask);

// Shape.cpp
llvm::Expected<Tensor> evaluateBroadcast(graph::BroadcastOp op,
                                         const Tensor &input);
llvm::Expected<Tensor> evaluateReduce(graph::ReduceOp op, const Tensor &input);
llvm::Expected<Tensor> evaluateReshape(graph::ReshapeOp op,
                                       const Tensor &input);
llvm::Expected<Tensor> evaluateTranspose(graph::TransposeOp op,
                                         const Tensor &input);
llvm::Expected<Tensor> evaluateSlice(graph::SliceOp op, const Tensor &input);
llvm::Expected<Tensor> evaluateConcat(graph::ConcatOp op,
                                      llvm::ArrayRef<const Tensor *> inputs);
llvm::Expected<llvm::SmallVector<Tensor>> evaluateSplit(graph::SplitOp op,
                                                        const Tensor &input);

// NN.cpp
llvm::Expected<Tensor> evaluateEmbedding(graph::EmbeddingOp op,
                                         const Tensor &table,
                                         const Tensor &ids);
llvm::Expected<Tensor> evaluateLayerNorm(graph::LayerNormOp op,
                                         const Tensor &input,
                                         const Tensor &gamma,
                                         const Tensor &beta);
llvm::Expected<Tensor> evaluateArgmax(graph::ArgmaxOp op, const Tensor &input);
llvm::Expected<Tensor> evaluateOneHot(graph::OneHotOp op, const Tensor &ids);
llvm::Expected<Tensor> evaluateSoftmax(graph::SoftmaxOp op,
                                       const Tensor &input);
llvm::Expected<Tensor> evaluateCrossEntropy(graph::CrossEntropyOp op,
                                            const Tensor &logits,
                                            const Tensor &targets);
llvm::Expected<Tensor> evaluateDropout(graph::DropoutOp op, const Tensor &input,
                                       const RunOptions &options);

// GradOps.cpp
/// `graph.pad` and the gradient ops (GraphGradOps.td): all their results.
llvm::Expected<llvm::SmallVector<Tensor>>
evaluateGradOp(mlir::Operation *op, llvm::ArrayRef<const Tensor *> operands);

/// lr_schedule, global_norm, clip_scale and the sgd/momentum/adamw updates.
llvm::Expected<llvm::SmallVector<Tensor>>
evaluateOptimizerOp(mlir::Operation *op,
                    llvm::ArrayRef<const Tensor *> operands);

} // namespace kiln::interp::eval

#endif // KILN_LIB_INTERPRETER_OPEVALUATORS_H
