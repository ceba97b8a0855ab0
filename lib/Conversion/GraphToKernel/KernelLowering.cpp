//===- KernelLowering.cpp - State of lowering one graph function
//-----------===//
//
// Part of Kiln. Buffers of graph values, output buffers, kernel creation and
// the runtime-provided buffers of one kernel.entry under construction.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"
#include "kiln/Conversion/GraphToKernel/KernelBuilders.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace kiln;

bool kiln::isEntryArgument(func::FuncOp function, BlockArgument argument) {
  if (!argument.use_empty())
    return true;
  for (unsigned i = 0, e = function.getNumResults(); i < e; ++i)
    if (StringAttr target = graph::getUpdateTarget(function, i))
      if (graph::findPersistentArgument(function, target) ==
          argument.getArgNumber())
        return true;
  return false;
}

KernelLowering::KernelLowering(ModuleOp module, kernel::EntryOp entry,
                               func::FuncOp source, bool training,
                               const GraphToKernelPatternSet &patterns,
                               const TargetInfo &target, bool fusedAttention)
    : module(module), symbols(module), entry(entry),
      builder(module.getContext()), training(training), target(target),
      schedule(target.getScheduleParameters()), fusedAttention(fusedAttention),
      patterns(patterns) {
  builder.setInsertionPointToEnd(&entry.getBody().front());
  // Arguments: bound by position to the source's entry arguments, then one
  // output per result that is not an update (EntryOp construction in
  // ConvertGraphToKernel.cpp).
  Block &entryBlock = entry.getBody().front();
  unsigned next = 0;
  llvm::DenseMap<unsigned, Value> argumentBuffers;
  for (BlockArgument argument : source.getArguments()) {
    if (!isEntryArgument(source, argument))
      continue;
    argumentBuffers[argument.getArgNumber()] = entryBlock.getArgument(next);
    bind(argument, entryBlock.getArgument(next++));
  }
  auto returnOp =
      cast<func::ReturnOp>(source.getBody().front().getTerminator());
  for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
    if (StringAttr target = graph::getUpdateTarget(source, index)) {
      // Validated by the entry's construction.
      Value destination = argumentBuffers.lookup(
          *graph::findPersistentArgument(source, target));
      updates.push_back({result, destination});
      updateBuffers.try_emplace(result, destination);
      continue;
    }
    Value output = entryBlock.getArgument(next++);
    outputs.push_back({result, output});
    outputBuffers.try_emplace(result, output);
  }
}

Value KernelLowering::getRootBuffer(Value buffer) {
  while (auto view = buffer.getDefiningOp<kernel::ViewOp>())
    buffer = view.getSource();
  return buffer;
}

void KernelLowering::beginOp(Operation *op, bool readsAtResultIndex) {
  currentOp = op;
  currentReadsAtResultIndex = readsAtResultIndex;
}

bool KernelLowering::canUpdateInPlace(Value destination) const {
  if (!currentOp)
    return false;
  auto holdsDestination = [&](Value operand) {
    auto it = buffers.find(operand);
    return it != buffers.end() && getRootBuffer(it->second) == destination;
  };
  // The op itself: an operand in the destination is read safely only at the
  // index being written, which needs the result's element count.
  int64_t resultElements =
      cast<ShapedType>(currentOp->getResult(0).getType()).getNumElements();
  for (Value operand : currentOp->getOperands())
    if (holdsDestination(operand) &&
        (!currentReadsAtResultIndex ||
         cast<ShapedType>(operand.getType()).getNumElements() !=
             resultElements))
      return false;
  // Every later op, the return included: a value already lowered into the
  // destination (the old parameter, or a view of it) must not be read after
  // it is overwritten. Values defined later are not bound yet: none of them
  // can hold the old contents.
  for (Operation *op = currentOp->getNextNode(); op; op = op->getNextNode())
    for (Value operand : op->getOperands())
      if (holdsDestination(operand))
        return false;
  return true;
}

Value KernelLowering::lookup(Value tensor) const {
  auto it = buffers.find(tensor);
  assert(it != buffers.end() && "graph value lowered before its definition");
  return it->second;
}

void KernelLowering::bind(Value tensor, Value buffer) {
  buffers[tensor] = buffer;
}

MemRefType KernelLowering::getBufferType(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

Value KernelLowering::allocateResult(Value tensor) {
  if (Value preset = presetResults.lookup(tensor))
    return preset;
  auto update = updateBuffers.find(tensor);
  if (update != updateBuffers.end() && update->second &&
      canUpdateInPlace(update->second)) {
    Value destination = update->second;
    update->second = Value(); // Written in place; finish() copies nothing.
    return destination;
  }
  auto it = outputBuffers.find(tensor);
  if (it != outputBuffers.end() && it->second) {
    Value output = it->second;
    it->second = Value(); // Handed out once; later uses copy.
    return output;
  }
  return allocateTransient(getBufferType(tensor.getType()));
}

ElementSource KernelLowering::getElementSource(Value tensor,
                                               ArrayRef<int64_t> shape) {
  auto fused = fusedSources.find(tensor);
  if (fused != fusedSources.end())
    return fused->second(shape);
  return ElementSource({view(lookup(tensor), shape)},
                       [](OpBuilder &b, Location loc, ValueRange args,
                          ValueRange indices, bool) -> Value {
                         return memref::LoadOp::create(b, loc, args[0],
                                                       indices);
                       });
}

void KernelLowering::setFusedSource(Value tensor, FusedSourceBuilder source) {
  fusedSources[tensor] = std::move(source);
}

void KernelLowering::presetResult(Value tensor, Value buffer) {
  presetResults[tensor] = buffer;
}

LogicalResult KernelLowering::lower(Operation *op) {
  const GraphToKernelPattern *pattern =
      patterns.lookup(op->getName().getStringRef());
  if (!pattern)
    return op->emitError() << "no kernel lowering for '" << op->getName()
                           << "' yet";
  beginOp(op, pattern->readsAtResultIndex());
  return pattern->lower(op, *this);
}

LogicalResult KernelLowering::lowerNested(Operation *op, StringRef origin) {
  Operation *outer = currentOp;
  bool outerReadsAtResultIndex = currentReadsAtResultIndex;
  originOverride = origin.str();
  LogicalResult result = lower(op);
  originOverride.clear();
  beginOp(outer, outerReadsAtResultIndex);
  return result;
}

Value KernelLowering::allocateTransient(MemRefType type) {
  return kernel::AllocOp::create(builder, entry.getLoc(), type,
                                 /*arena_offset=*/IntegerAttr());
}

Value KernelLowering::view(Value buffer, ArrayRef<int64_t> shape) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getShape() == shape)
    return buffer;
  // A view of a view aliases the same root: view the root directly.
  if (auto inner = buffer.getDefiningOp<kernel::ViewOp>())
    buffer = inner.getSource();
  auto viewType = MemRefType::get(shape, type.getElementType());
  if (cast<MemRefType>(buffer.getType()) == viewType)
    return buffer;
  return kernel::ViewOp::create(builder, buffer.getLoc(), viewType, buffer);
}

void KernelLowering::setOrigin(Operation *op, StringRef origin) {
  if (!originOverride.empty())
    origin = originOverride;
  op->setAttr(kernel::KernelDialect::kOriginAttr,
              builder.getStringAttr(origin));
}

kernel::LaunchOp KernelLowering::launch(Location loc, StringRef origin,
                                        ValueRange launchBuffers, int64_t range,
                                        int64_t work, KernelBodyBuilder body) {
  SmallVector<Type> argumentTypes;
  for (Value buffer : launchBuffers)
    argumentTypes.push_back(buffer.getType());

  // Kernels are numbered module-wide: kN, exported as kiln_kN.
  OpBuilder moduleBuilder(module.getContext());
  moduleBuilder.setInsertionPoint(entry);
  auto kernelFunc = kernel::FuncOp::create(
      moduleBuilder, loc,
      kernel::getUniqueKernelName(symbols, nextKernelNumber),
      moduleBuilder.getFunctionType(argumentTypes, {}), range);
  // A grain only where the target cuts ranges into chunks.
  if (std::optional<int64_t> perChunk = target.getWorkPerChunk())
    kernelFunc.setGrainAttr(moduleBuilder.getI64IntegerAttr(
        kb::chooseGrain(range, work, *perChunk)));
  symbols.insert(kernelFunc);
  Block *block = moduleBuilder.createBlock(
      &kernelFunc.getBody(), {}, argumentTypes,
      SmallVector<Location>(argumentTypes.size(), loc));
  OpBuilder bodyBuilder = OpBuilder::atBlockEnd(block);
  kernel::ReturnOp::create(bodyBuilder, loc);
  bodyBuilder.setInsertionPointToStart(block);
  body(bodyBuilder, loc, block->getArguments());

  auto launchOp = kernel::LaunchOp::create(
      builder, loc, FlatSymbolRefAttr::get(kernelFunc.getSymNameAttr()),
      launchBuffers);
  setOrigin(launchOp, origin);
  return launchOp;
}

Value KernelLowering::addRuntimeBuffer(kernel::BufferKind kind, StringRef name,
                                       MemRefType type) {
  NamedAttribute attrs[] = {
      builder.getNamedAttr(kernel::KernelDialect::kNameAttr,
                           builder.getStringAttr(name)),
      builder.getNamedAttr(kernel::KernelDialect::kKindAttr,
                           kernel::BufferKindAttr::get(getContext(), kind))};
  unsigned index = entry.getNumArguments();
  (void)entry.insertArgument(index, type, builder.getDictionaryAttr(attrs),
                             entry.getLoc());
  return entry.getArgument(index);
}

Value KernelLowering::getRngState() {
  if (!rngState)
    rngState = addRuntimeBuffer(
        kernel::BufferKind::RngState, kernel::KernelDialect::kRngStateName,
        MemRefType::get({4}, builder.getIntegerType(32)));
  return rngState;
}

Value KernelLowering::getStatus() {
  if (!status)
    status = addRuntimeBuffer(kernel::BufferKind::Status,
                              kernel::KernelDialect::kStatusName,
                              MemRefType::get({2}, builder.getIntegerType(64)));
  return status;
}

/// Whether `buffer` is a constant of zeros.
static bool isZeroConstant(Value buffer) {
  auto constant = buffer.getDefiningOp<kernel::ConstantOp>();
  if (!constant)
    return false;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat)
    return false;
  if (auto value = dyn_cast<FloatAttr>(splat.getSplatValue<Attribute>()))
    return value.getValue().isPosZero();
  if (auto value = dyn_cast<IntegerAttr>(splat.getSplatValue<Attribute>()))
    return value.getValue().isZero();
  return false;
}

void KernelLowering::finish(ValueRange) {
  // Outputs first: one may read a parameter or state that an update below
  // overwrites.
  for (auto [result, output] : outputs) {
    Value buffer = lookup(result);
    if (buffer == output)
      continue;
    auto copy =
        kernel::CopyOp::create(builder, result.getLoc(), buffer, output);
    setOrigin(copy, "func.return");
  }
  // Then the updates that were not written in place. A source that is
  // itself a parameter or state buffer goes before the sources in
  // transients and constants (which no update overwrites); the training
  // entries never read one updated buffer into another.
  SmallVector<std::pair<Value, Value>> copies, lateCopies;
  llvm::SmallSetVector<Operation *, 4> zeroConstants;
  for (auto [result, destination] : updates) {
    Value buffer = lookup(result);
    if (getRootBuffer(buffer) == destination)
      continue;
    if (isa<BlockArgument>(getRootBuffer(buffer)))
      copies.push_back({buffer, destination});
    else
      lateCopies.push_back({buffer, destination});
  }
  llvm::append_range(copies, lateCopies);
  for (auto [buffer, destination] : copies) {
    Operation *op;
    if (isZeroConstant(buffer)) {
      op = kernel::ZeroOp::create(builder, entry.getLoc(), destination);
      zeroConstants.insert(buffer.getDefiningOp());
    } else
      op = kernel::CopyOp::create(builder, entry.getLoc(), buffer, destination);
    setOrigin(op, "graph.update");
  }
  // Zeros written with kernel.zero need no buffer of their own in the plan.
  for (Operation *constant : zeroConstants)
    if (constant->use_empty())
      constant->erase();
  kernel::ReturnOp::create(builder, entry.getLoc());
}
