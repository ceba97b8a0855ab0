//===- TrainStep.cpp - Training entry points from a forward ---------------===//
//
// Part of Kiln. The backward comes from buildGradients (Autodiff.h); this file
// adds what a step does around it: the step counter, the learning-rate
// schedule, global-norm clipping, the optimizer update of every parameter
// (the update ops of GraphOptimizerOps.td), and gradient accumulation.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/TrainStep.h"
#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace kiln::graph;

//===----------------------------------------------------------------------===//
// Settings
//===----------------------------------------------------------------------===//

FailureOr<TrainSettings> TrainSettings::fromModule(ModuleOp module) {
  TrainSettings settings;
  auto train = module->getAttrOfType<DictionaryAttr>(GraphDialect::kTrainAttr);
  if (!train)
    return settings;
  auto number = [](DictionaryAttr dict, StringRef key, double &out) {
    if (auto value = dict.getAs<FloatAttr>(key))
      out = value.getValueAsDouble();
  };
  auto integer = [](DictionaryAttr dict, StringRef key, int64_t &out) {
    if (auto value = dict.getAs<IntegerAttr>(key))
      out = value.getInt();
  };
  auto flag = [](DictionaryAttr dict, StringRef key, bool &out) {
    if (auto value = dict.getAs<BoolAttr>(key))
      out = value.getValue();
  };
  if (auto optimizer = train.getAs<DictionaryAttr>("optimizer")) {
    if (auto name = optimizer.getAs<StringAttr>("name"))
      settings.optimizer = name.getValue().str();
    number(optimizer, "lr", settings.lr);
    number(optimizer, "eps", settings.eps);
    number(optimizer, "momentum", settings.momentum);
    number(optimizer, "weight_decay", settings.weightDecay);
    number(optimizer, "clip", settings.clip);
    flag(optimizer, "nesterov", settings.nesterov);
    flag(optimizer, "decay_all", settings.decayAll);
    if (auto betas = optimizer.getAs<ArrayAttr>("betas")) {
      if (betas.size() != 2 || !isa<FloatAttr>(betas[0]) ||
          !isa<FloatAttr>(betas[1]))
        return module.emitError("graph.train: betas must be two numbers");
      settings.beta1 = cast<FloatAttr>(betas[0]).getValueAsDouble();
      settings.beta2 = cast<FloatAttr>(betas[1]).getValueAsDouble();
    }
  }
  if (auto schedule = train.getAs<DictionaryAttr>("schedule")) {
    if (auto name = schedule.getAs<StringAttr>("name")) {
      std::optional<LrScheduleKind> kind = symbolizeLrScheduleKind(name);
      if (!kind)
        return module.emitError("graph.train: unknown schedule '")
               << name.getValue() << "' (expected constant, linear or cosine)";
      settings.schedule = *kind;
    }
    integer(schedule, "warmup", settings.warmup);
    number(schedule, "final", settings.finalFraction);
  }
  integer(train, "steps", settings.steps);
  integer(train, "accumulate", settings.accumulate);
  integer(train, "world", settings.world);
  integer(train, "zero", settings.zero);
  integer(train, "rank", settings.rank);
  integer(train, "memory", settings.memory);
  if (auto precision = train.getAs<StringAttr>("precision"))
    settings.precision = precision.getValue().str();
  if (auto where = train.getAs<LocationAttr>("precision_loc"))
    settings.precisionLoc = Location(where);
  if (auto scaling = train.getAs<DictionaryAttr>("loss_scale")) {
    number(scaling, "init", settings.lossScale);
    integer(scaling, "interval", settings.lossScaleInterval);
    if (auto where = train.getAs<LocationAttr>("loss_scale_loc"))
      settings.lossScaleLoc = Location(where);
    else
      settings.lossScaleLoc = module.getLoc();
  }

  if (settings.optimizer != "sgd" && settings.optimizer != "momentum" &&
      settings.optimizer != "adamw")
    return module.emitError("graph.train: unknown optimizer '")
           << settings.optimizer << "'";
  if (settings.accumulate < 1)
    return module.emitError("graph.train: accumulate must be at least 1");
  if (settings.world < 1)
    return module.emitError("graph.train: world must be at least 1");
  if (settings.zero != 0 && settings.zero != 1)
    return module.emitError("graph.train: zero must be 0 or 1 (ZeRO-1 shards "
                            "the optimizer state; stages 2 and 3 are not "
                            "built)");
  if (settings.zero == 1 && settings.world < 2)
    return module.emitError("graph.train: zero = 1 shards the optimizer state "
                            "over the ranks, and world is 1");
  if (settings.rank < 0 || settings.rank >= settings.world)
    return module.emitError("graph.train: rank ")
           << settings.rank << " is not one of the world's " << settings.world;
  if (!(settings.lossScale > 0.0) || settings.lossScaleInterval < 1)
    return emitError(settings.lossScaleLoc.value_or(module.getLoc()))
           << "loss_scale needs init > 0 and interval >= 1";
  if (settings.schedule != LrScheduleKind::Constant &&
      settings.steps <= settings.warmup)
    return module.emitError("graph.train: the ")
           << stringifyLrScheduleKind(settings.schedule)
           << " schedule needs steps (" << settings.steps << ") > warmup ("
           << settings.warmup << ")";
  return settings;
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

namespace {
/// One parameter of the forward: its argument, name and type.
struct Parameter {
  unsigned argumentIndex;
  std::string name;
  /// The type of the value updated: the parameter's, or ZeRO-1's 1-D part.
  RankedTensorType type;
  /// The parameter's rank, which decides its weight decay.
  int64_t decayRank;
  /// ZeRO-1: the part's graph.shard, for its state.
  DictionaryAttr shard = {};
};

/// A function under construction: arguments with their attributes, then a
/// body, then results with theirs.
class EntryBuilder {
public:
  EntryBuilder(ModuleOp module, StringRef name, Location loc)
      : builder(module.getContext()), loc(loc) {
    builder.setInsertionPointToEnd(module.getBody());
    function = func::FuncOp::create(builder, loc, name,
                                    builder.getFunctionType({}, {}));
    builder.setInsertionPointToStart(function.addEntryBlock());
  }

  Value addArgument(Type type, DictionaryAttr attrs) {
    argAttrs.push_back(attrs);
    return function.getBody().front().addArgument(type, loc);
  }
  /// A state argument called `name`, zero-initialized or, with `fill`,
  /// filled with that value.
  Value addState(Type type, StringRef name,
                 std::optional<double> fill = std::nullopt,
                 DictionaryAttr shard = {}) {
    SmallVector<NamedAttribute, 2> init = {builder.getNamedAttr(
        "kind", builder.getStringAttr(fill ? "constant" : "zeros"))};
    if (fill)
      init.push_back(
          builder.getNamedAttr("value", builder.getF64FloatAttr(*fill)));
    NamedAttribute attrs[] = {
        builder.getNamedAttr(GraphDialect::kStateAttr,
                             builder.getStringAttr(name)),
        builder.getNamedAttr(GraphDialect::kInitAttr,
                             builder.getDictionaryAttr(init))};
    NamedAttrList list(attrs);
    if (shard)
      list.set(GraphDialect::kShardAttr, shard);
    return addArgument(type, list.getDictionary(builder.getContext()));
  }
  void addResult(Value value, ArrayRef<NamedAttribute> attrs) {
    results.push_back(value);
    resultAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  void addOutput(Value value, StringRef name, bool isLoss = false) {
    SmallVector<NamedAttribute, 2> attrs = {builder.getNamedAttr(
        GraphDialect::kOutputAttr, builder.getStringAttr(name))};
    if (isLoss)
      attrs.push_back(
          builder.getNamedAttr(GraphDialect::kLossAttr, builder.getUnitAttr()));
    addResult(value, attrs);
  }
  void addUpdate(Value value, StringRef name) {
    addResult(value, builder.getNamedAttr(GraphDialect::kUpdateAttr,
                                          builder.getStringAttr(name)));
  }
  /// A splat constant.
  Value constant(RankedTensorType type, double value) {
    return ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(
            type, builder.getFloatAttr(type.getElementType(), value)));
  }

  /// Adds the return and the signature.
  func::FuncOp finish() {
    func::ReturnOp::create(builder, loc, results);
    SmallVector<Type> argTypes(function.getBody().front().getArgumentTypes());
    SmallVector<Type> resultTypes;
    for (Value result : results)
      resultTypes.push_back(result.getType());
    function.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
    function.setAllArgAttrs(argAttrs);
    function.setAllResultAttrs(resultAttrs);
    return function;
  }

  OpBuilder builder;
  Location loc;
  func::FuncOp function;

private:
  SmallVector<Attribute> argAttrs, resultAttrs;
  SmallVector<Value> results;
};
} // namespace

static SmallVector<Parameter> collectParameters(func::FuncOp forward) {
  SmallVector<Parameter> params;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    if (auto name =
            forward.getArgAttrOfType<StringAttr>(i, GraphDialect::kParamAttr))
      params.push_back(
          {i, name.getValue().str(),
           cast<RankedTensorType>(forward.getArgument(i).getType()),
           cast<RankedTensorType>(forward.getArgument(i).getType()).getRank()});
  return params;
}

/// The type of the step counter, learning rate and clipping scalars: f64 when
/// every parameter is f64 (so that f64 models stay f64 end to end), else f32.
static RankedTensorType getScalarType(ArrayRef<Parameter> params,
                                      MLIRContext *context) {
  bool allF64 = !params.empty() && llvm::all_of(params, [](const Parameter &p) {
    return p.type.getElementType().isF64();
  });
  Type element = allF64 ? Type(Float64Type::get(context))
                        : Type(Float32Type::get(context));
  return RankedTensorType::get({}, element);
}

static constexpr StringLiteral kLossScaleState = "loss_scale.scale";
static constexpr StringLiteral kGoodStepsState = "loss_scale.good_steps";
static constexpr StringLiteral kSkippedStepsState = "loss_scale.skipped_steps";
/// GradScaler's factors: on an overflow, and after the interval's clean
/// steps.
static constexpr double kLossScaleBackoff = 0.5, kLossScaleGrowth = 2.0;

/// The loss scale an entry seeds its backward with (a state argument), or
/// null unless the settings train in fp16.
static Value addLossScale(EntryBuilder &entry, const TrainSettings &settings,
                          RankedTensorType scalarType) {
  if (!settings.scalesLoss())
    return Value();
  return entry.addState(scalarType, kLossScaleState, settings.lossScale);
}

/// The state names each optimizer keeps per parameter.
static SmallVector<std::string, 2>
stateSuffixes(const TrainSettings &settings) {
  if (settings.optimizer == "adamw")
    return {"adam_m", "adam_v"};
  if (settings.optimizer == "momentum")
    return {"momentum"};
  return {};
}

/// The update of every parameter from its gradient: the step counter, the
/// schedule, clipping and the optimizer. Adds the arguments for the state,
/// and the results: lr, [grad_norm], new params, new state, new step.
/// `givenNorm`, where set, is the gradients' global norm (ZeRO-1: computed
/// over the ranks); `toParam(i, v)` makes parameter i's new value from the
/// update's `v` (ZeRO-1: its part, put back in place).
///
/// With `lossScale` (fp16), the gradients are those of the loss times it:
/// the norm of the scaled gradients decides whether the step is skipped
/// (not finite: parameters, state and step counter stay as they were) and
/// the scale's next value; the updates unscale through their grad_scale;
/// the results add loss_scale and skipped, then the scaling state.
static void buildUpdate(EntryBuilder &entry, const TrainSettings &settings,
                        ArrayRef<Parameter> params, ArrayRef<Value> paramValues,
                        ArrayRef<Value> gradients, Value lossScale,
                        Value givenNorm = {},
                        function_ref<Value(size_t, Value)> toParam = {}) {
  OpBuilder &builder = entry.builder;
  Location loc = entry.loc;
  RankedTensorType scalarType = getScalarType(params, builder.getContext());

  // Per-parameter state, then the step counter.
  SmallVector<SmallVector<Value, 2>> states;
  for (const Parameter &param : params) {
    states.emplace_back();
    for (const std::string &suffix : stateSuffixes(settings))
      states.back().push_back(entry.addState(
          param.type, param.name + "." + suffix, std::nullopt, param.shard));
  }
  Value step = entry.addState(scalarType, "optimizer.step");

  // t = step + 1 (1-based for bias correction and warmup); its rate.
  Value t = AddOp::create(builder, loc, step, entry.constant(scalarType, 1.0));
  Value lr = LrScheduleOp::create(
      builder, loc, scalarType, t,
      LrScheduleKindAttr::get(builder.getContext(), settings.schedule),
      builder.getF64FloatAttr(settings.lr),
      builder.getI64IntegerAttr(settings.warmup),
      builder.getI64IntegerAttr(settings.steps),
      builder.getF64FloatAttr(settings.finalFraction));

  // The gradients' scale: the clipping factor, and 1 / loss scale.
  Value scale, norm, unscale, newLossScale, newGoodSteps, skip;
  if (lossScale) {
    Value scaledNorm =
        givenNorm ? givenNorm
                  : GlobalNormOp::create(builder, loc, scalarType, gradients);
    unscale = DivOp::create(builder, loc, entry.constant(scalarType, 1.0),
                            lossScale);
    norm = MulOp::create(builder, loc, scaledNorm, unscale);
    auto update = LossScaleUpdateOp::create(
        builder, loc, scaledNorm, lossScale,
        entry.addState(scalarType, kGoodStepsState),
        builder.getF64FloatAttr(kLossScaleGrowth),
        builder.getF64FloatAttr(kLossScaleBackoff),
        builder.getI64IntegerAttr(settings.lossScaleInterval));
    newLossScale = update.getNewScale();
    newGoodSteps = update.getNewGoodSteps();
    skip = update.getSkip();
  } else if (settings.clip > 0.0) {
    norm = givenNorm
               ? givenNorm
               : GlobalNormOp::create(builder, loc, scalarType, gradients);
  }
  if (settings.clip > 0.0)
    scale = ClipScaleOp::create(builder, loc, scalarType, norm,
                                builder.getF64FloatAttr(settings.clip));
  if (unscale)
    scale = scale ? Value(MulOp::create(builder, loc, scale, unscale))
                  : unscale;
  if (!scale)
    scale = entry.constant(scalarType, 1.0);

  SmallVector<Value> newParams;
  SmallVector<SmallVector<Value, 2>> newStates;
  for (auto [param, value, gradient, state] :
       llvm::zip_equal(params, paramValues, gradients, states)) {
    FloatAttr decay = builder.getF64FloatAttr(
        settings.decays(param.decayRank) ? settings.weightDecay : 0.0);
    newStates.emplace_back();
    if (settings.optimizer == "adamw") {
      auto update = AdamWUpdateOp::create(
          builder, loc, value, gradient, state[0], state[1], lr, t, scale,
          builder.getF64FloatAttr(settings.beta1),
          builder.getF64FloatAttr(settings.beta2),
          builder.getF64FloatAttr(settings.eps), decay, skip);
      newParams.push_back(update.getNewParam());
      newStates.back() = {update.getNewM(), update.getNewV()};
    } else if (settings.optimizer == "momentum") {
      auto update = MomentumUpdateOp::create(
          builder, loc, value, gradient, state[0], lr, scale,
          builder.getF64FloatAttr(settings.momentum), decay,
          settings.nesterov ? builder.getUnitAttr() : UnitAttr(), skip);
      newParams.push_back(update.getNewParam());
      newStates.back() = {update.getNewBuffer()};
    } else {
      newParams.push_back(SgdUpdateOp::create(builder, loc, value, gradient, lr,
                                              scale, decay, skip));
    }
  }

  entry.addOutput(lr, "lr");
  if (norm)
    entry.addOutput(norm, "grad_norm");
  if (lossScale) {
    entry.addOutput(newLossScale, "loss_scale");
    entry.addOutput(skip, "skipped");
  }
  for (auto [index, param, newParam] : llvm::enumerate(params, newParams))
    entry.addUpdate(toParam ? toParam(index, newParam) : newParam, param.name);
  SmallVector<std::string, 2> suffixes = stateSuffixes(settings);
  for (auto [param, newState] : llvm::zip_equal(params, newStates))
    for (auto [suffix, value] : llvm::zip_equal(suffixes, newState))
      entry.addUpdate(value, param.name + "." + suffix);
  if (!lossScale) {
    entry.addUpdate(t, "optimizer.step");
    return;
  }
  // A skipped step does not count: t - skip.
  entry.addUpdate(SubOp::create(builder, loc, t, skip), "optimizer.step");
  entry.addUpdate(newLossScale, kLossScaleState);
  entry.addUpdate(newGoodSteps, kGoodStepsState);
  Value skipped = entry.addState(scalarType, kSkippedStepsState);
  entry.addUpdate(AddOp::create(builder, loc, skipped, skip),
                  kSkippedStepsState);
}

/// Copies the forward's arguments (params and inputs, with their attributes)
/// into `entry`.
static SmallVector<Value> addForwardArguments(EntryBuilder &entry,
                                              func::FuncOp forward) {
  SmallVector<Value> arguments;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    arguments.push_back(entry.addArgument(forward.getArgument(i).getType(),
                                          forward.getArgAttrDict(i)));
  return arguments;
}

/// Returns the forward's results (the loss and the outputs) from `entry`.
static void addForwardResults(EntryBuilder &entry, func::FuncOp forward,
                              const ForwardAndGradients &built) {
  for (auto [index, value] : llvm::enumerate(built.forwardResults))
    entry.addResult(value, forward.getResultAttrDict(index)
                               ? forward.getResultAttrDict(index).getValue()
                               : ArrayRef<NamedAttribute>());
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static LogicalResult buildTrainStep(ModuleOp module, func::FuncOp forward,
                                    const TrainSettings &settings) {
  EntryBuilder entry(module, "train_step", forward.getLoc());
  SmallVector<Parameter> params = collectParameters(forward);
  SmallVector<Value> arguments = addForwardArguments(entry, forward);
  Value lossScale = addLossScale(entry, settings,
                                 getScalarType(params, module.getContext()));
  FailureOr<ForwardAndGradients> built =
      buildGradients(entry.builder, forward, arguments, lossScale);
  if (failed(built))
    return failure();
  addForwardResults(entry, forward, *built);

  SmallVector<Value> paramValues, gradients;
  for (auto [param, gradient] :
       llvm::zip_equal(params, built->parameterGradients)) {
    paramValues.push_back(arguments[param.argumentIndex]);
    gradients.push_back(gradient.gradient);
  }
  buildUpdate(entry, settings, params, paramValues, gradients, lossScale);
  entry.finish();
  return success();
}

/// `value` as the 1-D run of its row-major elements in `shard`.
static Value sliceShard(EntryBuilder &entry, Value value,
                        const ZeroShard &shard) {
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  Value flat =
      type.getRank() == 1
          ? value
          : ReshapeOp::create(
                entry.builder, entry.loc,
                RankedTensorType::get({type.getNumElements()}, element), value)
                .getResult();
  if (shard.begin == 0 && shard.end == type.getNumElements())
    return flat;
  return SliceOp::create(
      entry.builder, entry.loc,
      RankedTensorType::get({shard.end - shard.begin}, element), flat,
      entry.builder.getDenseI64ArrayAttr({shard.begin}));
}

/// `old` with the elements of `shard` replaced by `part`.
static Value replaceShard(EntryBuilder &entry, Value old, Value part,
                          const ZeroShard &shard) {
  auto type = cast<RankedTensorType>(old.getType());
  Type element = type.getElementType();
  int64_t elements = type.getNumElements();
  SmallVector<Value, 3> pieces;
  if (shard.begin > 0)
    pieces.push_back(sliceShard(entry, old, {0, shard.begin, false}));
  pieces.push_back(part);
  if (shard.end < elements)
    pieces.push_back(sliceShard(entry, old, {shard.end, elements, false}));
  Value flat =
      pieces.size() == 1
          ? pieces.front()
          : ConcatOp::create(entry.builder, entry.loc,
                             RankedTensorType::get({elements}, element), pieces,
                             entry.builder.getI64IntegerAttr(0))
                .getResult();
  if (type.getRank() == 1)
    return flat;
  return ReshapeOp::create(entry.builder, entry.loc, type, flat);
}

/// ZeRO-1's @apply_step for rank `settings.rank` (and, where clipping or
/// loss scaling needs the global norm, @shard_norm_step): each parameter's
/// part (ZeroShard) is updated from the accumulators there -- the runtime
/// has reduce-scattered them, so only that part holds the sum -- with only
/// that part's state; the rest of the parameter stays as it was until the
/// runtime all-gathers it. A parameter too small to split is updated whole
/// on every rank from its all-reduced accumulator.
static LogicalResult buildShardedApply(ModuleOp module, func::FuncOp forward,
                                       const TrainSettings &settings,
                                       ArrayRef<Parameter> params) {
  MLIRContext *context = module.getContext();
  RankedTensorType scalarType = getScalarType(params, context);
  double mean = 1.0 / double(settings.accumulate * settings.world);
  SmallVector<ZeroShard> shards;
  for (const Parameter &param : params)
    shards.push_back(ZeroShard::of(param.type.getNumElements(), settings.world,
                                   settings.rank));
  // The mean gradient over this rank's parts; a whole parameter counts on
  // rank 0 only, so that the ranks' norms add up to the global one.
  auto shardGradients = [&](EntryBuilder &entry, bool forNorm) {
    SmallVector<Value> gradients;
    for (auto [param, shard] : llvm::zip_equal(params, shards)) {
      Value accumulator = entry.addState(param.type, param.name + ".grad_acc");
      if (forNorm && shard.whole && settings.rank != 0)
        continue;
      Value part = sliceShard(entry, accumulator, shard);
      gradients.push_back(MulOp::create(
          entry.builder, entry.loc, part,
          entry.constant(cast<RankedTensorType>(part.getType()), mean)));
    }
    return gradients;
  };

  bool needsNorm = settings.clip > 0.0 || settings.scalesLoss();
  if (needsNorm) {
    EntryBuilder entry(module, kZeroNormEntry, forward.getLoc());
    SmallVector<Value> gradients = shardGradients(entry, /*forNorm=*/true);
    entry.addOutput(
        GlobalNormOp::create(entry.builder, entry.loc, scalarType, gradients),
        kZeroShardNormOutput);
    entry.finish();
  }

  EntryBuilder entry(module, "apply_step", forward.getLoc());
  Builder &b = entry.builder;
  SmallVector<Value> wholeValues;
  for (const Parameter &param : params)
    wholeValues.push_back(entry.addArgument(
        param.type, forward.getArgAttrDict(param.argumentIndex)));
  SmallVector<Value> gradients = shardGradients(entry, /*forNorm=*/false);
  SmallVector<Parameter> parts;
  SmallVector<Value> partValues;
  for (auto [param, shard, value] :
       llvm::zip_equal(params, shards, wholeValues)) {
    Parameter part = param;
    if (!shard.whole) {
      part.type = RankedTensorType::get({shard.end - shard.begin},
                                        param.type.getElementType());
      part.shard = b.getDictionaryAttr(
          {b.getNamedAttr("offset", b.getI64IntegerAttr(shard.begin)),
           b.getNamedAttr("shape",
                          b.getDenseI64ArrayAttr(param.type.getShape()))});
    }
    parts.push_back(part);
    partValues.push_back(shard.whole ? value : sliceShard(entry, value, shard));
  }
  Value givenNorm;
  if (needsNorm)
    givenNorm = entry.addArgument(
        scalarType,
        b.getDictionaryAttr(b.getNamedAttr(
            GraphDialect::kInputAttr, b.getStringAttr(kZeroGradNormInput))));
  buildUpdate(entry, settings, parts, partValues, gradients,
              addLossScale(entry, settings, scalarType), givenNorm,
              [&](size_t index, Value updated) -> Value {
                if (shards[index].whole)
                  return updated;
                return replaceShard(entry, wholeValues[index], updated,
                                    shards[index]);
              });
  for (const Parameter &param : params)
    entry.addUpdate(entry.constant(param.type, 0.0), param.name + ".grad_acc");
  entry.finish();
  return success();
}

static LogicalResult buildAccumulationSteps(ModuleOp module,
                                            func::FuncOp forward,
                                            const TrainSettings &settings) {
  SmallVector<Parameter> params = collectParameters(forward);

  // @accumulate_step: forward and backward of one micro-batch; the
  // gradients are added into the accumulators.
  {
    EntryBuilder entry(module, "accumulate_step", forward.getLoc());
    SmallVector<Value> arguments = addForwardArguments(entry, forward);
    SmallVector<Value> accumulators;
    for (const Parameter &param : params)
      accumulators.push_back(
          entry.addState(param.type, param.name + ".grad_acc"));
    // The accumulators hold the scaled gradients; @apply_step unscales.
    Value lossScale = addLossScale(entry, settings,
                                   getScalarType(params, module.getContext()));
    FailureOr<ForwardAndGradients> built =
        buildGradients(entry.builder, forward, arguments, lossScale);
    if (failed(built))
      return failure();
    addForwardResults(entry, forward, *built);
    for (auto [param, accumulator, gradient] :
         llvm::zip_equal(params, accumulators, built->parameterGradients))
      entry.addUpdate(AddOp::create(entry.builder, entry.loc, accumulator,
                                    gradient.gradient),
                      param.name + ".grad_acc");
    entry.finish();
  }

  if (settings.zero)
    return buildShardedApply(module, forward, settings, params);

  // @apply_step: the update with the mean gradient (over accumulate x world
  // micro-batches: the runtime has summed the ranks' accumulators);
  // accumulators reset.
  EntryBuilder entry(module, "apply_step", forward.getLoc());
  SmallVector<Value> paramValues, accumulators, gradients;
  for (const Parameter &param : params)
    paramValues.push_back(entry.addArgument(
        param.type, forward.getArgAttrDict(param.argumentIndex)));
  for (const Parameter &param : params)
    accumulators.push_back(
        entry.addState(param.type, param.name + ".grad_acc"));
  for (auto [param, accumulator] : llvm::zip_equal(params, accumulators))
    gradients.push_back(MulOp::create(
        entry.builder, entry.loc, accumulator,
        entry.constant(param.type,
                       1.0 / double(settings.accumulate * settings.world))));
  buildUpdate(entry, settings, params, paramValues, gradients,
              addLossScale(entry, settings,
                           getScalarType(params, module.getContext())));
  for (auto [param, accumulator] : llvm::zip_equal(params, accumulators))
    entry.addUpdate(entry.constant(param.type, 0.0), param.name + ".grad_acc");
  entry.finish();
  return success();
}

LogicalResult kiln::graph::buildTrainFunctions(ModuleOp module,
                                               const TrainSettings &settings) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("training needs a 'func.func @forward'");
  if (collectParameters(forward).empty())
    return forward.emitError("the model has no parameters to train");
  for (StringRef name : {"train_step", "accumulate_step", "apply_step"})
    if (module.lookupSymbol(name))
      return module.emitError("the module already has @") << name;
  // The entries train on a copy of the forward in its training phase
  // (batch statistics, buffer updates); @forward itself stays the model in
  // inference, as eval_step and predict run it.
  // (A model without batch_norm has one phase: no copy.)
  bool twoPhases = hasTrainingPhase(forward);
  func::FuncOp training = twoPhases ? forward.clone() : forward;
  resolveTrainingPhase(training, /*training=*/true);
  LogicalResult built =
      settings.accumulate == 1 && settings.world == 1
          ? buildTrainStep(module, training, settings)
          : buildAccumulationSteps(module, training, settings);
  if (twoPhases) {
    training.erase();
    resolveTrainingPhase(forward, /*training=*/false);
  }
  return built;
}
