//===- CudaSessionTest.cpp - A cuda session through the fake driver -------===//
//
// Part of Kiln. A cuda plan run through the C API on the fake driver and
// the fake cuBLASLt: runs queued and waited for, inputs bound while a run
// is in flight, entries replayed from their CUDA Graph, and kernel status
// words reported when the run is waited for. The fake defers stream work
// as a GPU does, so a missing wait or an upload racing a run shows here.
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#include <cstring>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

using Kind = plan::BufferKind;
using DType = plan::DType;

/// `x = wte[tokens]` (kiln_test_gather: five blocks of one element, status
/// words for an id outside [0, 8)) as a cuda plan, on the fakes.
struct GatherSession {
  GatherSession()
      : library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA),
        cublas("KILN_LIBCUBLASLT", KILN_FAKE_CUBLASLT) {
    PlanWriter w;
    uint32_t ids = w.buffer("tokens", Kind::Input, DType::I32, {5});
    uint32_t table =
        w.buffer("wte", Kind::Param, DType::F32, {8}, w.init("normal", 1));
    uint32_t out = w.buffer("x", Kind::Output, DType::F32, {5});
    uint32_t status = w.buffer("kiln.status", Kind::Status, DType::I64, {2});
    w.gpuKernel("kiln_test_gather", {ids, table, out, status}, 5, 32,
                "graph.embed", 14);
    w.entry("predict", {ids}, {out});
    writeFile(dir.file("plan.kpl"), w.finish(KILN_PLAN_SCHEMA_VERSION, "cuda",
                                             "kernels.ptx", 0, "sm_90"));
    writeFakeModule(dir);
    EXPECT_EQ(kiln_artifact_open(dir.path().c_str(), &artifact), KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(kiln_session_create(artifact, "cuda", 0, &session), KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(kiln_session_initialize(session, 3), KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(kiln_session_get_buffer(session, "wte", wte.data(), 32), KILN_OK);
  }
  ~GatherSession() {
    kiln_session_destroy(session);
    kiln_artifact_close(artifact);
  }
  kiln_status bind(const std::vector<int32_t> &ids) {
    int64_t shape[] = {5};
    return kiln_session_bind_input(session, "tokens", ids.data(), KILN_I32,
                                   shape, 1);
  }
  std::vector<float> read() {
    std::vector<float> out(5, -1);
    EXPECT_EQ(kiln_session_read_output(session, "x", KILN_F32, out.data(), 20),
              KILN_OK)
        << kiln_last_error();
    return out;
  }
  std::vector<float> expected(const std::vector<int32_t> &ids) const {
    std::vector<float> out;
    for (int32_t id : ids)
      out.push_back(wte[id]);
    return out;
  }

  ScopedEnvironment library, cublas;
  TempDir dir;
  kiln_artifact *artifact = nullptr;
  kiln_session *session = nullptr;
  std::vector<float> wte = std::vector<float>(8);
};

/// The staging's waits, under two schedules the fake may pick: every
/// stream lazy, and the copy stream (the context's second) running ahead
/// of the compute stream.
class CudaSessionSchedules : public ::testing::TestWithParam<const char *> {};
INSTANTIATE_TEST_SUITE_P(Schedules, CudaSessionSchedules,
                         ::testing::Values("", "2"));

TEST_P(CudaSessionSchedules, InputsBoundDuringARunAreTheNextRuns) {
  ScopedEnvironment schedule("KILN_FAKE_CUDA_EAGER", GetParam());
  GatherSession gather;
  ASSERT_NE(gather.session, nullptr);
  std::vector<std::vector<int32_t>> batches = {{0, 1, 2, 3, 4},
                                               {7, 6, 5, 4, 3},
                                               {1, 1, 1, 1, 1},
                                               {2, 4, 6, 0, 7},
                                               {5, 5, 0, 0, 3}};
  // Run 0 goes op by op, run 1 is captured, the rest replay the graph; the
  // next batch is bound while each is still queued.
  ASSERT_EQ(gather.bind(batches[0]), KILN_OK) << kiln_last_error();
  for (size_t run = 0; run < batches.size(); ++run) {
    SCOPED_TRACE(run);
    ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK)
        << kiln_last_error();
    if (run + 1 < batches.size())
      ASSERT_EQ(gather.bind(batches[run + 1]), KILN_OK) << kiln_last_error();
    EXPECT_EQ(gather.read(), gather.expected(batches[run]));
  }
}

TEST(CudaSession, AKernelsStatusIsReportedWhenTheRunIsWaitedFor) {
  GatherSession gather;
  ASSERT_NE(gather.session, nullptr);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    ASSERT_EQ(gather.bind({1, 2, 300, 3, 4}), KILN_OK);
    // Queued: the status words are read when something waits.
    ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK);
    expectError(kiln_session_synchronize(gather.session),
                KILN_ERROR_INVALID_ARGUMENT,
                {"kiln_session_synchronize: model.kiln:14:3: op "
                 "'graph.embed' (entry 'predict' op 0)",
                 "embedding id 300 is out of range"});
    ASSERT_EQ(gather.bind({1, 2, 7, 3, 4}), KILN_OK);
    ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK);
    EXPECT_EQ(kiln_session_synchronize(gather.session), KILN_OK)
        << kiln_last_error();
    EXPECT_EQ(gather.read(), gather.expected({1, 2, 7, 3, 4}));
  }
  // A read waits too, and reports it.
  ASSERT_EQ(gather.bind({1, -5, 7, 3, 4}), KILN_OK);
  ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK);
  std::vector<float> out(5);
  expectError(
      kiln_session_read_output(gather.session, "x", KILN_F32, out.data(), 20),
      KILN_ERROR_INVALID_ARGUMENT, {"embedding id -5 is out of range"});
}

TEST(CudaSession, AHandedOutInputIsTheNewestBytes) {
  GatherSession gather;
  ASSERT_NE(gather.session, nullptr);
  ASSERT_EQ(gather.bind({0, 0, 0, 0, 0}), KILN_OK);
  void *data = nullptr;
  ASSERT_EQ(kiln_session_buffer_data(gather.session, "tokens", &data), KILN_OK)
      << kiln_last_error();
  std::vector<int32_t> ids = {6, 5, 4, 3, 2};
  for (int run = 0; run < 3; ++run) {
    std::memcpy(data, ids.data(), 20);
    ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK);
    EXPECT_EQ(gather.read(), gather.expected(ids));
    ids[run] = 7;
  }
}

} // namespace

namespace {

TEST(CudaSession, FailingCallsAreNamedWhereTheyFail) {
  GatherSession gather;
  ASSERT_NE(gather.session, nullptr);
  ASSERT_EQ(gather.bind({1, 2, 3, 4, 5}), KILN_OK);
  {
    // A launch refused while the step is queued: the run fails at once,
    // naming the kernel and the op's model line.
    ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuLaunchKernel=700");
    expectError(kiln_session_run(gather.session, "predict"), KILN_ERROR_DEVICE,
                {"kiln_session_run: model.kiln:14:3: op 'graph.embed' (entry "
                 "'predict' op 0): device 'cuda': cuLaunchKernel: "
                 "CUDA_ERROR_ILLEGAL_ADDRESS",
                 "launching kiln_test_gather (5 blocks of 32 threads)"});
  }
  // Twice more: op by op, then captured; the next run replays the graph.
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK)
        << kiln_last_error();
  {
    ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuGraphLaunch=700");
    expectError(kiln_session_run(gather.session, "predict"), KILN_ERROR_DEVICE,
                {"cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS",
                 "replaying entry 'predict'"});
  }
  {
    // A failure the GPU reports when the queued work is waited for.
    ASSERT_EQ(kiln_session_run(gather.session, "predict"), KILN_OK);
    ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuStreamSynchronize=700");
    expectError(kiln_session_synchronize(gather.session), KILN_ERROR_DEVICE,
                {"kiln_session_synchronize: device 'cuda': "
                 "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS"});
  }
}

/// A cuda plan's gradient sums (CollectiveStart/Wait): the cuda session
/// runs them with its own collectives (NCCL over the joined ranks), so it
/// refuses the caller's; a run that is not armed adds and sums nothing; an
/// armed run without joined ranks fails naming the join, and disarms.
TEST(CudaGradientSums, RunOverTheRanksTheSessionJoined) {
  ScopedEnvironment library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA),
      cublas("KILN_LIBCUBLASLT", KILN_FAKE_CUBLASLT);
  PlanWriter w;
  uint32_t g = w.buffer("g", Kind::Input, DType::F32, {6});
  uint32_t acc = w.buffer("w.grad_acc", Kind::OptimizerState, DType::F32, {6});
  w.gpuKernel("kiln_test_add", {g, acc, acc}, 6, 32);
  w.collectiveStart(0, {acc});
  w.collectiveWait(0);
  w.entry("accumulate_step", {g}, {});
  TempDir dir;
  writeFile(dir.file("plan.kpl"), w.finish(KILN_PLAN_SCHEMA_VERSION, "cuda",
                                           "kernels.ptx", 0, "sm_90"));
  writeFakeModule(dir);
  kiln_artifact *artifact = nullptr;
  ASSERT_EQ(kiln_artifact_open(dir.path().c_str(), &artifact), KILN_OK)
      << kiln_last_error();
  kiln_session *session = nullptr;
  ASSERT_EQ(kiln_session_create(artifact, "cuda", 0, &session), KILN_OK)
      << kiln_last_error();
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  int64_t shape[] = {6};
  ASSERT_EQ(
      kiln_session_bind_input(session, "g", values.data(), KILN_F32, shape, 1),
      KILN_OK);

  kiln_collectives collectives = {};
  expectError(kiln_session_arm_gradient_sums(session, &collectives),
              KILN_ERROR_INVALID_ARGUMENT, {"pass no collectives"});
  ASSERT_EQ(kiln_session_run(session, "accumulate_step"), KILN_OK)
      << kiln_last_error();
  std::vector<float> summed(6);
  ASSERT_EQ(kiln_session_get_buffer(session, "w.grad_acc", summed.data(), 24),
            KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(summed, values);
  ASSERT_EQ(kiln_session_arm_gradient_sums(session, nullptr), KILN_OK)
      << kiln_last_error();
  expectError(kiln_session_run(session, "accumulate_step"),
              KILN_ERROR_INVALID_ARGUMENT,
              {"need the ranks joined first", "kiln_session_join_nccl"});
  // The failed run disarmed: the next one adds again (its add and the
  // failed run's: three times g) and sums nothing.
  ASSERT_EQ(kiln_session_run(session, "accumulate_step"), KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_get_buffer(session, "w.grad_acc", summed.data(), 24),
            KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(summed, (std::vector<float>{3, 6, 9, 12, 15, 18}));
  // ZeRO-1's parts: an accumulator, tiled by the world's ranks.
  ASSERT_EQ(kiln_session_set_data_parallel(session, 0, 2), KILN_OK);
  const uint64_t halves[] = {3, 3}, short_[] = {3, 2};
  EXPECT_EQ(kiln_session_reduce_in_parts(session, "w.grad_acc", halves),
            KILN_OK)
      << kiln_last_error();
  expectError(kiln_session_reduce_in_parts(session, "w.grad_acc", short_),
              KILN_ERROR_INVALID_ARGUMENT,
              {"the ranks' parts of 'w.grad_acc' hold 5 values, the buffer 6"});
  expectError(kiln_session_reduce_in_parts(session, "g", halves),
              KILN_ERROR_INVALID_ARGUMENT,
              {"'g' is not an f32 gradient accumulator"});
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
}

} // namespace
