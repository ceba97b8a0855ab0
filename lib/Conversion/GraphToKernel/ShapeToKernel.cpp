//===- ShapeToKernel.cpp - Data movement graph ops to kernels --------------===//
//
// Part of Kiln. broadcast, transpose, slice, concat and split become copying
// kernels (linalg.generic over the result, or over each piece); reshape is a
// view of the same bytes.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace kiln;

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t dim : dims)
    result *= dim;
  return result;
}

/// The work of one iteration of a kernel over the first dim of `shape`.
static int64_t workPerRow(ArrayRef<int64_t> shape) {
  int64_t range = kb::rangeOfShape(shape);
  return product(shape) / std::max<int64_t>(range, 1);
}

static Value copyScalar(OpBuilder &, Location, ValueRange inputs) {
  return inputs[0];
}

/// Launches a kernel that copies `source` into `destination` (whole
/// buffers), where the kernel sees the part of the destination at `offsets`
/// of the source's shape (`intoDestination`) or the part of the source at
/// `offsets` of the destination's shape.
static void launchBoxCopy(KernelLowering &lowering, Operation *op,
                          Value source, Value destination,
                          ArrayRef<int64_t> offsets, bool intoDestination) {
  auto sourceType = cast<MemRefType>(source.getType());
  auto destinationType = cast<MemRefType>(destination.getType());
  ArrayRef<int64_t> boxShape =
      intoDestination ? sourceType.getShape() : destinationType.getShape();
  kernel::LaunchOp launch = lowering.launch(
      op->getLoc(), op->getName().getStringRef(), {source, destination},
      kb::rangeOfShape(boxShape), workPerRow(boxShape),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        SmallVector<int64_t> strides(boxShape.size(), 1);
        Value from = args[0], to = args[1];
        if (intoDestination)
          to = memref::SubViewOp::create(b, loc, to, offsets, boxShape,
                                         strides);
        else
          from = memref::SubViewOp::create(b, loc, from, offsets, boxShape,
                                           strides);
        AffineMap identity = b.getMultiDimIdentityMap(boxShape.size());
        kb::parallelGeneric(b, loc, from, identity, to, copyScalar);
      });
  if (intoDestination) {
    SmallVector<int64_t> box(offsets);
    llvm::append_range(box, boxShape);
    launch->setAttr(kernel::KernelDialect::kWriteBoxAttr,
                    DenseI64ArrayAttr::get(op->getContext(), box));
  }
}

namespace {
/// Broadcast (input dims align right; size-1 dims repeat) and transpose
/// (result dim i is input dim perm[i]): a copy over the result that reads
/// the input at the op's index map (FusibleOpInterface).
template <typename OpTy>
struct IndexMapCopyToKernel : OpToKernelPattern<OpTy> {
  LogicalResult lowerOp(OpTy op, KernelLowering &lowering) const override {
    ArrayRef<int64_t> out = op.getType().getShape();
    AffineMap map = cast<graph::FusibleOpInterface>(op.getOperation())
                        .getOperandIndexMap(0, 0);
    Value result = lowering.allocateResult(op.getResult());
    lowering.launch(
        op.getLoc(), op->getName().getStringRef(),
        {lowering.lookup(op.getInput()), result}, kb::rangeOfShape(out),
        workPerRow(out), [&](OpBuilder &b, Location loc, ValueRange args) {
          kb::parallelGeneric(b, loc, args[0], map, args[1], copyScalar);
        });
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// Reshape moves no data: the result is a view of the input's buffer.
struct ReshapeToKernel : OpToKernelPattern<graph::ReshapeOp> {
  LogicalResult lowerOp(graph::ReshapeOp op,
                        KernelLowering &lowering) const override {
    lowering.bind(op.getResult(), lowering.view(lowering.lookup(op.getInput()),
                                                op.getType().getShape()));
    return success();
  }
};

struct SliceToKernel : OpToKernelPattern<graph::SliceOp> {
  LogicalResult lowerOp(graph::SliceOp op,
                        KernelLowering &lowering) const override {
    Value result = lowering.allocateResult(op.getResult());
    launchBoxCopy(lowering, op, lowering.lookup(op.getInput()), result,
                  op.getOffsets(), /*intoDestination=*/false);
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// One kernel per piece: each writes its own box of the result.
struct ConcatToKernel : OpToKernelPattern<graph::ConcatOp> {
  LogicalResult lowerOp(graph::ConcatOp op,
                        KernelLowering &lowering) const override {
    Value result = lowering.allocateResult(op.getResult());
    int64_t axis = op.getAxis();
    SmallVector<int64_t> offsets(op.getType().getRank(), 0);
    for (Value input : op.getInputs()) {
      launchBoxCopy(lowering, op, lowering.lookup(input), result, offsets,
                    /*intoDestination=*/true);
      offsets[axis] += cast<RankedTensorType>(input.getType()).getDimSize(axis);
    }
    lowering.bind(op.getResult(), result);
    return success();
  }
};

/// One kernel per piece, each a slice of the input.
struct SplitToKernel : OpToKernelPattern<graph::SplitOp> {
  LogicalResult lowerOp(graph::SplitOp op,
                        KernelLowering &lowering) const override {
    Value input = lowering.lookup(op.getInput());
    int64_t axis = op.getAxis();
    SmallVector<int64_t> offsets(op.getInput().getType().getRank(), 0);
    for (Value piece : op.getResults()) {
      Value result = lowering.allocateResult(piece);
      launchBoxCopy(lowering, op, input, result, offsets,
                    /*intoDestination=*/false);
      offsets[axis] += cast<RankedTensorType>(piece.getType()).getDimSize(axis);
      lowering.bind(piece, result);
    }
    return success();
  }
};
} // namespace

void kiln::populateShapeToKernelPatterns(GraphToKernelPatternSet &patterns) {
  patterns.add<IndexMapCopyToKernel<graph::BroadcastOp>>();
  patterns.add<ReshapeToKernel>();
  patterns.add<IndexMapCopyToKernel<graph::TransposeOp>>();
  patterns.add<SliceToKernel>();
  patterns.add<ConcatToKernel>();
  patterns.add<SplitToKernel>();
}
