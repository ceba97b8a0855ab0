//===- KernelOps.td - Ops of the kernel dialect ------------*- tablegen -*-===//
//
// Part of Kiln. Kernels (`kernel.func`), entry points (`kernel.entry`) and
// the entry-level ops that become the plan's buffers and calls.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNEL_OPS_TD
#define KILN_KERNEL_OPS_TD

include "KernelDialect.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Functions
//===----------------------------------------------------------------------===//

def Kernel_FuncOp : Kernel_Op<"func", [FunctionOpInterface, IsolatedFromAbove,
                                      AutomaticAllocationScope]> {
  let summary = "A generated kernel over memref arguments.";
  let description = [{
    The body computes, on its memref arguments, the whole of `[0, range)` of
    its outermost parallel dimension: every top-level loop of the body (an
    `scf.parallel`, or a linalg op whose first loop is parallel) runs over
    `[0, range)` in its first dimension, and no iteration of it reads what
    another iteration writes. The backend restricts those loops to the slice
    `[begin, end)` the runtime asks for, so that chunks can run on different
    threads with results independent of the chunking. With `range = 1` the
    body may be any sequential code. `grain`, set for the cpu target only,
    is the smallest chunk worth a thread of its pool (targets that launch
    the whole range at once have none). The body allocates nothing: intermediates live in registers or
    in buffers passed as arguments. The GPU emulator's kernels (`kernel.emulator`) are the exception:
    their top level allocates a block's stack buffers (`memref.alloca`, one per call, reused by the
    blocks of its chunk).
    ```mlir
    kernel.func @k0(%x: memref<256xf32>, %y: memref<256xf32>) attributes {grain = 256 : i64, range = 256 : i64} {
      linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                      iterator_types = ["parallel"]}
          ins(%x : memref<256xf32>) outs(%y : memref<256xf32>) {
      ^bb0(%in: f32, %out: f32):
        %r = math.exp %in : f32
        linalg.yield %r : f32
      }
      kernel.return
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs,
                       I64Attr:$range, OptionalAttr<I64Attr>:$grain);
  let regions = (region SizedRegion<1>:$body);
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
      "::mlir::FunctionType":$type, "int64_t":$range)>];
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    /// The name the kernel has in kernels.so: `kiln_<sym_name>`.
    std::string getExportedSymbol();
  }];
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Kernel_EntryOp : Kernel_Op<"entry", [FunctionOpInterface, IsolatedFromAbove]> {
  let summary = "An entry point of the compiled step: predict, eval_step, train_step.";
  let description = [{
    Every argument is a buffer the runtime binds: its `kernel.name`, its
    `kernel.kind` (`#kernel.kind<param>`, `input`, `output`, `rng_state`,
    `status`, ...) and, for parameters and optimizer state, `kernel.init` (a `graph.init`
    dictionary). Entries have no results: outputs are `output` buffers the
    body writes. The body is a straight-line sequence of entry-level ops in
    the order the runtime runs them.
    ```mlir
    kernel.entry @predict(%x: memref<32x64xf32> {kernel.kind = #kernel.kind<input>, kernel.name = "x"},
                          %y: memref<32x64xf32> {kernel.kind = #kernel.kind<output>, kernel.name = "logits"}) {
      kernel.launch @k0(%x, %y) : memref<32x64xf32>, memref<32x64xf32>
      kernel.return
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
      "::mlir::FunctionType":$type)>];
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    /// The name and kind of argument `index`.
    ::llvm::StringRef getBufferName(unsigned index);
    BufferKind getBufferKind(unsigned index);
    /// Whether argument `index` accumulates a parameter's gradient over
    /// micro-batches: optimizer state named `<param>.grad_acc`
    /// (--graph-train-step's).
    bool isGradientAccumulator(unsigned index);
  }];
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Kernel_ReturnOp : Kernel_Op<"return", [Pure, Terminator,
    ParentOneOf<["FuncOp", "EntryOp"]>]> {
  let summary = "Ends a kernel or an entry.";
  let description = [{
    ```mlir
    kernel.return
    ```
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def Kernel_AllocOp : Kernel_Op<"alloc", [HasParent<"EntryOp">,
    MemoryEffects<[MemAlloc]>]> {
  let summary = "A transient buffer of one call: a slice of the arena.";
  let description = [{
    `arena_offset` (bytes, a multiple of 64) is set by the memory planner
    (`--kernel-assign-offsets-naive` for now); before that it is absent.
    ```mlir
    %t = kernel.alloc {arena_offset = 128 : i64} : memref<32x128xf32>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$arena_offset);
  let results = (outs Kernel_Buffer:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    /// The buffer's size in bytes.
    int64_t getSizeInBytes();
  }];
  let hasVerifier = 1;
}

def Kernel_ViewOp : Kernel_Op<"view", [Pure, HasParent<"EntryOp">,
    DeclareOpInterfaceMethods<ViewLikeOpInterface>]> {
  let summary = "The same bytes seen with another shape (a reshape that aliases).";
  let description = [{
    The element type and element count are unchanged; no data moves. The
    plan passes the source buffer wherever the view is used.
    ```mlir
    %v = kernel.view %t : memref<2x64x128xf32> -> memref<2x64x4x32xf32>
    ```
  }];
  let arguments = (ins Kernel_Buffer:$source);
  let results = (outs Kernel_Buffer:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Kernel_ConstantOp : Kernel_Op<"constant", [Pure, HasParent<"EntryOp">]> {
  let summary = "A read-only buffer baked into the plan.";
  let description = [{
    ```mlir
    %c = kernel.constant dense<5.000000e-01> : tensor<f32> : memref<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kernel_Buffer:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

def Kernel_LaunchOp : Kernel_Op<"launch", [HasParent<"EntryOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs a kernel.func on buffers, over its whole range.";
  let description = [{
    The operands are the kernel's `buffers` array, in order; their types
    equal the kernel's argument types.
    ```mlir
    kernel.launch @k0(%x, %y) : memref<256xf32>, memref<256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, Variadic<Kernel_Buffer>:$buffers);
  let assemblyFormat = [{
    $kernel `(` $buffers `)` attr-dict `:` type($buffers)
  }];
  let extraClassDeclaration = [{
    /// The launched kernel, or null.
    FuncOp getKernelFunc();
  }];
}

def Kernel_GemmOp : Kernel_Op<"gemm", [HasParent<"EntryOp">,
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "Batched C = alpha op(A) op(B) + beta C, through a BLAS library.";
  let description = [{
    Row-major matrices: `op(A)` is `m x k`, `op(B)` is `k x n`, `C` is
    `m x n`; A is stored `k x m` with `transpose_a` (likewise B). Batch `i`
    uses the matrices at element offsets `i * stride_x`; a stride of 0
    broadcasts that operand over the batch. Leading dimensions are those of
    contiguous matrices: `lda = transpose_a ? m : k`, `ldb = transpose_b ? k
    : n`, `ldc = n`. The element types of A, B and C are independent
    (bf16 x bf16 -> f32 is a GEMM of bf16 operands accumulated and stored
    in f32); A and B have the same one.
    `epilogue` (GemmEpilogue) says what happens to the product before it
    is stored, with a `bias` vector of n elements of C's type and an `aux`
    buffer of C's shape and type where it needs them.
    `tile_m` and `tile_n` (set by `--kernel-tile-gemms`; 0: the whole dim)
    cut each batch entry's C into tiles that the cpu executor computes as
    separate single-threaded library calls: fixed here, so the result does
    not depend on how many threads run them.
    ```mlir
    kernel.gemm %a, %b, %c {m = 32 : i64, n = 128 : i64, k = 64 : i64, batch = 1 : i64,
                            stride_a = 0 : i64, stride_b = 0 : i64, stride_c = 0 : i64}
        : memref<32x64xf32>, memref<64x128xf32>, memref<32x128xf32>
    kernel.gemm %x, %w, %h bias %b aux %pre {m = 32 : i64, n = 128 : i64, k = 64 : i64,
                            epilogue = #kernel.epilogue<bias_gelu>}
        : memref<32x64xbf16>, memref<64x128xbf16>, memref<32x128xf32>
          bias memref<128xf32> aux memref<32x128xf32>
    ```
  }];
  let arguments = (ins Kernel_Buffer:$a, Kernel_Buffer:$b, Kernel_Buffer:$c,
                       Optional<Kernel_Buffer>:$bias,
                       Optional<Kernel_Buffer>:$aux,
                       I64Attr:$m, I64Attr:$n, I64Attr:$k,
                       DefaultValuedAttr<I64Attr, "1">:$batch,
                       DefaultValuedAttr<I64Attr, "0">:$stride_a,
                       DefaultValuedAttr<I64Attr, "0">:$stride_b,
                       DefaultValuedAttr<I64Attr, "0">:$stride_c,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "0.0">:$beta,
                       DefaultValuedAttr<I64Attr, "0">:$tile_m,
                       DefaultValuedAttr<I64Attr, "0">:$tile_n,
                       DefaultValuedAttr<Kernel_GemmEpilogueAttr,
                           "::kiln::kernel::GemmEpilogue::None">:$epilogue);
  let assemblyFormat = [{
    $a `,` $b `,` $c (`bias` $bias^)? (`aux` $aux^)? attr-dict `:` type($a) `,`
    type($b) `,` type($c) (`bias` type($bias)^)? (`aux` type($aux)^)?
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$a, "::mlir::Value":$b,
      "::mlir::Value":$c, "int64_t":$m, "int64_t":$n, "int64_t":$k,
      "int64_t":$batch, "int64_t":$strideA, "int64_t":$strideB,
      "int64_t":$strideC, "bool":$transposeA, "bool":$transposeB,
      "::llvm::APFloat":$alpha, "::llvm::APFloat":$beta), [{
    build($_builder, $_state, a, b, c, /*bias=*/nullptr, /*aux=*/nullptr, m,
          n, k, batch, strideA, strideB, strideC, transposeA, transposeB,
          alpha, beta, /*tile_m=*/0, /*tile_n=*/0,
          ::kiln::kernel::GemmEpilogue::None);
  }]>];
  let extraClassDeclaration = [{
    int64_t getLda() { return getTransposeA() ? getM() : getK(); }
    int64_t getLdb() { return getTransposeB() ? getK() : getN(); }
    int64_t getLdc() { return getN(); }
  }];
  let hasVerifier = 1;
}

def Kernel_CopyOp : Kernel_Op<"copy", [HasParent<"EntryOp">]> {
  let summary = "Copies every byte of one buffer into another of equal size.";
  let description = [{
    ```mlir
    kernel.copy %src, %dst : memref<32x10xf32>, memref<320xf32>
    ```
  }];
  let arguments = (ins Arg<Kernel_Buffer, "", [MemRead]>:$source,
                       Arg<Kernel_Buffer, "", [MemWrite]>:$destination);
  let assemblyFormat = [{
    $source `,` $destination attr-dict `:` type($source) `,` type($destination)
  }];
  let hasVerifier = 1;
}

def Kernel_ZeroOp : Kernel_Op<"zero", [HasParent<"EntryOp">]> {
  let summary = "Sets every byte of a buffer to zero.";
  let description = [{
    ```mlir
    kernel.zero %g : memref<128xf32>
    ```
  }];
  let arguments = (ins Arg<Kernel_Buffer, "", [MemWrite]>:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

//===----------------------------------------------------------------------===//
// Collectives over the ranks of a data-parallel step
//===----------------------------------------------------------------------===//

def Kernel_CollectiveStartOp : Kernel_Op<"collective_start", [
    HasParent<"EntryOp">]> {
  let summary = "Starts summing a bucket of gradient accumulators over the ranks.";
  let description = [{
    Each rank's accumulators hold its part of the gradients; the collective
    sums them in place over the ranks (every rank starts the same buckets
    in the same order). It runs while the ops after it do, until the
    `kernel.collective_wait` that takes its token: no op in between may
    touch the bucket's buffers, which stay live until that wait. `bucket`
    numbers the starts of an entry 0, 1, ... in program order. The buffers
    are f32 gradient accumulators (entry arguments of kind
    `optimizer_state` named `<param>.grad_acc`); the runtime places a bucket's buffers one after another in memory, so that
    the sum can run over the whole block at once.
    ```mlir
    %t = kernel.collective_start %gw, %gb {bucket = 0 : i64} : memref<64x64xf32>, memref<64xf32>
    ```
  }];
  let arguments = (ins Arg<Variadic<Kernel_Buffer>, "", [MemRead, MemWrite]>:$buffers,
                       I64Attr:$bucket);
  let results = (outs Kernel_CollectiveType:$token);
  let assemblyFormat = "$buffers attr-dict `:` type($buffers)";
  let hasVerifier = 1;
}

def Kernel_CollectiveWaitOp : Kernel_Op<"collective_wait", [
    HasParent<"EntryOp">]> {
  let summary = "Waits for a started collective; its buffers then hold the sums.";
  let description = [{
    Takes the token of a `kernel.collective_start` earlier in the entry and
    the same buffers, in the same order (which makes the analyses see them
    live and touched until here). Each start has exactly one wait.
    ```mlir
    kernel.collective_wait %t(%gw, %gb) : memref<64x64xf32>, memref<64xf32>
    ```
  }];
  let arguments = (ins Kernel_CollectiveType:$token,
                       Arg<Variadic<Kernel_Buffer>, "", [MemRead, MemWrite]>:$buffers);
  let assemblyFormat = "$token `(` $buffers `)` attr-dict `:` type($buffers)";
  let extraClassDeclaration = [{
    CollectiveStartOp getStart();
  }];
  let hasVerifier = 1;
}

#endif // KILN_KERNEL_OPS_TD
