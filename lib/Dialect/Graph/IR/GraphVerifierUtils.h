//===- GraphVerifierUtils.h - Helpers of the op verifiers -------*- C++ -*-===//
//
// Part of Kiln. What the verifiers of the forward ops (GraphOps.cpp) and of
// the gradient ops (GraphGradOps.cpp) check alike: element types that must
// agree, a shape against the one a shape rule inferred, attention's scale.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_DIALECT_GRAPH_IR_GRAPHVERIFIERUTILS_H
#define KILN_LIB_DIALECT_GRAPH_IR_GRAPHVERIFIERUTILS_H

#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace kiln::graph::verifier {

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value value) {
  return llvm::cast<mlir::ShapedType>(value.getType()).getShape();
}

inline mlir::Type elementTypeOf(mlir::Value value) {
  return llvm::cast<mlir::ShapedType>(value.getType()).getElementType();
}

/// Checks that `values` (named by `names`, e.g. "lhs") all have the element
/// type of the first.
mlir::LogicalResult verifySameElementType(mlir::Operation *op,
                                          llvm::ArrayRef<mlir::Value> values,
                                          llvm::ArrayRef<llvm::StringRef> names);

/// Reports a failed shape rule, or checks that `actual` (the shape of the
/// value called `name`) is the inferred one.
mlir::LogicalResult verifyShape(mlir::Operation *op, ShapeOrError inferred,
                                const std::string &error,
                                llvm::ArrayRef<int64_t> actual,
                                llvm::StringRef name);

/// What layer_norm and its gradient share: input and gamma of one element
/// type, a finite non-negative `eps`, and gamma/beta of the input's last
/// dim.
mlir::LogicalResult verifyLayerNorm(mlir::Operation *op, mlir::Value input,
                                    mlir::Value gamma, mlir::Value beta,
                                    llvm::APFloat eps);

/// An explicit attention scale must be finite and positive.
mlir::LogicalResult verifyAttentionScale(mlir::Operation *op,
                                         mlir::FloatAttr scale);

/// An attention's optional mask (null: none): of the query's element type,
/// in a layout getAttentionMaskLayout takes against the scores. Call once
/// the query's and key's shapes are known to be valid.
mlir::LogicalResult verifyAttentionMask(mlir::Operation *op, mlir::Value query,
                                        mlir::Value key, mlir::Value mask);

/// The scale applied to q k^T: the attribute, or 1/sqrt(Dk) from the
/// query's last dim.
double getEffectiveAttentionScale(mlir::FloatAttr scale,
                                  llvm::ArrayRef<int64_t> queryShape);

} // namespace kiln::graph::verifier

#endif // KILN_LIB_DIALECT_GRAPH_IR_GRAPHVERIFIERUTILS_H
