//===- KernelStatus.h - The codes kernels record for bad input ------------===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR. Shared by the
// compiler, whose kernels write them, and the runtime, which reports them.
//
// A plan's status buffer (i64[2]) holds, after a kernel saw bad input, the
// largest code recorded in word 0 and the offending value in word 1.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELSTATUS_H
#define KILN_KERNELSTATUS_H

#include <cstdint>

namespace kiln {

enum class KernelStatus : int64_t {
  Ok = 0,
  /// An embedding id outside [0, V).
  BadEmbeddingId = 1,
  /// A cross-entropy target outside [0, C).
  BadTarget = 2,
};

} // namespace kiln

#endif // KILN_KERNELSTATUS_H
