// Npy.h - Reading and writing NumPy .npy arrays.
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// Supports format versions 1.0, 2.0 and 3.0; little-endian (or one-byte)
// dtypes '<f4', '<f8', '<i4', '<i8', '|u1', '<u2', '|b1'; C order only.
// Data is kept as raw little-endian bytes, which is the host's layout on every
// machine Kiln targets (a big-endian host gets an error, not wrong numbers).
// Every failure comes back as a Status whose message names the file (or the
// name given for an in-memory buffer) and what is wrong with it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_NPY_H
#define KILN_NPY_H

#include "kiln/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace npy {

/// The element types Kiln reads and writes.
enum class DType { Float32, Float64, Int32, Int64, UInt8, UInt16, Bool };

/// Bytes per element of `dtype`.
size_t dtypeSize(DType dtype);
/// The NumPy descr string of `dtype`, e.g. "<f4".
const char *dtypeDescr(DType dtype);

/// An n-dimensional array in C order, as raw little-endian bytes.
struct Array {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// The product of the dims (1 for a 0-d array).
  int64_t numElements() const;
  /// The bytes the data must hold: numElements() * dtypeSize(dtype).
  size_t byteSize() const { return numElements() * dtypeSize(dtype); }
  /// The data as elements of T; T must match dtype's size.
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data.data());
  }
};

/// Makes an array of `dtype` and `shape` from `count` elements at `values`;
/// `count` must equal the shape's element count.
Status makeArray(DType dtype, std::vector<int64_t> shape, const void *values,
                 size_t count, Array &out);

/// Parses the bytes of a .npy file; `name` is used in error messages.
Status parseNpy(const uint8_t *bytes, size_t size, const std::string &name,
                Array &out);
/// Reads the .npy file at `path`.
Status readNpy(const std::string &path, Array &out);

/// Serializes `array` to .npy bytes (version 1.0, or 2.0 when the header
/// needs more than 64 KiB), the header padded to a multiple of 64 bytes.
Status serializeNpy(const Array &array, std::vector<uint8_t> &out);
/// Writes `array` to the .npy file at `path`.
Status writeNpy(const std::string &path, const Array &array);

} // namespace npy
} // namespace kiln

#endif // KILN_NPY_H
