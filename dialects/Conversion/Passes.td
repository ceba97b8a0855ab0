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

    Where the target has fused attention kernels
    (TargetInfo::getFusedAttentionHeadDimLimit) and `fused-attention` is
    set, graph.attention and its gradient lower to them
    (FusedAttentionToKernel.cpp): no [queries, keys] buffer.

    The block sizes of the templates (column blocks, update and norm blocks)
    come from the target object of `target`; on the cpu each kernel gets the
    `grain` its thread pool cuts the range by, elsewhere none.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "The target the kernels are scheduled for: cpu or cuda">,
    Option<"fusedAttention", "fused-attention", "bool", /*default=*/"true",
           "Lower attention to the target's fused kernels where it has "
           "them (false: GEMMs around a row kernel everywhere)">,
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

def ShareLoopBodies : Pass<"share-loop-bodies", "::mlir::ModuleOp"> {
  let summary = "Outlines equal loop bodies into one function each.";
  let description = [{
    Host code, after --convert-kernel-to-host-llvm's chunk restriction and
    vectorization (which runs it): the bodies of outermost `scf.parallel`
    loops of every `func.func` that are the same but for the values of
    their scalar constants, and for the leading dim of memrefs that they
    only load from and store to, become one private, never-inlined
    function per group of at least two; each loop calls it with its
    induction variables, the values it reads from outside (a memref
    reinterpreted to the group's largest leading dim) and its own constants.
    Bodies without a loop of their own, or under 8 ops, stay. An
    optimizer's per-parameter updates and a global norm's per-parameter
    sums then cost code generation one body, not one per parameter.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect"];
}

def ConvertKernelToGpu : Pass<"convert-kernel-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Maps every kernel.func onto GPU blocks and threads.";
  let description = [{
    Each `kernel.func @kN` becomes `gpu.func @kiln_kN` (a kernel) in one
    `gpu.module @kiln_kernels`, over the same memrefs: thread `i = block_id
    * block_dim + thread_id` of a one-dimensional grid computes iteration
    `i` of the kernel's range, exactly the host's chunk `[i, i + 1)`
    (linalg lowered to parallel loops, the first dim of every top-level
    loop restricted to it); threads past the range do nothing. A range of
    R runs on ceil(R / B) blocks of B = `block-size` threads, or one block
    of R rounded up to a warp when R is smaller (`known_block_size` and
    `known_grid_size` on the gpu.func). Entries are dropped: they are the
    plan, not code.

    An elementwise kernel (its only top-level loop nest, or the segments
    of a merged kernel, independent by construction) instead gets a thread
    per `vector-bytes` of consecutive innermost elements of the whole nest
    (4 f32, 2 f64; one when the innermost dim is not a multiple), the last
    dim fastest: its contiguous accesses become 128-bit ones. Buffers are
    16-byte aligned (`llvm.align` on every argument): every buffer of a
    plan starts at a 64-byte boundary.

    Row and column reductions run a row or a column block per thread until
    their own templates (a warp or a block per row, shuffles) replace it.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of a kernel whose range fills a block">,
    Option<"vectorBytes", "vector-bytes", "int64_t", /*default=*/"16",
           "The bytes of consecutive elements a thread of an elementwise "
           "kernel takes">,
    Option<"warpSize", "warp-size", "int64_t", /*default=*/"32",
           "Threads of a warp: a small range's block is whole warps">,
  ];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::vector::VectorDialect"];
}

def ConvertGpuToEmulator : Pass<"convert-gpu-to-emulator", "::mlir::ModuleOp"> {
  let summary = "Turns the GPU kernels into host kernels that emulate them.";
  let description = [{
    Each `gpu.func @kiln_kN` of `gpu.module @kiln_kernels` (the output of
    `--convert-kernel-to-gpu`: a one-dimensional grid and block from
    `known_grid_size` and `known_block_size`) becomes `kernel.func @kN`
    with `range` = its blocks: a parallel loop over the blocks, and in each
    block a loop over its threads in order running the gpu.func's body, with
    `gpu.block_id`, `gpu.thread_id`, `gpu.block_dim` and `gpu.grid_dim`
    replaced by the loops' indices and the launch's sizes. The cpu backend
    then compiles them into kernels.emu.so, whose `kiln_kN(buffers, begin,
    end)` runs blocks [begin, end), so that the cpu executor runs a cuda
    plan. The exact kernels the GPU runs (after mapping, before NVVM) are
    what is emulated.

    A top-level `gpu.barrier` splits the threads' loop: each segment
    between barriers is a loop over the block's threads, and a value a
    later segment uses is kept per thread (a stack array of the block's
    size). Workgroup attributions are one stack buffer per block. Barriers
    under control flow, shuffles, subgroup or block reductions and private
    memory are refused.

    With `checked`, every memref access is checked against its buffer's
    bounds at run time (MLIR's runtime op verification), and every access
    to shared memory against the last thread that wrote and read its word
    in the same segment (a race: a missing barrier); a failing check writes
    "GPU emulator: kernel kiln_kN: ..." with the access and its location
    (the model line) to standard error and aborts.
  }];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Check every access against its buffer's bounds at run time">,
  ];
  let dependentDialects = [
    "::kiln::kernel::KernelDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
    "::mlir::cf::ControlFlowDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::vector::VectorDialect"];
}

#endif // KILN_CONVERSION_PASSES_TD
