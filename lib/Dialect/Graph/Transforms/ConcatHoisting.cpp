//===- ConcatHoisting.cpp - Data movement moved past concats
//---------------===//
//
// Part of Kiln. concat_a(transpose_P(x_i)) = transpose_P(concat_P[a](x_i)),
// and, when a reshape merges the dims j..k of x_i into the concat axis a
// (and keeps the dims before and after as they are, up to regrouping),
// concat_a(reshape(x_i)) = reshape(concat_j(x_i)): in row-major order each
// piece is a block of the same extent either way.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/ConcatHoisting.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace kiln::graph;

/// The producers of `concat`'s inputs when they are all `OpTy`, each used
/// only there.
template <typename OpTy>
static SmallVector<OpTy> getSoleUseProducers(ConcatOp concat) {
  SmallVector<OpTy> producers;
  for (Value input : concat.getInputs()) {
    auto producer = input.getDefiningOp<OpTy>();
    if (!producer || !input.hasOneUse())
      return {};
    producers.push_back(producer);
  }
  return producers;
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t dim : dims)
    result *= dim;
  return result;
}

/// The input axis whose concatenation equals concatenating the results of
/// `reshapes` along `axis`, or -1: every input has the same shape but along
/// that axis, and each reshape keeps the elements before and after the dims
/// it merges into `axis`.
static int64_t findReshapeAxis(ArrayRef<ReshapeOp> reshapes, int64_t axis) {
  int64_t found = -1;
  ArrayRef<int64_t> first =
      cast<RankedTensorType>(ReshapeOp(reshapes.front()).getInput().getType())
          .getShape();
  for (ReshapeOp reshape : reshapes) {
    ArrayRef<int64_t> in =
        cast<RankedTensorType>(reshape.getInput().getType()).getShape();
    ArrayRef<int64_t> out =
        cast<RankedTensorType>(reshape.getType()).getShape();
    int64_t before = product(out.take_front(axis));
    int64_t after = product(out.drop_front(axis + 1));
    // The first input dim j with before elements ahead of it, and the group
    // j..k holding out[axis] elements with `after` behind it.
    int64_t j = 0, ahead = 1;
    while (j < static_cast<int64_t>(in.size()) && ahead < before)
      ahead *= in[j++];
    if (ahead != before || j >= static_cast<int64_t>(in.size()))
      return -1;
    int64_t k = j, group = in[j];
    while (group < out[axis] && k + 1 < static_cast<int64_t>(in.size()))
      group *= in[++k];
    if (group != out[axis] || product(in.drop_front(k + 1)) != after)
      return -1;
    if (found >= 0 && found != j)
      return -1;
    found = j;
    // Same shape as the first input but along the axis.
    if (in.size() != first.size())
      return -1;
    for (auto [d, dims] : llvm::enumerate(llvm::zip_equal(in, first)))
      if (static_cast<int64_t>(d) != j &&
          std::get<0>(dims) != std::get<1>(dims))
        return -1;
  }
  return found;
}

/// The concat of `inputs` along `axis`.
static ConcatOp createConcat(OpBuilder &builder, Location loc,
                             ValueRange inputs, int64_t axis) {
  auto first = cast<RankedTensorType>(inputs.front().getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value input : inputs)
    shape[axis] += cast<RankedTensorType>(input.getType()).getDimSize(axis);
  return ConcatOp::create(builder, loc,
                          RankedTensorType::get(shape, first.getElementType()),
                          inputs, static_cast<uint64_t>(axis));
}

/// One rewrite of `concat`, or failure.
static LogicalResult hoistOnce(ConcatOp concat) {
  OpBuilder builder(concat);
  int64_t axis = concat.getAxis();
  SmallVector<Value> inputs;
  SmallVector<Location> locations = {concat.getLoc()};
  SmallVector<Operation *> producers;
  Operation *rebuilt = nullptr;
  if (auto transposes = getSoleUseProducers<TransposeOp>(concat);
      !transposes.empty() &&
      llvm::all_of(transposes, [&](TransposeOp transpose) {
        return transpose.getPerm() == transposes.front().getPerm();
      })) {
    ArrayRef<int64_t> perm = transposes.front().getPerm();
    for (TransposeOp transpose : transposes) {
      inputs.push_back(transpose.getInput());
      locations.push_back(transpose.getLoc());
      producers.push_back(transpose);
    }
    Location loc = FusedLoc::get(concat.getContext(), locations);
    ConcatOp joined = createConcat(builder, loc, inputs, perm[axis]);
    rebuilt = TransposeOp::create(builder, loc, concat.getType(), joined,
                                  builder.getDenseI64ArrayAttr(perm));
  } else if (auto reshapes = getSoleUseProducers<ReshapeOp>(concat);
             !reshapes.empty()) {
    int64_t inputAxis = findReshapeAxis(reshapes, axis);
    if (inputAxis < 0)
      return failure();
    for (ReshapeOp reshape : reshapes) {
      inputs.push_back(reshape.getInput());
      locations.push_back(reshape.getLoc());
      producers.push_back(reshape);
    }
    Location loc = FusedLoc::get(concat.getContext(), locations);
    ConcatOp joined = createConcat(builder, loc, inputs, inputAxis);
    rebuilt = ReshapeOp::create(builder, loc, concat.getType(), joined);
  } else {
    return failure();
  }
  concat.getResult().replaceAllUsesWith(rebuilt->getResult(0));
  concat.erase();
  for (Operation *producer : producers)
    producer->erase();
  return success();
}

void kiln::graph::hoistDataMovementOverConcats(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto concat : llvm::make_early_inc_range(block.getOps<ConcatOp>()))
      changed |= succeeded(hoistOnce(concat));
  }
}
