//===- GraphMixedPrecision.cpp - The --graph-mixed-precision pass ---------===//
//
// Part of Kiln. A model's f32 values in bf16 or fp16 where the ops' declared
// policy allows (Passes.td): low-precision compute ops get their operands
// cast down, full-precision ones cast up, the rest follow their inputs.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"
#include "kiln/Dialect/Graph/Transforms/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHMIXEDPRECISION
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {

/// The element type of a float tensor value, or null.
FloatType floatElementType(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type ? dyn_cast<FloatType>(type.getElementType()) : nullptr;
}

/// Whether `value` is a constant, possibly broadcast or reshaped: converted
/// rather than cast, and not a reason to widen an op's compute type.
bool isConstantLike(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (isa<ConstantOp>(def))
    return true;
  if (isa<BroadcastOp, ReshapeOp>(def))
    return isConstantLike(def->getOperand(0));
  return false;
}

/// Whether `value` is broadcast from a smaller tensor (a bias, a scale):
/// it follows the type of the full-size operands it meets.
bool isBroadcast(Value value) {
  auto broadcast = value.getDefiningOp<BroadcastOp>();
  return broadcast && broadcast.getInput().getType().getNumElements() <
                          broadcast.getType().getNumElements();
}

/// Whether `function` updates a parameter or state: a training entry.
bool updatesState(func::FuncOp function) {
  return llvm::any_of(llvm::seq(function.getNumResults()), [&](unsigned i) {
    return static_cast<bool>(getUpdateTarget(function, i));
  });
}

class PrecisionRewriter {
public:
  /// `trained`: the parameters some entry of the module updates, which get
  /// low-precision copies where `weightCopies`.
  PrecisionRewriter(FloatType low, FloatType full, bool weightCopies,
                    llvm::StringSet<> trained)
      : low(low), full(full), weightCopies(weightCopies),
        trained(std::move(trained)) {}

  /// Rewrites the ops of `function` in order, then casts its results back
  /// to its declared types.
  LogicalResult run(func::FuncOp function);
  /// Has every entry that updates a parameter with a low-precision copy
  /// also update the copy: the parameter's new value rounded, which the
  /// kernel lowering writes in the update's own kernel.
  void updateCopies(func::FuncOp function);

private:
  /// The name of the low-precision copy of parameter `param`.
  std::string copyName(StringRef param) const {
    return (param + (low.isBF16() ? ".bf16" : ".fp16")).str();
  }
  /// The state argument of `function` holding the copy of `param`, added
  /// where missing: a state whose initializer is `rounded` (the runtime
  /// derives it from the parameter whenever the parameter is written).
  BlockArgument getCopyArgument(func::FuncOp function, StringRef param,
                                RankedTensorType type);
  /// Where a training entry reads a parameter in the low type: the copy
  /// that the optimizer writes, instead of a cast every step. Null for
  /// the other values and entries.
  Value readCopy(Value value, FloatType to);

  /// The function being rewritten, and whether it is a training entry.
  func::FuncOp function;
  bool training = false;
  /// The parameters read through a copy, by name, with their types.
  llvm::StringMap<RankedTensorType> copied;

  /// Whether values of `type` take part: f32 and the low type.
  bool isManaged(FloatType type) const {
    return type && (type == low || type == full);
  }
  /// `value` converted to element type `to` for `reader`: itself, the value
  /// it was widened from, a converted constant, a narrowing cast made once
  /// right after it and shared, or a widening cast made right before
  /// `reader` (so that what lives on to later readers, such as the
  /// backward, is the narrow value; the cast fuses into the reader).
  Value castTo(Value value, FloatType to, Operation *reader);
  /// A constant converted, or a broadcast, reshape or transpose of a value
  /// redone on the value cast (so that a bias is cast before it is
  /// broadcast, and a GEMM of the backward that reads a reshaped forward
  /// value narrows it through the cast the forward made: the f32 value
  /// then dies in the forward).
  Value castBeneath(Value value, FloatType to);
  /// Sets the managed float results of `op` to element type `to`.
  void setResultElementType(Operation *op, FloatType to);
  /// Casts each managed float operand of `op` to `to`.
  void castOperands(Operation *op, FloatType to);
  LogicalResult rewrite(Operation *op);

  FloatType low, full;
  bool weightCopies;
  llvm::StringSet<> trained;
  /// (value, type, reader of a widening cast) -> the cast.
  using CastKey = std::tuple<Value, Type, Operation *>;
  llvm::DenseMap<CastKey, Value> casts;
};

Value PrecisionRewriter::castBeneath(Value value, FloatType to) {
  Operation *def = value.getDefiningOp();
  auto type = cast<RankedTensorType>(value.getType());
  auto newType = RankedTensorType::get(type.getShape(), to);
  OpBuilder builder(def->getContext());
  builder.setInsertionPointAfter(def);
  if (auto constant = dyn_cast<ConstantOp>(def)) {
    auto elements = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!elements)
      return nullptr;
    const llvm::fltSemantics &semantics = to.getFloatSemantics();
    DenseElementsAttr converted =
        elements.mapValues(to, [&](const APFloat &element) {
          APFloat rounded = element;
          bool losesInfo;
          rounded.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
          return rounded.bitcastToAPInt();
        });
    return ConstantOp::create(builder, def->getLoc(), converted);
  }
  Value input = castTo(def->getOperand(0), to, def);
  if (!input)
    return nullptr;
  builder.setInsertionPointAfter(def);
  Operation *clone = builder.clone(*def);
  clone->setOperand(0, input);
  clone->getResult(0).setType(newType);
  return clone->getResult(0);
}

BlockArgument PrecisionRewriter::getCopyArgument(func::FuncOp function,
                                                 StringRef param,
                                                 RankedTensorType type) {
  std::string name = copyName(param);
  if (std::optional<unsigned> existing = findPersistentArgument(
          function, StringAttr::get(function.getContext(), name)))
    return function.getArgument(*existing);
  Builder b(function.getContext());
  NamedAttribute attrs[] = {
      b.getNamedAttr(GraphDialect::kStateAttr, b.getStringAttr(name)),
      b.getNamedAttr(GraphDialect::kInitAttr,
                     b.getDictionaryAttr(
                         b.getNamedAttr("kind", b.getStringAttr("rounded"))))};
  unsigned index = function.getNumArguments();
  (void)function.insertArgument(index, type, b.getDictionaryAttr(attrs),
                                function.getLoc());
  return function.getArgument(index);
}

Value PrecisionRewriter::readCopy(Value value, FloatType to) {
  auto argument = dyn_cast<BlockArgument>(value);
  if (!weightCopies || !argument || to != low || !function ||
      argument.getOwner() != &function.getBody().front())
    return nullptr;
  auto param = function.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                                     GraphDialect::kParamAttr);
  if (!param)
    return nullptr;
  // A training entry (train_step, or accumulate_step with apply_step),
  // reading a parameter that an entry updates.
  StringRef name = param.getValue();
  if (!training || !trained.contains(name))
    return nullptr;
  auto type = cast<RankedTensorType>(value.getType());
  auto copyType = RankedTensorType::get(type.getShape(), low);
  copied[name] = copyType;
  return getCopyArgument(function, name, copyType);
}

void PrecisionRewriter::updateCopies(func::FuncOp function) {
  if (function.isExternal())
    return;
  Operation *terminator = function.getBody().front().getTerminator();
  Builder b(function.getContext());
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i) {
    StringAttr name = getUpdateTarget(function, i);
    if (!name)
      continue;
    auto found = copied.find(name.getValue());
    if (found == copied.end())
      continue;
    getCopyArgument(function, name.getValue(), found->second);
    OpBuilder builder(terminator);
    Value rounded = CastOp::create(builder, terminator->getLoc(), found->second,
                                   terminator->getOperand(i));
    unsigned index = function.getNumResults();
    (void)function.insertResult(
        index, found->second,
        b.getDictionaryAttr(
            b.getNamedAttr(GraphDialect::kUpdateAttr,
                           b.getStringAttr(copyName(name.getValue())))));
    terminator->insertOperands(index, rounded);
  }
}

Value PrecisionRewriter::castTo(Value value, FloatType to, Operation *reader) {
  FloatType from = floatElementType(value);
  if (from == to)
    return value;
  if (Value copy = readCopy(value, to))
    return copy;
  bool widening = from.getWidth() < to.getWidth() &&
                  !isa<BlockArgument>(value) && !isConstantLike(value);
  CastKey key{value, to, widening ? reader : nullptr};
  if (Value known = casts.lookup(key))
    return known;
  Value result;
  // A value widened from `to` narrows back to the original exactly.
  if (auto widened = value.getDefiningOp<CastOp>();
      widened && floatElementType(widened.getInput()) == to &&
      to.getWidth() < from.getWidth())
    result = widened.getInput();
  else if (isConstantLike(value) || value.getDefiningOp<BroadcastOp>() ||
           (!widening &&
            isa_and_present<ReshapeOp, TransposeOp>(value.getDefiningOp())))
    result = castBeneath(value, to);
  if (!result) {
    OpBuilder builder(value.getContext());
    if (widening)
      builder.setInsertionPoint(reader);
    else if (Operation *def = value.getDefiningOp())
      builder.setInsertionPointAfter(def);
    else
      builder.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
    auto type = cast<RankedTensorType>(value.getType());
    result = CastOp::create(builder, value.getLoc(),
                            RankedTensorType::get(type.getShape(), to), value);
  }
  casts[key] = result;
  return result;
}

void PrecisionRewriter::setResultElementType(Operation *op, FloatType to) {
  for (OpResult result : op->getResults())
    if (isManaged(floatElementType(result))) {
      auto type = cast<RankedTensorType>(result.getType());
      result.setType(RankedTensorType::get(type.getShape(), to));
    }
}

void PrecisionRewriter::castOperands(Operation *op, FloatType to) {
  for (OpOperand &operand : op->getOpOperands())
    if (isManaged(floatElementType(operand.get())))
      operand.set(castTo(operand.get(), to, op));
}

LogicalResult PrecisionRewriter::rewrite(Operation *op) {
  if (isa<ConstantOp, CastOp>(op))
    return success();
  if (isa<FusionOp>(op))
    return op->emitOpError("--graph-mixed-precision runs before --graph-fuse");
  if (op->hasTrait<LowPrecisionCompute>()) {
    // Operands of another float type (f64) keep the op as it is.
    if (llvm::any_of(op->getOperands(), [&](Value operand) {
          FloatType type = floatElementType(operand);
          return type && !isManaged(type);
        }))
      return success();
    castOperands(op, low);
    setResultElementType(op, low);
    return success();
  }
  if (op->hasTrait<FullPrecisionCompute>()) {
    castOperands(op, full);
    return success();
  }
  // The others compute in the type of their full-size, non-constant float
  // operands: the low one where they mix (activations are stored low: a
  // residual add of an f32 stream and a bf16 branch is bf16), f32 where one
  // of them is an entry's argument (a parameter, optimizer state, a
  // gradient accumulator: master values). Broadcast operands, then
  // constants, follow; they decide only where no other operand does.
  FloatType decided[3];
  bool readsMasterValue = false;
  for (Value operand : op->getOperands()) {
    FloatType type = floatElementType(operand);
    if (!isManaged(type))
      continue;
    int rank = isConstantLike(operand) ? 2 : isBroadcast(operand) ? 1 : 0;
    if (rank == 0 && type == full && isa<BlockArgument>(operand))
      readsMasterValue = true;
    if (!decided[rank])
      decided[rank] = type;
    else if (decided[rank] != type)
      decided[rank] = low;
  }
  if (readsMasterValue)
    decided[0] = full;
  FloatType compute = decided[0]   ? decided[0]
                      : decided[1] ? decided[1]
                                   : decided[2];
  if (!compute)
    return success();
  castOperands(op, compute);
  setResultElementType(op, compute);
  return success();
}

LogicalResult PrecisionRewriter::run(func::FuncOp function) {
  if (function.isExternal())
    return success();
  this->function = function;
  training = updatesState(function);
  casts.clear();
  if (!function.getBody().hasOneBlock())
    return function.emitOpError(
        "--graph-mixed-precision expects a graph function of one block");
  Block &body = function.getBody().front();
  // Ops made by the rewrite (casts, converted constants) are not visited:
  // the walk takes the original ops first.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (op->getDialect() != op->getContext()->getLoadedDialect<GraphDialect>())
      return op->emitOpError("is not a graph op: --graph-mixed-precision "
                             "cannot tell its precision policy");
    if (failed(rewrite(op)))
      return failure();
  }
  // Data movement and constants redone on cast values leave their
  // originals unused.
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() &&
        isa<BroadcastOp, ReshapeOp, TransposeOp, ConstantOp>(op))
      op->erase();
  Operation *terminator = body.getTerminator();
  for (auto [operand, declared] : llvm::zip_equal(terminator->getOpOperands(),
                                                  function.getResultTypes())) {
    auto type = dyn_cast<RankedTensorType>(declared);
    auto element = type ? dyn_cast<FloatType>(type.getElementType()) : nullptr;
    if (element && operand.get().getType() != declared)
      operand.set(castTo(operand.get(), element, terminator));
  }
  return success();
}

struct GraphMixedPrecisionPass
    : kiln::graph::impl::GraphMixedPrecisionBase<GraphMixedPrecisionPass> {
  using GraphMixedPrecisionBase::GraphMixedPrecisionBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    ModuleOp module = getOperation();
    FailureOr<TrainSettings> settings = TrainSettings::fromModule(module);
    if (failed(settings))
      return signalPassFailure();
    // The option, else the train block's setting (and its line).
    std::string chosen = policy.empty() ? settings->precision : policy;
    Location where = !policy.empty() || !settings->precisionLoc
                         ? module.getLoc()
                         : *settings->precisionLoc;
    if (chosen != "fp32" && chosen != "bf16" && chosen != "fp16") {
      emitError(where, "unknown precision '")
          << chosen << "' (expected fp32, bf16 or fp16)";
      return signalPassFailure();
    }
    if (!targetPrecisions.empty() &&
        !llvm::is_contained(targetPrecisions, chosen)) {
      emitError(where, "precision = ")
          << chosen << " is not supported on this target yet (it trains in "
          << llvm::join(targetPrecisions, ", ") << ")";
      return signalPassFailure();
    }
    if (chosen == "fp32") {
      if (!weightCopies) {
        emitError(where, "--no-weight-copies applies to bf16 and fp16 "
                         "(this step trains in fp32: it keeps no 16-bit "
                         "weight copies)");
        return signalPassFailure();
      }
      return;
    }
    FloatType lowType;
    if (chosen == "bf16")
      lowType = BFloat16Type::get(context);
    else
      lowType = Float16Type::get(context);
    llvm::StringSet<> trained;
    for (auto function : module.getOps<func::FuncOp>())
      for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
        if (StringAttr name = getUpdateTarget(function, i))
          trained.insert(name.getValue());
    // Under ZeRO-1 @apply_step writes only its rank's part of each
    // parameter (the rest arrives by the runtime's all-gather): a copy it
    // wrote of the whole would be stale there. The forward casts instead.
    bool keepsCopies = weightCopies && settings->zero == 0;
    PrecisionRewriter rewriter(lowType, Float32Type::get(context), keepsCopies,
                               std::move(trained));
    for (auto function : module.getOps<func::FuncOp>())
      if (failed(rewriter.run(function)))
        return signalPassFailure();
    for (auto function : module.getOps<func::FuncOp>())
      rewriter.updateCopies(function);
  }
};

} // namespace
