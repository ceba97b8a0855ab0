//===- Linalg.cpp - Interpreting matmul and attention ---------------------===//
//
// Part of Kiln. Batched matrix products and scaled dot-product attention,
// as naive loops: every dot product accumulates in the element type over the
// contracted index in increasing order.
//
//===----------------------------------------------------------------------===//

#include "OpEvaluators.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

/// An error at `op` unless every tensor has the element type of the first.
static llvm::Error
requireSameElementType(Operation *op, llvm::ArrayRef<const Tensor *> tensors) {
  for (const Tensor *tensor : tensors)
    if (tensor->getElementType() != tensors.front()->getElementType())
      return makeOpError(
          op, "mixes element types: " + tensors.front()->getTypeString() +
                  " and " + tensor->getTypeString());
  return requireFloat(op, *tensors.front(), "operand");
}

static std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [i, dim] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(dim);
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

namespace {
/// The sizes of one matmul, and where each batch's operands start.
struct MatmulGeometry {
  int64_t m, n, k;
  bool transposeLhs, transposeRhs;
  /// Per result batch (row-major over the result's batch dims): the offset of
  /// the lhs and rhs matrices it multiplies.
  llvm::SmallVector<int64_t> lhsOffsets, rhsOffsets;
};
} // namespace

/// The element offset of the matrix that result batch `resultIndex` reads from
/// an operand of shape `shape`, broadcasting its batch dims.
static int64_t broadcastBatchOffset(llvm::ArrayRef<int64_t> resultIndex,
                                    llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides = computeStrides(shape);
  int64_t batchRank = shape.size() - 2;
  int64_t skipped = resultIndex.size() - batchRank;
  int64_t offset = 0;
  for (int64_t d = 0; d < batchRank; ++d)
    if (shape[d] != 1)
      offset += resultIndex[skipped + d] * strides[d];
  return offset;
}

template <typename T>
static void multiply(const MatmulGeometry &g, const Tensor &lhs,
                     const Tensor &rhs, Tensor &result) {
  llvm::ArrayRef<T> a = lhs.data<T>(), b = rhs.data<T>();
  llvm::MutableArrayRef<T> out = result.data<T>();
  int64_t out_offset = 0;
  for (auto [lhsBase, rhsBase] : llvm::zip_equal(g.lhsOffsets, g.rhsOffsets)) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        T sum = T(0);
        for (int64_t p = 0; p < g.k; ++p) {
          T x = a[lhsBase + (g.transposeLhs ? p * g.m + i : i * g.k + p)];
          T y = b[rhsBase + (g.transposeRhs ? j * g.k + p : p * g.n + j)];
          sum += x * y;
        }
        out[out_offset + i * g.n + j] = sum;
      }
    }
    out_offset += g.m * g.n;
  }
}

llvm::Expected<Tensor>
eval::evaluateMatmul(graph::MatmulOp op, const Tensor &lhs, const Tensor &rhs) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err = requireSameElementType(op, {&lhs, &rhs, &*result}))
    return std::move(err);
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return makeOpError(op, "operands must have rank >= 2");

  MatmulGeometry g;
  g.transposeLhs = op.getTransposeLhs();
  g.transposeRhs = op.getTransposeRhs();
  llvm::ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t lr = ls.size(), rr = rs.size();
  g.m = g.transposeLhs ? ls[lr - 1] : ls[lr - 2];
  g.k = g.transposeLhs ? ls[lr - 2] : ls[lr - 1];
  int64_t rhsK = g.transposeRhs ? rs[rr - 1] : rs[rr - 2];
  g.n = g.transposeRhs ? rs[rr - 2] : rs[rr - 1];
  if (g.k != rhsK)
    return makeOpError(op, "contracting dims differ: " + llvm::Twine(g.k) +
                               " vs " + llvm::Twine(rhsK));

  // The result's batch dims are the NumPy broadcast of the operands'.
  llvm::ArrayRef<int64_t> resultShape = result->getShape();
  int64_t batchRank = std::max(lr, rr) - 2;
  llvm::SmallVector<int64_t> expected(batchRank, 1);
  for (llvm::ArrayRef<int64_t> shape : {ls, rs}) {
    int64_t rank = shape.size() - 2, skipped = batchRank - rank;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t &dim = expected[skipped + d];
      if (dim != 1 && shape[d] != 1 && shape[d] != dim)
        return makeOpError(op, "batch dims " + shapeString(ls) + " and " +
                                   shapeString(rs) + " do not broadcast");
      if (shape[d] != 1)
        dim = shape[d];
    }
  }
  expected.append({g.m, g.n});
  if (resultShape != llvm::ArrayRef<int64_t>(expected))
    return makeOpError(op, "result shape " + shapeString(resultShape) +
                               " should be " + shapeString(expected));

  llvm::ArrayRef<int64_t> batchShape = resultShape.drop_back(2);
  llvm::SmallVector<int64_t> batchIndex;
  for (int64_t b = 0, e = computeNumElements(batchShape); b < e; ++b) {
    delinearize(b, batchShape, batchIndex);
    g.lhsOffsets.push_back(broadcastBatchOffset(batchIndex, ls));
    g.rhsOffsets.push_back(broadcastBatchOffset(batchIndex, rs));
  }
  dispatchFloat(result->getElementType(), [&](auto zero) {
    multiply<decltype(zero)>(g, lhs, rhs, *result);
    return 0;
  });
  result->roundToElementType();
  return result;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {
struct AttentionGeometry {
  int64_t batches, queries, keys, keyDim, valueDim;
  bool causal;
  double scale;
  graph::AttentionMaskLayout mask;
};
} // namespace

/// For each batch and query i: s_j = (q_i . k_j) * scale (+ mask) for the
/// visible keys j (all, or j <= i when causal); p = softmax(s) with the max
/// subtracted; out_i = sum_j p_j v_j, summed over j in increasing order.
template <typename T>
static void attend(const AttentionGeometry &g, const Tensor &query,
                   const Tensor &key, const Tensor &value, const Tensor *mask,
                   Tensor &result) {
  llvm::ArrayRef<T> q = query.data<T>(), k = key.data<T>(), v = value.data<T>();
  AttentionMaskRows<T> maskRows{mask ? mask->data<T>().data() : nullptr,
                                g.mask};
  llvm::MutableArrayRef<T> out = result.data<T>();
  const T scale = static_cast<T>(g.scale);
  std::vector<T> weights(g.keys);
  for (int64_t b = 0; b < g.batches; ++b) {
    const T *qb = q.data() + b * g.queries * g.keyDim;
    const T *kb = k.data() + b * g.keys * g.keyDim;
    const T *vb = v.data() + b * g.keys * g.valueDim;
    T *ob = out.data() + b * g.queries * g.valueDim;
    for (int64_t i = 0; i < g.queries; ++i) {
      int64_t visible = g.causal ? i + 1 : g.keys;
      attentionProbabilities(qb + i * g.keyDim, kb, g.keyDim, visible, scale,
                             weights.data(), maskRows.getRow(b, i),
                             maskRows.getKeyStride());
      for (int64_t d = 0; d < g.valueDim; ++d) {
        T sum = T(0);
        for (int64_t j = 0; j < visible; ++j)
          sum += weights[j] * vb[j * g.valueDim + d];
        ob[i * g.valueDim + d] = sum;
      }
    }
  }
}

llvm::Expected<graph::AttentionMaskLayout>
eval::getAttentionMaskLayout(Operation *op, const Tensor *mask,
                             llvm::ArrayRef<int64_t> queryShape,
                             llvm::ArrayRef<int64_t> keyShape) {
  if (!mask)
    return graph::AttentionMaskLayout();
  std::string error;
  auto layout = graph::getAttentionMaskLayout(
      mask->getShape(), graph::getAttentionScoreShape(queryShape, keyShape),
      error);
  if (failed(layout))
    return makeOpError(op, error);
  return *layout;
}

llvm::Expected<Tensor> eval::evaluateAttention(graph::AttentionOp op,
                                               const Tensor &query,
                                               const Tensor &key,
                                               const Tensor &value,
                                               const Tensor *mask) {
  llvm::Expected<Tensor> result = makeResult(op);
  if (!result)
    return result.takeError();
  if (llvm::Error err =
          requireSameElementType(op, {&query, &key, &value, &*result}))
    return std::move(err);
  int64_t rank = query.getRank();
  if (rank < 2 || key.getRank() != rank || value.getRank() != rank ||
      result->getRank() != rank)
    return makeOpError(op, "query, key, value and result must have one rank "
                           ">= 2");
  llvm::ArrayRef<int64_t> qs = query.getShape(), ks = key.getShape(),
                          vs = value.getShape(), os = result->getShape();
  AttentionGeometry g;
  g.queries = qs[rank - 2];
  g.keyDim = qs[rank - 1];
  g.keys = ks[rank - 2];
  g.valueDim = vs[rank - 1];
  g.causal = op.getCausal();
  g.batches = computeNumElements(qs.drop_back(2));
  if (ks.drop_back(2) != qs.drop_back(2) ||
      vs.drop_back(2) != qs.drop_back(2) || os.drop_back(2) != qs.drop_back(2))
    return makeOpError(op, "leading dims differ");
  if (ks[rank - 1] != g.keyDim || vs[rank - 2] != g.keys ||
      os[rank - 2] != g.queries || os[rank - 1] != g.valueDim)
    return makeOpError(op, "shapes do not match: q " + shapeString(qs) +
                               ", k " + shapeString(ks) + ", v " +
                               shapeString(vs) + ", result " + shapeString(os));
  if (g.causal && g.queries != g.keys)
    return makeOpError(op, "causal attention needs as many queries as keys");
  if (mask) {
    if (llvm::Error err = requireSameElementType(op, {&query, mask}))
      return std::move(err);
    llvm::Expected<graph::AttentionMaskLayout> layout =
        getAttentionMaskLayout(op, mask, qs, ks);
    if (!layout)
      return layout.takeError();
    g.mask = *layout;
  }
  // The scale is the attribute or 1/sqrt(Dk), computed in double and rounded
  // once to the element type.
  std::optional<llvm::APFloat> scale = op.getScale();
  g.scale = scale ? scale->convertToDouble()
                  : 1.0 / std::sqrt(static_cast<double>(g.keyDim));
  dispatchFloat(result->getElementType(), [&](auto zero) {
    attend<decltype(zero)>(g, query, key, value, mask, *result);
    return 0;
  });
  result->roundToElementType();
  return result;
}
