//===- GraphFoldTransposes.cpp - The --graph-fold-transposes pass ---------===//
//
// Part of Kiln. Transposes of a matrix's last two dims folded into the
// matmuls around them (Passes.td): the GEMM reads and writes either layout
// for free, where a transpose kernel moves every element.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFOLDTRANSPOSES
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {
/// Whether `transpose` swaps its input's last two dims and keeps the rest:
/// the transpose of each matrix of a batch.
bool swapsLastTwoDims(TransposeOp transpose) {
  ArrayRef<int64_t> perm = transpose.getPerm();
  int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 2)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

/// `matmul` rebuilt on `lhs` and `rhs` with the given flags and result type,
/// its other attributes kept.
void replaceMatmul(PatternRewriter &rewriter, Operation *replaced,
                   MatmulOp matmul, Type type, Value lhs, Value rhs,
                   bool transposeLhs, bool transposeRhs) {
  auto rebuilt = MatmulOp::create(rewriter, matmul.getLoc(), type, lhs, rhs,
                                  transposeLhs, transposeRhs);
  for (NamedAttribute attribute : matmul->getDiscardableAttrs())
    rebuilt->setAttr(attribute.getName(), attribute.getValue());
  rewriter.replaceOp(replaced, rebuilt.getResult());
}

/// matmul(transpose(x), y) -> matmul(x, y) with transpose_lhs toggled
/// (likewise the rhs).
struct FoldOperandTranspose : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp matmul,
                                PatternRewriter &rewriter) const override {
    Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
    bool transposeLhs = matmul.getTransposeLhs();
    bool transposeRhs = matmul.getTransposeRhs();
    bool folded = false;
    if (auto transpose = lhs.getDefiningOp<TransposeOp>();
        transpose && swapsLastTwoDims(transpose)) {
      lhs = transpose.getInput();
      transposeLhs = !transposeLhs;
      folded = true;
    }
    if (auto transpose = rhs.getDefiningOp<TransposeOp>();
        transpose && swapsLastTwoDims(transpose)) {
      rhs = transpose.getInput();
      transposeRhs = !transposeRhs;
      folded = true;
    }
    if (!folded)
      return rewriter.notifyMatchFailure(matmul, "no transposed operand");
    replaceMatmul(rewriter, matmul, matmul, matmul.getType(), lhs, rhs,
                  transposeLhs, transposeRhs);
    return success();
  }
};

/// transpose(matmul(a, b)) -> matmul(b, a) with both flags swapped and
/// toggled, (a b)^T = b^T a^T, when the transpose is the product's only
/// user (else the product would be computed twice).
struct FoldResultTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto matmul = transpose.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || !swapsLastTwoDims(transpose) || !matmul->hasOneUse())
      return rewriter.notifyMatchFailure(transpose,
                                         "not the only use of a product");
    replaceMatmul(rewriter, transpose, matmul, transpose.getType(),
                  matmul.getRhs(), matmul.getLhs(), !matmul.getTransposeRhs(),
                  !matmul.getTransposeLhs());
    rewriter.eraseOp(matmul);
    return success();
  }
};

struct GraphFoldTransposesPass
    : kiln::graph::impl::GraphFoldTransposesBase<GraphFoldTransposesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldOperandTranspose, FoldResultTranspose>(&getContext());
    // Only these rewrites and the erasure of what they leave unused: the
    // graph's other ops keep their form for the passes after this one.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace
