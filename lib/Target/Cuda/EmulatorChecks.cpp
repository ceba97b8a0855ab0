//===- EmulatorChecks.cpp - The checked emulator's instrumentation --------===//
//
// Part of Kiln. The checked GPU emulator's instrumentation
// (EmulatorChecks.h): the shared-memory race check (per word of a shared
// buffer, the last writer and reader and their barrier epochs) and the
// alignment check of buffers said aligned.
//
//===----------------------------------------------------------------------===//

#include "EmulatorChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kiln;

std::string kiln::printLocation(Location loc) {
  std::string where;
  llvm::raw_string_ostream os(where);
  loc.print(os);
  return where;
}

/// The row-major element index of `indices` into a memref of `type`.
static Value linearize(OpBuilder &b, Location loc, MemRefType type,
                       ValueRange indices) {
  Value linear = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [dim, index] : llvm::zip(type.getShape(), indices)) {
    linear = arith::MulIOp::create(b, loc, linear,
                                   arith::ConstantIndexOp::create(b, loc, dim));
    linear = arith::AddIOp::create(b, loc, linear, index);
  }
  return linear;
}

SharedShadow kiln::createSharedShadow(OpBuilder &allocator, OpBuilder &b,
                                      Location loc, int64_t words) {
  auto type = MemRefType::get({words}, b.getI64Type());
  Value none = arith::ConstantIntOp::create(b, loc, b.getI64Type(), -1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, words);
  SharedShadow shadow;
  for (Value *slot : {&shadow.writer, &shadow.writerEpoch, &shadow.reader,
                      &shadow.readerEpoch}) {
    *slot = memref::AllocaOp::create(allocator, loc, type);
    auto fill = scf::ForOp::create(b, loc, zero, count, one);
    OpBuilder inFill(fill.getBody()->getTerminator());
    memref::StoreOp::create(inFill, loc, none, *slot,
                            ValueRange{fill.getInductionVar()});
  }
  return shadow;
}

void kiln::instrumentSharedAccesses(
    Region &region, Value thread, Value epoch,
    const llvm::DenseMap<Value, SharedShadow> &shadows) {
  region.walk([&](Operation *op) {
    Value memref;
    ValueRange indices;
    bool store = false;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      memref = load.getMemRef();
      indices = load.getIndices();
    } else if (auto write = dyn_cast<memref::StoreOp>(op)) {
      memref = write.getMemRef();
      indices = write.getIndices();
      store = true;
    } else {
      return;
    }
    auto found = shadows.find(memref);
    if (found == shadows.end())
      return;
    const SharedShadow &shadow = found->second;
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value word = linearize(b, loc, cast<MemRefType>(memref.getType()), indices);
    Value here = memref::LoadOp::create(
        b, loc, epoch, ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
    Value self = arith::IndexCastOp::create(b, loc, b.getI64Type(), thread);
    auto otherIn = [&](Value who, Value when) {
      Value someone = memref::LoadOp::create(b, loc, who, ValueRange{word});
      Value at = memref::LoadOp::create(b, loc, when, ValueRange{word});
      return arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, at, here),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, someone,
                                self));
    };
    Value race = otherIn(shadow.writer, shadow.writerEpoch);
    if (store)
      race = arith::OrIOp::create(b, loc, race,
                                  otherIn(shadow.reader, shadow.readerEpoch));
    Value fine = arith::XOrIOp::create(
        b, loc, race, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    cf::AssertOp::create(b, loc, fine,
                         "shared-memory race: another thread of the block " +
                             std::string(store ? "reads or writes" : "writes") +
                             " this word between the same barriers (a missing "
                             "gpu.barrier?)\n" +
                             op->getName().getStringRef().str() +
                             "\nLocation: " + printLocation(loc));
    Value who = store ? shadow.writer : shadow.reader;
    Value when = store ? shadow.writerEpoch : shadow.readerEpoch;
    memref::StoreOp::create(b, loc, self, who, ValueRange{word});
    memref::StoreOp::create(b, loc, here, when, ValueRange{word});
  });
}

/// Checked: each buffer argument `func` says is `llvm.align`-aligned (its
/// threads' 128-bit accesses rely on it) starts at such an address.
void kiln::checkAlignedArguments(OpBuilder &b, gpu::GPUFuncOp func,
                                 ValueRange arguments) {
  Location loc = func.getLoc();
  for (auto [index, argument] : llvm::enumerate(arguments)) {
    auto align = func.getArgAttrOfType<IntegerAttr>(
        index, LLVM::LLVMDialect::getAlignAttrName());
    auto type = dyn_cast<MemRefType>(argument.getType());
    if (!align || !type || align.getInt() <= 1)
      continue;
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, argument);
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, argument);
    int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
    Value start = arith::AddIOp::create(
        b, loc, address,
        arith::MulIOp::create(
            b, loc, metadata.getOffset(),
            arith::ConstantIndexOp::create(b, loc, elementBytes)));
    Value misalignment = arith::RemUIOp::create(
        b, loc, start, arith::ConstantIndexOp::create(b, loc, align.getInt()));
    Value aligned =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, misalignment,
                              arith::ConstantIndexOp::create(b, loc, 0));
    cf::AssertOp::create(
        b, loc, aligned,
        "misaligned vector access: buffer argument " + std::to_string(index) +
            " does not start at a " + std::to_string(align.getInt()) +
            "-byte boundary, which the kernel's vector loads and stores "
            "need\nLocation: " +
            printLocation(loc));
  }
}
