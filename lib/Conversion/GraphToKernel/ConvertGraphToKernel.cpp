//===- ConvertGraphToKernel.cpp - The --convert-graph-to-kernel pass
//-------===//
//
// Part of Kiln. Builds one kernel.entry per entry point and lowers the graph
// function behind it op by op, in program order, through the patterns of
// populateGraphToKernelPatterns.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/Passes.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/IR/GraphEntries.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTGRAPHTOKERNEL
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

using graph::GraphDialect;

/// Entries in which dropout is active.
static bool isTrainingEntry(StringRef name) {
  return name == "train_step" || name == "grad_step" ||
         name == "accumulate_step";
}

/// Erases ops whose results are unused and that have no side effects, from
/// the end of the body up, and the unused results of fusions with the ops
/// that computed only them.
static void eraseDeadOps(func::FuncOp function) {
  Block &body = function.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (isOpTriviallyDead(&op)) {
      op.erase();
      continue;
    }
    if (auto fusion = dyn_cast<graph::FusionOp>(op))
      fusion.dropUnusedResults();
  }
}

/// A copy of `forward` without its loss result: the function behind
/// `predict`. Null when nothing but the loss is returned.
static func::FuncOp buildPredictFunction(func::FuncOp forward) {
  func::FuncOp predict = forward.clone();
  llvm::BitVector loss(predict.getNumResults());
  for (unsigned i = 0, e = predict.getNumResults(); i < e; ++i)
    loss[i] =
        static_cast<bool>(predict.getResultAttr(i, GraphDialect::kLossAttr));
  if (loss.all()) {
    predict.erase();
    return nullptr;
  }
  auto returnOp =
      cast<func::ReturnOp>(predict.getBody().front().getTerminator());
  returnOp->eraseOperands(loss);
  (void)predict.eraseResults(loss);
  eraseDeadOps(predict);
  return predict;
}

/// The name, kind and initializer of the entry buffer for a function
/// argument, from its graph attributes.
static LogicalResult describeArgument(func::FuncOp function, unsigned index,
                                      SmallVectorImpl<NamedAttribute> &attrs) {
  Builder b(function.getContext());
  auto param =
      function.getArgAttrOfType<StringAttr>(index, GraphDialect::kParamAttr);
  auto input =
      function.getArgAttrOfType<StringAttr>(index, GraphDialect::kInputAttr);
  auto state =
      function.getArgAttrOfType<StringAttr>(index, GraphDialect::kStateAttr);
  kernel::BufferKind kind;
  StringAttr name;
  if (param) {
    kind = kernel::BufferKind::Param;
    name = param;
    if (Attribute init = function.getArgAttr(index, GraphDialect::kInitAttr))
      attrs.push_back(b.getNamedAttr(kernel::KernelDialect::kInitAttr, init));
  } else if (input) {
    kind = kernel::BufferKind::Input;
    name = input;
  } else if (state) {
    // Every piece of training state -- moments, momentum buffers, the step
    // count, gradient accumulators, fp16's loss scale -- is OptimizerState:
    // the runtime initializes it (zeros, or the constant its initializer
    // gives) and saves it in checkpoints, so that an accumulation in
    // progress survives a resume.
    kind = kernel::BufferKind::OptimizerState;
    name = state;
    if (Attribute init = function.getArgAttr(index, GraphDialect::kInitAttr))
      attrs.push_back(b.getNamedAttr(kernel::KernelDialect::kInitAttr, init));
    if (Attribute shard = function.getArgAttr(index, GraphDialect::kShardAttr))
      attrs.push_back(b.getNamedAttr(kernel::KernelDialect::kShardAttr, shard));
  } else {
    return function.emitError()
           << "argument " << index << " of @" << function.getSymName()
           << " has none of '" << GraphDialect::kParamAttr << "', '"
           << GraphDialect::kInputAttr << "' and '" << GraphDialect::kStateAttr
           << "'";
  }
  attrs.push_back(b.getNamedAttr(kernel::KernelDialect::kNameAttr, name));
  attrs.push_back(
      b.getNamedAttr(kernel::KernelDialect::kKindAttr,
                     kernel::BufferKindAttr::get(b.getContext(), kind)));
  return success();
}

/// The name of the output buffer of result `index`.
static FailureOr<StringAttr> getOutputName(func::FuncOp function,
                                           unsigned index) {
  if (auto name = function.getResultAttrOfType<StringAttr>(
          index, GraphDialect::kOutputAttr))
    return name;
  if (function.getResultAttr(index, GraphDialect::kLossAttr))
    return StringAttr::get(function.getContext(), "loss");
  return function.emitError()
         << "result " << index << " of @" << function.getSymName()
         << " has no '" << GraphDialect::kOutputAttr << "' name";
}

/// Checks that every `graph.update` result of `function` names a parameter
/// or state argument of the same type.
static LogicalResult verifyUpdateTargets(func::FuncOp function) {
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i) {
    auto target = graph::getUpdateTarget(function, i);
    if (!target)
      continue;
    std::optional<unsigned> argument =
        graph::findPersistentArgument(function, target);
    if (!argument)
      return function.emitError()
             << "result " << i << " of @" << function.getSymName()
             << " updates '" << target.getValue()
             << "', which is neither a parameter nor a state argument";
    if (function.getArgument(*argument).getType() !=
        function.getResultTypes()[i])
      return function.emitError()
             << "result " << i << " of @" << function.getSymName()
             << " updates '" << target.getValue() << "' with another type";
  }
  return success();
}

/// Creates the kernel.entry for `function`: its used arguments and those
/// that a result updates, then one output buffer per result that is not an
/// update.
static FailureOr<kernel::EntryOp>
createEntry(ModuleOp module, func::FuncOp function, StringRef name) {
  Builder b(module.getContext());
  if (failed(verifyUpdateTargets(function)))
    return failure();
  SmallVector<Type> types;
  SmallVector<Attribute> argAttrs;
  SmallVector<Location> locs;
  for (BlockArgument argument : function.getArguments()) {
    if (!isEntryArgument(function, argument))
      continue;
    SmallVector<NamedAttribute> attrs;
    if (failed(describeArgument(function, argument.getArgNumber(), attrs)))
      return failure();
    types.push_back(KernelLowering::getBufferType(argument.getType()));
    argAttrs.push_back(b.getDictionaryAttr(attrs));
    locs.push_back(argument.getLoc());
  }
  for (auto [index, type] : llvm::enumerate(function.getResultTypes())) {
    if (graph::getUpdateTarget(function, index))
      continue;
    FailureOr<StringAttr> outputName = getOutputName(function, index);
    if (failed(outputName))
      return failure();
    NamedAttribute attrs[] = {
        b.getNamedAttr(kernel::KernelDialect::kNameAttr, *outputName),
        b.getNamedAttr(kernel::KernelDialect::kKindAttr,
                       kernel::BufferKindAttr::get(
                           b.getContext(), kernel::BufferKind::Output))};
    types.push_back(KernelLowering::getBufferType(type));
    argAttrs.push_back(b.getDictionaryAttr(attrs));
    locs.push_back(function.getLoc());
  }
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto entry = kernel::EntryOp::create(builder, function.getLoc(), name,
                                       builder.getFunctionType(types, {}));
  entry.setArgAttrsAttr(builder.getArrayAttr(argAttrs));
  builder.createBlock(&entry.getBody(), {}, types, locs);
  return entry;
}

/// Lowers `function` into a new entry named `name`.
static LogicalResult lowerFunction(ModuleOp module, func::FuncOp function,
                                   StringRef name,
                                   const GraphToKernelPatternSet &patterns,
                                   const TargetInfo &target,
                                   bool fusedAttention) {
  FailureOr<kernel::EntryOp> entry = createEntry(module, function, name);
  if (failed(entry))
    return failure();
  KernelLowering lowering(module, *entry, function, isTrainingEntry(name),
                          patterns, target, fusedAttention);
  for (Operation &op : function.getBody().front()) {
    if (auto returnOp = dyn_cast<func::ReturnOp>(op)) {
      lowering.finish(returnOp.getOperands());
      return success();
    }
    // Results another op's kernel wrote already (a weight's low-precision
    // copy, written by its update).
    if (op.getNumResults() != 0 &&
        llvm::all_of(op.getResults(),
                     [&](Value result) { return lowering.isBound(result); }))
      continue;
    if (failed(lowering.lower(&op)))
      return failure();
  }
  return function.emitError() << "does not end in func.return";
}

namespace {
struct ConvertGraphToKernelPass
    : kiln::impl::ConvertGraphToKernelBase<ConvertGraphToKernelPass> {
  using ConvertGraphToKernelBase::ConvertGraphToKernelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<TargetKind> kind = parseTargetName(target);
    std::string error = "unknown target '" + target + "': expected cpu or cuda";
    std::unique_ptr<TargetInfo> targetInfo =
        kind ? TargetInfo::create(*kind, "", error) : nullptr;
    if (!targetInfo) {
      module.emitError() << "convert-graph-to-kernel: " << error;
      return signalPassFailure();
    }
    GraphToKernelPatternSet patterns;
    populateGraphToKernelPatterns(patterns);

    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions) {
      if (function.isExternal())
        continue;
      if (!function.getBody().hasOneBlock()) {
        function.emitError() << "graph functions have a single block";
        return signalPassFailure();
      }
      // @forward becomes eval_step and predict: batch statistics give way
      // to running ones, and no state is updated. (The train entries were
      // built from its training phase.)
      if (function.getSymName() == "forward")
        graph::resolveTrainingPhase(function, /*training=*/false);
      eraseDeadOps(function);
      if (function.getSymName() == "forward") {
        if (func::FuncOp predict = buildPredictFunction(function)) {
          LogicalResult result =
              lowerFunction(module, predict, "predict", patterns, *targetInfo,
                            fusedAttention);
          predict.erase();
          if (failed(result))
            return signalPassFailure();
        }
        if (failed(lowerFunction(module, function, "eval_step", patterns,
                                 *targetInfo, fusedAttention)))
          return signalPassFailure();
      } else if (failed(lowerFunction(module, function, function.getSymName(),
                                      patterns, *targetInfo, fusedAttention))) {
        return signalPassFailure();
      }
      function.erase();
    }
  }
};
} // namespace
