//===- ByteSizeTest.cpp - Tests of the byte-size parser and printer -------===//
//
// Part of Kiln. parseByteSize reads `--memory-budget` and the train block's
// `memory`: the expected values below are the units' definitions multiplied
// out by hand.
//
//===----------------------------------------------------------------------===//

#include "kiln/ByteSize.h"

#include <gtest/gtest.h>

#include <limits>

using namespace kiln;

namespace {

int64_t parsed(const char *text) {
  std::string error;
  std::optional<int64_t> bytes = parseByteSize(text, &error);
  EXPECT_TRUE(bytes.has_value()) << text << ": " << error;
  return bytes.value_or(-1);
}

std::string errorOf(const char *text) {
  std::string error;
  std::optional<int64_t> bytes = parseByteSize(text, &error);
  EXPECT_FALSE(bytes.has_value()) << text << " parsed as " << *bytes;
  EXPECT_FALSE(error.empty()) << text;
  return error;
}

TEST(ByteSizeTest, PlainBytes) {
  EXPECT_EQ(parsed("1"), 1);
  EXPECT_EQ(parsed("1073741824"), 1073741824);
  EXPECT_EQ(parsed("  4096 "), 4096);
  EXPECT_EQ(parsed("64B"), 64);
}

TEST(ByteSizeTest, BinaryAndDecimalUnits) {
  EXPECT_EQ(parsed("1KiB"), 1024);
  EXPECT_EQ(parsed("512MiB"), 512 * 1048576LL);
  EXPECT_EQ(parsed("80GiB"), 80 * 1073741824LL);
  EXPECT_EQ(parsed("2TiB"), 2 * 1099511627776LL);
  EXPECT_EQ(parsed("3KB"), 3000);
  EXPECT_EQ(parsed("7MB"), 7000000);
  EXPECT_EQ(parsed("40GB"), 40000000000LL);
  EXPECT_EQ(parsed("1TB"), 1000000000000LL);
  EXPECT_EQ(parsed("16 GiB"), 16 * 1073741824LL);
}

TEST(ByteSizeTest, Fractions) {
  EXPECT_EQ(parsed("1.5GB"), 1500000000);
  EXPECT_EQ(parsed("1.5GiB"), 1610612736);
  EXPECT_EQ(parsed("0.25KiB"), 256);
  EXPECT_EQ(parsed(".5KB"), 500);
  // 1.1 KiB is 1126.4 bytes: the nearest whole byte.
  EXPECT_EQ(parsed("1.1KiB"), 1126);
  EXPECT_EQ(parsed("1.0005KB"), 1001);
  // Digits past the 18th fraction digit are dropped, not overflowed.
  EXPECT_EQ(parsed("1.0000000000000000000000000001GiB"), 1073741824);
}

TEST(ByteSizeTest, Limits) {
  EXPECT_EQ(parsed("9223372036854775807"),
            std::numeric_limits<int64_t>::max());
  EXPECT_NE(errorOf("9223372036854775808").find("too large"),
            std::string::npos);
  EXPECT_NE(errorOf("8388608TiB").find("too large"), std::string::npos);
  EXPECT_NE(errorOf("99999999999999999999999999999999999GiB").find(
                "too large"),
            std::string::npos);
}

TEST(ByteSizeTest, Errors) {
  EXPECT_NE(errorOf("").find("empty size"), std::string::npos);
  EXPECT_NE(errorOf("   ").find("empty size"), std::string::npos);
  EXPECT_NE(errorOf("0").find("at least one byte"), std::string::npos);
  EXPECT_NE(errorOf("0.4B").find("at least one byte"), std::string::npos);
  EXPECT_NE(errorOf("-5").find("invalid size '-5'"), std::string::npos);
  EXPECT_NE(errorOf("GiB").find("invalid size"), std::string::npos);
  EXPECT_NE(errorOf("1.").find("digits after"), std::string::npos);
  EXPECT_NE(errorOf("1.5.2GB").find("unknown unit '.2GB'"), std::string::npos);
  EXPECT_NE(errorOf("12e3").find("unknown unit 'e3'"), std::string::npos);
  EXPECT_NE(errorOf("1.5XB").find("unknown unit 'XB'"), std::string::npos);
  // Units are case-sensitive; the message names the one meant.
  EXPECT_NE(errorOf("80gib").find("did you mean 'GiB'?"), std::string::npos);
  EXPECT_NE(errorOf("1Mb").find("did you mean 'MB'?"), std::string::npos);
  // Every message says what is expected.
  EXPECT_NE(errorOf("lots").find("like 80GiB"), std::string::npos);
}

TEST(ByteSizeTest, Format) {
  EXPECT_EQ(formatByteSize(0), "0 B");
  EXPECT_EQ(formatByteSize(1023), "1023 B");
  EXPECT_EQ(formatByteSize(1024), "1.00 KiB");
  EXPECT_EQ(formatByteSize(1536), "1.50 KiB");
  EXPECT_EQ(formatByteSize(72746496), "69.38 MiB");
  EXPECT_EQ(formatByteSize(80 * 1073741824LL), "80.00 GiB");
  EXPECT_EQ(formatByteSize(3 * 1099511627776LL), "3.00 TiB");
}

TEST(ByteSizeTest, FormatThenParse) {
  for (int64_t bytes : {int64_t(1) << 20, int64_t(3) << 30, int64_t(5) << 40})
    EXPECT_EQ(parsed(formatByteSize(bytes).c_str()), bytes);
}

} // namespace
