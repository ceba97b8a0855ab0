//===- GraphPadLogits.cpp - The --graph-pad-logits pass -------------------===//
//
// Part of Kiln. A cross-entropy's class dim padded to the target's
// alignment (Passes.td): the weight padded with zeros, the padded logits
// pushed to -1e30 by a constant bias, so that their probabilities are 0.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHPADLOGITS
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {
/// A padded logit: far below any real one, so that exp(padded - max) is 0,
/// and finite, so that nothing reports it as a non-finite value.
constexpr float kMaskedLogit = -1e30f;
/// Padding may add at most 1 / kMaxPaddingShare of the classes.
constexpr int64_t kMaxPaddingShare = 16;

/// The padded class count of `classes`, or 0 when it stays.
int64_t getPaddedClasses(int64_t classes, int64_t alignment) {
  if (alignment <= 1 || classes % alignment == 0)
    return 0;
  int64_t padded = (classes + alignment - 1) / alignment * alignment;
  if ((padded - classes) * kMaxPaddingShare > classes)
    return 0;
  return padded;
}

/// Whether every user of `logits` is a cross-entropy over them that a mask
/// of the padded classes leaves unchanged (no label smoothing, which would
/// spread probability onto them). Another reader (an output) would need
/// the unpadded logits in a buffer of their own beside the padded ones:
/// as much memory again as the logits, GPT-2's largest tensor.
bool feedsOnlyPlainCrossEntropy(Value logits) {
  return !logits.use_empty() &&
         llvm::all_of(logits.getUsers(), [&](Operation *user) {
           auto loss = dyn_cast<CrossEntropyOp>(user);
           return loss && loss.getLogits() == logits &&
                  loss.getLabelSmoothing().isZero();
         });
}

void padLogits(IRRewriter &rewriter, MatmulOp matmul, int64_t alignment) {
  auto type = cast<RankedTensorType>(matmul.getType());
  auto weightType = cast<RankedTensorType>(matmul.getRhs().getType());
  if (weightType.getRank() != 2 || !type.getElementType().isF32())
    return;
  int64_t classes = type.getShape().back();
  int64_t padded = getPaddedClasses(classes, alignment);
  if (!padded || !feedsOnlyPlainCrossEntropy(matmul.getResult()))
    return;

  Location loc = matmul.getLoc();
  rewriter.setInsertionPoint(matmul);
  // The weight's class dim: its rows with transpose_rhs, else its columns.
  SmallVector<int64_t> weightShape(weightType.getShape());
  weightShape[matmul.getTransposeRhs() ? 0 : 1] = padded;
  Value weight = PadOp::create(
      rewriter, loc, RankedTensorType::get(weightShape, type.getElementType()),
      matmul.getRhs(), rewriter.getDenseI64ArrayAttr({0, 0}));
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = padded;
  auto paddedType = RankedTensorType::get(shape, type.getElementType());
  auto product =
      MatmulOp::create(rewriter, loc, paddedType, matmul.getLhs(), weight,
                       matmul.getTransposeLhs(), matmul.getTransposeRhs());
  for (NamedAttribute attribute : matmul->getDiscardableAttrs())
    product->setAttr(attribute.getName(), attribute.getValue());
  SmallVector<float> maskValues(padded, 0.0f);
  std::fill(maskValues.begin() + classes, maskValues.end(), kMaskedLogit);
  auto maskType = RankedTensorType::get({padded}, type.getElementType());
  Value mask = ConstantOp::create(
      rewriter, loc, maskType,
      DenseElementsAttr::get(maskType, ArrayRef<float>(maskValues)));
  Value bias = BroadcastOp::create(rewriter, loc, paddedType, mask);
  Value masked = AddOp::create(rewriter, loc, product, bias);

  // The cross-entropies read the padded logits.
  for (OpOperand &use : llvm::make_early_inc_range(matmul->getUses()))
    use.set(masked);
  rewriter.eraseOp(matmul);
}

struct GraphPadLogitsPass
    : kiln::graph::impl::GraphPadLogitsBase<GraphPadLogitsPass> {
  using GraphPadLogitsBase::GraphPadLogitsBase;

  void runOnOperation() override {
    if (alignment <= 1)
      return;
    IRRewriter rewriter(&getContext());
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      SmallVector<MatmulOp> matmuls;
      function.walk([&](MatmulOp matmul) { matmuls.push_back(matmul); });
      for (MatmulOp matmul : matmuls)
        padLogits(rewriter, matmul, alignment);
    }
  }
};
} // namespace
