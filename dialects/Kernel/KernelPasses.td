//===- KernelPasses.td - Passes over the kernel dialect ----*- tablegen -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNEL_PASSES_TD
#define KILN_KERNEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def KernelAssignOffsetsNaive : Pass<"kernel-assign-offsets-naive", "::mlir::ModuleOp"> {
  let summary = "Gives every transient buffer its own arena slice, in program order.";
  let description = [{
    The placeholder for the memory planner (`--kernel-plan-memory`): within
    each `kernel.entry`, every `kernel.alloc` gets an `arena_offset` right
    after the previous one, rounded up to 64 bytes; nothing is reused. Entries
    never run at the same time, so each starts at offset 0, and the module's
    `kernel.arena_bytes` is the largest entry's total.
  }];
  let dependentDialects = ["::kiln::kernel::KernelDialect"];
}

#endif // KILN_KERNEL_PASSES_TD
