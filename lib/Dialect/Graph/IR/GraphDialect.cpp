//===- GraphDialect.cpp - The graph dialect
//--------------------------------===//
//
// Part of Kiln. Registers the graph ops and verifies the discardable
// attributes that carry a model's structure (parameters, inputs, outputs,
// dims, the train block).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace kiln::graph;

#include "kiln/Dialect/Graph/IR/GraphDialect.cpp.inc"
#include "kiln/Dialect/Graph/IR/GraphEnums.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Graph/IR/GraphOps.cpp.inc"
      >();
}

/// The initializers a parameter may carry, and the f64 fields each needs;
/// a state may also be `rounded`: its parameter (the name before the
/// state's last '.') rounded to the state's element type.
static LogicalResult verifyInitializer(Operation *op, Attribute attr,
                                       bool isState) {
  auto dict = dyn_cast<DictionaryAttr>(attr);
  if (!dict)
    return op->emitError() << "'" << GraphDialect::kInitAttr
                           << "' must be a dictionary";
  auto kind = dict.getAs<StringAttr>("kind");
  if (!kind)
    return op->emitError() << "'" << GraphDialect::kInitAttr
                           << "' needs a string 'kind'";
  SmallVector<StringRef, 2> fields;
  StringRef k = kind.getValue();
  if (k == "normal")
    fields = {"std"};
  else if (k == "uniform")
    fields = {"low", "high"};
  else if (k == "constant")
    fields = {"value"};
  else if (k == "rounded" && !isState)
    return op->emitError() << "initializer 'rounded' (a low-precision copy of "
                              "a parameter) is for state arguments only";
  else if (k != "zeros" && k != "ones" && k != "rounded")
    return op->emitError() << "unknown initializer kind '" << k
                           << "' (expected zeros, ones, constant, normal or "
                              "uniform)";
  for (StringRef field : fields)
    if (!dict.getAs<FloatAttr>(field))
      return op->emitError()
             << "initializer '" << k << "' needs an f64 '" << field << "'";
  return success();
}

/// graph.shard: on a 1-D state argument, a run of a larger tensor's
/// elements that lies within it.
static LogicalResult verifyShard(Operation *op, unsigned argIndex,
                                 Attribute value) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  auto dict = dyn_cast<DictionaryAttr>(value);
  auto offset = dict ? dict.getAs<IntegerAttr>("offset") : nullptr;
  auto shape = dict ? dict.getAs<DenseI64ArrayAttr>("shape") : nullptr;
  if (!offset || !shape)
    return op->emitError() << "'" << GraphDialect::kShardAttr
                           << "' of argument " << argIndex
                           << " must be {offset = N, shape = array<i64: ...>}";
  if (!function || !function.getArgAttr(argIndex, GraphDialect::kStateAttr))
    return op->emitError() << "'" << GraphDialect::kShardAttr
                           << "' of argument " << argIndex
                           << " is only valid on state";
  auto type = dyn_cast<RankedTensorType>(function.getArgumentTypes()[argIndex]);
  int64_t whole = 1;
  for (int64_t dim : shape.asArrayRef())
    whole *= dim;
  if (!type || type.getRank() != 1 || offset.getInt() < 0 ||
      offset.getInt() + type.getDimSize(0) > whole)
    return op->emitError() << "'" << GraphDialect::kShardAttr
                           << "' of argument " << argIndex
                           << ": a 1-D state within the " << whole
                           << " elements of its tensor, not " << value
                           << " over " << function.getArgumentTypes()[argIndex];
  return success();
}

LogicalResult GraphDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kParamAttr || name == kInputAttr || name == kStateAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' of argument " << argIndex
                             << " must be a string";
    if (name == kParamAttr &&
        !isa<RankedTensorType>(
            op->getRegion(regionIndex).getArgument(argIndex).getType()))
      return op->emitError()
             << "parameter argument " << argIndex << " must be a ranked tensor";
    return success();
  }
  if (name == kShardAttr)
    return verifyShard(op, argIndex, attr.getValue());
  if (name == kInitAttr) {
    auto function = dyn_cast<FunctionOpInterface>(op);
    bool isState = function && function.getArgAttr(argIndex, kStateAttr);
    return verifyInitializer(op, attr.getValue(), isState);
  }
  return op->emitError() << "unknown graph argument attribute '" << name << "'";
}

LogicalResult GraphDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kOutputAttr || name == kGradAttr || name == kUpdateAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' of result " << resultIndex
                             << " must be a string";
    return success();
  }
  if (name == kLossAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (!fn)
      return success();
    auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[resultIndex]);
    if (!type || type.getRank() != 0 || !isa<FloatType>(type.getElementType()))
      return op->emitError() << "the loss (result " << resultIndex
                             << ") must be a scalar float tensor";
    return success();
  }
  return op->emitError() << "unknown graph result attribute '" << name << "'";
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kModelAttr || name == kBatchDimAttr) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a string";
    return success();
  }
  if (name == kDimsAttr) {
    auto dims = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!dims)
      return op->emitError() << "'" << name << "' must be a dictionary";
    for (NamedAttribute dim : dims) {
      auto value = dyn_cast<IntegerAttr>(dim.getValue());
      if (!value || value.getInt() <= 0)
        return op->emitError() << "dim '" << dim.getName().getValue()
                               << "' must be a positive integer";
    }
    return success();
  }
  if (name == kTrainAttr) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a dictionary";
    return success();
  }
  if (name == kRecomputedAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == kRecomputeFlopsAttr) {
    auto flops = dyn_cast<IntegerAttr>(attr.getValue());
    if (!flops || flops.getInt() < 0)
      return op->emitError()
             << "'" << name << "' must be a non-negative integer";
    return success();
  }
  return op->emitError() << "unknown graph attribute '" << name << "'";
}
