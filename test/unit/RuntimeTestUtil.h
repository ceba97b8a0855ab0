//===- RuntimeTestUtil.h - Building plans and artifacts in tests -*- C++
//-*-===//
//
// Part of Kiln. The runtime's tests write their own plans with the generated
// FlatBuffers API (PlanWriter) into temporary artifact directories whose
// kernels.so is the test kernels module (runtime-kernels/test_kernels.c).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_RUNTIMETESTUTIL_H
#define KILN_TEST_RUNTIMETESTUTIL_H

#include "kiln/plan_generated.h"
#include "kiln/runtime.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace kiln {
namespace test {

/// Builds a plan.kpl in memory: buffers first, then ops grouped by entry.
class PlanWriter {
public:
  using DType = plan::DType;
  using Kind = plan::BufferKind;

  /// Adds a buffer and returns its id; transients get the next 64-byte
  /// aligned arena offset.
  uint32_t buffer(const std::string &name, Kind kind, DType dtype,
                  std::vector<int64_t> shape,
                  flatbuffers::Offset<plan::Initializer> init = 0,
                  const std::vector<uint8_t> *data = nullptr) {
    int64_t elements = 1;
    for (int64_t dim : shape)
      elements *= dim;
    int64_t size = elements * static_cast<int64_t>(elementSize(dtype));
    int64_t offset = -1;
    if (kind == Kind::Transient) {
      offset = arenaBytes;
      arenaBytes += (size + 63) / 64 * 64;
    }
    auto nameOffset = fbb.CreateString(name);
    auto shapeOffset = fbb.CreateVector(shape);
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> dataOffset = 0;
    if (data)
      dataOffset = fbb.CreateVector(*data);
    uint32_t id = static_cast<uint32_t>(buffers.size());
    buffers.push_back(plan::CreateBuffer(fbb, id, nameOffset, kind, dtype,
                                         shapeOffset, size, offset, init,
                                         dataOffset));
    return id;
  }

  /// Adds 1-D f32 optimizer state `name` that holds the elements
  /// [offset, offset + elements) of a tensor of `whole` (ZeRO-1's part).
  uint32_t shardedState(const std::string &name, int64_t elements,
                        int64_t offset, std::vector<int64_t> whole) {
    auto nameOffset = fbb.CreateString(name);
    auto shapeOffset = fbb.CreateVector(std::vector<int64_t>{elements});
    auto wholeOffset = fbb.CreateVector(whole);
    uint32_t id = static_cast<uint32_t>(buffers.size());
    plan::BufferBuilder buffer(fbb);
    buffer.add_id(id);
    buffer.add_name(nameOffset);
    buffer.add_kind(Kind::OptimizerState);
    buffer.add_dtype(DType::F32);
    buffer.add_shape(shapeOffset);
    buffer.add_size_bytes(elements * 4);
    buffer.add_shard_offset(offset);
    buffer.add_whole_shape(wholeOffset);
    buffers.push_back(buffer.Finish());
    return id;
  }

  flatbuffers::Offset<plan::Initializer> init(const char *kind, double stddev,
                                              double low = 0, double high = 0,
                                              double value = 0) {
    return plan::CreateInitializerDirect(fbb, kind, stddev, low, high, value);
  }

  flatbuffers::Offset<plan::SourceLoc> loc(uint32_t line, uint32_t column) {
    return plan::CreateSourceLocDirect(fbb, "model.kiln", line, column);
  }

  void kernel(const char *symbol, std::vector<uint32_t> args, int64_t range,
              int64_t grain, const char *opName = "graph.test",
              uint32_t line = 1) {
    auto call = plan::CreateKernelCallDirect(fbb, symbol, &args, range, grain);
    addOp(plan::Call::KernelCall, call.Union(), opName, line);
  }

  /// A cuda plan's kernel: `grid` blocks of `block` threads.
  void gpuKernel(const char *symbol, std::vector<uint32_t> args, int64_t grid,
                 int64_t block, const char *opName = "graph.test",
                 uint32_t line = 1, int64_t sharedBytes = 0) {
    auto call = plan::CreateKernelCallDirect(fbb, symbol, &args, grid, 1, grid,
                                             block, sharedBytes);
    addOp(plan::Call::KernelCall, call.Union(), opName, line);
  }

  void gemm(flatbuffers::Offset<plan::GemmCall> call,
            const char *opName = "graph.matmul", uint32_t line = 1) {
    addOp(plan::Call::GemmCall, call.Union(), opName, line);
  }

  void copy(uint32_t source, uint32_t destination, int64_t size) {
    auto call = plan::CreateCopyCall(fbb, source, destination, size);
    addOp(plan::Call::CopyCall, call.Union(), "graph.reshape", 1);
  }

  void zero(uint32_t buffer) {
    auto call = plan::CreateZeroCall(fbb, buffer);
    addOp(plan::Call::ZeroCall, call.Union(), "zero", 1);
  }

  void collectiveStart(uint32_t bucket, std::vector<uint32_t> buffers) {
    auto call = plan::CreateCollectiveStartDirect(fbb, bucket, &buffers);
    addOp(plan::Call::CollectiveStart, call.Union(), "collective", 1);
  }

  void collectiveWait(uint32_t bucket) {
    auto call = plan::CreateCollectiveWait(fbb, bucket);
    addOp(plan::Call::CollectiveWait, call.Union(), "collective", 1);
  }

  /// Closes an entry holding the ops added since the previous one.
  void entry(const char *name, std::vector<uint32_t> inputs,
             std::vector<uint32_t> outputs) {
    entries.push_back(
        plan::CreateEntryDirect(fbb, name, &ops, &inputs, &outputs));
    ops.clear();
  }

  /// The finished plan's bytes.
  std::string finish(uint32_t schemaVersion = KILN_PLAN_SCHEMA_VERSION,
                     const char *target = "cpu",
                     const char *kernelsFile = "kernels.so",
                     uint64_t kernelsHash = 0, const char *arch = nullptr) {
    auto root = plan::CreatePlanDirect(
        fbb, schemaVersion, "kiln test", "test_model", target, kernelsFile,
        &buffers, &entries, arenaBytes, "{}", kernelsHash, arch);
    plan::FinishPlanBuffer(fbb, root);
    return std::string(reinterpret_cast<const char *>(fbb.GetBufferPointer()),
                       fbb.GetSize());
  }

  static size_t elementSize(DType dtype) {
    switch (dtype) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    default:
      return 1;
    }
  }

  flatbuffers::FlatBufferBuilder fbb;
  int64_t arenaBytes = 0;

private:
  void addOp(plan::Call type, flatbuffers::Offset<void> call,
             const char *opName, uint32_t line) {
    ops.push_back(plan::CreateOp(fbb, type, call, fbb.CreateString(opName),
                                 loc(line, 3)));
  }

  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  std::vector<flatbuffers::Offset<plan::Entry>> entries;
  std::vector<flatbuffers::Offset<plan::Op>> ops;
};

/// A temporary directory, removed (with its files) at destruction.
class TempDir {
public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "kiln-runtime-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()))
      path_ = buffer.data();
  }
  ~TempDir() {
    if (!path_.empty())
      std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

/// Writes `bytes` to `path`.
inline void writeFile(const std::string &path, const std::string &bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
}

/// Makes `directory` an artifact: plan.kpl holding `plan` and kernels.so a
/// link to the test kernels module.
inline void writeArtifact(const std::string &directory,
                          const std::string &plan) {
  writeFile(directory + "/plan.kpl", plan);
  std::string kernels = directory + "/kernels.so";
  ::unlink(kernels.c_str());
  ASSERT_EQ(::symlink(KILN_TEST_KERNELS, kernels.c_str()), 0);
}

/// An artifact written from a plan and opened, with one session on it.
struct Loaded {
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;

  /// Writes and opens `plan`; creates a cpu session with `threads`.
  kiln_status open(const std::string &plan, int32_t threads = 2) {
    writeArtifact(dir.path(), plan);
    kiln_status status = kiln_artifact_open(dir.path().c_str(), &artifact);
    if (status != KILN_OK)
      return status;
    return kiln_session_create(artifact, "cpu", threads, &session);
  }
  ~Loaded() {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }
};

/// Checks that `message` contains every string of `parts`.
inline void expectContains(const std::string &message,
                           std::initializer_list<std::string> parts) {
  for (const std::string &part : parts)
    EXPECT_NE(message.find(part), std::string::npos)
        << "'" << part << "' not in: " << message;
}

/// Checks that `status` is `expected` and that the thread's last error
/// contains every string of `parts`.
inline void expectError(kiln_status status, kiln_status expected,
                        std::initializer_list<std::string> parts) {
  EXPECT_EQ(status, expected) << kiln_last_error();
  expectContains(kiln_last_error(), parts);
}

/// Sets environment variable `name` for the life of the object, restoring
/// (or removing) it after.
class ScopedEnvironment {
public:
  ScopedEnvironment(std::string name, const std::string &value)
      : name_(std::move(name)) {
    if (const char *previous = std::getenv(name_.c_str()))
      saved_ = previous;
    set(value);
  }
  ~ScopedEnvironment() {
    if (saved_)
      ::setenv(name_.c_str(), saved_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  void set(const std::string &value) {
    ::setenv(name_.c_str(), value.c_str(), 1);
  }

private:
  std::string name_;
  std::optional<std::string> saved_;
};

/// The bytes of persistent buffer `name` of `session`, as T.
template <typename T>
std::vector<T> readBuffer(kiln_session *session, const char *name,
                          size_t count) {
  std::vector<T> values(count);
  EXPECT_EQ(
      kiln_session_get_buffer(session, name, values.data(), count * sizeof(T)),
      KILN_OK)
      << kiln_last_error();
  return values;
}

} // namespace test
} // namespace kiln

#endif // KILN_TEST_RUNTIMETESTUTIL_H
