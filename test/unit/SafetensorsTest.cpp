//===- SafetensorsTest.cpp - Tests of the .safetensors reader and writer --===//
//
// Part of Kiln. A file written by the reference implementation
// (test/unit/golden/safetensors/make_safetensors.py) is read and compared
// with the closed forms that script documents; Kiln's own files round-trip;
// malformed files give errors that name the file and the problem; a failed
// save leaves the previous file intact.
//
//===----------------------------------------------------------------------===//

#include "FileSizeLimit.h"

#include "kiln/Files.h"
#include "kiln/Safetensors.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::safetensors;

namespace {

std::string referencePath() {
  return std::string(KILN_SOURCE_DIR) +
         "/test/unit/golden/safetensors/reference.safetensors";
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(file)),
                              std::istreambuf_iterator<char>());
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

/// The bytes of a file with the given header text and `dataSize` data bytes
/// (0, 1, 2, ...); `headerLength` overrides the length field when >= 0.
std::vector<uint8_t> fileWithHeader(const std::string &header, size_t dataSize,
                                    int64_t headerLength = -1) {
  uint64_t length =
      headerLength >= 0 ? static_cast<uint64_t>(headerLength) : header.size();
  std::vector<uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(length >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (size_t i = 0; i < dataSize; ++i)
    bytes.push_back(static_cast<uint8_t>(i));
  return bytes;
}

/// The error of parsing `bytes` as file "bad.safetensors"; fails the test if
/// it parses.
std::string parseError(const std::vector<uint8_t> &bytes) {
  TensorFile file;
  Status status =
      parseSafetensors(bytes.data(), bytes.size(), "bad.safetensors", file);
  EXPECT_FALSE(status) << "parsed a malformed file";
  EXPECT_TRUE(file.tensors.empty() && file.metadata.empty())
      << "a failed parse left contents behind";
  EXPECT_EQ(status.message().rfind("bad.safetensors: ", 0), 0u)
      << "error does not name the file: " << status.message();
  return status.message();
}

template <typename T> std::vector<T> elements(const Tensor &tensor) {
  return std::vector<T>(tensor.as<T>(), tensor.as<T>() + tensor.numElements());
}

/// A file holding one tensor of every dtype, a scalar, an empty tensor and
/// metadata that needs escaping.
TensorFile sampleFile() {
  TensorFile file;
  const float f32[] = {1.5f, -2.0f, 0.0f, 3.25f, -0.125f, 1e30f};
  const double f64[] = {1.0 / 3.0, -1e300};
  const uint16_t f16[] = {0x3C00, 0xC100, 0x7BFF};  // 1, -2.5, 65504
  const uint16_t bf16[] = {0x3F80, 0xC020, 0x7F80}; // 1, -2.5, inf
  const int32_t i32[] = {-7, 0, 2147483647};
  const int64_t i64[] = {-(int64_t(1) << 50), 42};
  const uint8_t u8[] = {0, 200, 255};
  const uint16_t u16[] = {65535, 1};
  const uint8_t flags[] = {1, 0, 1, 1};
  const float scalar = 2.5f;
  EXPECT_TRUE(file.add("layer.0.w", DType::F32, {2, 3}, f32, sizeof(f32)));
  EXPECT_TRUE(file.add("f64", DType::F64, {2}, f64, sizeof(f64)));
  EXPECT_TRUE(file.add("half", DType::F16, {3}, f16, sizeof(f16)));
  EXPECT_TRUE(file.add("brain", DType::BF16, {3, 1}, bf16, sizeof(bf16)));
  EXPECT_TRUE(file.add("i32", DType::I32, {3}, i32, sizeof(i32)));
  EXPECT_TRUE(file.add("i64", DType::I64, {1, 2}, i64, sizeof(i64)));
  EXPECT_TRUE(file.add("u8", DType::U8, {3}, u8, sizeof(u8)));
  EXPECT_TRUE(file.add("u16", DType::U16, {2}, u16, sizeof(u16)));
  EXPECT_TRUE(file.add("mask", DType::Bool, {2, 2}, flags, sizeof(flags)));
  EXPECT_TRUE(file.add("scalar", DType::F32, {}, &scalar, sizeof(scalar)));
  EXPECT_TRUE(file.add("empty", DType::F32, {0, 7}, nullptr, 0));
  EXPECT_TRUE(file.add("w \"quoted\" \\ caf\xc3\xa9", DType::U8, {1}, u8, 1));
  file.metadata["step"] = "10";
  file.metadata["data.position"] = "3:17";
  file.metadata["odd"] =
      "tab\tnewline\nquote\"backslash\\ctrl\x01 \xe2\x82\xac";
  return file;
}

void expectSameFile(const TensorFile &a, const TensorFile &b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    SCOPED_TRACE(a.tensors[i].name);
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype);
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape);
    EXPECT_EQ(a.tensors[i].data, b.tensors[i].data);
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

/// A scratch directory removed at the end of the test.
class SafetensorsFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("kiln-safetensors-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    std::filesystem::remove_all(dir);
  }
  std::string path(const std::string &name) { return (dir / name).string(); }
  /// The names of the files in the scratch directory.
  std::vector<std::string> listDir() {
    std::vector<std::string> names;
    for (const auto &entry : std::filesystem::directory_iterator(dir))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::filesystem::path dir;
};

TEST(Safetensors, ReadsTheReferenceImplementationsFile) {
  TensorFile file;
  Status status = readSafetensors(referencePath(), file);
  ASSERT_TRUE(status) << status.message();
  ASSERT_EQ(file.tensors.size(), 10u);

  const Tensor *f32 = file.find("f32");
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->dtype, DType::F32);
  EXPECT_EQ(f32->shape, (std::vector<int64_t>{2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(f32->as<float>()[i], i * 0.5f - 1);
  const Tensor *f64 = file.find("f64");
  ASSERT_TRUE(f64);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(f64->as<double>()[i], i / 3.0);
  ASSERT_TRUE(file.find("f16"));
  EXPECT_EQ(file.find("f16")->dtype, DType::F16);
  EXPECT_EQ(elements<uint16_t>(*file.find("f16")),
            (std::vector<uint16_t>{0x3C00, 0xC100, 0x7BFF}));
  ASSERT_TRUE(file.find("i32"));
  EXPECT_EQ(elements<int32_t>(*file.find("i32")),
            (std::vector<int32_t>{-1500, -500, 500, 1500}));
  ASSERT_TRUE(file.find("i64"));
  EXPECT_EQ(
      elements<int64_t>(*file.find("i64")),
      (std::vector<int64_t>{-(int64_t(1) << 40), (int64_t(1) << 40) + 7}));
  ASSERT_TRUE(file.find("u8"));
  EXPECT_EQ(elements<uint8_t>(*file.find("u8")),
            (std::vector<uint8_t>{0, 1, 127, 128, 255}));
  ASSERT_TRUE(file.find("u16"));
  EXPECT_EQ(elements<uint16_t>(*file.find("u16")),
            (std::vector<uint16_t>{0, 513, 65535}));
  ASSERT_TRUE(file.find("bool"));
  EXPECT_EQ(file.find("bool")->dtype, DType::Bool);
  EXPECT_EQ(elements<uint8_t>(*file.find("bool")),
            (std::vector<uint8_t>{1, 0, 0, 1}));
  ASSERT_TRUE(file.find("scalar"));
  EXPECT_TRUE(file.find("scalar")->shape.empty());
  EXPECT_EQ(file.find("scalar")->as<float>()[0], 3.25f);
  ASSERT_TRUE(file.find("empty"));
  EXPECT_EQ(file.find("empty")->shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(file.find("empty")->data.empty());

  EXPECT_EQ(file.metadata.size(), 2u);
  EXPECT_EQ(file.metadata["step"], "12");
  EXPECT_EQ(file.metadata["note"], "caf\xc3\xa9 \"quoted\"\\n");
}

TEST(Safetensors, RoundTripsEveryDTypeAndMetadata) {
  TensorFile original = sampleFile();
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafetensors(original, bytes));
  uint64_t headerSize = 0;
  std::memcpy(&headerSize, bytes.data(), 8);
  EXPECT_EQ(headerSize % 8, 0u) << "data buffer not 8-byte aligned";
  EXPECT_EQ(bytes[8], '{');

  TensorFile read;
  Status status = parseSafetensors(bytes.data(), bytes.size(), "mem", read);
  ASSERT_TRUE(status) << status.message();
  expectSameFile(original, read);

  // Serializing what was read gives the same bytes: the format is stable.
  std::vector<uint8_t> again;
  ASSERT_TRUE(serializeSafetensors(read, again));
  EXPECT_EQ(bytes, again);
}

TEST(Safetensors, RewritesTheReferenceFileLosslessly) {
  TensorFile reference;
  ASSERT_TRUE(readSafetensors(referencePath(), reference));
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafetensors(reference, bytes));
  TensorFile read;
  ASSERT_TRUE(parseSafetensors(bytes.data(), bytes.size(), "mem", read));
  expectSameFile(reference, read);
}

TEST(Safetensors, AddRefusesInconsistentTensors) {
  TensorFile file;
  float values[4] = {};
  EXPECT_FALSE(file.add("w", DType::F32, {2, 3}, values, sizeof(values)));
  EXPECT_FALSE(file.add("w", DType::F32, {-1, 4}, values, sizeof(values)));
  EXPECT_FALSE(file.add("", DType::F32, {4}, values, sizeof(values)));
  EXPECT_FALSE(file.add("__metadata__", DType::F32, {4}, values, 16));
  EXPECT_TRUE(file.add("w", DType::F32, {4}, values, sizeof(values)));
  Status duplicate = file.add("w", DType::F32, {2, 2}, values, 16);
  EXPECT_FALSE(duplicate);
  EXPECT_NE(duplicate.message().find("'w'"), std::string::npos);
  EXPECT_EQ(file.tensors.size(), 1u);

  // A tensor edited by hand into an inconsistent state is not written.
  file.tensors[0].shape = {5};
  std::vector<uint8_t> bytes;
  Status status = serializeSafetensors(file, bytes);
  EXPECT_FALSE(status);
  EXPECT_NE(status.message().find("needs 20"), std::string::npos)
      << status.message();
}

TEST(Safetensors, ConvertsNpyArrays) {
  npy::Array array;
  const int32_t values[] = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(npy::makeArray(npy::DType::Int32, {3, 2}, values, 6, array));
  TensorFile file;
  ASSERT_TRUE(file.addArray("labels", array));
  EXPECT_EQ(file.tensors[0].dtype, DType::I32);
  EXPECT_EQ(file.tensors[0].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(elements<int32_t>(file.tensors[0]),
            std::vector<int32_t>(values, values + 6));
  npy::DType back;
  ASSERT_TRUE(toNpyDType(DType::I32, back));
  EXPECT_EQ(back, npy::DType::Int32);
  EXPECT_FALSE(toNpyDType(DType::BF16, back));
}

TEST(Safetensors, RejectsTruncatedFilesAtEveryLength) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafetensors(sampleFile(), bytes));
  for (size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE("length " + std::to_string(length));
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + length);
    parseError(prefix);
  }
  EXPECT_NE(parseError({1, 2, 3}).find("too short"), std::string::npos);
  std::vector<uint8_t> lengthOnly(bytes.begin(), bytes.begin() + 20);
  EXPECT_NE(parseError(lengthOnly).find("runs past the end"),
            std::string::npos);
  std::vector<uint8_t> noLastByte(bytes.begin(), bytes.end() - 1);
  EXPECT_NE(parseError(noLastByte).find("truncated"), std::string::npos);
}

TEST(Safetensors, RejectsMalformedHeaders) {
  const std::string tensorA =
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  struct Case {
    std::string header;
    size_t dataSize;
    std::string expected;
  } cases[] = {
      {"{" + tensorA + "}", 8, ""}, // The valid baseline.
      {"{" + tensorA, 8, "malformed JSON header"},
      {"{" + tensorA + ",}", 8, "malformed JSON header"},
      {"[1, 2]", 0, "does not start with '{'"},
      {"", 0, "does not start with '{'"},
      {"{" + tensorA + "} x", 8, "unexpected text after the value"},
      {"{" + tensorA + "," + tensorA + "}", 8, "duplicate key \"a\""},
      {R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2,
       "unsupported dtype \"F8_E4M3\""},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
       "F32 [3] needs 12 bytes but data_offsets give 8"},
      {R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", 8,
       "F64 [2] needs 16 bytes"},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
       "not a non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8,
       "not a non-negative integer"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8, "missing \"shape\""},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", 8,
       "not a pair"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8,
       "end before they begin"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4,
       "run past the data buffer of 4 bytes"},
      {R"({"a":{"dtype":"F32","shape":[1000000000000,1000000000000,)"
       R"(1000000000000],"data_offsets":[0,8]}})",
       8, "too large"},
      {R"({"a":[1,2]})", 0, "tensor 'a': expected an object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "tensors 'a' and 'b' overlap"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       12, "no tensor covers bytes 4 to 8"},
      {"{" + tensorA + "}", 12, "has 12 bytes but the tensors cover only 8"},
      {R"({"__metadata__":{"step":3}})", 0, "is a number, not a string"},
      {R"({"__metadata__":"x"})", 0, "\"__metadata__\" is not an object"},
      {"{\"a\xff\":1}", 0, "invalid UTF-8"},
      {"{\"a\x01\":1}", 0, "control character"},
      {R"({"\ud800":1})", 0, "unpaired high surrogate"},
      {R"({"a":01})", 0, "malformed JSON header"},
      {"{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}", 0,
       "nesting deeper than 64"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    std::vector<uint8_t> bytes = fileWithHeader(c.header, c.dataSize);
    if (c.expected.empty()) {
      TensorFile file;
      EXPECT_TRUE(parseSafetensors(bytes.data(), bytes.size(), "ok", file));
      continue;
    }
    std::string error = parseError(bytes);
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
  }
}

TEST(Safetensors, RejectsImpossibleHeaderLengths) {
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  EXPECT_NE(parseError(fileWithHeader(header, 1, int64_t(1) << 40))
                .find("exceeds the limit"),
            std::string::npos);
  EXPECT_NE(parseError(fileWithHeader(header, 1, header.size() + 2))
                .find("runs past the end"),
            std::string::npos);
  // All 64 bits set: no overflow in the size arithmetic.
  std::vector<uint8_t> bytes = fileWithHeader(header, 1);
  std::memset(bytes.data(), 0xFF, 8);
  parseError(bytes);
}

TEST(Safetensors, SurvivesRandomCorruption) {
  std::vector<uint8_t> valid;
  ASSERT_TRUE(serializeSafetensors(sampleFile(), valid));
  std::mt19937 random(1234);
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bytes = valid;
    int flips = 1 + trial % 4;
    for (int i = 0; i < flips; ++i)
      bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
    TensorFile file;
    Status status = parseSafetensors(bytes.data(), bytes.size(), "x", file);
    if (!status) {
      ++rejected;
      EXPECT_FALSE(status.message().empty());
      continue;
    }
    // Whatever parses must be self-consistent.
    for (const Tensor &tensor : file.tensors)
      EXPECT_EQ(tensor.data.size(),
                size_t(tensor.numElements()) * dtypeSize(tensor.dtype));
  }
  EXPECT_GT(rejected, 0);
}

TEST_F(SafetensorsFileTest, WriteThenReadAndReplace) {
  const std::string file = path("ckpt.safetensors");
  TensorFile first = sampleFile();
  ASSERT_TRUE(writeSafetensors(file, first));
  TensorFile read;
  ASSERT_TRUE(readSafetensors(file, read));
  expectSameFile(first, read);

  TensorFile second;
  const float value = 7.0f;
  ASSERT_TRUE(second.add("only", DType::F32, {1}, &value, sizeof(value)));
  ASSERT_TRUE(writeSafetensors(file, second));
  ASSERT_TRUE(readSafetensors(file, read));
  expectSameFile(second, read);
  EXPECT_EQ(listDir(), std::vector<std::string>{"ckpt.safetensors"})
      << "a temporary file was left behind";
}

TEST_F(SafetensorsFileTest, OnlyRegularFilesAreReplaced) {
  TensorFile other;
  const float value = 1.0f;
  ASSERT_TRUE(other.add("x", DType::F32, {1}, &value, sizeof(value)));
  // A symbolic link (to a file that stays as it is), a directory, a FIFO.
  const std::string target = path("target.safetensors");
  ASSERT_TRUE(writeSafetensors(target, sampleFile()));
  const std::vector<uint8_t> before = readBytes(target);
  const std::string link = path("link.safetensors");
  std::filesystem::create_symlink(target, link);
  const std::string directory = path("dir.safetensors");
  std::filesystem::create_directory(directory);
  const std::string fifo = path("fifo.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (auto [where, what] : {std::make_pair(link, "a symbolic link"),
                             std::make_pair(directory, "a directory"),
                             std::make_pair(fifo, "a FIFO")}) {
    Status status = writeSafetensors(where, other);
    ASSERT_FALSE(status) << where;
    EXPECT_NE(status.message().find(std::string("refusing to replace '") +
                                    where + "': it is " + what),
              std::string::npos)
        << status.message();
  }
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_TRUE(std::filesystem::is_directory(directory));
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(readBytes(target), before);
  EXPECT_FALSE(writeSafetensors("", other));
}

TEST_F(SafetensorsFileTest, StaleTemporariesGoAtTheNextSaveLockedOnesStay) {
  const std::string file = path("ckpt.safetensors");
  // What a writer killed mid-save leaves: a temporary nobody locks (also in
  // the old PATH.tmp.<pid> form).
  const std::string stale = temporaryPrefix(file) + "Ab12Cd";
  const std::string oldStyle = temporaryPrefix(file) + "12345";
  writeBytes(stale, {1, 2, 3});
  writeBytes(oldStyle, {4});
  // A writer still at work holds the lock on its temporary.
  const std::string live = temporaryPrefix(file) + "Live00";
  writeBytes(live, {5});
  int liveFd = ::open(live.c_str(), O_RDONLY);
  ASSERT_GE(liveFd, 0);
  ASSERT_EQ(::flock(liveFd, LOCK_EX), 0);
  // Someone else's file with a similar name is not ours.
  writeBytes(path("other.safetensors.tmp.Ab12Cd"), {6});

  ASSERT_TRUE(writeSafetensors(file, sampleFile()));
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_FALSE(std::filesystem::exists(oldStyle));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(path("other.safetensors.tmp.Ab12Cd")));
  ::close(liveFd); // The writer is gone now: the next save removes it.
  ASSERT_TRUE(writeSafetensors(file, sampleFile()));
  EXPECT_FALSE(std::filesystem::exists(live));
}

TEST_F(SafetensorsFileTest, FailedSaveLeavesTheOldCheckpointIntact) {
  const std::string file = path("ckpt.safetensors");
  ASSERT_TRUE(writeSafetensors(file, sampleFile()));
  const std::vector<uint8_t> before = readBytes(file);
  TensorFile other;
  const float value = 1.0f;
  ASSERT_TRUE(other.add("x", DType::F32, {1}, &value, sizeof(value)));

  // The temporary cannot be created (no file may be opened): the save
  // fails, naming it, before it touches the existing checkpoint.
  Status status = Status::ok();
  {
    kiln::testing::NoNewFiles noFiles;
    status = writeSafetensors(file, other);
  }
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("cannot create a temporary file '" +
                                  temporaryPrefix(file)),
            std::string::npos)
      << status.message();
  EXPECT_EQ(readBytes(file), before);
  EXPECT_EQ(listDir(), std::vector<std::string>{"ckpt.safetensors"});

  // The directory does not exist.
  status = writeSafetensors(path("missing/ckpt.safetensors"), other);
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("missing/ckpt.safetensors"),
            std::string::npos);
}

TEST_F(SafetensorsFileTest, SaveInterruptedMidWriteLeavesTheOldFileIntact) {
  const std::string file = path("ckpt.safetensors");
  ASSERT_TRUE(writeSafetensors(file, sampleFile()));
  const std::vector<uint8_t> before = readBytes(file);

  // A file-size limit makes write() fail part way through (EFBIG), as a
  // full disk would; SIGXFSZ would otherwise kill the test.
  std::vector<float> big(1 << 16, 1.0f);
  TensorFile large;
  ASSERT_TRUE(large.add("big", DType::F32, {int64_t(big.size())}, big.data(),
                        big.size() * sizeof(float)));
  Status status = Status::ok();
  {
    kiln::testing::FileSizeLimit limit(4096);
    status = writeSafetensors(file, large);
  }

  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("cannot write temporary file"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(readBytes(file), before);
  EXPECT_EQ(listDir(), std::vector<std::string>{"ckpt.safetensors"})
      << "the partial temporary file was not removed";
}

TEST_F(SafetensorsFileTest, UnwritableDirectoryLeavesTheOldFileIntact) {
  if (geteuid() == 0)
    GTEST_SKIP() << "root ignores directory permissions";
  const std::string file = path("ckpt.safetensors");
  ASSERT_TRUE(writeSafetensors(file, sampleFile()));
  const std::vector<uint8_t> before = readBytes(file);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_read |
                                        std::filesystem::perms::owner_exec);
  TensorFile other;
  Status status = writeSafetensors(file, other);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  ASSERT_FALSE(status);
  EXPECT_EQ(readBytes(file), before);
}

TEST_F(SafetensorsFileTest, ReadErrorsNameTheFile) {
  TensorFile file;
  Status status = readSafetensors(path("absent.safetensors"), file);
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("absent.safetensors"), std::string::npos);
  status = readSafetensors(dir.string(), file);
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("directory"), std::string::npos);
  writeBytes(path("text.safetensors"), {'h', 'e', 'l', 'l', 'o', '\n'});
  status = readSafetensors(path("text.safetensors"), file);
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("text.safetensors: "), std::string::npos)
      << status.message();
}

} // namespace
