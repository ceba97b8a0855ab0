//===- ReaderFuzzTest.cpp - Every reader of users' files under mutation ---===//
//
// Part of Kiln's tests. Each reader (.npy, token files, .safetensors,
// plan.kpl) gets thousands of mutated copies of a valid file: flipped and
// overwritten bytes, truncations, appended garbage, duplicated spans, and
// numbers in the headers replaced by huge, negative or overflowing ones.
// Each must end in a clean error or a correct load (a plan that loads is
// also run), never a crash or a hang, and no single allocation may be
// larger than what the file itself holds (plus a small constant): a size
// read from a header is checked against the file before anything is
// allocated from it. This binary replaces the global operator new to
// measure that.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "kiln/DataLoader.h"
#include "kiln/Files.h"
#include "kiln/KernelSignatures.h"
#include "kiln/Npy.h"
#include "kiln/Safetensors.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <random>

// --- The largest single allocation while a reader runs -------------------

namespace {
std::atomic<bool> measuring{false};
std::atomic<size_t> largestAllocation{0};
} // namespace

void *operator new(size_t size) {
  if (measuring.load(std::memory_order_relaxed)) {
    size_t seen = largestAllocation.load(std::memory_order_relaxed);
    while (size > seen && !largestAllocation.compare_exchange_weak(seen, size))
      ;
  }
  if (void *memory = std::malloc(size ? size : 1))
    return memory;
  throw std::bad_alloc();
}
void *operator new[](size_t size) { return operator new(size); }
void operator delete(void *memory) noexcept { std::free(memory); }
void operator delete[](void *memory) noexcept { std::free(memory); }
void operator delete(void *memory, size_t) noexcept { std::free(memory); }
void operator delete[](void *memory, size_t) noexcept { std::free(memory); }

namespace {

using namespace kiln;
using namespace kiln::test;
using DType = plan::DType;
using Kind = plan::BufferKind;

/// What a reader may allocate at once for an input of `size` bytes: a copy
/// of the file and what is decoded from it, plus bookkeeping.
size_t allocationBound(size_t size) { return 2 * size + (256 << 10); }

/// Mutations of `valid`, deterministic from the trial number.
class Mutator {
public:
  explicit Mutator(std::vector<uint8_t> valid) : valid_(std::move(valid)) {}

  std::vector<uint8_t> mutate(int trial) {
    std::mt19937_64 random(0x5EED0000u + static_cast<unsigned>(trial));
    std::vector<uint8_t> bytes = valid_;
    int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      size_t at = random() % bytes.size();
      switch (random() % 8) {
      case 0: // A flipped bit.
        bytes[at] ^= static_cast<uint8_t>(1u << (random() % 8));
        break;
      case 1: // An extreme byte.
        bytes[at] =
            std::array<uint8_t, 4>{0x00, 0xFF, 0x7F, 0x80}[random() % 4];
        break;
      case 2: // Truncated.
        bytes.resize(at);
        break;
      case 3: { // Garbage appended.
        size_t extra = 1 + random() % 64;
        for (size_t i = 0; i < extra; ++i)
          bytes.push_back(static_cast<uint8_t>(random()));
        break;
      }
      case 4: { // A span duplicated in place.
        size_t length = 1 + random() % std::min<size_t>(32, bytes.size() - at);
        bytes.insert(bytes.begin() + at, bytes.begin() + at,
                     bytes.begin() + at + length);
        break;
      }
      case 5: // A number in a text header made huge or negative.
        replaceNumber(bytes, random);
        break;
      case 6: { // A little-endian word overwritten with an extreme value.
        if (at + 8 > bytes.size())
          break;
        uint64_t value =
            std::array<uint64_t, 5>{~0ull, 1ull << 63, 1ull << 40,
                                    0xFFFFFFFFull, 0x7FFFFFFFull}[random() % 5];
        std::memcpy(bytes.data() + at, &value, 8);
        break;
      }
      default: // A random byte.
        bytes[at] = static_cast<uint8_t>(random());
        break;
      }
    }
    return bytes;
  }

private:
  /// Replaces a run of decimal digits by a huge, negative or overflowing
  /// number (headers of .npy and .safetensors are text).
  static void replaceNumber(std::vector<uint8_t> &bytes,
                            std::mt19937_64 &random) {
    std::vector<size_t> starts;
    for (size_t i = 0; i < bytes.size(); ++i)
      if (std::isdigit(bytes[i]) && (i == 0 || !std::isdigit(bytes[i - 1])))
        starts.push_back(i);
    if (starts.empty())
      return;
    size_t begin = starts[random() % starts.size()], end = begin;
    while (end < bytes.size() && std::isdigit(bytes[end]))
      ++end;
    static const char *const kNumbers[] = {"99999999999999999999999",
                                           "18446744073709551616",
                                           "4294967296",
                                           "9223372036854775807",
                                           "-1",
                                           "0",
                                           "1e308",
                                           "281474976710656"};
    std::string number = kNumbers[random() % 8];
    bytes.erase(bytes.begin() + begin, bytes.begin() + end);
    bytes.insert(bytes.begin() + begin, number.begin(), number.end());
  }

  std::vector<uint8_t> valid_;
};

/// Runs `read` on `trials` mutations of `valid`, written to `path`: each
/// returns the reader's Status (and checks what it loaded itself), an error
/// must say something; allocations stay bounded; no trial over a second.
template <typename Read>
void fuzzReader(const std::string &path, std::vector<uint8_t> valid, int trials,
                Read read, const char *what) {
  Mutator mutator(std::move(valid));
  int rejected = 0, loaded = 0, slowestTrial = -1;
  double slowest = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<uint8_t> bytes = mutator.mutate(trial);
    writeFile(path, std::string(bytes.begin(), bytes.end()));
    auto start = std::chrono::steady_clock::now();
    largestAllocation = 0;
    measuring = true;
    Status outcome = read();
    measuring = false;
    bool ok = outcome.isOk();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (seconds > slowest) {
      slowest = seconds;
      slowestTrial = trial;
    }
    ASSERT_LE(largestAllocation.load(), allocationBound(bytes.size()))
        << what << " trial " << trial << " allocated "
        << largestAllocation.load() << " bytes at once for a file of "
        << bytes.size() << " (" << (ok ? "loaded" : outcome.message()) << ")";
    if (ok) {
      ++loaded;
    } else {
      ++rejected;
      ASSERT_FALSE(outcome.message().empty()) << what << " trial " << trial;
    }
  }
  EXPECT_LT(slowest, 1.0) << what << ": the slowest trial (" << slowestTrial
                          << ") took " << slowest << " s";
  // Both outcomes occur: the mutations reach past the first check.
  EXPECT_GT(rejected, trials / 4) << what;
  EXPECT_GT(loaded, 0) << what;
  std::printf("%s: %d mutated files, %d rejected cleanly, %d loaded\n", what,
              trials, rejected, loaded);
}

class ReaderFuzz : public ::testing::Test {
protected:
  TempDir dir;
};

TEST_F(ReaderFuzz, Npy) {
  npy::Array array;
  array.dtype = npy::DType::Float32;
  array.shape = {3, 5};
  array.data.assign(3 * 5 * 4, 0x3F);
  std::vector<uint8_t> valid;
  ASSERT_TRUE(npy::serializeNpy(array, valid));
  const std::string path = dir.file("x.npy");
  fuzzReader(
      path, valid, 5000,
      [&] {
        npy::Array read;
        Status status = npy::readNpy(path, read);
        size_t elements = 1;
        for (int64_t dim : read.shape)
          elements *= static_cast<size_t>(dim);
        if (status)
          EXPECT_EQ(read.data.size(), elements * npy::dtypeSize(read.dtype));
        return status;
      },
      "npy");
}

TEST_F(ReaderFuzz, TokenFile) {
  const std::string valid = dir.file("valid.tok");
  std::vector<uint16_t> tokens(200);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint16_t>(i * 7 % 300);
  ASSERT_TRUE(data::writeTokenFile(valid, tokens, 300));
  std::string bytes;
  ASSERT_TRUE(readWholeFile(valid, bytes));
  const std::string path = dir.file("x.tok");
  fuzzReader(
      path, std::vector<uint8_t>(bytes.begin(), bytes.end()), 5000,
      [&] {
        std::vector<uint16_t> read;
        Status status = data::readTokenFile(path, read);
        // KILNTOK1 holds 2 bytes per token, raw bytes one each.
        if (status)
          EXPECT_LE(read.size(), std::filesystem::file_size(path));
        return status;
      },
      "token file");
}

TEST_F(ReaderFuzz, Safetensors) {
  safetensors::TensorFile file;
  std::vector<float> a(12, 1.5f), b(5, -2.0f);
  ASSERT_TRUE(file.add("layer.w", safetensors::DType::F32, {3, 4}, a.data(),
                       a.size() * 4));
  ASSERT_TRUE(file.add("layer.b", safetensors::DType::F32, {5}, b.data(),
                       b.size() * 4));
  file.metadata["step"] = "12";
  std::vector<uint8_t> valid;
  ASSERT_TRUE(safetensors::serializeSafetensors(file, valid));
  const std::string path = dir.file("x.safetensors");
  fuzzReader(
      path, valid, 5000,
      [&] {
        safetensors::TensorFile read;
        Status status = safetensors::readSafetensors(path, read);
        if (status)
          for (const safetensors::Tensor &tensor : read.tensors)
            EXPECT_EQ(tensor.data.size(),
                      size_t(tensor.numElements()) *
                          safetensors::dtypeSize(tensor.dtype));
        return status;
      },
      "safetensors");
}

TEST_F(ReaderFuzz, Plan) {
  // A plan with every kind of op, against the test kernels.
  PlanWriter writer;
  uint32_t x = writer.buffer("x", Kind::Input, DType::F32, {6});
  uint32_t w = writer.buffer("w", Kind::Param, DType::F32, {6},
                             writer.init("normal", 0.1));
  uint32_t t = writer.buffer("t", Kind::Transient, DType::F32, {6});
  uint32_t m = writer.buffer("m", Kind::Transient, DType::F32, {4});
  uint32_t y = writer.buffer("y", Kind::Output, DType::F32, {6});
  writer.kernel("kiln_test_add", {x, w, t}, 6, 2, "graph.add", 3);
  writer.gemm(plan::CreateGemmCall(writer.fbb, t, t, m, 2, 2, 3, 1, false,
                                   false, 3, 2, 2, 0, 0, 0, 1.0, 0.0,
                                   DType::F32, 2, 2));
  writer.copy(t, y, 24);
  writer.zero(m);
  writer.entry("predict", {x}, {y});
  // Bound to the test kernels as the compiler binds a plan to kernels.so:
  // by their hash, then by their signature table (a mutated range or
  // argument list is refused before any kernel runs).
  std::string kernels;
  ASSERT_TRUE(readWholeFile(KILN_TEST_KERNELS, kernels));
  std::string plan =
      writer.finish(KILN_PLAN_SCHEMA_VERSION, "cpu", "kernels.so",
                    hashBytes(kernels.data(), kernels.size()));
  writeArtifact(dir.path(), plan);
  const std::string path = dir.file("plan.kpl");
  fuzzReader(
      path, std::vector<uint8_t>(plan.begin(), plan.end()), 4000,
      [&] {
        kiln_artifact *artifact = nullptr;
        if (kiln_artifact_open(dir.path().c_str(), &artifact) != KILN_OK)
          return Status::error(kiln_last_error());
        // What loads also runs: buffers of validated sizes may be large, so
        // the session is measured apart from the plan's reading.
        measuring = false;
        kiln_session *session = nullptr;
        int64_t arena = 0, total = 0;
        kiln_status status = KILN_OK;
        size_t count = 0;
        kiln_artifact_buffer_count(artifact, &count);
        for (size_t i = 0; i < count; ++i) {
          kiln_buffer_info info;
          kiln_artifact_buffer_info(artifact, i, &info);
          total += info.size_bytes;
          arena = std::max(arena, info.arena_offset + info.size_bytes);
        }
        // The arena the plan asks for, as the plan printer reports it.
        char *text = nullptr;
        kiln_artifact_print_plan(artifact, &text);
        const char *arenaLine = text ? std::strstr(text, "\narena: ") : nullptr;
        arena = std::max<int64_t>(
            arena, arenaLine ? std::strtoll(arenaLine + 8, nullptr, 10) : 0);
        kiln_string_free(text);
        if (total < (1 << 20) && arena < (1 << 20)) {
          status = kiln_session_create(artifact, "cpu", 1, &session);
          if (status == KILN_OK) {
            (void)kiln_session_initialize(session, 1);
            (void)kiln_session_run(session, "predict");
            kiln_session_destroy(session);
          }
        }
        kiln_artifact_close(artifact);
        return status == KILN_OK ? Status::ok()
                                 : Status::error(kiln_last_error());
      },
      "plan.kpl");
}

} // namespace
