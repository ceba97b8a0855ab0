//===- ShardedCheckpointTest.cpp - ZeRO-1 state in checkpoints ------------===//
//
// Part of Kiln. Sharded optimizer state (plan::Buffer::shard_offset): each
// rank's session holds a part of a tensor; a checkpoint holds the whole,
// gathered to the writing rank (kiln_session_save_checkpoint_gathered), and
// every session, sharded or not, loads its part of it. The two ranks run in
// one process here: rank 1 saves first, its parts kept, then rank 0 gathers
// them behind its own.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "kiln/Safetensors.h"

#include <cstring>
#include <vector>

using namespace kiln;
using namespace kiln::test;
using DType = plan::DType;
using Kind = plan::BufferKind;

namespace {

/// A parameter w[2, 3] with AdamW's first moment, as rank `rank` of 2
/// keeps it under ZeRO-1 (elements [0, 3) or [3, 6)), or whole (rank -1);
/// plus a gradient accumulator.
std::string momentPlan(int rank) {
  PlanWriter w;
  w.buffer("w", Kind::Param, DType::F32, {2, 3}, w.init("zeros", 0));
  if (rank < 0)
    w.buffer("w.adam_m", Kind::OptimizerState, DType::F32, {2, 3});
  else
    w.shardedState("w.adam_m", 3, 3 * rank, {2, 3});
  w.buffer("w.grad_acc", Kind::OptimizerState, DType::F32, {2, 3});
  w.entry("apply_step", {}, {});
  return w.finish();
}

void setFloats(kiln_session *session, const char *name,
               std::vector<float> values) {
  ASSERT_EQ(kiln_session_set_buffer(session, name, values.data(),
                                    values.size() * sizeof(float)),
            KILN_OK)
      << kiln_last_error();
}

/// An in-process gather: rank 1 keeps its parts; rank 0 puts its own
/// first and rank 1's after.
struct TwoRanks {
  std::vector<std::vector<uint8_t>> fromRankOne;
  size_t next = 0;
  std::string error;

  static const char *keep(void *user, const void *part, size_t bytes,
                          void *whole, size_t) {
    auto *self = static_cast<TwoRanks *>(user);
    if (whole)
      return "rank 1 does not write";
    auto *begin = static_cast<const uint8_t *>(part);
    self->fromRankOne.emplace_back(begin, begin + bytes);
    return nullptr;
  }
  static const char *join(void *user, const void *part, size_t bytes,
                          void *whole, size_t wholeBytes) {
    auto *self = static_cast<TwoRanks *>(user);
    if (self->next >= self->fromRankOne.size())
      return "rank 1 sent fewer parts";
    const std::vector<uint8_t> &other = self->fromRankOne[self->next++];
    if (bytes + other.size() != wholeBytes)
      return "the parts do not make the whole";
    std::memcpy(whole, part, bytes);
    std::memcpy(static_cast<uint8_t *>(whole) + bytes, other.data(),
                other.size());
    return nullptr;
  }
};

TEST(ShardedCheckpoint, GathersTheWholeStateAndLoadsEachPart) {
  Loaded rank0, rank1, whole;
  ASSERT_EQ(rank0.open(momentPlan(0)), KILN_OK) << kiln_last_error();
  ASSERT_EQ(rank1.open(momentPlan(1)), KILN_OK) << kiln_last_error();
  ASSERT_EQ(whole.open(momentPlan(-1)), KILN_OK) << kiln_last_error();
  for (Loaded *loaded : {&rank0, &rank1, &whole})
    ASSERT_EQ(kiln_session_initialize(loaded->session, 3), KILN_OK);
  std::vector<float> params = {1, 2, 3, 4, 5, 6};
  setFloats(rank0.session, "w", params);
  setFloats(rank1.session, "w", params);
  setFloats(rank0.session, "w.adam_m", {0.5f, 1.5f, 2.5f});
  setFloats(rank1.session, "w.adam_m", {3.5f, 4.5f, 5.5f});

  // A sharded session cannot write a checkpoint alone.
  std::string path = rank0.dir.file("ckpt.safetensors");
  expectError(kiln_session_save_checkpoint(rank0.session, path.c_str(), ""),
              KILN_ERROR_UNSUPPORTED,
              {"'w.adam_m' is this rank's part of a sharded state",
               "kiln_session_save_checkpoint_gathered"});

  TwoRanks ranks;
  kiln_gather keep = {&ranks, &TwoRanks::keep};
  ASSERT_EQ(kiln_session_save_checkpoint_gathered(rank1.session, path.c_str(),
                                                  "", &keep, /*writes=*/0),
            KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(ranks.fromRankOne.size(), 1u);
  safetensors::TensorFile none;
  EXPECT_FALSE(safetensors::readSafetensors(path, none).isOk())
      << "a rank that does not write wrote";
  kiln_gather join = {&ranks, &TwoRanks::join};
  ASSERT_EQ(kiln_session_save_checkpoint_gathered(rank0.session, path.c_str(),
                                                  "{}", &join, /*writes=*/1),
            KILN_OK)
      << kiln_last_error();

  // The file holds the whole moment, as one process writes it.
  safetensors::TensorFile file;
  ASSERT_TRUE(safetensors::readSafetensors(path, file).isOk());
  const safetensors::Tensor *moment = file.find("w.adam_m");
  ASSERT_NE(moment, nullptr);
  EXPECT_EQ(moment->shape, (std::vector<int64_t>{2, 3}));
  std::vector<float> saved(6);
  ASSERT_EQ(moment->data.size(), sizeof(float) * 6);
  std::memcpy(saved.data(), moment->data.data(), moment->data.size());
  EXPECT_EQ(saved, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));

  // One process loads the whole; each rank its part.
  ASSERT_EQ(
      kiln_session_load_checkpoint(whole.session, path.c_str(), 0, nullptr),
      KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(readBuffer<float>(whole.session, "w.adam_m", 6), saved);
  setFloats(rank1.session, "w.adam_m", {0, 0, 0});
  ASSERT_EQ(
      kiln_session_load_checkpoint(rank1.session, path.c_str(), 0, nullptr),
      KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(readBuffer<float>(rank1.session, "w.adam_m", 3),
            (std::vector<float>{3.5f, 4.5f, 5.5f}));
}

TEST(ShardedCheckpoint, AMissingAccumulatorLoadsAsZeros) {
  // A checkpoint without accumulators (a run that did not accumulate)
  // resumes a run that does: they are zero between steps.
  Loaded source, target;
  PlanWriter w;
  w.buffer("w", Kind::Param, DType::F32, {2, 3}, w.init("ones", 0));
  w.buffer("w.adam_m", Kind::OptimizerState, DType::F32, {2, 3});
  w.entry("train_step", {}, {});
  ASSERT_EQ(source.open(w.finish()), KILN_OK) << kiln_last_error();
  ASSERT_EQ(target.open(momentPlan(-1)), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_session_initialize(source.session, 1), KILN_OK);
  ASSERT_EQ(kiln_session_initialize(target.session, 1), KILN_OK);
  setFloats(target.session, "w.grad_acc", {9, 9, 9, 9, 9, 9});
  std::string path = source.dir.file("ckpt.safetensors");
  ASSERT_EQ(kiln_session_save_checkpoint(source.session, path.c_str(), ""),
            KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(
      kiln_session_load_checkpoint(target.session, path.c_str(), 0, nullptr),
      KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(readBuffer<float>(target.session, "w.grad_acc", 6),
            std::vector<float>(6, 0.0f));
  EXPECT_EQ(readBuffer<float>(target.session, "w", 6),
            std::vector<float>(6, 1.0f));
  // Any other missing state still fails the load.
  Loaded moments;
  PlanWriter v;
  v.buffer("w", Kind::Param, DType::F32, {2, 3}, v.init("ones", 0));
  v.buffer("w.adam_v", Kind::OptimizerState, DType::F32, {2, 3});
  v.entry("train_step", {}, {});
  ASSERT_EQ(moments.open(v.finish()), KILN_OK) << kiln_last_error();
  expectError(
      kiln_session_load_checkpoint(moments.session, path.c_str(), 0, nullptr),
      KILN_ERROR_INVALID_FORMAT, {"missing 1 tensor(s)", "'w.adam_v'"});
}

TEST(ShardedCheckpoint, APartOutsideItsTensorIsRefusedAtOpen) {
  PlanWriter w;
  w.buffer("w", Kind::Param, DType::F32, {2, 3}, w.init("zeros", 0));
  w.shardedState("w.adam_m", 3, 4, {2, 3});
  w.entry("apply_step", {}, {});
  Loaded loaded;
  expectError(loaded.open(w.finish()), KILN_ERROR_INVALID_FORMAT,
              {"buffer 'w.adam_m' is a part of a larger tensor that does not "
               "lie within it"});
}

} // namespace
