//===- GraphFoldGemmEpilogues.cpp - The --graph-fold-gemm-epilogues pass --===//
//
// Part of Kiln. Bias adds, tanh GELUs, their gradients and bias gradients
// folded into the matmuls beside them as GEMM epilogues (Passes.td), for a
// target whose GEMM library runs them as it stores the product. The
// rewrites go in a fixed order (bias + GELU before a plain bias, so that a
// GELU's add is not taken alone first), each over the ops in program order.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFOLDGEMMEPILOGUES
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {
/// What the target's executor takes (the pass options): the multiple of
/// elements a GELU's auxiliary rows must be, and the element types of the
/// products it applies epilogues to, as their names print ("f32").
struct Executor {
  int64_t alignment;
  ArrayRef<std::string> types;
};

/// The matmul defining `value` when `value` is its only use's operand and
/// its product's element type is one the executor applies epilogues to.
MatmulOp getSoleUseMatmul(Value value, const Executor &executor) {
  auto matmul = value.getDefiningOp<MatmulOp>();
  if (!matmul || !matmul->hasOneUse())
    return nullptr;
  std::string name;
  llvm::raw_string_ostream(name)
      << cast<RankedTensorType>(matmul.getType()).getElementType();
  return llvm::is_contained(executor.types, name) ? matmul : nullptr;
}

/// The bias vector `value` broadcasts over its last dim, if it is one: a
/// rank-1 tensor of the last dim's size.
Value getBroadcastBias(Value value) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  if (!broadcast)
    return nullptr;
  auto input = cast<RankedTensorType>(broadcast.getInput().getType());
  auto result = cast<RankedTensorType>(broadcast.getType());
  if (input.getRank() != 1 || result.getRank() < 2 ||
      input.getShape()[0] != result.getShape().back())
    return nullptr;
  return broadcast.getInput();
}

/// A matmul's product and a bias over its last dim added: `add`'s operands
/// in either order.
struct BiasAdd {
  MatmulOp matmul;
  Value bias;
};
std::optional<BiasAdd> matchBiasAdd(AddOp add, const Executor &executor) {
  for (auto [product, other] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())}) {
    MatmulOp matmul = getSoleUseMatmul(product, executor);
    Value bias = getBroadcastBias(other);
    if (matmul && bias &&
        cast<RankedTensorType>(matmul.getType()).getElementType() ==
            cast<RankedTensorType>(bias.getType()).getElementType())
      return BiasAdd{matmul, bias};
  }
  return std::nullopt;
}

/// Whether `value` is a matrix (or a batch of them) whose rows are a
/// whole number of `alignment`s long: the library keeps a GELU's auxiliary
/// matrix (the pre-activation) with C's leading dimension.
bool hasAlignedRows(Value value, int64_t alignment) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() >= 2 && alignment > 0 &&
         type.getShape().back() % alignment == 0;
}

/// The epilogue op at `at` for `matmul`'s operands.
MatmulEpilogueOp createEpilogue(IRRewriter &rewriter, Operation *at,
                                MatmulOp matmul, GemmEpilogue epilogue,
                                Value bias, Value aux, TypeRange types) {
  rewriter.setInsertionPoint(at);
  // The GEMM is the matmul's: its model line names the product.
  auto op = MatmulEpilogueOp::create(rewriter, matmul.getLoc(), types.front(),
                                     types.size() > 1 ? types[1] : Type(),
                                     epilogue, matmul.getLhs(), matmul.getRhs(),
                                     bias, aux, matmul.getTransposeLhs(),
                                     matmul.getTransposeRhs());
  for (NamedAttribute attribute : matmul->getDiscardableAttrs())
    op->setAttr(attribute.getName(), attribute.getValue());
  return op;
}

/// gelu(matmul + bias) -> bias_gelu; the add's other users read its
/// pre-activation.
void foldBiasGelu(IRRewriter &rewriter, GeluOp gelu,
                  const Executor &executor) {
  auto add = gelu.getInput().getDefiningOp<AddOp>();
  if (!add || !hasAlignedRows(add, executor.alignment))
    return;
  std::optional<BiasAdd> match = matchBiasAdd(add, executor);
  if (!match)
    return;
  Type type = gelu.getType();
  auto fused =
      createEpilogue(rewriter, add, match->matmul, GemmEpilogue::BiasGelu,
                     match->bias, nullptr, {type, type});
  rewriter.replaceOp(gelu, fused.getResult());
  rewriter.replaceOp(add, fused.getSecond());
}

/// matmul + bias -> bias.
void foldBias(IRRewriter &rewriter, AddOp add, const Executor &executor) {
  std::optional<BiasAdd> match = matchBiasAdd(add, executor);
  if (!match)
    return;
  auto fused = createEpilogue(rewriter, add, match->matmul, GemmEpilogue::Bias,
                              match->bias, nullptr, {add.getType()});
  rewriter.replaceOp(add, fused.getResult());
}

/// gelu_grad(matmul, pre) -> dgelu with aux = pre.
void foldGeluGrad(IRRewriter &rewriter, GeluGradOp grad,
                  const Executor &executor) {
  MatmulOp matmul = getSoleUseMatmul(grad.getResultGrad(), executor);
  if (!matmul || grad.getInput().getType() != matmul.getType() ||
      !hasAlignedRows(grad.getInput(), executor.alignment))
    return;
  auto fused = createEpilogue(rewriter, grad, matmul, GemmEpilogue::DGelu,
                              nullptr, grad.getInput(), {grad.getType()});
  rewriter.replaceOp(grad, fused.getResult());
}

/// Whether `rhs` is `dz`, or `dz` reshaped to [rows, last dim].
bool readsRowsOf(Value rhs, Value dz) {
  if (rhs == dz)
    return true;
  auto reshape = rhs.getDefiningOp<ReshapeOp>();
  if (!reshape || reshape.getInput() != dz)
    return false;
  return cast<RankedTensorType>(rhs.getType()).getShape().back() ==
         cast<RankedTensorType>(dz.getType()).getShape().back();
}

/// reduce sum(dz) over its rows beside matmul(x, dz) with transpose_lhs ->
/// bias_grad.
void foldBiasGrad(IRRewriter &rewriter, ReduceOp reduce, const Executor &) {
  Value dz = reduce.getInput();
  auto type = cast<RankedTensorType>(dz.getType());
  int64_t rank = type.getRank();
  if (reduce.getKind() != ReduceKind::Sum || reduce.getKeepdims() || rank < 2 ||
      static_cast<int64_t>(reduce.getAxes().size()) != rank - 1)
    return;
  for (auto [position, axis] : llvm::enumerate(reduce.getAxes()))
    if (axis != static_cast<int64_t>(position))
      return;
  // The weight gradient reading dz (or its rows) as the rhs.
  SmallVector<Value> readers = {dz};
  for (Operation *user : dz.getUsers())
    if (isa<ReshapeOp>(user))
      readers.push_back(user->getResult(0));
  MatmulOp weightGrad;
  for (Value reader : readers)
    for (Operation *user : reader.getUsers())
      if (auto matmul = dyn_cast<MatmulOp>(user);
          matmul && matmul.getRhs() == reader && matmul.getTransposeLhs() &&
          !matmul.getTransposeRhs() &&
          cast<RankedTensorType>(matmul.getType()).getRank() == 2 &&
          cast<RankedTensorType>(reader.getType()).getRank() == 2 &&
          readsRowsOf(reader, dz) && matmul->getBlock() == reduce->getBlock())
        weightGrad = matmul;
  if (!weightGrad)
    return;
  // The fused op stands where the matmul was: the reduce's users must come
  // after it.
  for (Operation *user : reduce->getUsers())
    if (user->getBlock() != weightGrad->getBlock() ||
        user->isBeforeInBlock(weightGrad))
      return;
  auto fused = createEpilogue(rewriter, weightGrad, weightGrad,
                              GemmEpilogue::BiasGrad, nullptr, nullptr,
                              {weightGrad.getType(), reduce.getType()});
  rewriter.replaceOp(weightGrad, fused.getResult());
  rewriter.replaceOp(reduce, fused.getSecond());
}

struct GraphFoldGemmEpiloguesPass
    : kiln::graph::impl::GraphFoldGemmEpiloguesBase<
          GraphFoldGemmEpiloguesPass> {
  using GraphFoldGemmEpiloguesBase::GraphFoldGemmEpiloguesBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<StringRef> names;
    StringRef(elementTypes).split(names, ',', -1, /*KeepEmpty=*/false);
    SmallVector<std::string> types;
    for (StringRef name : names)
      types.push_back(name.trim().str());
    Executor executor{auxAlignment, types};
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      // Each rewrite over a snapshot of its ops, in program order.
      auto each = [&](auto fold, auto tag) {
        using OpTy = decltype(tag);
        SmallVector<OpTy> ops;
        function.walk([&](OpTy op) { ops.push_back(op); });
        for (OpTy op : ops)
          fold(rewriter, op, executor);
      };
      each(foldBiasGelu, GeluOp());
      each(foldBias, AddOp());
      each(foldGeluGrad, GeluGradOp());
      each(foldBiasGrad, ReduceOp());
      // The matmuls, broadcasts and reshapes the folds left without users,
      // last first (one op's operands may be another's only users).
      SmallVector<Operation *> ops;
      function.walk([&](Operation *op) {
        if (isa<MatmulOp, BroadcastOp, ReshapeOp>(op))
          ops.push_back(op);
      });
      for (Operation *op : llvm::reverse(ops))
        if (op->use_empty())
          rewriter.eraseOp(op);
    }
  }
};
} // namespace
