//===- Autodiff.cpp - Reverse-mode autodiff of graph functions ------------===//
//
// Part of Kiln. buildGradients: clone the forward, find the values that
// depend on a parameter (the active values), then walk the clone in reverse,
// asking each op for its VJP through DifferentiableOpInterface. Knowledge of
// particular ops lives on the ops (GraphVJP*.cpp), not here.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/Autodiff.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace kiln::graph;

/// Whether values of `type` carry gradients: float tensors only.
static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// A `graph.constant` of `type` filled with `value`.
static Value buildFilled(OpBuilder &builder, Location loc,
                         RankedTensorType type, double value) {
  auto attr = DenseElementsAttr::get(
      type, builder.getFloatAttr(type.getElementType(), value));
  return ConstantOp::create(builder, loc, type, attr);
}

/// The index of the forward's result marked `graph.loss`, or an error at the
/// function.
static FailureOr<unsigned> findLoss(func::FuncOp forward) {
  std::optional<unsigned> loss;
  for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i) {
    if (!forward.getResultAttr(i, GraphDialect::kLossAttr))
      continue;
    if (loss)
      return forward.emitError()
             << "@" << forward.getSymName() << " has two losses (results "
             << *loss << " and " << i << "): autodiff needs exactly one";
    loss = i;
  }
  if (!loss)
    return forward.emitError()
           << "@" << forward.getSymName()
           << " has no loss to differentiate: mark one scalar float result "
              "with '"
           << GraphDialect::kLossAttr << "'";
  return *loss;
}

namespace {
/// The state of one reverse sweep: the cotangent accumulated so far for each
/// active value.
class ReverseSweep {
public:
  ReverseSweep(OpBuilder &builder, const DenseSet<Value> &active)
      : builder(builder), active(active) {}

  /// Adds `cotangent` to what `value` has received so far.
  void accumulate(Value value, Value cotangent, Location loc) {
    Value &slot = cotangents[value];
    slot = slot ? AddOp::create(builder, loc, value.getType(), slot, cotangent)
                      .getResult()
                : cotangent;
  }

  Value lookup(Value value) const { return cotangents.lookup(value); }

  /// Propagates the cotangents of `op`'s results to its active operands.
  LogicalResult propagate(Operation *op);

private:
  OpBuilder &builder;
  const DenseSet<Value> &active;
  DenseMap<Value, Value> cotangents;
};
} // namespace

LogicalResult ReverseSweep::propagate(Operation *op) {
  SmallVector<Value> resultCotangents;
  bool anyCotangent = false;
  for (Value result : op->getResults()) {
    resultCotangents.push_back(lookup(result));
    anyCotangent |= static_cast<bool>(resultCotangents.back());
  }
  bool anyActiveOperand = llvm::any_of(op->getOperands(), [&](Value operand) {
    return active.contains(operand);
  });
  if (!anyCotangent || !anyActiveOperand)
    return success();

  auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
  if (!differentiable)
    return op->emitError()
           << "'" << op->getName()
           << "' lies between a parameter and the loss but has no VJP "
              "(DifferentiableOpInterface)";
  SmallVector<Value> operandCotangents;
  if (failed(differentiable.buildVJP(builder, resultCotangents,
                                     operandCotangents)))
    return failure();
  if (operandCotangents.size() != op->getNumOperands())
    return op->emitError() << "VJP built " << operandCotangents.size()
                           << " operand cotangents for " << op->getNumOperands()
                           << " operands";
  for (auto [index, operand, cotangent] :
       llvm::enumerate(op->getOperands(), operandCotangents)) {
    if (!cotangent || !active.contains(operand))
      continue;
    if (cotangent.getType() != operand.getType())
      return op->emitError()
             << "VJP of operand " << index << " has type "
             << cotangent.getType() << ", expected " << operand.getType();
    accumulate(operand, cotangent, op->getLoc());
  }
  return success();
}

/// Erases the ops after `marker` (or from the block's start when null) up
/// to the builder's insertion point whose results are unused and are not
/// among `roots`: the parts of the backward that lead to no gradient, such
/// as the cotangent of a model input.
static void eraseDeadBackwardOps(OpBuilder &builder, Block *block,
                                 Operation *marker,
                                 const DenseSet<Value> &roots) {
  Block::iterator begin =
      marker ? std::next(marker->getIterator()) : block->begin();
  SmallVector<Operation *> backward;
  for (auto it = begin, end = builder.getInsertionPoint(); it != end; ++it)
    backward.push_back(&*it);
  for (Operation *op : llvm::reverse(backward)) {
    bool isRoot = llvm::any_of(op->getResults(),
                               [&](Value v) { return roots.contains(v); });
    if (!isRoot && op->use_empty() && isPure(op))
      op->erase();
  }
}

FailureOr<ForwardAndGradients>
kiln::graph::buildGradients(OpBuilder &builder, func::FuncOp forward,
                            ValueRange arguments, Value lossSeed) {
  assert(arguments.size() == forward.getNumArguments() &&
         "one value per forward argument");
  FailureOr<unsigned> lossIndex = findLoss(forward);
  if (failed(lossIndex))
    return failure();
  if (!forward.getBody().hasOneBlock())
    return forward.emitError() << "autodiff needs a single-block function";

  // The forward, cloned.
  Block &body = forward.getBody().front();
  IRMapping mapping;
  mapping.map(body.getArguments(), arguments);
  SmallVector<Operation *> clonedOps;
  for (Operation &op : body.without_terminator())
    clonedOps.push_back(builder.clone(op, mapping));
  ForwardAndGradients built;
  built.lossIndex = *lossIndex;
  for (Value result : body.getTerminator()->getOperands())
    built.forwardResults.push_back(mapping.lookupOrDefault(result));
  Block *block = builder.getInsertionBlock();
  Operation *marker = builder.getInsertionPoint() == block->begin()
                          ? nullptr
                          : &*std::prev(builder.getInsertionPoint());

  // Activity: the float values that depend on a parameter.
  DenseSet<Value> active;
  SmallVector<unsigned> parameterIndices;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    if (!forward.getArgAttr(i, GraphDialect::kParamAttr))
      continue;
    parameterIndices.push_back(i);
    if (isFloatTensor(arguments[i].getType()))
      active.insert(arguments[i]);
  }
  for (Operation *op : clonedOps) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    for (Value result : op->getResults())
      if (isFloatTensor(result.getType()))
        active.insert(result);
  }

  // The reverse sweep from d(loss) = 1, or the seed given.
  ReverseSweep sweep(builder, active);
  Value loss = built.forwardResults[*lossIndex];
  if (lossSeed && lossSeed.getType() != loss.getType())
    return emitError(loss.getLoc())
           << "the loss is " << loss.getType() << " but its gradient seed "
           << lossSeed.getType();
  if (active.contains(loss)) {
    Location lossLoc = loss.getLoc();
    sweep.accumulate(loss,
                     lossSeed ? lossSeed
                              : buildFilled(builder, lossLoc,
                                            cast<RankedTensorType>(
                                                loss.getType()),
                                            1.0),
                     lossLoc);
    for (Operation *op : llvm::reverse(clonedOps))
      if (failed(sweep.propagate(op)))
        return failure();
  }

  // One gradient per parameter; zeros (and a warning) where the loss does not
  // depend on it.
  DenseSet<Value> roots;
  for (unsigned index : parameterIndices) {
    Value argument = arguments[index];
    auto name =
        forward.getArgAttrOfType<StringAttr>(index, GraphDialect::kParamAttr);
    Value gradient = sweep.lookup(argument);
    if (!gradient) {
      Location loc = body.getArgument(index).getLoc();
      auto type = dyn_cast<RankedTensorType>(argument.getType());
      if (!type || !isFloatTensor(type))
        return emitError(loc) << "parameter '" << name.getValue()
                              << "' is not a float tensor: it cannot have a "
                                 "gradient";
      emitWarning(loc) << "parameter '" << name.getValue()
                       << "' does not affect the loss: its gradient is zero";
      gradient = buildFilled(builder, loc, type, 0.0);
    }
    roots.insert(gradient);
    built.parameterGradients.push_back({index, name.str(), gradient});
  }
  eraseDeadBackwardOps(builder, block, marker, roots);
  return built;
}

FailureOr<func::FuncOp> kiln::graph::buildGradientFunction(func::FuncOp forward,
                                                           StringRef name) {
  auto module = forward->getParentOfType<ModuleOp>();
  if (module && SymbolTable::lookupSymbolIn(module, name))
    return forward.emitError()
           << "cannot build @" << name << ": the module already has a symbol "
           << "of that name";

  OpBuilder builder(forward);
  builder.setInsertionPointAfter(forward);
  // The result types are known only once the backward is built: start with
  // none and set the type at the end.
  auto function = func::FuncOp::create(
      builder, forward.getLoc(), name,
      builder.getFunctionType(forward.getArgumentTypes(), {}));
  function.setAllArgAttrs(forward.getAllArgAttrs());
  Block *entry = function.addEntryBlock();
  for (auto [cloned, original] :
       llvm::zip_equal(entry->getArguments(), forward.getArguments()))
    cloned.setLoc(original.getLoc());
  builder.setInsertionPointToStart(entry);

  FailureOr<ForwardAndGradients> built =
      buildGradients(builder, forward, entry->getArguments());
  if (failed(built)) {
    function.erase();
    return failure();
  }

  // Results: the loss, the forward's other results, then the gradients.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  auto addForwardResult = [&](unsigned index) {
    results.push_back(built->forwardResults[index]);
    resultAttrs.push_back(forward.getResultAttrDict(index));
  };
  addForwardResult(built->lossIndex);
  for (unsigned i = 0, e = built->forwardResults.size(); i < e; ++i)
    if (i != built->lossIndex)
      addForwardResult(i);
  for (const ParameterGradient &gradient : built->parameterGradients) {
    results.push_back(gradient.gradient);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        GraphDialect::kGradAttr, builder.getStringAttr(gradient.name))));
  }
  func::ReturnOp::create(builder, forward.getLoc(), results);
  function.setType(builder.getFunctionType(forward.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
  for (auto [index, attrs] : llvm::enumerate(resultAttrs))
    if (attrs)
      function.setResultAttrs(index, attrs);
  return function;
}

FailureOr<func::FuncOp>
kiln::graph::buildTrainingGradientFunction(func::FuncOp forward,
                                           StringRef name) {
  if (!hasTrainingPhase(forward))
    return buildGradientFunction(forward, name);
  func::FuncOp training = forward.clone();
  training.setSymName("__kiln_forward_training");
  forward->getBlock()->getOperations().insertAfter(Block::iterator(forward),
                                                   training);
  resolveTrainingPhase(training, /*training=*/true);
  FailureOr<func::FuncOp> built = buildGradientFunction(training, name);
  training.erase();
  return built;
}
