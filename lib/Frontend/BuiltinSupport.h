//===- BuiltinSupport.h - Shared helpers of the builtins -----*- C++ -*-===//
//
// Part of Kiln. Declares the helpers every builtin's emitter uses and the
// emitters of each family (BuiltinsShape.cpp, BuiltinsNN.cpp, ...), which the
// table in Builtins.cpp lists.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_FRONTEND_BUILTINSUPPORT_H
#define KILN_LIB_FRONTEND_BUILTINSUPPORT_H

#include "CallArguments.h"

namespace kiln::frontend::builtins {

using Result = mlir::FailureOr<EvalValue>;

/// Reports a shape-rule failure at the call, with a note for each operand.
Result
shapeError(ModelEmitter &emitter, llvm::SMLoc loc, llvm::StringRef callee,
           const std::string &message,
           llvm::ArrayRef<std::pair<llvm::StringRef, EvalValue>> operands);
mlir::Type elementTypeOf(const EvalValue &value);
mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                  mlir::Type element);
/// Normalizes a user axis (negative counts from the back) for `rank`.
mlir::FailureOr<int64_t> userAxis(ModelEmitter &emitter,
                                  const CallArguments &args,
                                  llvm::StringRef name, int64_t fallback,
                                  int64_t rank);
Result tensorResult(mlir::FailureOr<mlir::Value> value, llvm::SMLoc loc);

/// Emits an op, after counting it against the model's size limit.
template <typename OpTy, typename... Args>
mlir::FailureOr<mlir::Value> emitOp(ModelEmitter &emitter, llvm::SMLoc loc,
                                    Args &&...args) {
  if (failed(emitter.countOp(loc)))
    return mlir::failure();
  return OpTy::create(emitter.getBuilder(), emitter.getLoc(loc),
                      std::forward<Args>(args)...)
      ->getResult(0);
}

// Linear algebra and shapes (BuiltinsShape.cpp).
Result emitMatmul(ModelEmitter &emitter, const CallArguments &args);
Result emitTranspose(ModelEmitter &emitter, const CallArguments &args);
Result emitReshape(ModelEmitter &emitter, const CallArguments &args);
Result emitBroadcast(ModelEmitter &emitter, const CallArguments &args);
Result emitReduce(ModelEmitter &emitter, const CallArguments &args);
Result emitSlice(ModelEmitter &emitter, const CallArguments &args);
Result emitConcat(ModelEmitter &emitter, const CallArguments &args);
Result emitSplit(ModelEmitter &emitter, const CallArguments &args);
Result emitHeads(ModelEmitter &emitter, const CallArguments &args);
Result emitMergeHeads(ModelEmitter &emitter, const CallArguments &args);
Result emitSum(ModelEmitter &emitter, const CallArguments &args);
Result emitMax(ModelEmitter &emitter, const CallArguments &args);
Result emitMean(ModelEmitter &emitter, const CallArguments &args);

// Convolution and pooling (BuiltinsConv.cpp).
Result emitConv2d(ModelEmitter &emitter, const CallArguments &args);
Result emitMaxPool2d(ModelEmitter &emitter, const CallArguments &args);
Result emitAvgPool2d(ModelEmitter &emitter, const CallArguments &args);

// Normalization (BuiltinsNorm.cpp).
Result emitLayerNorm(ModelEmitter &emitter, const CallArguments &args);
Result emitRmsNorm(ModelEmitter &emitter, const CallArguments &args);
Result emitMse(ModelEmitter &emitter, const CallArguments &args);
Result emitBatchNorm(ModelEmitter &emitter, const CallArguments &args);

// Attention and rotary embeddings (BuiltinsAttention.cpp).
Result emitAttention(ModelEmitter &emitter, const CallArguments &args);
Result emitRotary(ModelEmitter &emitter, const CallArguments &args);

// Other neural-network ops (BuiltinsNN.cpp).
Result emitEmbed(ModelEmitter &emitter, const CallArguments &args);
Result emitSoftmax(ModelEmitter &emitter, const CallArguments &args);
Result emitCrossEntropy(ModelEmitter &emitter, const CallArguments &args);
Result emitDropout(ModelEmitter &emitter, const CallArguments &args);
Result emitCast(ModelEmitter &emitter, const CallArguments &args);
Result emitArgmax(ModelEmitter &emitter, const CallArguments &args);
Result emitOneHot(ModelEmitter &emitter, const CallArguments &args);
Result emitArange(ModelEmitter &emitter, const CallArguments &args);

} // namespace kiln::frontend::builtins

#endif // KILN_LIB_FRONTEND_BUILTINSUPPORT_H
