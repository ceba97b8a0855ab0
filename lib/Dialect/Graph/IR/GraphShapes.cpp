//===- GraphShapes.cpp - Shape rules of the graph ops ---------------------===//
//
// Part of Kiln. Implements the shape rules declared in GraphShapes.h. Every
// failure names the dims involved and the operand shapes, so that a message
// read out of context (a model file's diagnostic) still says what is wrong.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace kiln::graph;
using llvm::ArrayRef;
using llvm::failure;
using llvm::FailureOr;
using llvm::LogicalResult;
using llvm::SmallVector;
using llvm::success;

/// Sets `error` to `message` and returns failure from a function whose
/// result converts from `llvm::failure()`.
#define KILN_FAIL(message)                                                     \
  do {                                                                         \
    error = (message);                                                         \
    return failure();                                                          \
  } while (false)

std::string kiln::graph::formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t dim) {
        if (dim == std::numeric_limits<int64_t>::min())
          os << '?';
        else
          os << dim;
      },
      "x");
  return text;
}

int64_t kiln::graph::getNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

//===----------------------------------------------------------------------===//
// Axes
//===----------------------------------------------------------------------===//

FailureOr<int64_t> kiln::graph::normalizeAxis(int64_t axis, int64_t rank,
                                              std::string &error) {
  if (rank == 0)
    KILN_FAIL(llvm::formatv("axis {0} is out of range for a scalar", axis));
  if (axis < -rank || axis >= rank)
    KILN_FAIL(llvm::formatv("axis {0} is out of range for rank {1} (expected "
                            "{2}..{3})",
                            axis, rank, -rank, rank - 1));
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>>
kiln::graph::normalizeAxes(ArrayRef<int64_t> axes, int64_t rank,
                           std::string &error) {
  SmallVector<int64_t> normalized;
  for (int64_t axis : axes) {
    FailureOr<int64_t> n = normalizeAxis(axis, rank, error);
    if (failed(n))
      return failure();
    normalized.push_back(*n);
  }
  llvm::sort(normalized);
  for (size_t i = 1; i < normalized.size(); ++i)
    if (normalized[i] == normalized[i - 1])
      KILN_FAIL(llvm::formatv("axis {0} is repeated (rank {1})", normalized[i],
                              rank));
  return normalized;
}

LogicalResult kiln::graph::checkNormalizedAxes(ArrayRef<int64_t> axes,
                                               int64_t rank,
                                               std::string &error) {
  for (auto [index, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      KILN_FAIL(llvm::formatv("axis {0} is out of range for rank {1} "
                              "(expected 0..{2})",
                              axis, rank, rank - 1));
    if (index > 0 && axis <= axes[index - 1])
      KILN_FAIL(llvm::formatv("axes must be sorted and distinct, got [{0}]",
                              llvm::make_range(axes.begin(), axes.end())));
  }
  return success();
}

/// Checks a single normalized axis, as the ops store it.
static LogicalResult checkAxis(int64_t axis, ArrayRef<int64_t> shape,
                               std::string &error) {
  if (axis >= 0 && axis < static_cast<int64_t>(shape.size()))
    return success();
  if (shape.empty())
    KILN_FAIL(llvm::formatv("axis {0} is out of range for a scalar", axis));
  KILN_FAIL(llvm::formatv("axis {0} is out of range for shape {1} (expected "
                          "0..{2})",
                          axis, formatShape(shape), shape.size() - 1));
}

//===----------------------------------------------------------------------===//
// Broadcasting and linear algebra
//===----------------------------------------------------------------------===//

ShapeOrError kiln::graph::inferBroadcastShape(ArrayRef<int64_t> lhs,
                                              ArrayRef<int64_t> rhs,
                                              std::string &error) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  // Walk from the right; a missing dim acts as 1.
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (l != r && l != 1 && r != 1)
      KILN_FAIL(llvm::formatv("shapes {0} and {1} do not broadcast: {2} vs {3} "
                              "in dim {4} from the right",
                              formatShape(lhs), formatShape(rhs), l, r,
                              -1 - static_cast<int64_t>(i)));
    result[rank - 1 - i] = l == 1 ? r : l;
  }
  return result;
}

LogicalResult kiln::graph::checkBroadcastTo(ArrayRef<int64_t> from,
                                            ArrayRef<int64_t> to,
                                            std::string &error) {
  if (from.size() > to.size())
    KILN_FAIL(llvm::formatv("cannot broadcast {0} to {1}: rank {2} is larger "
                            "than rank {3}",
                            formatShape(from), formatShape(to), from.size(),
                            to.size()));
  size_t lead = to.size() - from.size();
  for (auto [i, dim] : llvm::enumerate(from)) {
    int64_t target = to[lead + i];
    if (dim != target && dim != 1)
      KILN_FAIL(
          llvm::formatv("cannot broadcast {0} to {1}: dim {2} is {3}, "
                        "expected {4}",
                        formatShape(from), formatShape(to), i, dim,
                        target == 1 ? "1" : std::to_string(target) + " or 1"));
  }
  return success();
}

ShapeOrError kiln::graph::inferMatmulShape(ArrayRef<int64_t> lhs,
                                           ArrayRef<int64_t> rhs,
                                           bool transposeLhs, bool transposeRhs,
                                           std::string &error) {
  std::string shapes =
      llvm::formatv("(lhs {0}, rhs {1})", formatShape(lhs), formatShape(rhs));
  if (lhs.size() < 2 || rhs.size() < 2)
    KILN_FAIL(llvm::formatv("matmul operands need rank >= 2, got rank {0} "
                            "and {1} {2}",
                            lhs.size(), rhs.size(), shapes));
  size_t lr = lhs.size(), rr = rhs.size();
  int64_t m = transposeLhs ? lhs[lr - 1] : lhs[lr - 2];
  int64_t lhsK = transposeLhs ? lhs[lr - 2] : lhs[lr - 1];
  int64_t rhsK = transposeRhs ? rhs[rr - 1] : rhs[rr - 2];
  int64_t n = transposeRhs ? rhs[rr - 2] : rhs[rr - 1];
  if (lhsK != rhsK)
    KILN_FAIL(llvm::formatv("matmul contracting dims differ: {0} vs {1} {2}",
                            lhsK, rhsK, shapes));
  std::string batchError;
  ShapeOrError batch =
      inferBroadcastShape(lhs.drop_back(2), rhs.drop_back(2), batchError);
  if (failed(batch))
    KILN_FAIL(llvm::formatv("matmul batch dims do not broadcast: {0} vs {1} "
                            "{2}",
                            formatShape(lhs.drop_back(2)),
                            formatShape(rhs.drop_back(2)), shapes));
  SmallVector<int64_t> result = std::move(*batch);
  result.push_back(m);
  result.push_back(n);
  return result;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

ShapeOrError kiln::graph::inferReduceShape(ArrayRef<int64_t> input,
                                           ArrayRef<int64_t> axes,
                                           bool keepDims, std::string &error) {
  if (failed(checkNormalizedAxes(axes, input.size(), error))) {
    error += " (input " + formatShape(input) + ")";
    return failure();
  }
  SmallVector<int64_t> result;
  for (auto [i, dim] : llvm::enumerate(input)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(dim);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

ShapeOrError kiln::graph::inferReshapeShape(ArrayRef<int64_t> input,
                                            ArrayRef<int64_t> target,
                                            std::string &error) {
  SmallVector<int64_t> result(target);
  int64_t inferredIndex = -1;
  int64_t knownCount = 1;
  for (auto [i, dim] : llvm::enumerate(target)) {
    if (dim == -1) {
      if (inferredIndex >= 0)
        KILN_FAIL(llvm::formatv("reshape target {0} has more than one -1",
                                formatShape(target)));
      inferredIndex = i;
      continue;
    }
    if (dim < 0)
      KILN_FAIL(llvm::formatv("reshape target {0} has a negative dim {1}",
                              formatShape(target), dim));
    knownCount *= dim;
  }
  int64_t inputCount = getNumElements(input);
  if (inferredIndex >= 0) {
    if (knownCount == 0 || inputCount % knownCount != 0)
      KILN_FAIL(llvm::formatv("cannot reshape {0} ({1} elements) to {2}: no "
                              "size for the -1 fits",
                              formatShape(input), inputCount,
                              formatShape(target)));
    result[inferredIndex] = inputCount / knownCount;
    knownCount = inputCount;
  }
  if (knownCount != inputCount)
    KILN_FAIL(llvm::formatv("cannot reshape {0} ({1} elements) to {2} ({3} "
                            "elements)",
                            formatShape(input), inputCount, formatShape(target),
                            knownCount));
  return result;
}

ShapeOrError kiln::graph::inferTransposeShape(ArrayRef<int64_t> input,
                                              ArrayRef<int64_t> perm,
                                              std::string &error) {
  int64_t rank = input.size();
  auto permText = [&] {
    return llvm::formatv("[{0}]", llvm::make_range(perm.begin(), perm.end()))
        .str();
  };
  if (static_cast<int64_t>(perm.size()) != rank)
    KILN_FAIL(llvm::formatv("transpose perm {0} has {1} entries, but the input "
                            "{2} has rank {3}",
                            permText(), perm.size(), formatShape(input), rank));
  llvm::SmallBitVector seen(rank);
  SmallVector<int64_t> result;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank)
      KILN_FAIL(llvm::formatv("transpose perm {0} has entry {1} out of range "
                              "0..{2} (input {3})",
                              permText(), p, rank - 1, formatShape(input)));
    if (seen.test(p))
      KILN_FAIL(llvm::formatv("transpose perm {0} repeats {1}: not a "
                              "permutation (input {2})",
                              permText(), p, formatShape(input)));
    seen.set(p);
    result.push_back(input[p]);
  }
  return result;
}

LogicalResult kiln::graph::checkSlice(ArrayRef<int64_t> input,
                                      ArrayRef<int64_t> offsets,
                                      ArrayRef<int64_t> sizes,
                                      std::string &error) {
  if (sizes.size() != input.size())
    KILN_FAIL(llvm::formatv("slice of {0} must keep its rank {1}, got {2}",
                            formatShape(input), input.size(),
                            formatShape(sizes)));
  if (offsets.size() != input.size())
    KILN_FAIL(llvm::formatv("slice needs one offset per dim: {0} offsets for "
                            "input {1}",
                            offsets.size(), formatShape(input)));
  for (size_t i = 0; i < input.size(); ++i) {
    if (offsets[i] < 0)
      KILN_FAIL(llvm::formatv("slice offset {0} of dim {1} is negative",
                              offsets[i], i));
    if (offsets[i] + sizes[i] > input[i])
      KILN_FAIL(llvm::formatv("slice of dim {0} exceeds it: offset {1} + size "
                              "{2} > {3} (input {4}, slice {5})",
                              i, offsets[i], sizes[i], input[i],
                              formatShape(input), formatShape(sizes)));
  }
  return success();
}

ShapeOrError
kiln::graph::inferConcatShape(ArrayRef<SmallVector<int64_t>> inputs,
                              int64_t axis, std::string &error) {
  if (inputs.empty())
    KILN_FAIL(std::string("concat needs at least one input"));
  ArrayRef<int64_t> first = inputs.front();
  if (failed(checkAxis(axis, first, error)))
    return failure();
  SmallVector<int64_t> result(first);
  for (auto [index, shape] : llvm::enumerate(inputs.drop_front())) {
    if (shape.size() != first.size())
      KILN_FAIL(llvm::formatv("concat inputs differ in rank: input 0 is {0}, "
                              "input {1} is {2}",
                              formatShape(first), index + 1,
                              formatShape(shape)));
    for (size_t d = 0; d < first.size(); ++d)
      if (static_cast<int64_t>(d) != axis && shape[d] != first[d])
        KILN_FAIL(llvm::formatv("concat inputs differ in dim {0} (axis is "
                                "{1}): input 0 is {2}, input {3} is {4}",
                                d, axis, formatShape(first), index + 1,
                                formatShape(shape)));
    result[axis] += shape[axis];
  }
  return result;
}

FailureOr<SmallVector<SmallVector<int64_t>>>
kiln::graph::inferEqualSplitShapes(ArrayRef<int64_t> input, int64_t numParts,
                                   int64_t axis, std::string &error) {
  if (numParts <= 0)
    KILN_FAIL(llvm::formatv("split needs a positive number of parts, got {0}",
                            numParts));
  if (failed(checkAxis(axis, input, error)))
    return failure();
  if (input[axis] % numParts != 0)
    KILN_FAIL(llvm::formatv("cannot split dim {0} of {1} (size {2}) into {3} "
                            "equal parts",
                            axis, formatShape(input), input[axis], numParts));
  SmallVector<int64_t> sizes(numParts, input[axis] / numParts);
  return inferSplitShapes(input, sizes, axis, error);
}

FailureOr<SmallVector<SmallVector<int64_t>>>
kiln::graph::inferSplitShapes(ArrayRef<int64_t> input, ArrayRef<int64_t> sizes,
                              int64_t axis, std::string &error) {
  if (sizes.empty())
    KILN_FAIL(std::string("split needs at least one result"));
  if (failed(checkAxis(axis, input, error)))
    return failure();
  int64_t total = 0;
  SmallVector<SmallVector<int64_t>> results;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    if (size <= 0)
      KILN_FAIL(llvm::formatv("split piece {0} has size {1}: sizes must be "
                              "positive",
                              i, size));
    total += size;
    results.emplace_back(input);
    results.back()[axis] = size;
  }
  if (total != input[axis])
    KILN_FAIL(llvm::formatv("split sizes [{0}] add up to {1}, but dim {2} of "
                            "{3} is {4}",
                            llvm::make_range(sizes.begin(), sizes.end()), total,
                            axis, formatShape(input), input[axis]));
  return results;
}

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

ShapeOrError kiln::graph::inferEmbeddingShape(ArrayRef<int64_t> table,
                                              ArrayRef<int64_t> ids,
                                              std::string &error) {
  if (table.size() != 2)
    KILN_FAIL(llvm::formatv("embedding table must be [V, D] (rank 2), got {0}",
                            formatShape(table)));
  SmallVector<int64_t> result(ids);
  result.push_back(table[1]);
  return result;
}

ShapeOrError kiln::graph::inferLayerNormShape(ArrayRef<int64_t> input,
                                              ArrayRef<int64_t> gamma,
                                              ArrayRef<int64_t> beta,
                                              std::string &error) {
  if (input.empty())
    KILN_FAIL(std::string("layer_norm input must have rank >= 1, got a "
                          "scalar"));
  int64_t last = input.back();
  auto check = [&](ArrayRef<int64_t> shape, const char *name) {
    if (shape.size() == 1 && shape[0] == last)
      return success();
    error = llvm::formatv("layer_norm {0} must be [{1}] (the last dim of input "
                          "{2}), got {3}",
                          name, last, formatShape(input), formatShape(shape));
    return failure();
  };
  if (failed(check(gamma, "gamma")) || failed(check(beta, "beta")))
    return failure();
  return SmallVector<int64_t>(input);
}

ShapeOrError kiln::graph::inferSoftmaxShape(ArrayRef<int64_t> input,
                                            int64_t axis, std::string &error) {
  if (failed(checkAxis(axis, input, error))) {
    error = "softmax " + error;
    return failure();
  }
  return SmallVector<int64_t>(input);
}

ShapeOrError kiln::graph::inferAttentionShape(ArrayRef<int64_t> query,
                                              ArrayRef<int64_t> key,
                                              ArrayRef<int64_t> value,
                                              bool causal, std::string &error) {
  std::string shapes =
      llvm::formatv("(query {0}, key {1}, value {2})", formatShape(query),
                    formatShape(key), formatShape(value));
  if (query.size() < 2 || key.size() < 2 || value.size() < 2)
    KILN_FAIL("attention operands need rank >= 2 " + shapes);
  if (query.size() != key.size() || key.size() != value.size())
    KILN_FAIL("attention operands differ in rank " + shapes);
  if (query.drop_back(2) != key.drop_back(2) ||
      key.drop_back(2) != value.drop_back(2))
    KILN_FAIL("attention leading dims differ " + shapes);
  size_t rank = query.size();
  int64_t tq = query[rank - 2], dk = query[rank - 1];
  int64_t tk = key[rank - 2];
  if (key[rank - 1] != dk)
    KILN_FAIL(llvm::formatv("attention head dims differ: query {0} vs key {1} "
                            "{2}",
                            dk, key[rank - 1], shapes));
  if (value[rank - 2] != tk)
    KILN_FAIL(llvm::formatv("attention key and value lengths differ: {0} vs "
                            "{1} {2}",
                            tk, value[rank - 2], shapes));
  if (causal && tq != tk)
    KILN_FAIL(llvm::formatv("causal attention needs as many queries as keys: "
                            "{0} vs {1} {2}",
                            tq, tk, shapes));
  SmallVector<int64_t> result(query.drop_back());
  result.push_back(value[rank - 1]);
  return result;
}

SmallVector<int64_t>
kiln::graph::getAttentionScoreShape(ArrayRef<int64_t> query,
                                    ArrayRef<int64_t> key) {
  SmallVector<int64_t> scores(query.drop_back());
  scores.push_back(key[key.size() - 2]);
  return scores;
}

FailureOr<AttentionMaskLayout> kiln::graph::getAttentionMaskLayout(
    ArrayRef<int64_t> mask, ArrayRef<int64_t> scores, std::string &error) {
  std::string shapes = llvm::formatv("(mask {0}, scores {1})",
                                     formatShape(mask), formatShape(scores));
  size_t rank = scores.size();
  if (rank < 2 || mask.size() > rank)
    KILN_FAIL("attention mask has a rank above the scores' " + shapes);
  // The mask's dims aligned from the right, 1 where it has none.
  SmallVector<int64_t> padded(rank - mask.size(), 1);
  llvm::append_range(padded, mask);
  for (size_t i = 0; i < rank; ++i)
    if (padded[i] != 1 && padded[i] != scores[i])
      KILN_FAIL(llvm::formatv("attention mask does not broadcast to the "
                              "scores: dim {0} is {1}, expected 1 or {2} {3}",
                              i, padded[i], scores[i], shapes));
  AttentionMaskLayout layout;
  layout.queries = padded[rank - 2];
  layout.keys = padded[rank - 1];
  // The leading dims the mask spans: [first, last].
  int64_t first = -1, last = -1;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (padded[i] != 1) {
      if (first < 0)
        first = i;
      last = i;
    }
  for (int64_t i = first; first >= 0 && i <= last; ++i)
    if (padded[i] != scores[i])
      KILN_FAIL(llvm::formatv("attention mask spans the scores' leading dims "
                              "{0}..{1} but is 1 at dim {2}: broadcast it "
                              "first {3}",
                              first, last, i, shapes));
  if (first >= 0) {
    for (int64_t i = first; i <= last; ++i)
      layout.batches *= scores[i];
    for (size_t i = last + 1; i + 2 < rank; ++i)
      layout.divisor *= scores[i];
  }
  return layout;
}

ShapeOrError kiln::graph::inferCrossEntropyShape(ArrayRef<int64_t> logits,
                                                 ArrayRef<int64_t> targets,
                                                 std::string &error) {
  if (logits.empty())
    KILN_FAIL(std::string("cross_entropy logits must have rank >= 1 ([..., "
                          "C]), got a scalar"));
  if (targets != logits.drop_back())
    KILN_FAIL(llvm::formatv("cross_entropy targets must be {0} (logits {1} "
                            "without the class dim), got {2}",
                            formatShape(logits.drop_back()),
                            formatShape(logits), formatShape(targets)));
  return SmallVector<int64_t>();
}
