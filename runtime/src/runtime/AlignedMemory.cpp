//===- AlignedMemory.cpp - Zeroed memory on a cache-line boundary ---------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "AlignedMemory.h"

#include <cstdlib>
#include <cstring>

using namespace kiln;
using namespace kiln::runtime;

AlignedMemory::~AlignedMemory() { std::free(data_); }

Result AlignedMemory::allocate(size_t size, const std::string &what) {
  // aligned_alloc needs a multiple of the alignment, and a non-zero size so
  // that every buffer has a distinct, valid address.
  size_t rounded = (size + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_)
    return Result::error(KILN_ERROR_INTERNAL, "out of memory allocating " +
                                                  std::to_string(size) +
                                                  " bytes for " + what);
  std::memset(data_, 0, rounded);
  return Result::ok();
}
