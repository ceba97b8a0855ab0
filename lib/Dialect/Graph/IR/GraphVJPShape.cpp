//===- GraphVJPShape.cpp - VJPs of linear algebra and shape ops -----------===//
//
// Part of Kiln. DifferentiableOpInterface of matmul, broadcast, reduce and the
// data-movement ops. Data movement is undone by its inverse: transpose by the
// inverse permutation, reshape by reshaping back, slice by `graph.pad` (and
// pad by slice), concat by split (and split by concat). A broadcast's VJP
// sums over the broadcast dims; matmul's are matmuls with transposes, summed
// over broadcast batch dims the same way.
//
//===----------------------------------------------------------------------===//

#include "GraphVJPUtils.h"

#include "kiln/Dialect/Graph/IR/GraphShapes.h"

using namespace mlir;
using namespace kiln::graph;
using namespace kiln::graph::vjp;

/// Pushes `cotangent` for `operand`, or null when the operand is not a float
/// tensor (integer data carries no gradient).
static void pushIfDifferentiable(SmallVectorImpl<Value> &operandCotangents,
                                 Value operand, function_ref<Value()> build) {
  operandCotangents.push_back(isDifferentiable(operand) ? build() : Value());
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// The type of a matmul of `lhs` and `rhs` with the given transposes.
static RankedTensorType matmulType(Value lhs, Value rhs, bool transposeLhs,
                                   bool transposeRhs) {
  std::string error;
  ShapeOrError shape = inferMatmulShape(tensorTypeOf(lhs).getShape(),
                                        tensorTypeOf(rhs).getShape(),
                                        transposeLhs, transposeRhs, error);
  assert(succeeded(shape) && "VJP matmul shapes follow from a valid matmul");
  return RankedTensorType::get(*shape, tensorTypeOf(lhs).getElementType());
}

static Value buildMatmul(OpBuilder &builder, Location loc, Value lhs, Value rhs,
                         bool transposeLhs, bool transposeRhs) {
  return MatmulOp::create(builder, loc,
                          matmulType(lhs, rhs, transposeLhs, transposeRhs), lhs,
                          rhs, transposeLhs, transposeRhs);
}

LogicalResult MatmulOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                 SmallVectorImpl<Value> &operandCotangents) {
  // With a = op(A) [..., M, K], b = op(B) [..., K, N] and C = a b:
  // da = dC b^T and db = a^T dC. Where A (B) is stored transposed, its
  // cotangent is the transpose of da (db), which is again one matmul.
  Location loc = getLoc();
  Value dc = cotangents[0];
  Value a = getLhs(), b = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();

  Value da = ta ? buildMatmul(builder, loc, b, dc, /*transposeLhs=*/tb,
                              /*transposeRhs=*/true) // b dC^T  [.., K, M]
                : buildMatmul(builder, loc, dc, b, /*transposeLhs=*/false,
                              /*transposeRhs=*/!tb); // dC b^T  [.., M, K]
  Value db;
  RankedTensorType aType = tensorTypeOf(a), dcType = tensorTypeOf(dc);
  if (tensorTypeOf(b).getRank() == 2 && aType.getRank() > 2 && !ta) {
    // A weight shared by a batch (x @ W in every layer): its cotangent is a
    // sum over the batch of per-matrix products, which is one GEMM over the
    // batch's rows stacked: [P*M, K]^T [P*M, N], not P GEMMs and a sum.
    int64_t k = aType.getShape().back(), n = dcType.getShape().back();
    int64_t rows = aType.getNumElements() / k;
    Value aRows = buildReshapeIfNeeded(
        builder, loc, a,
        RankedTensorType::get({rows, k}, aType.getElementType()));
    Value dcRows = buildReshapeIfNeeded(
        builder, loc, dc,
        RankedTensorType::get({rows, n}, dcType.getElementType()));
    db = tb ? buildMatmul(builder, loc, dcRows, aRows, /*transposeLhs=*/true,
                          /*transposeRhs=*/false) // dC^T a  [N, K]
            : buildMatmul(builder, loc, aRows, dcRows, /*transposeLhs=*/true,
                          /*transposeRhs=*/false); // a^T dC  [K, N]
  } else {
    db = tb ? buildMatmul(builder, loc, dc, a, /*transposeLhs=*/true,
                          /*transposeRhs=*/ta) // dC^T a  [.., N, K]
            : buildMatmul(builder, loc, a, dc, /*transposeLhs=*/!ta,
                          /*transposeRhs=*/false); // a^T dC  [.., K, N]
  }
  // The batch dims of C are the broadcast of those of A and B: sum back.
  operandCotangents.push_back(
      buildSumToShape(builder, loc, da, tensorTypeOf(a)));
  operandCotangents.push_back(
      buildSumToShape(builder, loc, db, tensorTypeOf(b)));
  return success();
}

//===----------------------------------------------------------------------===//
// Broadcast and reduce
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::buildVJP(OpBuilder &builder,
                                    ArrayRef<Value> cotangents,
                                    SmallVectorImpl<Value> &operandCotangents) {
  pushIfDifferentiable(operandCotangents, getInput(), [&] {
    return buildSumToShape(builder, getLoc(), cotangents[0],
                           getInput().getType());
  });
  return success();
}

LogicalResult ReduceOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                 SmallVectorImpl<Value> &operandCotangents) {
  Location loc = getLoc();
  RankedTensorType inputType = getInput().getType();
  Value dy = cotangents[0];
  if (getKind() == ReduceKind::Max) {
    operandCotangents.push_back(ReduceMaxGradOp::create(
        builder, loc, inputType, dy, getInput(), getAxes(), getKeepdims()));
    return success();
  }
  // Sum and mean: every element of a group receives the group's dy (divided
  // by the group's size for mean). Restore the reduced dims as 1, broadcast.
  SmallVector<int64_t> keptShape(inputType.getShape());
  int64_t groupSize = 1;
  for (int64_t axis : getAxes()) {
    groupSize *= keptShape[axis];
    keptShape[axis] = 1;
  }
  auto keptType = RankedTensorType::get(keptShape, inputType.getElementType());
  Value dx =
      BroadcastOp::create(builder, loc, inputType,
                          buildReshapeIfNeeded(builder, loc, dy, keptType));
  if (getKind() == ReduceKind::Mean)
    dx = MulOp::create(builder, loc, inputType, dx,
                       buildSplat(builder, loc, inputType,
                                  1.0 / static_cast<double>(groupSize)));
  operandCotangents.push_back(dx);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &builder,
                                  ArrayRef<Value> cotangents,
                                  SmallVectorImpl<Value> &operandCotangents) {
  pushIfDifferentiable(operandCotangents, getInput(), [&] {
    return ReshapeOp::create(builder, getLoc(), getInput().getType(),
                             cotangents[0]);
  });
  return success();
}

LogicalResult TransposeOp::buildVJP(OpBuilder &builder,
                                    ArrayRef<Value> cotangents,
                                    SmallVectorImpl<Value> &operandCotangents) {
  pushIfDifferentiable(operandCotangents, getInput(), [&] {
    ArrayRef<int64_t> perm = getPerm();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [resultDim, inputDim] : llvm::enumerate(perm))
      inverse[inputDim] = resultDim;
    return TransposeOp::create(builder, getLoc(), getInput().getType(),
                               cotangents[0], inverse);
  });
  return success();
}

LogicalResult SliceOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                SmallVectorImpl<Value> &operandCotangents) {
  pushIfDifferentiable(operandCotangents, getInput(), [&] {
    return PadOp::create(builder, getLoc(), getInput().getType(), cotangents[0],
                         getOffsets());
  });
  return success();
}

LogicalResult PadOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                              SmallVectorImpl<Value> &operandCotangents) {
  pushIfDifferentiable(operandCotangents, getInput(), [&] {
    return SliceOp::create(builder, getLoc(), getInput().getType(),
                           cotangents[0], getOffsets());
  });
  return success();
}

LogicalResult ConcatOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                 SmallVectorImpl<Value> &operandCotangents) {
  if (!isDifferentiable(getResult())) {
    operandCotangents.append(getInputs().size(), Value());
    return success();
  }
  // Each input's cotangent is its piece of dy: one split.
  SmallVector<Type> pieceTypes(getInputs().getTypes());
  auto split = SplitOp::create(builder, getLoc(), pieceTypes, cotangents[0],
                               getAxisAttr());
  llvm::append_range(operandCotangents, split.getResults());
  return success();
}

LogicalResult SplitOp::buildVJP(OpBuilder &builder, ArrayRef<Value> cotangents,
                                SmallVectorImpl<Value> &operandCotangents) {
  if (!isDifferentiable(getInput())) {
    operandCotangents.push_back(Value());
    return success();
  }
  // dx is the pieces' cotangents joined again; a piece without a gradient
  // contributes zeros.
  SmallVector<Value> pieces;
  for (auto [result, cotangent] : llvm::zip_equal(getResults(), cotangents))
    pieces.push_back(
        cotangent ? cotangent
                  : buildSplat(builder, getLoc(), tensorTypeOf(result), 0.0));
  operandCotangents.push_back(ConcatOp::create(
      builder, getLoc(), getInput().getType(), pieces, getAxisAttr()));
  return success();
}
