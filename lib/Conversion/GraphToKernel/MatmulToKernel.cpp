//===- MatmulToKernel.cpp - graph.matmul to kernel.gemm --------------------===//
//
// Part of Kiln. A matmul is a library GEMM, never a generated kernel. Batch
// broadcasting that one stride per operand cannot express (a partially
// broadcast batch) is materialized first with a broadcast kernel.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace kiln;

/// The product of the dims.
static int64_t product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t dim : dims)
    result *= dim;
  return result;
}

/// Materializes `buffer` (of `shape`) broadcast to the batch dims `batch`
/// followed by its own two matrix dims.
static Value broadcastBatch(KernelLowering &lowering, Location loc,
                            Value buffer, ArrayRef<int64_t> batch) {
  auto type = cast<MemRefType>(buffer.getType());
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> resultShape(batch);
  resultShape.append(shape.end() - 2, shape.end());
  Value result = lowering.allocateTransient(
      MemRefType::get(resultShape, type.getElementType()));
  int64_t rank = resultShape.size();
  int64_t skipped = rank - static_cast<int64_t>(shape.size());
  lowering.launch(
      loc, "graph.matmul", {buffer, result}, kb::rangeOfShape(resultShape),
      product(resultShape) / resultShape[0],
      [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
        SmallVector<AffineExpr> exprs;
        for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
          exprs.push_back(shape[d] == 1 && d < static_cast<int64_t>(shape.size()) - 2
                              ? b.getAffineConstantExpr(0)
                              : b.getAffineDimExpr(skipped + d));
        AffineMap map = AffineMap::get(rank, 0, exprs, b.getContext());
        kb::parallelGeneric(b, nestedLoc, args[0], map, args[1],
                            [](OpBuilder &, Location, ValueRange in) {
                              return in[0];
                            });
      });
  return result;
}

/// The GEMM of `op` (a matmul or a matmul with an epilogue), C its result.
static kernel::GemmOp lowerProduct(KernelLowering &lowering, Operation *op,
                                   Value lhs, Value rhs, bool transposeA,
                                   bool transposeB, Value result) {
  ArrayRef<int64_t> lhsShape = cast<RankedTensorType>(lhs.getType()).getShape();
  ArrayRef<int64_t> rhsShape = cast<RankedTensorType>(rhs.getType()).getShape();
  ArrayRef<int64_t> resultShape =
      cast<RankedTensorType>(result.getType()).getShape();
  int64_t m = resultShape[resultShape.size() - 2];
  int64_t n = resultShape.back();
  int64_t k = transposeA ? lhsShape[lhsShape.size() - 2] : lhsShape.back();
  ArrayRef<int64_t> batchShape = resultShape.drop_back(2);
  int64_t batch = product(batchShape);

  Value a = lowering.lookup(lhs);
  Value b = lowering.lookup(rhs);
  // Each operand's batch is either the whole result batch (stride: one
  // matrix), a single matrix shared by all (stride 0), or is broadcast
  // into a transient first.
  auto strideOf = [&](Value &buffer, ArrayRef<int64_t> shape) -> int64_t {
    int64_t matrix = shape[shape.size() - 2] * shape.back();
    int64_t operandBatch = product(shape.drop_back(2));
    if (operandBatch == 1)
      return 0;
    if (operandBatch == batch)
      return matrix;
    buffer = broadcastBatch(lowering, op->getLoc(), buffer, batchShape);
    return matrix;
  };
  int64_t strideA = strideOf(a, lhsShape);
  int64_t strideB = strideOf(b, rhsShape);

  Value c = lowering.allocateResult(result);
  OpBuilder &builder = lowering.getBuilder();
  kernel::GemmOp gemm;
  if (batch > 1 && strideB == 0 && strideA != 0 && !transposeA) {
    // A shared rhs: the batches of lhs stack into one tall GEMM.
    gemm = kernel::GemmOp::create(builder, op->getLoc(), a, b, c, batch * m,
                                  n, k, /*batch=*/1, 0, 0, 0,
                                  /*transpose_a=*/false, transposeB,
                                  llvm::APFloat(1.0), llvm::APFloat(0.0));
  } else {
    gemm = kernel::GemmOp::create(
        builder, op->getLoc(), a, b, c, m, n, k, batch, strideA, strideB,
        batch > 1 ? m * n : 0, transposeA, transposeB, llvm::APFloat(1.0),
        llvm::APFloat(0.0));
  }
  lowering.setOrigin(gemm, op->getName().getStringRef());
  lowering.bind(result, c);
  return gemm;
}

namespace {
struct MatmulToKernel : OpToKernelPattern<graph::MatmulOp> {
  LogicalResult lowerOp(graph::MatmulOp op,
                        KernelLowering &lowering) const override {
    lowerProduct(lowering, op, op.getLhs(), op.getRhs(), op.getTransposeLhs(),
                 op.getTransposeRhs(), op.getResult());
    return success();
  }
};

/// The GEMM with its epilogue: the bias read, the pre-activation written
/// (bias_gelu, when something reads it) or read (dgelu) as aux, the bias
/// gradient written (bias_grad).
struct MatmulEpilogueToKernel : OpToKernelPattern<graph::MatmulEpilogueOp> {
  LogicalResult lowerOp(graph::MatmulEpilogueOp op,
                        KernelLowering &lowering) const override {
    // What the GEMM writes beside C is allocated before it.
    Value bias, aux;
    kernel::GemmEpilogue epilogue = kernel::GemmEpilogue::None;
    switch (op.getEpilogue()) {
    case graph::GemmEpilogue::Bias:
      epilogue = kernel::GemmEpilogue::Bias;
      bias = lowering.lookup(op.getBias());
      break;
    case graph::GemmEpilogue::BiasGelu:
      epilogue = kernel::GemmEpilogue::BiasGelu;
      bias = lowering.lookup(op.getBias());
      if (!op.getSecond().use_empty()) {
        aux = lowering.allocateResult(op.getSecond());
        lowering.bind(op.getSecond(), aux);
      }
      break;
    case graph::GemmEpilogue::DGelu:
      epilogue = kernel::GemmEpilogue::DGelu;
      aux = lowering.lookup(op.getAux());
      break;
    case graph::GemmEpilogue::BiasGrad:
      epilogue = kernel::GemmEpilogue::BiasGrad;
      bias = lowering.allocateResult(op.getSecond());
      lowering.bind(op.getSecond(), bias);
      break;
    }
    kernel::GemmOp gemm =
        lowerProduct(lowering, op, op.getLhs(), op.getRhs(),
                     op.getTransposeLhs(), op.getTransposeRhs(), op.getResult());
    if (bias)
      gemm.getBiasMutable().assign(bias);
    if (aux)
      gemm.getAuxMutable().assign(aux);
    gemm.setEpilogue(epilogue);
    return success();
  }
};
} // namespace

void kiln::populateMatmulToKernelPatterns(GraphToKernelPatternSet &patterns) {
  patterns.add<MatmulToKernel>();
  patterns.add<MatmulEpilogueToKernel>();
}
