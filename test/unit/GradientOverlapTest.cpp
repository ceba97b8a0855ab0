//===- GradientOverlapTest.cpp - Gradient sums during the backward --------===//
//
// Part of Kiln. The plan's collective ops (CollectiveStart/Wait, placed by
// --kernel-insert-collectives) on the cpu device, armed with
// kiln_session_arm_gradient_sums and collectives that record what they are
// given: each bucket starts at its op with its accumulators' final bytes,
// in one block (64-byte boundaries, zero gaps), the sums progress between
// ops and are waited for at the wait ops, only the armed run sums, and
// plans whose collectives are malformed are refused at open.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include <cstdint>
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

/// accumulate_step over six floats with its sums placed as the compiler
/// places them: bucket 0 holds c (never touched) and a (last touched by
/// the second add) and starts after that add; bucket 1 holds b and starts
/// after the third; both are waited for at the end.
std::string accumulatePlan() {
  PlanWriter w;
  uint32_t g = w.buffer("g", Kind::Input, DType::F32, {6});
  uint32_t a = w.buffer("a.grad_acc", Kind::OptimizerState, DType::F32, {6});
  uint32_t b = w.buffer("b.grad_acc", Kind::OptimizerState, DType::F32, {6});
  uint32_t c = w.buffer("c.grad_acc", Kind::OptimizerState, DType::F32, {6});
  w.kernel("kiln_test_add", {g, b, b}, 6, 6);
  w.kernel("kiln_test_add", {g, a, a}, 6, 6);
  w.collectiveStart(0, {c, a});
  w.kernel("kiln_test_add", {g, b, b}, 6, 6);
  w.collectiveStart(1, {b});
  w.collectiveWait(0);
  w.collectiveWait(1);
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

TEST_F(GradientOverlap, BucketsStartAndEndAtTheirOps) {
  kiln_collectives collectives = recorder.collectives();
  ASSERT_EQ(kiln_session_arm_gradient_sums(loaded.session, &collectives),
            KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_run(loaded.session, "accumulate_step"), KILN_OK)
      << kiln_last_error();
  // Nothing in flight before start 0; progress after each op once one is.
  EXPECT_EQ(recorder.log, (std::vector<std::string>{
                              "start 0 of 2", "progress", "progress",
                              "start 1 of 1", "progress", "wait 0", "wait 1"}));
  // Each started with its final bytes: c = 0, a = g, b = 2 g.
  ASSERT_EQ(recorder.startedWith.size(), 3u);
  EXPECT_EQ(recorder.startedWith[0], std::vector<float>(6, 0.0f));
  EXPECT_EQ(recorder.startedWith[1], (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(recorder.startedWith[2], (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // The sums are there when the run returns.
  EXPECT_EQ(read(loaded.session, "b.grad_acc"),
            (std::vector<float>{4, 8, 12, 16, 20, 24}));
  EXPECT_EQ(read(loaded.session, "a.grad_acc"),
            (std::vector<float>{2, 4, 6, 8, 10, 12}));
  kiln_overlap_stats stats;
  ASSERT_EQ(kiln_session_overlap_stats(loaded.session, &stats), KILN_OK);
  EXPECT_EQ(stats.buckets, 2u);
  EXPECT_EQ(stats.bytes, 72u);
  // Three compute ops; bucket 0 starts after the second (index 1).
  EXPECT_EQ(stats.ops, 3u);
  EXPECT_EQ(stats.first_start_op, 1);
}

TEST_F(GradientOverlap, ABucketLiesInOneBlock) {
  kiln_collectives collectives = recorder.collectives();
  ASSERT_EQ(kiln_session_arm_gradient_sums(loaded.session, &collectives),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "accumulate_step"), KILN_OK);
  ASSERT_EQ(recorder.buckets.size(), 2u);
  ASSERT_EQ(recorder.buckets[0].size(), 2u);
  // c at the block's start, a at the next 64-byte boundary after c's 24
  // bytes; the gap between them is zero.
  float *c = recorder.buckets[0][0].first, *a = recorder.buckets[0][1].first;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  EXPECT_EQ(a - c, 16);
  for (float *gap = c + 6; gap < a; ++gap)
    EXPECT_EQ(*gap, 0.0f);
}

TEST_F(GradientOverlap, OnlyTheArmedRunSums) {
  kiln_collectives collectives = recorder.collectives();
  ASSERT_EQ(kiln_session_arm_gradient_sums(loaded.session, &collectives),
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
  ASSERT_EQ(kiln_session_arm_gradient_sums(loaded.session, &collectives),
            KILN_OK);
  expectError(
      kiln_session_run(loaded.session, "accumulate_step"), KILN_ERROR_DEVICE,
      {"the gradient sums over the ranks (wait)", "rank 1 no longer answers"});
}

TEST(GradientOverlapErrors, APlanWithoutSumsIsRefused) {
  PlanWriter w;
  uint32_t g = w.buffer("g", Kind::Input, DType::F32, {6});
  uint32_t a = w.buffer("a.grad_acc", Kind::OptimizerState, DType::F32, {6});
  w.kernel("kiln_test_add", {g, a, a}, 6, 6);
  w.entry("accumulate_step", {g}, {});
  w.entry("train_step", {g}, {});
  Loaded loaded;
  ASSERT_EQ(loaded.open(w.finish()), KILN_OK) << kiln_last_error();
  Recorder recorder;
  kiln_collectives collectives = recorder.collectives();
  expectError(kiln_session_arm_gradient_sums(loaded.session, &collectives),
              KILN_ERROR_INVALID_ARGUMENT,
              {"'accumulate_step' has no gradient sums", "world over 1"});
}

TEST_F(GradientOverlap, TheCpuDevicesNeedTheCallersCollectives) {
  expectError(kiln_session_arm_gradient_sums(loaded.session, nullptr),
              KILN_ERROR_INVALID_ARGUMENT, {"start, progress and wait"});
  kiln_collectives collectives = recorder.collectives();
  collectives.wait = nullptr;
  expectError(kiln_session_arm_gradient_sums(loaded.session, &collectives),
              KILN_ERROR_INVALID_ARGUMENT, {"start, progress and wait"});
}

/// A plan whose accumulate_step holds `ops` (given a writer with buffers g,
/// a, b: ids 0, 1, 2, and an input x of another kind, id 3).
template <typename AddOps> std::string planWith(AddOps addOps) {
  PlanWriter w;
  w.buffer("g", Kind::Input, DType::F32, {6});
  w.buffer("a.grad_acc", Kind::OptimizerState, DType::F32, {6});
  w.buffer("b.grad_acc", Kind::OptimizerState, DType::F32, {6});
  w.buffer("x", Kind::Input, DType::F32, {6});
  addOps(w);
  w.entry("accumulate_step", {0}, {});
  return w.finish();
}

TEST(GradientOverlapErrors, MalformedCollectivesAreRefusedAtOpen) {
  struct Case {
    std::string plan;
    std::string message;
  };
  std::vector<Case> cases = {
      {planWith([](PlanWriter &w) {
         w.collectiveStart(1, {1});
         w.collectiveWait(1);
       }),
       "starts bucket 1, but the entry's buckets are numbered in order: "
       "expected 0"},
      {planWith([](PlanWriter &w) {
         w.collectiveStart(0, {3});
         w.collectiveWait(0);
       }),
       "'x' is not an f32 gradient accumulator"},
      {planWith([](PlanWriter &w) {
         w.collectiveStart(0, {1});
         w.collectiveStart(1, {2, 1});
         w.collectiveWait(0);
         w.collectiveWait(1);
       }),
       "'a.grad_acc' is in two buckets"},
      {planWith([](PlanWriter &w) { w.collectiveWait(0); }),
       "waits for bucket 0, which is not in flight"},
      {planWith([](PlanWriter &w) { w.collectiveStart(0, {1}); }),
       "bucket 0 is started and never waited for"},
  };
  for (const Case &c : cases) {
    Loaded loaded;
    EXPECT_EQ(loaded.open(c.plan), KILN_ERROR_INVALID_FORMAT) << c.message;
    EXPECT_NE(std::string(kiln_last_error()).find(c.message), std::string::npos)
        << kiln_last_error();
  }
}

} // namespace
