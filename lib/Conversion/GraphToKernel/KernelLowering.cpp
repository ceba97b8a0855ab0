//===- KernelLowering.cpp - State of lowering one graph function -----------===//
//
// Part of Kiln. Buffers of graph values, output buffers, kernel creation and
// the runtime-provided buffers of one kernel.entry under construction.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace kiln;

/// The discardable attribute naming the graph op(s) an entry-level op
/// implements; the plan's Op.name.
static constexpr llvm::StringLiteral kOriginAttr = "kernel.origin";

KernelLowering::KernelLowering(ModuleOp module, kernel::EntryOp entry,
                               func::FuncOp source, bool training)
    : module(module), entry(entry), builder(module.getContext()),
      training(training) {
  builder.setInsertionPointToEnd(&entry.getBody().front());
  // Arguments: bound by position to the source's used arguments, then one
  // output per result (EntryOp construction in ConvertGraphToKernel.cpp).
  Block &entryBlock = entry.getBody().front();
  unsigned next = 0;
  for (BlockArgument argument : source.getArguments())
    if (!argument.use_empty())
      bind(argument, entryBlock.getArgument(next++));
  auto returnOp = cast<func::ReturnOp>(source.getBody().front().getTerminator());
  for (Value result : returnOp.getOperands()) {
    Value output = entryBlock.getArgument(next++);
    outputArguments.push_back(output);
    outputBuffers.try_emplace(result, output);
  }
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
  auto it = outputBuffers.find(tensor);
  if (it != outputBuffers.end() && it->second) {
    Value output = it->second;
    it->second = Value(); // Handed out once; later uses copy.
    return output;
  }
  return allocateTransient(getBufferType(tensor.getType()));
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
  op->setAttr(kOriginAttr, builder.getStringAttr(origin));
}

kernel::LaunchOp KernelLowering::launch(Location loc, StringRef origin,
                                        ValueRange launchBuffers, int64_t range,
                                        int64_t grain, KernelBodyBuilder body) {
  SmallVector<Type> argumentTypes;
  for (Value buffer : launchBuffers)
    argumentTypes.push_back(buffer.getType());

  // Kernels are numbered module-wide: kN, exported as kiln_kN.
  SymbolTable symbols(module);
  std::string name;
  do
    name = "k" + std::to_string(nextKernelNumber++);
  while (symbols.lookup(name));

  OpBuilder moduleBuilder(module.getContext());
  moduleBuilder.setInsertionPoint(entry);
  auto kernelFunc = kernel::FuncOp::create(
      moduleBuilder, loc, name,
      moduleBuilder.getFunctionType(argumentTypes, {}), range, grain);
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
    status = addRuntimeBuffer(
        kernel::BufferKind::Status, kernel::KernelDialect::kStatusName,
        MemRefType::get({2}, builder.getIntegerType(64)));
  return status;
}

void KernelLowering::finish(ValueRange results) {
  for (auto [result, output] : llvm::zip_equal(results, outputArguments)) {
    Value buffer = lookup(result);
    if (buffer == output)
      continue;
    auto copy = kernel::CopyOp::create(builder, result.getLoc(), buffer, output);
    setOrigin(copy, "func.return");
  }
  kernel::ReturnOp::create(builder, entry.getLoc());
}
