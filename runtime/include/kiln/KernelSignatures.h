//===- KernelSignatures.h - What a kernels.so says about its kernels ------===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// A kernels.so exports the NUL-terminated string kiln_kernel_signatures: one
// line per kernel, "SYMBOL RANGE BYTES0 BYTES1 ...\n", its iteration range
// and the bytes of each buffer it reads or writes. The runtime compares it
// with the plan before any kernel runs, so that a kernels.so from another
// model, or from the same model with other dims, is refused instead of
// running out of its buffers. The artifact's plan also records a hash of
// kernels.so (hashBytes), so that a damaged or mixed artifact is refused.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNELSIGNATURES_H
#define KILN_KERNELSIGNATURES_H

#include "kiln/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// The symbol of the signature table in a kernels.so.
inline constexpr char kKernelSignaturesSymbol[] = "kiln_kernel_signatures";

struct KernelSignature {
  std::string symbol;
  int64_t range = 0;
  std::vector<int64_t> bufferBytes;
};

/// The table's text for `signatures`.
std::string
formatKernelSignatures(const std::vector<KernelSignature> &signatures);

/// Parses a table written by formatKernelSignatures.
Status parseKernelSignatures(const std::string &text,
                             std::vector<KernelSignature> &signatures);

/// A 64-bit hash of `size` bytes (not cryptographic: it detects damage and
/// mix-ups, not tampering). The same on every host.
uint64_t hashBytes(const void *data, size_t size);

} // namespace kiln

#endif // KILN_KERNELSIGNATURES_H
