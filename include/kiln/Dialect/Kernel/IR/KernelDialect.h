//===- KernelDialect.h - The kernel dialect ---------------------*- C++ -*-===//
//
// Part of Kiln. Declares the kernel dialect, its enums and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_IR_KERNELDIALECT_H
#define KILN_DIALECT_KERNEL_IR_KERNELDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "kiln/Dialect/Kernel/IR/KernelDialect.h.inc"
#include "kiln/Dialect/Kernel/IR/KernelEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelTypes.h.inc"

#endif // KILN_DIALECT_KERNEL_IR_KERNELDIALECT_H
