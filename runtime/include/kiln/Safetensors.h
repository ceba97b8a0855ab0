//===- Safetensors.h - Reading and writing .safetensors files -*- C++ -*-===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// Checkpoints and weights are .safetensors files, the format every framework
// reads. A file is
//
//   8 bytes      N, the header's length, unsigned little-endian
//   N bytes      the header: a UTF-8 JSON object, padded with spaces
//   the rest     the data buffer: every tensor's bytes, back to back
//
// The header maps each tensor's name to {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [begin, end]}, byte offsets into the data buffer, and may
// hold "__metadata__", an object of string values (Kind keeps the step, the
// RNG seed and the data position there). Tensor data is row-major and
// little-endian, which is the host's layout on every machine Kiln targets.
//
// Reading checks everything the format promises -- the header length
// against the file size, well-formed JSON, known dtypes, shape times dtype
// size equal to each tensor's byte count, offsets inside the buffer, and
// tensors that neither overlap nor leave gaps (the buffer must be exactly
// covered, as the reference implementation requires) -- and reports the
// first problem as a Status naming the file; it never crashes on bad input.
// Writing goes through writeFileAtomically (kiln/Files.h): an
// interrupted save never damages the file it replaces.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SAFETENSORS_H
#define KILN_SAFETENSORS_H

#include "kiln/Npy.h"
#include "kiln/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {
namespace safetensors {

/// The element types Kiln reads and writes, named as in the header.
enum class DType { F32, F64, F16, BF16, I32, I64, U8, U16, Bool };

/// Bytes per element of `dtype`.
size_t dtypeSize(DType dtype);
/// The header's name of `dtype`: "F32", "BF16", "BOOL", ...
const char *dtypeName(DType dtype);
/// The dtype named `name` in a header, if Kiln supports it.
bool dtypeFromName(const std::string &name, DType &out);

/// The .npy dtype with the same element layout, if there is one (F16 and
/// BF16 have none).
bool toNpyDType(DType dtype, npy::DType &out);
/// The safetensors dtype of a .npy dtype (all of them have one).
DType fromNpyDType(npy::DType dtype);

/// One named tensor: row-major, little-endian bytes.
struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// The product of the dims (1 for a scalar).
  int64_t numElements() const;
  /// The data as elements of T; T must match the dtype's size.
  template <typename T> T *as() { return reinterpret_cast<T *>(data.data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data.data());
  }
};

/// The contents of a .safetensors file.
struct TensorFile {
  /// In data order: the order they were added, for files Kiln wrote.
  std::vector<Tensor> tensors;
  /// The "__metadata__" map; empty when the file has none.
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or null.
  const Tensor *find(const std::string &name) const;
  Tensor *find(const std::string &name);

  /// Appends a tensor, copying `byteCount` bytes from `data`. Fails (and
  /// adds nothing) when the name is empty, taken or "__metadata__", a dim is
  /// negative, or `byteCount` is not the shape's element count times the
  /// dtype's size.
  Status add(const std::string &name, DType dtype,
             const std::vector<int64_t> &shape, const void *data,
             size_t byteCount);
  /// Appends a .npy array under `name` (see add).
  Status addArray(const std::string &name, const npy::Array &array);
};

/// The largest header Kiln accepts (as the reference implementation: 100 MB),
/// so that a corrupt length cannot make a reader allocate gigabytes.
constexpr uint64_t kMaxHeaderSize = 100u * 1000u * 1000u;

/// Parses the bytes of a .safetensors file; `name` (the path, usually) is
/// used in error messages.
Status parseSafetensors(const uint8_t *bytes, size_t size,
                        const std::string &name, TensorFile &out);
/// Reads and validates the .safetensors file at `path`.
Status readSafetensors(const std::string &path, TensorFile &out);

/// Serializes `file`: the header holds the tensors in order, each one's data
/// following the previous one's, then "__metadata__" if there is any; it is
/// padded with spaces to a multiple of 8 bytes so that the data is aligned.
/// Fails on a tensor whose data size does not match its dtype and shape, a
/// repeated name, or a name or metadata string that is not UTF-8.
Status serializeSafetensors(const TensorFile &file, std::vector<uint8_t> &out);
/// Writes `file` to `path` atomically (kiln/Files.h).
Status writeSafetensors(const std::string &path, const TensorFile &file);

} // namespace safetensors
} // namespace kiln

#endif // KILN_SAFETENSORS_H
