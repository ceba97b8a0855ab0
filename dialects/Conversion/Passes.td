//===- Passes.td - Kiln's conversion passes ----------------*- tablegen -*-===//
//
// Part of Kiln. Passes that lower one dialect into another.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_PASSES_TD
#define KILN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGraphToKernel : Pass<"convert-graph-to-kernel", "::mlir::ModuleOp"> {
  let summary = "Lowers graph functions to kernel entries, kernels and GEMMs.";
  let description = [{
    `@forward` becomes two entries: `predict` (its named outputs, without the
    loss; absent when the model has no other output) and `eval_step` (the
    loss and the outputs). Any other graph function becomes an entry of the
    same name; in `train_step`, `grad_step` and `accumulate_step` dropout is
    active, elsewhere it is the identity. Each graph op becomes one kernel
    (or a GEMM, a copy, a view); a `graph.fusion` region becomes one kernel
    (FusionToKernel.cpp), or, when it ends in an anchor, the anchor's
    kernels reading their fused operand through the region's formulas. The
    graph functions are removed.

    The block sizes of the templates (column blocks, update and norm blocks)
    come from the target object of `target`; on the cpu each kernel gets the
    `grain` its thread pool cuts the range by, elsewhere none.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "The target the kernels are scheduled for: cpu or cuda">,
  ];
  let dependentDialects = [
    "::kiln::kernel::KernelDialect", "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"];
}

def ConvertKernelToHostLLVM : Pass<"convert-kernel-to-host-llvm", "::mlir::ModuleOp"> {
  let summary = "Lowers every kernel.func to an exported LLVM function of the cpu ABI.";
  let description = [{
    Each `kernel.func @kN` becomes `llvm.func @kiln_kN(%buffers: !llvm.ptr,
    %begin: i64, %end: i64)`, computing the slice `[begin, end)` of the
    kernel's outermost parallel dimension: linalg is lowered to parallel
    loops, the first dimension of every top-level loop is restricted to the
    slice, and the rest goes through scf, cf, arith, math (to libm calls)
    and memref to the LLVM dialect. Entries and every other kernel-dialect op
    are dropped: they are the plan, not code.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::func::FuncDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::vector::VectorDialect"];
}

#endif // KILN_CONVERSION_PASSES_TD
