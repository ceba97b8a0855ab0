//===- KernelOps.h - Ops of the kernel dialect ------------------*- C++ -*-===//
//
// Part of Kiln. Declares the kernel ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_IR_KERNELOPS_H
#define KILN_DIALECT_KERNEL_IR_KERNELOPS_H

#include "kiln/Dialect/Kernel/IR/KernelDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::kernel {
/// The size in bytes of a statically shaped buffer (sub-byte element types
/// round up to whole bytes per element).
int64_t getBufferSizeInBytes(mlir::MemRefType type);
} // namespace kiln::kernel

#define GET_OP_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelOps.h.inc"

namespace kiln::kernel {
/// A kernel name not yet in `symbols` ("kN", exported as kiln_kN), trying
/// N = next, next + 1, ...; `next` moves past the name returned.
std::string getUniqueKernelName(mlir::SymbolTable &symbols, unsigned &next);
} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_IR_KERNELOPS_H
