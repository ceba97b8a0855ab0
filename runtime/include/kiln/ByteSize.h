//===- ByteSize.h - Sizes in bytes as people write them ---------*- C++ -*-===//
//
// Part of Kiln's support code: plain C++17, no LLVM/MLIR.
//
// parseByteSize reads the sizes that `--memory-budget` and the train block's
// `memory` take: a plain number of bytes (`1073741824`) or a number with a
// unit (`80GiB`, `512MiB`, `1.5GB`, `64B`), with the units of the language
// (B; KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of
// 1024). formatByteSize writes a size for people: `72.75 MiB`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BYTESIZE_H
#define KILN_BYTESIZE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// A unit of sizes: its name as written and its bytes.
struct ByteSizeUnit {
  std::string_view name;
  int64_t bytes;
};

/// The units of the language: B; KB, MB, GB, TB; KiB, MiB, GiB, TiB.
const std::vector<ByteSizeUnit> &getByteSizeUnits();

/// The bytes of `name` (case-sensitive: Mb would be megabits), if it is a
/// unit.
std::optional<int64_t> lookupByteSizeUnit(std::string_view name);

/// Parses `text` (surrounding spaces allowed, and spaces between the number
/// and its unit). The number is decimal, with an optional fraction; a size
/// that is not a whole number of bytes is rounded to the nearest. Returns
/// nothing for anything else -- a sign, an unknown unit, zero, more than
/// 2^63 - 1 bytes -- and then sets `*error` (when given) to a message that
/// says what is wrong and what is expected.
std::optional<int64_t> parseByteSize(std::string_view text,
                                     std::string *error = nullptr);

/// `bytes` in the largest binary unit that keeps the number at least 1, with
/// two decimals: "64 B", "1.50 KiB", "72.75 MiB", "80.00 GiB".
std::string formatByteSize(int64_t bytes);

} // namespace kiln

#endif // KILN_BYTESIZE_H
