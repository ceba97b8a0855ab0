//===- BufferAccess.h - What each entry op does to its buffers --*- C++ -*-===//
//
// Part of Kiln. The per-operand effects of the ops of a kernel.entry (which
// buffers an op reads, which it writes), and which outputs of a generated
// kernel may be written over one of its inputs: the facts the liveness
// analysis and the memory planner build on.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_ANALYSIS_BUFFERACCESS_H
#define KILN_DIALECT_KERNEL_ANALYSIS_BUFFERACCESS_H

#include "kiln/Dialect/Kernel/IR/KernelOps.h"

#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace kiln::kernel {

/// How an op touches one buffer operand. A bit set: ReadWrite = Read | Write.
enum class BufferAccess : uint8_t {
  None = 0,
  Read = 1,
  Write = 2,
  ReadWrite = 3,
};

inline BufferAccess operator|(BufferAccess a, BufferAccess b) {
  return static_cast<BufferAccess>(static_cast<uint8_t>(a) |
                                   static_cast<uint8_t>(b));
}
inline bool reads(BufferAccess access) {
  return static_cast<uint8_t>(access) &
         static_cast<uint8_t>(BufferAccess::Read);
}
inline bool writes(BufferAccess access) {
  return static_cast<uint8_t>(access) &
         static_cast<uint8_t>(BufferAccess::Write);
}

/// A pair of kernel arguments where element i of `output` is computed from
/// element i of `input` alone, in the iteration that reads it: writing the
/// output over the input's bytes gives the same result.
struct ElementwisePair {
  unsigned input;
  unsigned output;
};

/// What a kernel.func does to each of its arguments.
struct KernelArgumentEffects {
  /// One entry per argument.
  llvm::SmallVector<BufferAccess> access;
  /// The argument pairs that may share bytes (see ElementwisePair).
  llvm::SmallVector<ElementwisePair> elementwisePairs;
};

/// Reads the effects of `kernel` off its body. Conservative: a use the
/// analysis does not understand counts as a read and a write, and a pair is
/// elementwise only when the whole body is one linalg op with parallel
/// loops whose input and output operands have the same buffer type, the
/// identity indexing map, appear once each, and whose output value is not
/// read by the payload.
KernelArgumentEffects analyzeKernelArguments(FuncOp kernel);

/// The buffer that `buffer` (a chain of views, or a buffer itself) aliases.
mlir::Value getRootBuffer(mlir::Value buffer);

/// Whether `op` is a point of an entry's schedule: an op the runtime runs
/// (launch, gemm, copy, zero, ...). Allocations, views, constants and the
/// terminator only name bytes.
bool isScheduledOp(mlir::Operation *op);

/// Caches the effects of the kernels of one module and answers, for each
/// scheduled op of an entry, how it touches each buffer operand.
class BufferAccessAnalysis {
public:
  /// Kernels are looked up in `symbols` when given (a pass that keeps its
  /// table current: a lookup is then a hash lookup, not a walk of the
  /// module), else from each launch.
  explicit BufferAccessAnalysis(mlir::SymbolTable *symbols = nullptr)
      : symbols(symbols) {}

  /// The access of each operand of `op`, in operand order (None for
  /// operands that are not buffers). Unknown ops read and write every
  /// buffer operand.
  llvm::SmallVector<BufferAccess> getOperandAccess(mlir::Operation *op);

  /// The operand pairs (input, output operand indices) of `op` whose
  /// output may be written over the input: for a launch, its kernel's
  /// elementwise pairs; empty for every other op.
  llvm::SmallVector<ElementwisePair>
  getElementwiseOperandPairs(mlir::Operation *op);

private:
  const KernelArgumentEffects *getKernelEffects(LaunchOp launch);

  mlir::SymbolTable *symbols;
  llvm::DenseMap<mlir::Operation *, KernelArgumentEffects> kernelEffects;
};

} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_ANALYSIS_BUFFERACCESS_H
