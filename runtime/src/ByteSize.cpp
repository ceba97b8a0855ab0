//===- ByteSize.cpp - Sizes in bytes as people write them -----------------===//
//
// Part of Kiln's support code: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "kiln/ByteSize.h"

#include <cinttypes>
#include <cstdio>
#include <limits>

const std::vector<kiln::ByteSizeUnit> &kiln::getByteSizeUnits() {
  static const std::vector<ByteSizeUnit> units = {
      {"B", 1},
      {"KB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000 * 1000 * 1000},
      {"TB", int64_t(1000) * 1000 * 1000 * 1000},
      {"KiB", int64_t(1) << 10},
      {"MiB", int64_t(1) << 20},
      {"GiB", int64_t(1) << 30},
      {"TiB", int64_t(1) << 40},
  };
  return units;
}

std::optional<int64_t> kiln::lookupByteSizeUnit(std::string_view name) {
  for (const ByteSizeUnit &unit : getByteSizeUnits())
    if (unit.name == name)
      return unit.bytes;
  return std::nullopt;
}

static constexpr const char *kExpected =
    "expected a number of bytes, or a number with a unit (B, KB, MB, GB, TB, "
    "KiB, MiB, GiB, TiB), like 80GiB, 512MiB or 1.5GB";

static std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

static bool isDigit(char c) { return c >= '0' && c <= '9'; }

static char toLower(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

static bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (toLower(a[i]) != toLower(b[i]))
      return false;
  return true;
}

std::optional<int64_t> kiln::parseByteSize(std::string_view text,
                                           std::string *error) {
  auto fail = [&](const std::string &why) -> std::optional<int64_t> {
    if (error)
      *error = why;
    return std::nullopt;
  };
  std::string quoted = "'" + std::string(text) + "'";
  std::string_view rest = trim(text);
  if (rest.empty())
    return fail("empty size: " + std::string(kExpected));

  // The number as an integer mantissa and a count of fraction digits:
  // exact, unlike a double, for every size up to 2^63 - 1.
  using Wide = unsigned __int128;
  const Wide limit = std::numeric_limits<int64_t>::max();
  Wide mantissa = 0;
  unsigned fractionDigits = 0, digits = 0;
  bool inFraction = false;
  size_t i = 0;
  for (; i < rest.size(); ++i) {
    char c = rest[i];
    if (c == '.' && !inFraction) {
      inFraction = true;
      continue;
    }
    if (!isDigit(c))
      break;
    ++digits;
    // Fraction digits past the 18th change no whole byte of any size.
    if (inFraction && fractionDigits == 18)
      continue;
    // Beyond 30 significant digits the size is far over the limit anyway.
    if (mantissa > limit * 1000)
      return fail("size " + quoted + " is too large (at most " +
                  std::to_string(std::numeric_limits<int64_t>::max()) +
                  " bytes)");
    mantissa = mantissa * 10 + (c - '0');
    if (inFraction)
      ++fractionDigits;
  }
  if (digits == 0)
    return fail("invalid size " + quoted + ": " + kExpected);
  if (inFraction && fractionDigits == 0)
    return fail("invalid size " + quoted + ": a fraction needs digits after "
                "the '.'");

  std::string_view unitName = trim(rest.substr(i));
  int64_t unitBytes = 1;
  if (!unitName.empty()) {
    std::optional<int64_t> found = lookupByteSizeUnit(unitName);
    if (!found) {
      // Units are case-sensitive (Mb would be megabits): name the one meant.
      std::string hint;
      for (const ByteSizeUnit &unit : getByteSizeUnits())
        if (equalsIgnoringCase(unit.name, unitName))
          hint = " (did you mean '" + std::string(unit.name) + "'?)";
      return fail("invalid size " + quoted + ": unknown unit '" +
                  std::string(unitName) + "'" + hint + "; " + kExpected);
    }
    unitBytes = *found;
  }

  Wide scale = 1;
  for (unsigned d = 0; d < fractionDigits; ++d)
    scale *= 10;
  Wide product = mantissa * static_cast<Wide>(unitBytes);
  Wide bytes = (product + scale / 2) / scale;
  if (bytes > limit)
    return fail("size " + quoted + " is too large (at most " +
                std::to_string(std::numeric_limits<int64_t>::max()) +
                " bytes)");
  if (bytes == 0)
    return fail("size " + quoted + " must be at least one byte");
  return static_cast<int64_t>(bytes);
}

std::string kiln::formatByteSize(int64_t bytes) {
  static constexpr const char *names[] = {"KiB", "MiB", "GiB", "TiB", "PiB",
                                          "EiB"};
  char buffer[64];
  if (bytes < 1024 && bytes > -1024) {
    std::snprintf(buffer, sizeof(buffer), "%" PRId64 " B", bytes);
    return buffer;
  }
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  value /= 1024;
  while (unit + 1 < std::size(names) && (value >= 1024 || value <= -1024)) {
    value /= 1024;
    ++unit;
  }
  std::snprintf(buffer, sizeof(buffer), "%.2f %s", value, names[unit]);
  return buffer;
}
