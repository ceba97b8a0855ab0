//===- EmulatorChecks.h - The checked emulator's instrumentation -*- C++
//-*-===//
//
// Part of Kiln. Private to the CUDA target: what the checked GPU emulator
// (--convert-gpu-to-emulator{checked}) adds to a block's code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_EMULATORCHECKS_H
#define KILN_LIB_TARGET_CUDA_EMULATORCHECKS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace kiln {

/// `loc` as a report prints it (the model line).
std::string printLocation(mlir::Location loc);

/// Who last wrote and read each word of a block's shared buffer, and in
/// which barrier epoch: a race is two threads touching a word in one
/// epoch, one of them writing.
struct SharedShadow {
  mlir::Value writer, writerEpoch, reader, readerEpoch;
};

/// The shadows of a shared buffer of `words` words: allocated at
/// `allocator` (once per call), reset to "nobody" at `builder` (each
/// block).
SharedShadow createSharedShadow(mlir::OpBuilder &allocator,
                                mlir::OpBuilder &builder, mlir::Location loc,
                                int64_t words);

/// Instruments the accesses to the shared buffers of `shadows` in `region`
/// (thread `thread`, the block's barrier epoch in `epoch`, memref<1xi64>):
/// a failed check is a cf.assert naming the access's location, turned into
/// a report on stderr later.
void instrumentSharedAccesses(
    mlir::Region &region, mlir::Value thread, mlir::Value epoch,
    const llvm::DenseMap<mlir::Value, SharedShadow> &shadows);

/// Checked: each buffer argument `func` says is `llvm.align`-aligned (its
/// threads' 128-bit accesses rely on it) starts at such an address; at
/// `builder`, with the emulated kernel's `arguments`.
void checkAlignedArguments(mlir::OpBuilder &builder, mlir::gpu::GPUFuncOp func,
                           mlir::ValueRange arguments);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_EMULATORCHECKS_H
