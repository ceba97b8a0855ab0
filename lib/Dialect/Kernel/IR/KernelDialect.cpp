//===- KernelDialect.cpp - The kernel dialect ------------------------------===//
//
// Part of Kiln. Registers the kernel ops and attributes and verifies the
// argument attributes of entries (buffer names, kinds, initializers).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/IR/KernelDialect.h"
#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::kernel;

#include "kiln/Dialect/Kernel/IR/KernelDialect.cpp.inc"
#include "kiln/Dialect/Kernel/IR/KernelEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "kiln/Dialect/Kernel/IR/KernelTypes.cpp.inc"

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/Kernel/IR/KernelOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/Kernel/IR/KernelAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "kiln/Dialect/Kernel/IR/KernelTypes.cpp.inc"
      >();
}

LogicalResult KernelDialect::verifyRegionArgAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned argIndex,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (!isa<EntryOp>(op))
    return op->emitError() << "'" << name
                           << "' is only valid on kernel.entry arguments";
  if (name == kNameAttr) {
    auto text = dyn_cast<StringAttr>(attr.getValue());
    if (!text || text.getValue().empty())
      return op->emitError() << "'" << kNameAttr << "' of argument "
                             << argIndex << " must be a non-empty string";
    return success();
  }
  if (name == kKindAttr) {
    if (!isa<BufferKindAttr>(attr.getValue()))
      return op->emitError() << "'" << kKindAttr << "' of argument "
                             << argIndex << " must be a #kernel.kind";
    return success();
  }
  if (name == kInitAttr || name == kShardAttr) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'" << name << "' of argument " << argIndex
                             << " must be a dictionary";
    return success();
  }
  return op->emitError() << "unknown kernel argument attribute '" << name
                         << "'";
}
