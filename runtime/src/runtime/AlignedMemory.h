//===- AlignedMemory.h - Zeroed memory on a cache-line boundary -*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ALIGNEDMEMORY_H
#define KILN_RUNTIME_ALIGNEDMEMORY_H

#include "Result.h"

#include <cstddef>
#include <string>

namespace kiln {
namespace runtime {

/// Memory aligned to 64 bytes (a cache line, and any vector width), zeroed.
class AlignedMemory {
public:
  AlignedMemory() = default;
  AlignedMemory(AlignedMemory &&other) noexcept : data_(other.data_) {
    other.data_ = nullptr;
  }
  AlignedMemory &operator=(AlignedMemory &&) = delete;
  ~AlignedMemory();
  /// Allocates `size` zeroed bytes; `what` names the memory in the error.
  Result allocate(size_t size, const std::string &what);
  void *data() const { return data_; }

private:
  void *data_ = nullptr;
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_ALIGNEDMEMORY_H
