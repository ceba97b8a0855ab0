//===- BufferAccess.cpp - What each entry op does to its buffers ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/BufferAccess.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace kiln::kernel;

Value kiln::kernel::getRootBuffer(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewLikeOpInterface>())
    buffer = view.getViewSource();
  return buffer;
}

bool kiln::kernel::isScheduledOp(Operation *op) {
  return !isa<AllocOp, ViewOp, ConstantOp, ReturnOp>(op);
}

/// What `op` declares it does to `value` (ReadWrite for an effect that is
/// neither a read nor a write).
static BufferAccess getDeclaredAccess(MemoryEffectOpInterface op, Value value) {
  SmallVector<MemoryEffects::EffectInstance> instances;
  op.getEffectsOnValue(value, instances);
  BufferAccess access = BufferAccess::None;
  for (const MemoryEffects::EffectInstance &instance : instances) {
    if (isa<MemoryEffects::Read>(instance.getEffect()))
      access = access | BufferAccess::Read;
    else if (isa<MemoryEffects::Write>(instance.getEffect()))
      access = access | BufferAccess::Write;
    else
      access = access | BufferAccess::ReadWrite;
  }
  return access;
}

/// The access of one use of a memref inside a kernel body.
static BufferAccess getUseAccess(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user)) {
    if (linalgOp.isDpsInput(&use))
      return BufferAccess::Read;
    if (linalgOp.isDpsInit(&use))
      return linalgOp.payloadUsesValueFromOperand(&use)
                 ? BufferAccess::ReadWrite
                 : BufferAccess::Write;
    return BufferAccess::ReadWrite;
  }
  // A view inside the body: what its uses do.
  if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
    if (view.getViewSource() != use.get())
      return BufferAccess::ReadWrite;
    BufferAccess access = BufferAccess::None;
    for (Value result : user->getResults())
      for (OpOperand &resultUse : result.getUses())
        access = access | getUseAccess(resultUse);
    return access;
  }
  auto effects = dyn_cast<MemoryEffectOpInterface>(user);
  if (!effects)
    return BufferAccess::ReadWrite;
  return getDeclaredAccess(effects, use.get());
}

/// The elementwise pairs of a body that is one linalg op with parallel
/// loops (see analyzeKernelArguments).
static void findElementwisePairs(FuncOp kernel,
                                 SmallVectorImpl<ElementwisePair> &pairs) {
  Block &body = kernel.getBody().front();
  if (!llvm::hasSingleElement(body.without_terminator()))
    return;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(&body.front());
  if (!linalgOp || !linalgOp.hasPureBufferSemantics() ||
      linalgOp.getNumLoops() != linalgOp.getNumParallelLoops())
    return;
  // An argument qualifies when this operand is its only use, so that no
  // other operand reads it at another index.
  auto soleArgumentUse = [&](OpOperand &operand) -> BlockArgument {
    auto argument = dyn_cast<BlockArgument>(operand.get());
    if (!argument || argument.getOwner() != &body || !argument.hasOneUse())
      return nullptr;
    if (!linalgOp.getMatchingIndexingMap(&operand).isIdentity())
      return nullptr;
    return argument;
  };
  SmallVector<BlockArgument> inputs;
  for (OpOperand *input : linalgOp.getDpsInputOperands())
    if (BlockArgument argument = soleArgumentUse(*input))
      inputs.push_back(argument);
  llvm::SmallDenseSet<unsigned> pairedInputs;
  for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
    BlockArgument output = soleArgumentUse(init);
    if (!output || linalgOp.payloadUsesValueFromOperand(&init))
      continue;
    for (BlockArgument input : inputs) {
      if (input.getType() != output.getType() ||
          pairedInputs.contains(input.getArgNumber()))
        continue;
      pairs.push_back({input.getArgNumber(), output.getArgNumber()});
      pairedInputs.insert(input.getArgNumber());
      break;
    }
  }
}

KernelArgumentEffects kiln::kernel::analyzeKernelArguments(FuncOp kernel) {
  KernelArgumentEffects effects;
  Block &body = kernel.getBody().front();
  for (BlockArgument argument : body.getArguments()) {
    BufferAccess access = BufferAccess::None;
    for (OpOperand &use : argument.getUses())
      access = access | getUseAccess(use);
    effects.access.push_back(access);
  }
  findElementwisePairs(kernel, effects.elementwisePairs);
  return effects;
}

const KernelArgumentEffects *
BufferAccessAnalysis::getKernelEffects(LaunchOp launch) {
  FuncOp kernel = symbols ? symbols->lookup<FuncOp>(launch.getKernel())
                          : launch.getKernelFunc();
  if (!kernel)
    return nullptr;
  auto it = kernelEffects.find(kernel);
  if (it == kernelEffects.end())
    it =
        kernelEffects.try_emplace(kernel, analyzeKernelArguments(kernel)).first;
  return &it->second;
}

SmallVector<BufferAccess>
BufferAccessAnalysis::getOperandAccess(Operation *op) {
  SmallVector<BufferAccess> access;
  for (Value operand : op->getOperands())
    access.push_back(isa<MemRefType>(operand.getType())
                         ? BufferAccess::ReadWrite
                         : BufferAccess::None);
  if (auto launch = dyn_cast<LaunchOp>(op)) {
    if (const KernelArgumentEffects *effects = getKernelEffects(launch))
      if (effects->access.size() == access.size())
        access.assign(effects->access.begin(), effects->access.end());
  } else if (auto effects = dyn_cast<MemoryEffectOpInterface>(op)) {
    // The op's contract (kernel.gemm, copy, zero declare their effects).
    for (auto [index, operand] : llvm::enumerate(op->getOperands()))
      if (isa<MemRefType>(operand.getType()))
        access[index] = getDeclaredAccess(effects, operand);
  }
  return access;
}

SmallVector<ElementwisePair>
BufferAccessAnalysis::getElementwiseOperandPairs(Operation *op) {
  auto launch = dyn_cast<LaunchOp>(op);
  if (!launch)
    return {};
  const KernelArgumentEffects *effects = getKernelEffects(launch);
  if (!effects || effects->access.size() != op->getNumOperands())
    return {};
  return effects->elementwisePairs;
}
