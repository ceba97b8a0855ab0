//===- Shape.cpp - Interpreting shape ops and reductions ------------------===//
//
// Part of Kiln. broadcast, reduce, reshape, transpose, slice, concat and
// split. Data movement is written as "for every result element, the input
// element it comes from", which is easy to check against each op's
// definition.
//
//===----------------------------------------------------------------------===//

#include "OpEvaluators.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

static std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(dim);
  return text + "]";
}

/// Calls `body(T{})` with T the storage type of any element type.
template <typename Body> static void dispatchAny(ElementType type, Body body) {
  switch (type) {
  case ElementType::F64:
    return body(double{});
  case ElementType::I32:
    return body(int32_t{});
  case ElementType::I64:
    return body(int64_t{});
  default:
    return body(float{});
  }
}

/// Sets result[i] = input[sourceOf(i, index)] for every result element, with
/// `index` the multi-index of i in the result. Both share one element type.
template <typename SourceOf>
static void gather(const Tensor &input, Tensor &result, SourceOf sourceOf) {
  dispatchAny(input.getElementType(), [&](auto zero) {
    using T = decltype(zero);
    llvm::ArrayRef<T> in = input.data<T>();
    llvm::MutableArrayRef<T> out = result.data<T>();
    llvm::SmallVector<int64_t> index;
    for (int64_t i = 0, e = result.getNumElements(); i < e; ++i) {
      delinearize(i, result.getShape(), index);
      out[i] = in[sourceOf(i, llvm::ArrayRef<int64_t>(index))];
    }
  });
}

/// An error at `op` unless `a` and `b` have one element type.
static llvm::Error requireSameElementType(Operation *op, const Tensor &a,
                                          const Tensor &b) {
  if (a.getElementType() == b.getElementType())
    return llvm::Error::success();
  return makeOpError(op, "changes the element type from " + a.getTypeString() +
                             " to " + b.getTypeString());
}

llvm::Expected<Tensor> eval::evaluateBroadcast(graph::BroadcastOp op,
                                               const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireSameElementType(op, input, *result))
    return std::move(err);
  llvm::ArrayRef<int64_t> in = input.getShape(), out = result->getShape();
  int64_t skipped = static_cast<int64_t>(out.size()) - input.getRank();
  if (skipped < 0)
    return makeOpError(op, "cannot broadcast " + shapeString(in) + " to " +
                               shapeString(out));
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (in[d] != 1 && in[d] != out[skipped + d])
      return makeOpError(op, "cannot broadcast " + shapeString(in) + " to " +
                                 shapeString(out));
  llvm::SmallVector<int64_t> strides = input.getStrides();
  gather(input, *result, [&](int64_t, llvm::ArrayRef<int64_t> index) {
    int64_t source = 0;
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (in[d] != 1)
        source += index[skipped + d] * strides[d];
    return source;
  });
  return result;
}

llvm::Expected<Tensor> eval::evaluateReshape(graph::ReshapeOp op,
                                             const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireSameElementType(op, input, *result))
    return std::move(err);
  if (input.getNumElements() != result->getNumElements())
    return makeOpError(op, "cannot reshape " + shapeString(input.getShape()) +
                               " to " + shapeString(result->getShape()));
  return input.reshaped(result->getShape());
}

llvm::Expected<Tensor> eval::evaluateTranspose(graph::TransposeOp op,
                                               const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireSameElementType(op, input, *result))
    return std::move(err);
  llvm::ArrayRef<int64_t> perm = op.getPerm();
  int64_t rank = input.getRank();
  llvm::SmallVector<bool> seen(rank, false);
  bool valid =
      static_cast<int64_t>(perm.size()) == rank && result->getRank() == rank;
  for (int64_t d = 0; valid && d < rank; ++d) {
    valid = perm[d] >= 0 && perm[d] < rank && !seen[perm[d]] &&
            result->getShape()[d] == input.getShape()[perm[d]];
    if (valid)
      seen[perm[d]] = true;
  }
  if (!valid)
    return makeOpError(op, "perm does not map " +
                               shapeString(input.getShape()) + " to " +
                               shapeString(result->getShape()));
  llvm::SmallVector<int64_t> strides = input.getStrides();
  gather(input, *result, [&](int64_t, llvm::ArrayRef<int64_t> index) {
    // Result dim d is input dim perm[d].
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d)
      source += index[d] * strides[perm[d]];
    return source;
  });
  return result;
}

llvm::Expected<Tensor> eval::evaluateSlice(graph::SliceOp op,
                                           const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireSameElementType(op, input, *result))
    return std::move(err);
  llvm::ArrayRef<int64_t> offsets = op.getOffsets();
  int64_t rank = input.getRank();
  bool valid =
      static_cast<int64_t>(offsets.size()) == rank && result->getRank() == rank;
  for (int64_t d = 0; valid && d < rank; ++d)
    valid = offsets[d] >= 0 &&
            offsets[d] + result->getShape()[d] <= input.getShape()[d];
  if (!valid)
    return makeOpError(op, "the box at offsets " + shapeString(offsets) +
                               " of shape " + shapeString(result->getShape()) +
                               " is not inside " +
                               shapeString(input.getShape()));
  llvm::SmallVector<int64_t> strides = input.getStrides();
  gather(input, *result, [&](int64_t, llvm::ArrayRef<int64_t> index) {
    int64_t source = 0;
    for (int64_t d = 0; d < rank; ++d)
      source += (offsets[d] + index[d]) * strides[d];
    return source;
  });
  return result;
}

/// Copies `piece` into `whole` at `offset` along `axis` (concat), or the box
/// of `whole` at that offset into `piece` (split, `intoWhole` false).
static void copyAlongAxis(Tensor &whole, Tensor &piece, int64_t axis,
                          int64_t offset, bool intoWhole) {
  llvm::SmallVector<int64_t> wholeStrides = whole.getStrides();
  dispatchAny(whole.getElementType(), [&](auto zero) {
    using T = decltype(zero);
    llvm::MutableArrayRef<T> w = whole.data<T>(), p = piece.data<T>();
    llvm::SmallVector<int64_t> index;
    for (int64_t i = 0, e = piece.getNumElements(); i < e; ++i) {
      delinearize(i, piece.getShape(), index);
      index[axis] += offset;
      int64_t wholeIndex = linearize(index, wholeStrides);
      if (intoWhole)
        w[wholeIndex] = p[i];
      else
        p[i] = w[wholeIndex];
    }
  });
}

/// An error at `op` unless `pieces` join along `axis` into `whole`.
static llvm::Error checkPieces(Operation *op, const Tensor &whole,
                               llvm::ArrayRef<const Tensor *> pieces,
                               int64_t axis) {
  int64_t rank = whole.getRank();
  if (axis < 0 || axis >= rank)
    return makeOpError(op, "axis " + llvm::Twine(axis) + " is outside [0, " +
                               llvm::Twine(rank) + ")");
  int64_t total = 0;
  for (const Tensor *piece : pieces) {
    if (llvm::Error err = requireSameElementType(op, whole, *piece))
      return err;
    bool fits = piece->getRank() == rank;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == axis || piece->getShape()[d] == whole.getShape()[d];
    if (!fits)
      return makeOpError(op, "piece " + shapeString(piece->getShape()) +
                                 " does not match " +
                                 shapeString(whole.getShape()) +
                                 " outside axis " + llvm::Twine(axis));
    total += piece->getShape()[axis];
  }
  if (total != whole.getShape()[axis])
    return makeOpError(op, "pieces total " + llvm::Twine(total) +
                               " along axis " + llvm::Twine(axis) +
                               ", expected " +
                               llvm::Twine(whole.getShape()[axis]));
  return llvm::Error::success();
}

llvm::Expected<Tensor>
eval::evaluateConcat(graph::ConcatOp op,
                     llvm::ArrayRef<const Tensor *> inputs) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  int64_t axis = op.getAxis();
  if (llvm::Error err = checkPieces(op, *result, inputs, axis))
    return std::move(err);
  int64_t offset = 0;
  for (const Tensor *input : inputs) {
    Tensor piece = *input;
    copyAlongAxis(*result, piece, axis, offset, /*intoWhole=*/true);
    offset += input->getShape()[axis];
  }
  return result;
}

llvm::Expected<llvm::SmallVector<Tensor>>
eval::evaluateSplit(graph::SplitOp op, const Tensor &input) {
  llvm::SmallVector<Tensor> pieces;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    llvm::Expected<Tensor> piece = makeResult(op, i);
    if (!piece)
      return piece.takeError();
    pieces.push_back(std::move(*piece));
  }
  llvm::SmallVector<const Tensor *> views;
  for (const Tensor &piece : pieces)
    views.push_back(&piece);
  int64_t axis = op.getAxis();
  if (llvm::Error err = checkPieces(op, input, views, axis))
    return std::move(err);
  Tensor whole = input;
  int64_t offset = 0;
  for (Tensor &piece : pieces) {
    copyAlongAxis(whole, piece, axis, offset, /*intoWhole=*/false);
    offset += piece.getShape()[axis];
  }
  return pieces;
}

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

/// Reduces each result element over the reduced dims, visiting the reduced
/// elements in increasing row-major order and accumulating in T.
template <typename T>
static void reduce(graph::ReduceKind kind, const Tensor &input,
                   llvm::ArrayRef<bool> reduced, Tensor &result) {
  llvm::ArrayRef<int64_t> shape = input.getShape();
  llvm::SmallVector<int64_t> keptShape, reducedShape;
  for (auto [d, dim] : llvm::enumerate(shape))
    (reduced[d] ? reducedShape : keptShape).push_back(dim);
  llvm::SmallVector<int64_t> strides = input.getStrides();
  int64_t count = computeNumElements(reducedShape);
  llvm::ArrayRef<T> in = input.data<T>();
  llvm::MutableArrayRef<T> out = result.data<T>();
  llvm::SmallVector<int64_t> keptIndex, reducedIndex, index(shape.size());
  for (int64_t o = 0, oe = computeNumElements(keptShape); o < oe; ++o) {
    delinearize(o, keptShape, keptIndex);
    T acc = kind == graph::ReduceKind::Max ? -std::numeric_limits<T>::infinity()
                                           : T(0);
    for (int64_t r = 0; r < count; ++r) {
      delinearize(r, reducedShape, reducedIndex);
      unsigned nextKept = 0, nextReduced = 0;
      for (size_t d = 0; d < shape.size(); ++d)
        index[d] =
            reduced[d] ? reducedIndex[nextReduced++] : keptIndex[nextKept++];
      T x = in[linearize(index, strides)];
      if (kind == graph::ReduceKind::Max)
        acc = std::isnan(x) || x > acc ? x : acc; // NaN propagates.
      else
        acc += x;
    }
    if (kind == graph::ReduceKind::Mean)
      acc /= static_cast<T>(count);
    out[o] = acc;
  }
}

llvm::Expected<Tensor> eval::evaluateReduce(graph::ReduceOp op,
                                            const Tensor &input) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireSameElementType(op, input, *result))
    return std::move(err);
  if (llvm::Error err = requireFloat(op, input, "operand"))
    return std::move(err);
  int64_t rank = input.getRank();
  llvm::SmallVector<bool> reduced(rank, false);
  int64_t previous = -1;
  for (int64_t axis : op.getAxes()) {
    if (axis <= previous || axis >= rank)
      return makeOpError(op, "axes must be sorted, distinct and in [0, " +
                                 llvm::Twine(rank) + ")");
    reduced[axis] = true;
    previous = axis;
  }
  llvm::SmallVector<int64_t> expected;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d] || op.getKeepdims())
      expected.push_back(reduced[d] ? 1 : input.getShape()[d]);
  if (result->getShape() != llvm::ArrayRef<int64_t>(expected))
    return makeOpError(op, "result shape " + shapeString(result->getShape()) +
                               " should be " + shapeString(expected));
  dispatchFloat(input.getElementType(), [&](auto zero) {
    reduce<decltype(zero)>(op.getKind(), input, reduced, *result);
    return 0;
  });
  result->roundToElementType();
  return result;
}
