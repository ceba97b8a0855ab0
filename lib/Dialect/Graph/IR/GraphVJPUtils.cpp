//===- GraphVJPUtils.cpp - Helpers shared by the VJPs of the ops ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GraphVJPUtils.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace kiln::graph;

Value vjp::buildSplat(OpBuilder &builder, Location loc, RankedTensorType type,
                      double value) {
  auto elementType = cast<FloatType>(type.getElementType());
  auto attr =
      DenseElementsAttr::get(type, builder.getFloatAttr(elementType, value));
  return ConstantOp::create(builder, loc, type, attr);
}

Value vjp::buildReshapeIfNeeded(OpBuilder &builder, Location loc, Value value,
                                RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return ReshapeOp::create(builder, loc, type, value);
}

Value vjp::buildSumToShape(OpBuilder &builder, Location loc, Value value,
                           RankedTensorType target) {
  RankedTensorType type = tensorTypeOf(value);
  if (type == target)
    return value;
  ArrayRef<int64_t> from = type.getShape();
  ArrayRef<int64_t> to = target.getShape();
  int64_t leading = static_cast<int64_t>(from.size() - to.size());
  SmallVector<int64_t> axes, kept;
  for (int64_t i = 0, e = from.size(); i < e; ++i) {
    bool broadcast = i < leading || (to[i - leading] == 1 && from[i] != 1);
    if (broadcast)
      axes.push_back(i);
    else
      kept.push_back(from[i]);
  }
  if (!axes.empty()) {
    auto summedType = RankedTensorType::get(kept, type.getElementType());
    value = ReduceOp::create(builder, loc, summedType, ReduceKind::Sum, value,
                             axes, /*keepdims=*/false);
  }
  return buildReshapeIfNeeded(builder, loc, value, target);
}
