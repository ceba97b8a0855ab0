//===- NpyTest.cpp - Tests of the .npy reader and writer ------------------===//
//
// Part of Kiln. Files written by NumPy (test/unit/golden/make_npy.py) are
// read back and compared with the closed forms that script documents; Kiln's
// writer must produce NumPy's bytes exactly; malformed files give errors that
// name the file and the problem.
//
//===----------------------------------------------------------------------===//

#include "kiln/Npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kiln;
using namespace kiln::npy;

namespace {

std::string goldenPath(const std::string &name) {
  return std::string(KILN_SOURCE_DIR) + "/test/unit/golden/npy/" + name +
         ".npy";
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
}

/// A scratch directory removed at the end of the test.
class NpyFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("kiln-npy-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string &name) { return (dir / name).string(); }
  std::filesystem::path dir;
};

template <typename T> std::vector<T> elements(const Array &array) {
  return std::vector<T>(array.as<T>(), array.as<T>() + array.numElements());
}

TEST(Npy, ReadsNumPyFilesOfEveryDType) {
  Array array;
  ASSERT_TRUE(readNpy(goldenPath("f4_2x3"), array)) << "f4";
  EXPECT_EQ(array.dtype, DType::Float32);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<float>()[i], i * 0.5f - 1);

  ASSERT_TRUE(readNpy(goldenPath("f8_2x3"), array)) << "f8";
  EXPECT_EQ(array.dtype, DType::Float64);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<double>()[i], i * 0.5 - 1);

  ASSERT_TRUE(readNpy(goldenPath("i4_2x3"), array)) << "i4";
  EXPECT_EQ(array.dtype, DType::Int32);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<int32_t>()[i], i * 3 - 7);

  ASSERT_TRUE(readNpy(goldenPath("i8_2x3"), array)) << "i8";
  EXPECT_EQ(array.dtype, DType::Int64);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<int64_t>()[i], i * 3 - 7);

  ASSERT_TRUE(readNpy(goldenPath("u1_2x3"), array)) << "u1";
  EXPECT_EQ(array.dtype, DType::UInt8);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<uint8_t>()[i], i * 17 % 256);

  ASSERT_TRUE(readNpy(goldenPath("u2_2x3"), array)) << "u2";
  EXPECT_EQ(array.dtype, DType::UInt16);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<uint16_t>()[i], i * 4099);

  ASSERT_TRUE(readNpy(goldenPath("b1_2x3"), array)) << "b1";
  EXPECT_EQ(array.dtype, DType::Bool);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(array.as<uint8_t>()[i], i % 3 == 0 ? 1 : 0);
}

TEST(Npy, ReadsScalarsVectorsAndFormatVersions2And3) {
  Array array;
  ASSERT_TRUE(readNpy(goldenPath("f4_scalar"), array));
  EXPECT_TRUE(array.shape.empty());
  EXPECT_EQ(array.numElements(), 1);
  EXPECT_EQ(array.as<float>()[0], 2.5f);

  ASSERT_TRUE(readNpy(goldenPath("i8_len5"), array));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(elements<int64_t>(array), (std::vector<int64_t>{-7, -4, -1, 2, 5}));

  ASSERT_TRUE(readNpy(goldenPath("f8_2x2x2_v2"), array));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(array.as<double>()[7], 2.5);

  ASSERT_TRUE(readNpy(goldenPath("f4_3_v3"), array));
  EXPECT_EQ(elements<float>(array), (std::vector<float>{-1.0f, -0.5f, 0.0f}));
}

TEST(Npy, WritesNumPysBytesExactly) {
  for (const char *name : {"f4_2x3", "f8_2x3", "i4_2x3", "i8_2x3", "u1_2x3",
                           "u2_2x3", "b1_2x3", "f4_scalar", "i8_len5"}) {
    Array array;
    ASSERT_TRUE(readNpy(goldenPath(name), array)) << name;
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(serializeNpy(array, bytes)) << name;
    EXPECT_EQ(bytes, readBytes(goldenPath(name))) << name;
  }
}

TEST_F(NpyFileTest, RoundTripsThroughAFile) {
  const double values[] = {1.5, -2.25, 1e300, 0.0, -0.0, 3.0};
  Array array;
  ASSERT_TRUE(makeArray(DType::Float64, {3, 1, 2}, values, 6, array));
  ASSERT_TRUE(writeNpy(path("a.npy"), array));
  Array back;
  Status status = readNpy(path("a.npy"), back);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(back.dtype, DType::Float64);
  EXPECT_EQ(back.shape, (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(std::memcmp(back.data.data(), values, sizeof(values)), 0);
  // The data starts on a 64-byte boundary.
  EXPECT_EQ((readBytes(path("a.npy")).size() - sizeof(values)) % 64, 0u);
}

TEST_F(NpyFileTest, RoundTripsEmptyArrays) {
  Array array;
  ASSERT_TRUE(makeArray(DType::Int32, {0, 4}, nullptr, 0, array));
  ASSERT_TRUE(writeNpy(path("empty.npy"), array));
  Array back;
  ASSERT_TRUE(readNpy(path("empty.npy"), back));
  EXPECT_EQ(back.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(back.data.empty());
}

/// Parses `bytes` and expects an error that names "bad.npy" and contains
/// `fragment`.
void expectParseError(const std::vector<uint8_t> &bytes,
                      const std::string &fragment) {
  Array array;
  Status status = parseNpy(bytes.data(), bytes.size(), "bad.npy", array);
  ASSERT_FALSE(status) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(status.message().find("bad.npy"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find(fragment), std::string::npos)
      << status.message();
}

TEST(Npy, RejectsMalformedFiles) {
  std::vector<uint8_t> good = readBytes(goldenPath("f4_2x3"));
  ASSERT_EQ(good.size(), 128u + 24u);

  std::vector<uint8_t> badMagic = good;
  badMagic[1] = 'X';
  expectParseError(badMagic, "bad magic");
  expectParseError({}, "bad magic");

  expectParseError(std::vector<uint8_t>(good.begin(), good.begin() + 9),
                   "truncated header");
  expectParseError(std::vector<uint8_t>(good.begin(), good.begin() + 60),
                   "truncated header");
  expectParseError(std::vector<uint8_t>(good.begin(), good.end() - 1),
                   "truncated data");
  std::vector<uint8_t> trailing = good;
  trailing.push_back(0);
  expectParseError(trailing, "unexpected bytes");

  std::vector<uint8_t> badVersion = good;
  badVersion[6] = 4;
  expectParseError(badVersion, "version 4.0");

  std::vector<uint8_t> badHeader = good;
  badHeader[10] = '[';
  expectParseError(badHeader, "malformed header");

  expectParseError(readBytes(goldenPath("f4_fortran")), "fortran_order");
  expectParseError(readBytes(goldenPath("f4_bigendian")),
                   "unsupported dtype '>f4'");
  expectParseError(readBytes(goldenPath("c8_complex")),
                   "unsupported dtype '<c8'");
}

TEST(Npy, RejectsHeadersWithMissingOrUnknownKeys) {
  auto withHeader = [](std::string header) {
    std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    bytes.push_back(static_cast<uint8_t>(header.size()));
    bytes.push_back(static_cast<uint8_t>(header.size() >> 8));
    bytes.insert(bytes.end(), header.begin(), header.end());
    return bytes;
  };
  expectParseError(withHeader("{'descr': '<f4', 'shape': ()}\n"), "lacks");
  expectParseError(
      withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (), "
                 "'extra': 1}\n"),
      "malformed header");
  expectParseError(
      withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}\n"),
      "malformed header");
  // A well-formed header parses (a 0-d array needs 4 bytes of data).
  std::vector<uint8_t> scalar =
      withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': ()}\n");
  scalar.insert(scalar.end(), {0, 0, 0x80, 0x3f});
  Array array;
  Status status = parseNpy(scalar.data(), scalar.size(), "ok.npy", array);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(array.as<float>()[0], 1.0f);
}

TEST_F(NpyFileTest, ReportsMissingFilesAndBadArrays) {
  Array array;
  Status status = readNpy(path("missing.npy"), array);
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("missing.npy"), std::string::npos);

  const float values[] = {1, 2, 3};
  EXPECT_FALSE(makeArray(DType::Float32, {2, 2}, values, 3, array));
  array.dtype = DType::Float32;
  array.shape = {2, 2};
  array.data.assign(12, 0); // 3 floats for a 2x2 shape
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(serializeNpy(array, bytes));
  EXPECT_FALSE(writeNpy(path("no-such-dir/x.npy"), array));
}

} // namespace
