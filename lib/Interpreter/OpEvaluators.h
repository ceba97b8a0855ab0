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
/// The attention probabilities of one query row over its `visible` keys:
/// p_j = softmax_j(scale * q . k_j), max-subtracted, every sum in increasing
/// j. The forward and the gradient evaluate them with this one definition.
template <typename T>
void attentionProbabilities(const T *query, const T *keys, int64_t keyDim,
                            int64_t visible, T scale, T *probabilities) {
  T maxScore = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    T dot = T(0);
    for (int64_t d = 0; d < keyDim; ++d)
      dot += query[d] * keys[j * keyDim + d];
    probabilities[j] = dot * scale;
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
llvm::Expected<Tensor> evaluateAttention(graph::AttentionOp op,
                                         const Tensor &query, const Tensor &key,
                                         const Tensor &value);

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
