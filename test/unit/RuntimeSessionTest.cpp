//===- RuntimeSessionTest.cpp - Initializers, checkpoints, step counter ---===//
//
// Part of Kiln. Parameters initialized by the runtime equal the documented
// Philox formula (the reference interpreter's), bit for bit; checkpoints
// round-trip and are replaced atomically; loads that fail change nothing.
//
//===----------------------------------------------------------------------===//

#include "FileSizeLimit.h"
#include "RuntimeTestUtil.h"

#include "kiln/Files.h"
#include "kiln/Philox.h"
#include "kiln/Safetensors.h"

#include <cstring>
#include <filesystem>
#include <sys/stat.h>

using namespace kiln;
using namespace kiln::test;
using DType = plan::DType;
using Kind = plan::BufferKind;

namespace {

/// The bfloat16 nearest to `value` (ties to even), found by comparing the
/// two candidates around it: an oracle independent of the runtime's trick.
uint16_t nearestBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t below = static_cast<uint16_t>(bits >> 16);
  uint16_t above = static_cast<uint16_t>(below + 1);
  auto widen = [](uint16_t half) {
    uint32_t wide = static_cast<uint32_t>(half) << 16;
    float result;
    std::memcpy(&result, &wide, 4);
    return static_cast<double>(result);
  };
  double distanceBelow = std::fabs(widen(below) - value);
  double distanceAbove = std::fabs(widen(above) - value);
  if (distanceBelow != distanceAbove)
    return distanceBelow < distanceAbove ? below : above;
  return (below & 1) ? above : below;
}

/// A plan with one parameter of each initializer kind and dtype, one
/// optimizer state and a train_step that does nothing.
std::string initializerPlan() {
  PlanWriter w;
  w.buffer("w_normal", Kind::Param, DType::F32, {5, 7}, w.init("normal", 0.02));
  w.buffer("block.0.w_uniform", Kind::Param, DType::F64, {9},
           w.init("uniform", 0, -0.5, 0.25));
  w.buffer("c", Kind::Param, DType::F32, {3},
           w.init("constant", 0, 0, 0, 3.25));
  w.buffer("g", Kind::Param, DType::F32, {2}, w.init("ones", 0));
  w.buffer("b", Kind::Param, DType::F32, {4}, w.init("zeros", 0));
  w.buffer("h_bf16", Kind::Param, DType::BF16, {11}, w.init("normal", 1.5));
  w.buffer("h_f16", Kind::Param, DType::F16, {10}, w.init("uniform", 0, -3, 3));
  w.buffer("w_normal.adam_m", Kind::OptimizerState, DType::F32, {5, 7});
  w.entry("train_step", {}, {});
  w.entry("predict", {}, {});
  return w.finish();
}

const uint32_t kStep = philox::kInitializerStep;

uint32_t streamOf(const std::string &name) {
  return philox::hashName(name.data(), name.size());
}

TEST(RuntimeSession, InitializersFollowThePhiloxFormula) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(initializerPlan()), KILN_OK) << kiln_last_error();
  const uint64_t seed = 0x123456789ABCDEFull;
  ASSERT_EQ(kiln_session_initialize(loaded.session, seed), KILN_OK)
      << kiln_last_error();

  std::vector<float> normal = readBuffer<float>(loaded.session, "w_normal", 35);
  for (uint64_t e = 0; e < 35; ++e)
    ASSERT_EQ(normal[e], static_cast<float>(
                             0.02 * philox::normalFor(seed, kStep,
                                                      streamOf("w_normal"), e)))
        << "w_normal[" << e << "]";

  std::vector<double> uniform =
      readBuffer<double>(loaded.session, "block.0.w_uniform", 9);
  for (uint64_t e = 0; e < 9; ++e) {
    double u = philox::uniformFromWord(
        philox::wordFor(seed, kStep, streamOf("block.0.w_uniform"), e));
    ASSERT_EQ(uniform[e], -0.5 + 0.75 * u) << "w_uniform[" << e << "]";
    ASSERT_GE(uniform[e], -0.5);
    ASSERT_LT(uniform[e], 0.25);
  }

  EXPECT_EQ(readBuffer<float>(loaded.session, "c", 3),
            std::vector<float>(3, 3.25f));
  EXPECT_EQ(readBuffer<float>(loaded.session, "g", 2),
            std::vector<float>(2, 1.0f));
  EXPECT_EQ(readBuffer<float>(loaded.session, "b", 4),
            std::vector<float>(4, 0.0f));

  std::vector<uint16_t> bf16 =
      readBuffer<uint16_t>(loaded.session, "h_bf16", 11);
  for (uint64_t e = 0; e < 11; ++e) {
    float value = static_cast<float>(
        1.5 * philox::normalFor(seed, kStep, streamOf("h_bf16"), e));
    ASSERT_EQ(bf16[e], nearestBFloat16(value)) << "h_bf16[" << e << "]";
  }

  std::vector<_Float16> f16 = readBuffer<_Float16>(loaded.session, "h_f16", 10);
  for (uint64_t e = 0; e < 10; ++e) {
    double u = philox::uniformFromWord(
        philox::wordFor(seed, kStep, streamOf("h_f16"), e));
    _Float16 expected = static_cast<_Float16>(static_cast<float>(-3 + 6 * u));
    ASSERT_EQ(std::memcmp(&f16[e], &expected, 2), 0) << "h_f16[" << e << "]";
  }

  uint64_t step = 99, storedSeed = 0;
  ASSERT_EQ(kiln_session_get_step(loaded.session, &step), KILN_OK);
  ASSERT_EQ(kiln_session_get_seed(loaded.session, &storedSeed), KILN_OK);
  EXPECT_EQ(step, 0u);
  EXPECT_EQ(storedSeed, seed);
}

TEST(RuntimeSession, InitializationDependsOnSeedAndNameOnly) {
  Loaded first, second;
  ASSERT_EQ(first.open(initializerPlan()), KILN_OK) << kiln_last_error();
  // The same parameter, alone and at another position, in a second plan.
  PlanWriter w;
  w.buffer("x", Kind::Param, DType::F32, {2}, w.init("ones", 0));
  w.buffer("w_normal", Kind::Param, DType::F32, {5, 7}, w.init("normal", 0.02));
  ASSERT_EQ(second.open(w.finish()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(first.session, 5), KILN_OK);
  ASSERT_EQ(kiln_session_initialize(second.session, 5), KILN_OK);
  std::vector<float> a = readBuffer<float>(first.session, "w_normal", 35);
  EXPECT_EQ(a, readBuffer<float>(second.session, "w_normal", 35));
  ASSERT_EQ(kiln_session_initialize(second.session, 6), KILN_OK);
  EXPECT_NE(a, readBuffer<float>(second.session, "w_normal", 35));
}

TEST(RuntimeSession, InitializeZeroesStateAndRejectsBadInitializers) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(initializerPlan()), KILN_OK) << kiln_last_error();
  std::vector<float> ones(35, 1.0f);
  ASSERT_EQ(kiln_session_set_buffer(loaded.session, "w_normal.adam_m",
                                    ones.data(), 35 * 4),
            KILN_OK);
  ASSERT_EQ(kiln_session_initialize(loaded.session, 1), KILN_OK);
  EXPECT_EQ(readBuffer<float>(loaded.session, "w_normal.adam_m", 35),
            std::vector<float>(35, 0.0f));

  PlanWriter w;
  w.buffer("fine", Kind::Param, DType::F32, {2}, w.init("ones", 0));
  w.buffer("odd", Kind::Param, DType::F32, {2}, w.init("xavier", 0));
  Loaded bad;
  ASSERT_EQ(bad.open(w.finish()), KILN_OK) << kiln_last_error();
  std::vector<float> sentinel = {7, 7};
  ASSERT_EQ(kiln_session_set_buffer(bad.session, "fine", sentinel.data(), 8),
            KILN_OK);
  EXPECT_EQ(kiln_session_initialize(bad.session, 1), KILN_ERROR_INVALID_FORMAT);
  EXPECT_NE(std::string(kiln_last_error())
                .find("parameter 'odd' has an unknown initializer kind "
                      "'xavier'"),
            std::string::npos)
      << kiln_last_error();
  // Nothing was written.
  EXPECT_EQ(readBuffer<float>(bad.session, "fine", 2), sentinel);
}

TEST(RuntimeSession, StepCounterAdvancesOnTrainStepOnly) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(initializerPlan()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(loaded.session, 1), KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK);
  uint64_t step = 0;
  ASSERT_EQ(kiln_session_get_step(loaded.session, &step), KILN_OK);
  EXPECT_EQ(step, 2u);
  ASSERT_EQ(kiln_session_set_step(loaded.session, 40), KILN_OK);
  ASSERT_EQ(kiln_session_get_step(loaded.session, &step), KILN_OK);
  EXPECT_EQ(step, 40u);
}

TEST(RuntimeSession, RngStateHoldsSeedAndStep) {
  PlanWriter w;
  uint32_t rng = w.buffer("kiln.rng_state", Kind::RngState, DType::I32, {4});
  uint32_t out = w.buffer("seen", Kind::Output, DType::I32, {4});
  w.kernel("kiln_test_read_rng", {rng, out}, 4, 1);
  w.entry("train_step", {}, {out});
  Loaded loaded;
  ASSERT_EQ(loaded.open(w.finish()), KILN_OK) << kiln_last_error();
  const uint64_t seed = 0xAABBCCDD11223344ull;
  ASSERT_EQ(kiln_session_initialize(loaded.session, seed), KILN_OK);
  for (uint32_t step = 0; step < 3; ++step) {
    ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
    std::vector<uint32_t> seen =
        readBuffer<uint32_t>(loaded.session, "seen", 4);
    EXPECT_EQ(seen, (std::vector<uint32_t>{0x11223344u, 0xAABBCCDDu, step, 0}))
        << "step " << step;
  }
  ASSERT_EQ(kiln_session_set_step(loaded.session, 41), KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
  EXPECT_EQ(readBuffer<uint32_t>(loaded.session, "seen", 4)[2], 41u);
}

TEST(RuntimeSession, CheckpointRoundTrip) {
  Loaded source, target;
  ASSERT_EQ(source.open(initializerPlan()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(target.open(initializerPlan()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(source.session, 7), KILN_OK);
  std::vector<float> state(35);
  for (size_t i = 0; i < state.size(); ++i)
    state[i] = 0.25f * static_cast<float>(i);
  ASSERT_EQ(kiln_session_set_buffer(source.session, "w_normal.adam_m",
                                    state.data(), 35 * 4),
            KILN_OK);
  ASSERT_EQ(kiln_session_set_step(source.session, 5), KILN_OK);
  std::string path = source.dir.file("ckpt.safetensors");
  ASSERT_EQ(kiln_session_save_checkpoint(source.session, path.c_str(),
                                         "{\"epoch\":2,\"index\":17}"),
            KILN_OK)
      << kiln_last_error();

  // The file is plain safetensors with the documented metadata.
  safetensors::TensorFile file;
  ASSERT_TRUE(safetensors::readSafetensors(path, file).isOk());
  EXPECT_EQ(file.tensors.size(), 8u); // 7 parameters and 1 state.
  EXPECT_EQ(file.metadata["step"], "5");
  EXPECT_EQ(file.metadata["seed"], "7");
  EXPECT_EQ(file.metadata["model"], "test_model");
  ASSERT_NE(file.find("h_bf16"), nullptr);
  EXPECT_EQ(file.find("h_bf16")->dtype, safetensors::DType::BF16);

  // Parameters only: the state, step and seed stay as they were.
  ASSERT_EQ(kiln_session_initialize(target.session, 1), KILN_OK);
  ASSERT_EQ(kiln_session_load_checkpoint(target.session, path.c_str(),
                                         KILN_LOAD_PARAMS_ONLY, nullptr),
            KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(readBuffer<float>(target.session, "w_normal", 35),
            readBuffer<float>(source.session, "w_normal", 35));
  EXPECT_EQ(readBuffer<float>(target.session, "w_normal.adam_m", 35),
            std::vector<float>(35, 0.0f));
  uint64_t step = 0, seed = 0;
  ASSERT_EQ(kiln_session_get_seed(target.session, &seed), KILN_OK);
  EXPECT_EQ(seed, 1u);

  // Everything.
  char *user = nullptr;
  ASSERT_EQ(kiln_session_load_checkpoint(target.session, path.c_str(),
                                         KILN_LOAD_ALL, &user),
            KILN_OK)
      << kiln_last_error();
  ASSERT_NE(user, nullptr);
  EXPECT_STREQ(user, "{\"epoch\":2,\"index\":17}");
  kiln_string_free(user);
  EXPECT_EQ(readBuffer<float>(target.session, "w_normal.adam_m", 35), state);
  // Every parameter and state buffer, byte for byte.
  size_t count = 0;
  ASSERT_EQ(kiln_artifact_buffer_count(source.artifact, &count), KILN_OK);
  ASSERT_EQ(count, 8u);
  for (size_t i = 0; i < count; ++i) {
    kiln_buffer_info info;
    ASSERT_EQ(kiln_artifact_buffer_info(source.artifact, i, &info), KILN_OK);
    EXPECT_EQ(readBuffer<uint8_t>(target.session, info.name, info.size_bytes),
              readBuffer<uint8_t>(source.session, info.name, info.size_bytes))
        << info.name;
  }
  ASSERT_EQ(kiln_session_get_step(target.session, &step), KILN_OK);
  ASSERT_EQ(kiln_session_get_seed(target.session, &seed), KILN_OK);
  EXPECT_EQ(step, 5u);
  EXPECT_EQ(seed, 7u);
}

std::string readAll(const std::string &path) {
  std::string bytes;
  EXPECT_TRUE(readWholeFile(path, bytes).isOk()) << path;
  return bytes;
}

TEST(RuntimeSession, FailedSaveLeavesThePreviousCheckpoint) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(initializerPlan()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(loaded.session, 1), KILN_OK);
  std::string path = loaded.dir.file("ckpt.safetensors");
  ASSERT_EQ(kiln_session_save_checkpoint(loaded.session, path.c_str(), "a"),
            KILN_OK)
      << kiln_last_error();
  std::string before = readAll(path);

  // Make the write fail part way, as a full disk would: the save must fail
  // without touching the existing checkpoint, and leave no temporary.
  ASSERT_EQ(kiln_session_initialize(loaded.session, 2), KILN_OK);
  kiln_status status;
  {
    kiln::testing::FileSizeLimit limit(64);
    status = kiln_session_save_checkpoint(loaded.session, path.c_str(), "b");
  }
  EXPECT_EQ(status, KILN_ERROR_IO);
  std::string message = kiln_last_error();
  EXPECT_NE(message.find("kiln_session_save_checkpoint"), std::string::npos);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(readAll(path), before);
  for (const auto &entry :
       std::filesystem::directory_iterator(loaded.dir.path()))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos)
        << entry.path();

  // A save that succeeds replaces it.
  ASSERT_EQ(kiln_session_save_checkpoint(loaded.session, path.c_str(), "b"),
            KILN_OK);
  EXPECT_NE(readAll(path), before);
}

TEST(RuntimeSession, FailedLoadChangesNothing) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(initializerPlan()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(loaded.session, 3), KILN_OK);
  std::vector<float> before = readBuffer<float>(loaded.session, "w_normal", 35);

  // A file whose w_normal has the wrong shape (and everything else right).
  std::string good = loaded.dir.file("good.safetensors");
  ASSERT_EQ(kiln_session_save_checkpoint(loaded.session, good.c_str(), ""),
            KILN_OK);
  safetensors::TensorFile file;
  ASSERT_TRUE(safetensors::readSafetensors(good, file).isOk());
  safetensors::TensorFile reshaped;
  for (const safetensors::Tensor &tensor : file.tensors) {
    std::vector<int64_t> shape = tensor.shape;
    if (tensor.name == "w_normal")
      shape = {7, 5};
    ASSERT_TRUE(reshaped
                    .add(tensor.name, tensor.dtype, shape, tensor.data.data(),
                         tensor.data.size())
                    .isOk());
  }
  std::string bad = loaded.dir.file("bad.safetensors");
  ASSERT_TRUE(safetensors::writeSafetensors(bad, reshaped).isOk());

  ASSERT_EQ(kiln_session_initialize(loaded.session, 4), KILN_OK);
  std::vector<float> current =
      readBuffer<float>(loaded.session, "w_normal", 35);
  EXPECT_EQ(kiln_session_load_checkpoint(loaded.session, bad.c_str(),
                                         KILN_LOAD_ALL, nullptr),
            KILN_ERROR_INVALID_FORMAT);
  std::string message = kiln_last_error();
  EXPECT_NE(message.find("tensor 'w_normal' is F32[7, 5] but the model's "
                         "param is F32[5, 7]"),
            std::string::npos)
      << message;
  EXPECT_EQ(readBuffer<float>(loaded.session, "w_normal", 35), current);

  // A file without the optimizer state: fine for parameters only.
  safetensors::TensorFile weights;
  for (const safetensors::Tensor &tensor : file.tensors) {
    if (tensor.name != "w_normal.adam_m") {
      ASSERT_TRUE(weights
                      .add(tensor.name, tensor.dtype, tensor.shape,
                           tensor.data.data(), tensor.data.size())
                      .isOk());
    }
  }
  std::string partial = loaded.dir.file("weights.safetensors");
  ASSERT_TRUE(safetensors::writeSafetensors(partial, weights).isOk());
  EXPECT_EQ(kiln_session_load_checkpoint(loaded.session, partial.c_str(),
                                         KILN_LOAD_ALL, nullptr),
            KILN_ERROR_INVALID_FORMAT);
  EXPECT_NE(std::string(kiln_last_error()).find("'w_normal.adam_m'"),
            std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(readBuffer<float>(loaded.session, "w_normal", 35), current);
  EXPECT_EQ(kiln_session_load_checkpoint(loaded.session, partial.c_str(),
                                         KILN_LOAD_PARAMS_ONLY, nullptr),
            KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(readBuffer<float>(loaded.session, "w_normal", 35), before);

  // A missing file.
  EXPECT_EQ(kiln_session_load_checkpoint(
                loaded.session, loaded.dir.file("none.safetensors").c_str(),
                KILN_LOAD_ALL, nullptr),
            KILN_ERROR_IO);
  EXPECT_NE(std::string(kiln_last_error()).find("none.safetensors"),
            std::string::npos);
}

} // namespace

namespace {
/// A weight `w` with its bf16 copy `w.bf16` (mixed precision's weight
/// copy: initializer `rounded`) and an f16 copy of `v`.
std::string weightCopyPlan() {
  PlanWriter w;
  w.buffer("w", Kind::Param, DType::F32, {6}, w.init("normal", 0.5));
  w.buffer("v", Kind::Param, DType::F32, {3}, w.init("ones", 0));
  w.buffer("w.bf16", Kind::OptimizerState, DType::BF16, {6},
           w.init("rounded", 0));
  w.buffer("v.fp16", Kind::OptimizerState, DType::F16, {3},
           w.init("rounded", 0));
  w.entry("train_step", {}, {});
  return w.finish();
}

/// `w.bf16` after a run equals `w` rounded by the oracle.
void expectCopyOfWeight(kiln_session *session) {
  std::vector<float> weight = readBuffer<float>(session, "w", 6);
  std::vector<uint16_t> copy = readBuffer<uint16_t>(session, "w.bf16", 6);
  for (size_t i = 0; i < weight.size(); ++i)
    EXPECT_EQ(copy[i], nearestBFloat16(weight[i])) << "element " << i;
}
} // namespace

TEST(RuntimeSession, WeightCopiesFollowEveryHostWriteOfTheirWeight) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(weightCopyPlan()), KILN_OK) << kiln_last_error();
  // Initialized: derived before the first run.
  ASSERT_EQ(kiln_session_initialize(loaded.session, 3), KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
  expectCopyOfWeight(loaded.session);
  // 1.0 in f16 is 0x3C00.
  EXPECT_EQ(readBuffer<uint16_t>(loaded.session, "v.fp16", 3),
            std::vector<uint16_t>(3, 0x3C00));
  // Written through set_buffer: values between two bf16 (1 + 2^-8 is a tie,
  // to even: 1.0; 1 + 3 * 2^-8 rounds up).
  std::vector<float> values = {
      1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 1e-3f, 0.0f, 123.456f};
  ASSERT_EQ(kiln_session_set_buffer(loaded.session, "w", values.data(), 24),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
  expectCopyOfWeight(loaded.session);
  EXPECT_EQ(readBuffer<uint16_t>(loaded.session, "w.bf16", 6)[0], 0x3F80);
  // Written through the session's own storage.
  void *data = nullptr;
  ASSERT_EQ(kiln_session_buffer_data(loaded.session, "w", &data), KILN_OK);
  static_cast<float *>(data)[2] = 7.0f;
  ASSERT_EQ(kiln_session_run(loaded.session, "train_step"), KILN_OK);
  expectCopyOfWeight(loaded.session);

  // Checkpoints hold the weights, not the copies; a load derives them.
  std::string path = loaded.dir.file("ckpt.safetensors");
  ASSERT_EQ(kiln_session_save_checkpoint(loaded.session, path.c_str(), nullptr),
            KILN_OK)
      << kiln_last_error();
  safetensors::TensorFile file;
  ASSERT_TRUE(safetensors::readSafetensors(path, file).isOk());
  EXPECT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.find("w.bf16"), nullptr);
  Loaded other;
  ASSERT_EQ(other.open(weightCopyPlan()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_load_checkpoint(other.session, path.c_str(),
                                         KILN_LOAD_ALL, nullptr),
            KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_run(other.session, "train_step"), KILN_OK);
  expectCopyOfWeight(other.session);
  EXPECT_EQ(readBuffer<float>(other.session, "w", 6)[2], 7.0f);
}

TEST(RuntimeSession, WeightCopyWithoutItsWeightIsRefused) {
  PlanWriter w;
  w.buffer("w", Kind::Param, DType::F32, {6}, w.init("normal", 0.5));
  w.buffer("u.bf16", Kind::OptimizerState, DType::BF16, {6},
           w.init("rounded", 0));
  w.entry("train_step", {}, {});
  Loaded loaded;
  expectError(loaded.open(w.finish()), KILN_ERROR_INVALID_FORMAT,
              {"weight copy 'u.bf16' has no parameter 'u'"});
}
