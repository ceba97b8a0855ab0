//===- RestrictToChunk.cpp - A kernel body over [begin, end)
//---------------===//
//
// Part of Kiln. The step that turns "the whole range" into "the slice the
// runtime asks for": only the first dim of a top-level loop changes, so every
// iteration computes exactly what it computed before, whatever the chunking.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/RestrictToChunk.h"

#include "kiln/Dialect/Kernel/IR/KernelOps.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

void kiln::addKernelBodyToBranchesPasses(OpPassManager &pm) {
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expandOptions;
  expandOptions.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expandOptions));
}

/// Replaces `kernel` by a private func.func taking its memrefs then `begin`
/// and `end` (index), with the same body.
func::FuncOp kiln::outlineKernelBody(kernel::FuncOp kernel, StringRef name) {
  OpBuilder builder(kernel);
  MLIRContext *context = kernel.getContext();
  SmallVector<Type> types(kernel.getArgumentTypes());
  types.append(2, IndexType::get(context));
  auto body = func::FuncOp::create(builder, kernel.getLoc(), name,
                                   builder.getFunctionType(types, {}));
  body.setPrivate();
  body.getBody().takeBody(kernel.getBody());
  Block &block = body.getBody().front();
  block.addArgument(IndexType::get(context), kernel.getLoc());
  block.addArgument(IndexType::get(context), kernel.getLoc());
  Operation *terminator = block.getTerminator();
  builder.setInsertionPoint(terminator);
  func::ReturnOp::create(builder, terminator->getLoc());
  terminator->erase();
  return body;
}

/// Whether `value` is the index constant `expected`.
static bool isConstant(Value value, int64_t expected) {
  std::optional<int64_t> constant = getConstantIntValue(value);
  return constant && *constant == expected;
}

/// A segment's loop over [0, size) stands for [offset, offset + size) of
/// the kernel's range: the chunk [begin, end) becomes, in the loop's own
/// indices, [clamp(begin - offset), clamp(end - offset)) with clamp to
/// [0, size]; a chunk outside the segment runs no iteration.
static LogicalResult restrictSegment(scf::ParallelOp loop, int64_t offset,
                                     int64_t range, Value begin, Value end) {
  std::optional<int64_t> size = getConstantIntValue(loop.getUpperBound()[0]);
  if (!isConstant(loop.getLowerBound()[0], 0) || !size ||
      !isConstant(loop.getStep()[0], 1) || offset < 0 || offset + *size > range)
    return loop.emitError() << "a segment loop must run over [0, size) in "
                               "steps of 1 within the kernel's range "
                            << range;
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  Value offsetValue = arith::ConstantIndexOp::create(b, loc, offset);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value sizeValue = arith::ConstantIndexOp::create(b, loc, *size);
  auto clampToSegment = [&](Value position) -> Value {
    // begin and end are in [0, range] and offset <= range: begin - offset
    // as a signed index is exact.
    Value shifted = arith::SubIOp::create(b, loc, position, offsetValue);
    Value low = arith::MaxSIOp::create(b, loc, shifted, zero);
    return arith::MinSIOp::create(b, loc, low, sizeValue);
  };
  unsigned dims = loop.getNumLoops();
  loop->setOperand(0, clampToSegment(begin));
  loop->setOperand(dims, clampToSegment(end));
  loop->removeAttr(kiln::kernel::KernelDialect::kSegmentOffsetAttr);
  return success();
}

LogicalResult kiln::restrictToChunk(func::FuncOp body, int64_t range) {
  Block &block = body.getBody().front();
  unsigned numArgs = block.getNumArguments();
  Value begin = block.getArgument(numArgs - 2);
  Value end = block.getArgument(numArgs - 1);
  Operation *terminator = block.getTerminator();

  if (range == 1) {
    // A sequential kernel: the chunk [0, 1) runs it, an empty chunk does not.
    SmallVector<Operation *> sequential;
    for (Operation &op : block.without_terminator())
      sequential.push_back(&op);
    OpBuilder builder(terminator);
    Value nonEmpty = arith::CmpIOp::create(
        builder, body.getLoc(), arith::CmpIPredicate::slt, begin, end);
    auto ifOp = scf::IfOp::create(builder, body.getLoc(), nonEmpty,
                                  /*withElseRegion=*/false);
    Operation *thenYield = ifOp.thenBlock()->getTerminator();
    for (Operation *op : sequential)
      op->moveBefore(thenYield);
    return success();
  }

  for (Operation &op : block) {
    if (&op == terminator)
      continue;
    auto checkBounds = [&](Value lower, Value upper,
                           Value step) -> LogicalResult {
      if (isConstant(lower, 0) && isConstant(upper, range) &&
          isConstant(step, 1))
        return success();
      return op.emitError() << "the outermost parallel loop of a kernel must "
                               "run over [0, "
                            << range << ") in steps of 1";
    };
    if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
      unsigned dims = parallel.getNumLoops();
      if (auto offset = parallel->getAttrOfType<IntegerAttr>(
              kiln::kernel::KernelDialect::kSegmentOffsetAttr)) {
        if (failed(
                restrictSegment(parallel, offset.getInt(), range, begin, end)))
          return failure();
        continue;
      }
      if (failed(checkBounds(parallel.getLowerBound()[0],
                             parallel.getUpperBound()[0],
                             parallel.getStep()[0])))
        return failure();
      parallel->setOperand(0, begin);
      parallel->setOperand(dims, end);
      continue;
    }
    // Stack buffers (the GPU emulator's) are the call's, not the chunk's.
    if (isMemoryEffectFree(&op) || isa<memref::AllocaOp>(op))
      continue;
    // A sequential loop (a reduction first) or a store here would read or
    // write across chunks.
    return op.emitError() << "has side effects outside the kernel's parallel "
                             "loop over [0, "
                          << range << ")";
  }
  return success();
}
