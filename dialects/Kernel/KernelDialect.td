//===- KernelDialect.td - The kernel dialect's definition --*- tablegen -*-===//
//
// Part of Kiln. The kernel dialect: a bufferized, scheduled program that maps
// one to one onto the runtime's plan (runtime/schema/plan.fbs).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNEL_DIALECT_TD
#define KILN_KERNEL_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonTypeConstraints.td"

def Kernel_Dialect : Dialect {
  let name = "kernel";
  let cppNamespace = "::kiln::kernel";
  let summary = "Bufferized, scheduled program of kernels, GEMMs and copies.";
  let description = [{
    A module in the kernel dialect holds:
    - `kernel.func` ops: generated kernels, each a body of linalg, scf, arith
      and math on memref arguments, computing the slice of its outermost
      parallel dimension `[0, range)` that the runtime hands it;
    - `kernel.entry` ops: the entry points (`predict`, `eval_step`,
      `train_step`), whose arguments are the persistent and input/output
      buffers (each with a name and a kind) and whose body is a sequence of
      `kernel.alloc`, `kernel.view`, `kernel.constant`, `kernel.launch`,
      `kernel.gemm`, `kernel.copy`, `kernel.zero` and, in a data-parallel
      step, `kernel.collective_start` and `kernel.collective_wait`, in
      program order.
    Each entry-level op becomes one op (or one buffer) of the plan.

    Two buffers are provided by the runtime rather than by the caller:
    - `rng_state` (`memref<4xi32>`): the Philox key and step of this call:
      `[seed & 0xffffffff, seed >> 32, step, 0]` (kiln/Philox.h). Kernels
      that draw random numbers (dropout) read it.
    - `status` (`memref<2xi64>`): `[code, value]`, zeroed by the runtime
      before a call. A kernel that finds bad input records a nonzero code
      with an atomic max (so the largest code wins, whatever the thread
      count) and the offending value; the runtime checks it after each op
      that takes it and reports that op's model location. Codes:
      1 = an embedding id outside `[0, V)` (value: the id),
      2 = a cross-entropy target outside `[0, C)` (value: the target).
  }];
  let hasRegionArgAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Argument attributes of `kernel.entry`: the buffer's name, its kind
    /// (#kernel.kind<...>) and, for parameters and optimizer state, the
    /// graph.init dictionary.
    static constexpr ::llvm::StringLiteral kNameAttr = "kernel.name";
    static constexpr ::llvm::StringLiteral kKindAttr = "kernel.kind";
    static constexpr ::llvm::StringLiteral kInitAttr = "kernel.init";
    /// A state buffer that is one rank's part of a larger tensor: the
    /// graph.shard dictionary ({offset, shape}).
    static constexpr ::llvm::StringLiteral kShardAttr = "kernel.shard";
    /// On an entry's scheduled op: the graph op(s) it implements, as the
    /// plan's Op.name and the profile show them ("a+b" for a merged launch).
    static constexpr ::llvm::StringLiteral kOriginAttr = "kernel.origin";
    /// Buffer names of the runtime-provided buffers.
    static constexpr ::llvm::StringLiteral kRngStateName = "kiln.rng_state";
    static constexpr ::llvm::StringLiteral kStatusName = "kiln.status";
    /// On a top-level scf.parallel of a kernel.func body: the loop covers
    /// [offset, offset + its upper bound) of the kernel's range (a segment
    /// of a kernel merged by --kernel-merge-launches) instead of
    /// [0, range).
    static constexpr ::llvm::StringLiteral kSegmentOffsetAttr =
        "kernel.segment_offset";
    /// On a launch that writes one buffer operand: the box of it that the
    /// launch writes, as offsets then sizes (a piece of a concat); launches
    /// writing disjoint boxes of one buffer are independent.
    static constexpr ::llvm::StringLiteral kWriteBoxAttr = "kernel.write_box";
    /// On a kernel.func of the GPU emulator (--convert-gpu-to-emulator):
    /// it may hold memref.alloca, a block's shared memory and the values
    /// its threads keep across barriers, on the stack.
    static constexpr ::llvm::StringLiteral kEmulatorAttr = "kernel.emulator";
    /// On a kernel.func: one part of a fused attention (FusedAttention.h),
    /// whose body is the reference a target's fused kernel stands for.
    static constexpr ::llvm::StringLiteral kAttentionAttr = "kernel.attention";
  }];
}

/// What a buffer of an entry holds, and who owns its bytes (plan.fbs
/// BufferKind, minus Transient and Constant, which are ops in the entry).
def Kernel_BufferKind : I32EnumAttr<"BufferKind", "buffer kind", [
    I32EnumAttrCase<"Param", 0, "param">,
    I32EnumAttrCase<"OptimizerState", 1, "optimizer_state">,
    I32EnumAttrCase<"Gradient", 2, "gradient">,
    I32EnumAttrCase<"Input", 3, "input">,
    I32EnumAttrCase<"Output", 4, "output">,
    I32EnumAttrCase<"RngState", 5, "rng_state">,
    I32EnumAttrCase<"Status", 6, "status">]> {
  let cppNamespace = "::kiln::kernel";
  let genSpecializedAttr = 0;
}

def Kernel_BufferKindAttr : EnumAttr<Kernel_Dialect, Kernel_BufferKind, "kind"> {
  let assemblyFormat = "`<` $value `>`";
}

/// What a GEMM does to its result after the product (plan.fbs
/// GemmEpilogue, the same numbers). With P = alpha op(A) op(B) + beta C:
/// - none: C = P;
/// - bias: C = P + bias[j] (a vector of n, over every row and batch);
/// - gelu: C = gelu(P), and aux = P when given (the pre-activation the
///   backward needs);
/// - bias_gelu: C = gelu(P + bias[j]), aux = P + bias[j] when given;
/// - dgelu: C = P * gelu'(aux) (aux: the forward's pre-activation);
/// - bias_grad: C = P, and bias[j] = sum over the k rows of op(B) of
///   column j (the bias gradient of a weight gradient dW = X^T dY).
/// gelu is the tanh approximation of graph.gelu. The cpu target compiles
/// none but `none`; cuBLASLt runs them all.
def Kernel_GemmEpilogue : I32EnumAttr<"GemmEpilogue", "GEMM epilogue", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Bias", 1, "bias">,
    I32EnumAttrCase<"Gelu", 2, "gelu">,
    I32EnumAttrCase<"BiasGelu", 3, "bias_gelu">,
    I32EnumAttrCase<"DGelu", 4, "dgelu">,
    I32EnumAttrCase<"BiasGrad", 5, "bias_grad">]> {
  let cppNamespace = "::kiln::kernel";
  let genSpecializedAttr = 0;
}

def Kernel_GemmEpilogueAttr
    : EnumAttr<Kernel_Dialect, Kernel_GemmEpilogue, "epilogue"> {
  let assemblyFormat = "`<` $value `>`";
}

class Kernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kernel_Dialect, mnemonic, traits>;

/// The token of a collective in flight (kernel.collective_start), which
/// its kernel.collective_wait takes.
def Kernel_CollectiveType : TypeDef<Kernel_Dialect, "Collective"> {
  let mnemonic = "collective";
  let summary = "A collective over the ranks that has started and not ended";
}

// Buffers are statically shaped with the identity (row-major) layout; the
// verifiers check the layout.
def Kernel_Buffer : StaticShapeMemRefOf<[AnyType]>;

#endif // KILN_KERNEL_DIALECT_TD
