//===- ResidentBytes.h - The bytes a compiled step holds --------*- C++ -*-===//
//
// Part of Kiln. What `peak_bytes` counts (`kiln compile --stats`, the memory
// budget, `--fit-batch`): every buffer resident while a step runs -- the
// persistent buffers of the module's entries (parameters, gradients,
// optimizer state, inputs, outputs, runtime buffers, constants), each name
// once, as the plan holds them -- plus the arena of transients, which is the
// largest entry's. Read off a module whose arena is placed.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_TRANSFORMS_RESIDENTBYTES_H
#define KILN_DIALECT_KERNEL_TRANSFORMS_RESIDENTBYTES_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace kiln::kernel {

/// The resident bytes of a compiled module, by what they hold.
struct ResidentBytes {
  int64_t params = 0, optimizerState = 0, gradients = 0, inputs = 0,
          outputs = 0, runtime = 0, constants = 0;
  /// The module's `kernel.arena_bytes`.
  int64_t arena = 0;
  /// The entry whose arena is the module's (the first of the largest), and
  /// its live lower bound; empty without entries.
  std::string arenaEntry;
  int64_t arenaEntryLowerBound = 0;

  /// Everything but the arena.
  int64_t persistent() const {
    return params + optimizerState + gradients + inputs + outputs + runtime +
           constants;
  }
  /// peak_bytes: persistent buffers plus the arena.
  int64_t peak() const { return persistent() + arena; }
};

/// Measures `module` after arena placement.
ResidentBytes measureResidentBytes(mlir::ModuleOp module);

} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_TRANSFORMS_RESIDENTBYTES_H
