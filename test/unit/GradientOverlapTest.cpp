//===- GradientOverlapTest.cpp - Gradient sums during the backward --------===//
//
// Part of Kiln. kiln_session_overlap_gradient_sums on the cpu device, with
// collectives that record what they are given: the buckets follow the op
// that last touches each accumulator, each starts right after that op with
// the accumulator's final bytes, the sums progress between ops and are all
// waited for before the run returns, and only the armed run sums.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

using Kind = plan::BufferKind;
using DType = plan::DType;

/// Collectives that log each call and "sum" over two ranks holding the
/// same values: a bucket's buffers double at their wait.
struct Recorder {
  std::vector<std::string> log;
  /// Each started bucket's buffers and counts.
  std::vector<std::vector<std::pair<float *, size_t>>> buckets;
  /// What the buffers held when their bucket started.
  std::vector<std::vector<float>> startedWith;
  const char *failWait = nullptr;

  kiln_collectives collectives() {
    kiln_collectives made;
    made.user = this;
    made.start = [](void *user, uint32_t bucket, float *const *data,
                    const size_t *counts, size_t count) -> const char * {
      auto *self = static_cast<Recorder *>(user);
      self->log.push_back("start " + std::to_string(bucket) + " of " +
                          std::to_string(count));
      self->buckets.emplace_back();
      for (size_t i = 0; i < count; ++i) {
        self->buckets.back().emplace_back(data[i], counts[i]);
        self->startedWith.emplace_back(data[i], data[i] + counts[i]);
      }
      return nullptr;
    };
    made.progress = [](void *user) -> const char * {
      static_cast<Recorder *>(user)->log.push_back("progress");
      return nullptr;
    };
    made.wait = [](void *user, uint32_t bucket) -> const char * {
      auto *self = static_cast<Recorder *>(user);
      self->log.push_back("wait " + std::to_string(bucket));
      if (self->failWait)
        return self->failWait;
      for (auto [data, count] : self->buckets[bucket])
        for (size_t e = 0; e < count; ++e)
          data[e] *= 2;
      return nullptr;
    };
    return made;
  }
};

/// accumulate_step over six floats: op 0 adds g into b.grad_acc, op 1 into
/// a.grad_acc, op 2 into b.grad_acc again; c.grad_acc is never touched.
std::string accumulatePlan() {
  PlanWriter w;
  uint32_t g = w.buffer("g", Kind::Input, DType::F32, {6});
  uint32_t a = w.buffer("a.grad_acc", Kind::Gradient, DType::F32, {6});
  uint32_t b = w.buffer("b.grad_acc", Kind::Gradient, DType::F32, {6});
  w.buffer("c.grad_acc", Kind::Gradient, DType::F32, {6});
  w.kernel("kiln_test_add", {g, b, b}, 6, 6);
  w.kernel("kiln_test_add", {g, a, a}, 6, 6);
  w.kernel("kiln_test_add", {g, b, b}, 6, 6);
  w.entry("accumulate_step", {g}, {});
  return w.finish();
}

std::vector<float> read(kiln_session *session, const char *name) {
  std::vector<float> values(6);
  EXPECT_EQ(kiln_session_get_buffer(session, name, values.data(), 24), KILN_OK)
      << kiln_last_error();
  return values;
}

class GradientOverlap : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(loaded.open(accumulatePlan(), 1), KILN_OK) << kiln_last_error();
    std::vector<float> g = {1, 2, 3, 4, 5, 6};
    int64_t shape[] = {6};
    ASSERT_EQ(kiln_session_bind_input(loaded.session, "g", g.data(), KILN_F32,
                                      shape, 1),
              KILN_OK)
        << kiln_last_error();
  }
  Loaded loaded;
  Recorder recorder;
};

TEST_F(GradientOverlap, EachBucketStartsAfterTheLastOpOfItsMembers) {
  kiln_collectives collectives = recorder.collectives();
  // Bucket 0 bytes: each accumulator its own bucket.
  ASSERT_EQ(kiln_session_overlap_gradient_sums(loaded.session, &collectives, 0),
            KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_run(loaded.session, "accumulate_step"), KILN_OK)
      << kiln_last_error();
  // c (untouched) before the first op, a after op 1, b after op 2; every
  // bucket waited for at the end, in order.
  EXPECT_EQ(recorder.log, (std::vector<std::string>{
                              "start 0 of 1", "progress", "progress",
                              "start 1 of 1", "progress", "start 2 of 1",
                              "progress", "wait 0", "wait 1", "wait 2"}));
  // Each started with its final bytes: a = g, b = 2 g, c = 0.
  ASSERT_EQ(recorder.startedWith.size(), 3u);
  EXPECT_EQ(recorder.startedWith[0], std::vector<float>(6, 0.0f));
  EXPECT_EQ(recorder.startedWith[1], (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(recorder.startedWith[2], (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // The sums are there when the run returns.
  EXPECT_EQ(read(loaded.session, "b.grad_acc"),
            (std::vector<float>{4, 8, 12, 16, 20, 24}));
  kiln_overlap_stats stats;
  ASSERT_EQ(kiln_session_overlap_stats(loaded.session, &stats), KILN_OK);
  EXPECT_EQ(stats.buckets, 3u);
  EXPECT_EQ(stats.bytes, 72u);
  EXPECT_EQ(stats.ops, 3u);
  EXPECT_EQ(stats.first_start_op, -1);
}

TEST_F(GradientOverlap, BucketsCloseOnceTheyHoldTheirBytes) {
  kiln_collectives collectives = recorder.collectives();
  // 48 bytes: c and a together (after op 1), then b.
  ASSERT_EQ(
      kiln_session_overlap_gradient_sums(loaded.session, &collectives, 48),
      KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "accumulate_step"), KILN_OK);
  EXPECT_EQ(recorder.log, (std::vector<std::string>{"start 0 of 2", "progress",
                                                    "start 1 of 1", "progress",
                                                    "wait 0", "wait 1"}));
  kiln_overlap_stats stats;
  ASSERT_EQ(kiln_session_overlap_stats(loaded.session, &stats), KILN_OK);
  EXPECT_EQ(stats.buckets, 2u);
  EXPECT_EQ(stats.first_start_op, 1);
}

TEST_F(GradientOverlap, OnlyTheArmedRunSums) {
  kiln_collectives collectives = recorder.collectives();
  ASSERT_EQ(
      kiln_session_overlap_gradient_sums(loaded.session, &collectives, 1 << 20),
      KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "accumulate_step"), KILN_OK);
  size_t calls = recorder.log.size();
  EXPECT_EQ(read(loaded.session, "a.grad_acc"),
            (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // The next micro-batch is not armed: it adds, nothing is summed.
  ASSERT_EQ(kiln_session_run(loaded.session, "accumulate_step"), KILN_OK);
  EXPECT_EQ(recorder.log.size(), calls);
  EXPECT_EQ(read(loaded.session, "a.grad_acc"),
            (std::vector<float>{3, 6, 9, 12, 15, 18}));
}

TEST_F(GradientOverlap, AFailingCollectiveFailsTheRun) {
  kiln_collectives collectives = recorder.collectives();
  recorder.failWait = "rank 1 no longer answers";
  ASSERT_EQ(kiln_session_overlap_gradient_sums(loaded.session, &collectives, 0),
            KILN_OK);
  expectError(
      kiln_session_run(loaded.session, "accumulate_step"), KILN_ERROR_DEVICE,
      {"the gradient sums over the ranks (wait)", "rank 1 no longer answers"});
}

TEST(GradientOverlapErrors, APlanWithoutAccumulateStepIsRefused) {
  PlanWriter w;
  uint32_t g = w.buffer("g", Kind::Input, DType::F32, {6});
  w.entry("train_step", {g}, {});
  Loaded loaded;
  ASSERT_EQ(loaded.open(w.finish()), KILN_OK) << kiln_last_error();
  Recorder recorder;
  kiln_collectives collectives = recorder.collectives();
  expectError(
      kiln_session_overlap_gradient_sums(loaded.session, &collectives, 0),
      KILN_ERROR_INVALID_ARGUMENT, {"no 'accumulate_step'"});
  collectives.wait = nullptr;
  expectError(
      kiln_session_overlap_gradient_sums(loaded.session, &collectives, 0),
      KILN_ERROR_INVALID_ARGUMENT, {"start, progress and wait"});
}

} // namespace
