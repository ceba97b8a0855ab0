//===- GraphCost.cpp - CostOpInterface of the graph ops -------------------===//
//
// Part of Kiln. FLOPs and bytes of each graph op, as `kiln check` reports them
// and as fusion and recomputation weigh them.
//
// FLOP-counting convention:
// - One FLOP per arithmetic operation on one element: add, subtract,
//   multiply, divide, compare (max), negate. A multiply-add is two FLOPs. A
//   transcendental (exp, log, tanh, sin, cos, erf, sqrt, rsqrt, pow) counts as
//   one, as does an absolute value.
// - Sigmoid: 4 per element (negate, exp, add, divide); SiLU 5 (and x *).
// - Matmul: 2 * M * N * K per matrix, times the broadcast batch size.
// - Elementwise unary and binary ops: 1 per result element, except GELU
//   (tanh approximation): 9 per element (x*x*x: 2, * 0.044715: 1, + x: 1,
//   * sqrt(2/pi): 1, tanh: 1, + 1: 1, * x: 1, * 0.5: 1).
// - Reduce: sum and max 1 per input element; mean adds 1 per result element
//   (the division).
// - Softmax: 5 per element (max, subtract, exp, sum, divide).
// - Layer norm: 8 per element (mean: 1, subtract: 1, square: 1, variance
//   sum: 1, normalize: 1, gamma: 1, beta: 1; the per-row divisions, + eps
//   and rsqrt are rounded into the eighth).
// - Cross-entropy: 5 per logit (max, subtract, exp, sum, and the weighted sum
//   of the smoothed target distribution); per-row log and mean are
//   negligible and not counted.
// - Attention: its two matmuls, 2*Tq*Tk*Dk and 2*Tq*Tk*Dv per batch entry,
//   plus 6 per score (scale: 1, softmax: 5), 7 with an additive mask.
//   Causal attention is counted as dense: masked scores are not subtracted.
// - Dropout: 2 per element (compare against the random draw, scale); drawing
//   the random numbers is not counted.
// - Data movement costs 0 FLOPs: constant, broadcast, reshape, transpose,
//   slice, concat, split, embedding (a gather) and cast. Their cost is their
//   bytes.
//
// Bytes: every operand read once plus every result written once, with the
// element bit width rounded up to whole bytes (i1 is 1 byte, bf16 2).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

using namespace mlir;
using namespace kiln::graph;

namespace {
constexpr int64_t kGeluFlopsPerElement = 9;
constexpr int64_t kSoftmaxFlopsPerElement = 5;
constexpr int64_t kLayerNormFlopsPerElement = 8;
constexpr int64_t kCrossEntropyFlopsPerLogit = 5;
constexpr int64_t kAttentionFlopsPerScore = 1 + kSoftmaxFlopsPerElement;
constexpr int64_t kDropoutFlopsPerElement = 2;
} // namespace

static int64_t numElements(Value value) {
  return getNumElements(cast<ShapedType>(value.getType()).getShape());
}

/// Bytes of one element of `type`: its bit width rounded up to whole bytes.
static int64_t elementBytes(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * elementBytes(complex.getElementType());
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return 8; // index and other opaque scalars: a machine word.
}

static int64_t tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return shaped.getNumElements() * elementBytes(shaped.getElementType());
}

int64_t kiln::graph::defaultBytesAccessed(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += tensorBytes(type);
  for (Type type : op->getResultTypes())
    bytes += tensorBytes(type);
  return bytes;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define KILN_ONE_FLOP_PER_ELEMENT(Op)                                          \
  int64_t Op::getFlops() { return numElements(getResult()); }
// sigmoid: negate, exp, add, divide; silu: and the multiply.
int64_t SigmoidOp::getFlops() { return 4 * numElements(getResult()); }
int64_t SiluOp::getFlops() { return 5 * numElements(getResult()); }
KILN_ONE_FLOP_PER_ELEMENT(NegOp)
KILN_ONE_FLOP_PER_ELEMENT(ExpOp)
KILN_ONE_FLOP_PER_ELEMENT(LogOp)
KILN_ONE_FLOP_PER_ELEMENT(TanhOp)
KILN_ONE_FLOP_PER_ELEMENT(AbsOp)
KILN_ONE_FLOP_PER_ELEMENT(SinOp)
KILN_ONE_FLOP_PER_ELEMENT(CosOp)
KILN_ONE_FLOP_PER_ELEMENT(ErfOp)
KILN_ONE_FLOP_PER_ELEMENT(SqrtOp)
KILN_ONE_FLOP_PER_ELEMENT(RsqrtOp)
KILN_ONE_FLOP_PER_ELEMENT(ReluOp)
KILN_ONE_FLOP_PER_ELEMENT(AddOp)
KILN_ONE_FLOP_PER_ELEMENT(SubOp)
KILN_ONE_FLOP_PER_ELEMENT(MulOp)
KILN_ONE_FLOP_PER_ELEMENT(DivOp)
KILN_ONE_FLOP_PER_ELEMENT(PowOp)
KILN_ONE_FLOP_PER_ELEMENT(MaximumOp)
KILN_ONE_FLOP_PER_ELEMENT(MinimumOp)
KILN_ONE_FLOP_PER_ELEMENT(CompareOp)
KILN_ONE_FLOP_PER_ELEMENT(SelectOp)
#undef KILN_ONE_FLOP_PER_ELEMENT

int64_t GeluOp::getFlops() {
  return kGeluFlopsPerElement * numElements(getResult());
}

//===----------------------------------------------------------------------===//
// Data movement: no arithmetic
//===----------------------------------------------------------------------===//

#define KILN_NO_FLOPS(Op)                                                      \
  int64_t Op::getFlops() { return 0; }
KILN_NO_FLOPS(ConstantOp)
KILN_NO_FLOPS(BroadcastOp)
KILN_NO_FLOPS(ReshapeOp)
KILN_NO_FLOPS(TransposeOp)
KILN_NO_FLOPS(SliceOp)
KILN_NO_FLOPS(ConcatOp)
KILN_NO_FLOPS(SplitOp)
KILN_NO_FLOPS(EmbeddingOp)
KILN_NO_FLOPS(CastOp)
#undef KILN_NO_FLOPS

//===----------------------------------------------------------------------===//
// Linear algebra and neural-network ops
//===----------------------------------------------------------------------===//

/// 2 M N K per matrix of the product: the result is [batch..., M, N]; K is
/// the lhs's contracting dim.
template <typename OpTy> static int64_t getProductFlops(OpTy op) {
  ArrayRef<int64_t> lhs = op.getLhs().getType().getShape();
  int64_t k = op.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * numElements(op.getResult()) * k;
}

int64_t MatmulOp::getFlops() { return getProductFlops(*this); }

int64_t MatmulEpilogueOp::getFlops() {
  int64_t elements = numElements(getResult());
  int64_t flops = getProductFlops(*this);
  switch (getEpilogue()) {
  case GemmEpilogue::Bias:
    return flops + elements;
  case GemmEpilogue::BiasGelu:
    // The bias, then graph.gelu's count.
    return flops + elements * (1 + kGeluFlopsPerElement);
  case GemmEpilogue::DGelu:
    // As graph.gelu_grad counts an element (GraphGradOps.cpp).
    return flops + elements * 18;
  case GemmEpilogue::BiasGrad:
    return flops + numElements(getRhs());
  }
  return flops;
}

// A comparison per input element; a one-hot row writes its elements.
int64_t ArgmaxOp::getFlops() { return numElements(getInput()); }
int64_t OneHotOp::getFlops() { return numElements(getResult()); }

int64_t ReduceOp::getFlops() {
  int64_t flops = numElements(getInput());
  if (getKind() == ReduceKind::Mean)
    flops += numElements(getResult());
  return flops;
}

int64_t SoftmaxOp::getFlops() {
  return kSoftmaxFlopsPerElement * numElements(getResult());
}

int64_t LayerNormOp::getFlops() {
  return kLayerNormFlopsPerElement * numElements(getResult());
}

int64_t CrossEntropyOp::getFlops() {
  return kCrossEntropyFlopsPerLogit * numElements(getLogits());
}

int64_t AttentionOp::getFlops() {
  ArrayRef<int64_t> query = getQuery().getType().getShape();
  ArrayRef<int64_t> value = getValue().getType().getShape();
  ArrayRef<int64_t> key = getKey().getType().getShape();
  int64_t batch = getNumElements(query.drop_back(2));
  int64_t tq = query[query.size() - 2], dk = query.back();
  int64_t tk = key[key.size() - 2], dv = value.back();
  int64_t scores = batch * tq * tk;
  // A mask adds one term per score.
  int64_t perScore = kAttentionFlopsPerScore + (getMask() ? 1 : 0);
  return 2 * scores * dk + 2 * scores * dv + perScore * scores;
}

int64_t DropoutOp::getFlops() {
  return kDropoutFlopsPerElement * numElements(getResult());
}
