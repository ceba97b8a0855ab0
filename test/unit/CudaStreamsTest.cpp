//===- CudaStreamsTest.cpp - Streams, events and graphs on the fake driver ===//
//
// Part of Kiln. devices/cuda/CudaContext.h's streams, events and CUDA
// Graphs against the fake driver, which defers stream work as a GPU does:
// what these tests show about the fake is what makes the runtime's tests
// through it mean something (a missing wait reads stale bytes there too).
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#include <cstring>
#include <memory>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

/// Three device buffers of six floats and the test kernel c = a + b.
struct AddProgram {
  explicit AddProgram(cuda::Context &context) : context(context) {
    EXPECT_EQ(context.loadModule(writeFakeModule(dir), module), "");
    EXPECT_EQ(context.getFunction(module, "kiln_test_add", add), "");
    for (cuda::CUdeviceptr &buffer : buffers)
      EXPECT_EQ(context.allocate(kBytes, buffer), "");
  }
  ~AddProgram() {
    for (cuda::CUdeviceptr buffer : buffers)
      context.release(buffer);
    context.unloadModule(module);
  }
  /// Device memory is host memory on the fake: read it without a copy.
  const float *peek(int buffer) const {
    return reinterpret_cast<const float *>(buffers[buffer]);
  }
  std::string upload(int buffer, const std::vector<float> &values) {
    return context.copyToDevice(buffers[buffer], values.data(), kBytes,
                                context.getComputeStream());
  }
  std::string launch() {
    return context.launch(add, "kiln_test_add", 6, 32, 0, buffers);
  }

  static constexpr size_t kBytes = 6 * sizeof(float);
  cuda::Context &context;
  TempDir dir;
  cuda::CUmodule module = nullptr;
  cuda::CUfunction add = nullptr;
  std::vector<cuda::CUdeviceptr> buffers = std::vector<cuda::CUdeviceptr>(3);
};

/// The fake driver's GPU 0, and the add program on it.
class CudaStreams : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(gpu.context) << gpu.error;
    context = gpu.context.get();
    program = std::make_unique<AddProgram>(*context);
  }
  FakeGpu gpu;
  cuda::Context *context = nullptr;
  std::unique_ptr<AddProgram> program;
};

TEST_F(CudaStreams, WorkRunsWhenWaitedFor) {
  ASSERT_EQ(program->upload(0, {1, 2, 3, 4, 5, 6}), "");
  ASSERT_EQ(program->upload(1, {10, 20, 30, 40, 50, 60}), "");
  ASSERT_EQ(program->upload(2, std::vector<float>(6, 0)), "");
  ASSERT_EQ(program->launch(), "");
  // Queued, not run: the sum is not there yet.
  EXPECT_EQ(program->peek(2)[5], 0.0f);
  ASSERT_EQ(context->synchronize(), "");
  EXPECT_EQ(program->peek(2)[5], 66.0f);
}

TEST_F(CudaStreams, ACopyToTheHostWaitsForTheWorkBeforeIt) {
  ASSERT_EQ(program->upload(0, {1, 2, 3, 4, 5, 6}), "");
  ASSERT_EQ(program->upload(1, {1, 1, 1, 1, 1, 1}), "");
  ASSERT_EQ(program->launch(), "");
  std::vector<float> out(6, -1);
  ASSERT_EQ(context->copyToHost(out.data(), program->buffers[2], 24), "");
  EXPECT_EQ(out, (std::vector<float>{2, 3, 4, 5, 6, 7}));
}

/// Polled stream work of the fake (as the fake NCCL's collectives are):
/// done once `*pollsLeft` polls have found it unfinished.
void countDown(const void *) {}
int pollCountDown(const void *payload) {
  int *left = *static_cast<int *const *>(payload);
  return (*left)-- <= 0;
}

TEST_F(CudaStreams, AQueryLetsTheGpuRunOnUntilPolledWorkIsDone) {
  void *fake = dlopen(KILN_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  using EnqueuePolled = int (*)(void *, void (*)(const void *),
                                int (*)(const void *), const void *, size_t);
  auto enqueue = reinterpret_cast<EnqueuePolled>(
      dlsym(fake, "kiln_fake_cuda_enqueue_polled"));
  ASSERT_NE(enqueue, nullptr);
  ASSERT_EQ(program->upload(0, {1, 2, 3, 4, 5, 6}), "");
  ASSERT_EQ(program->upload(1, {1, 1, 1, 1, 1, 1}), "");
  ASSERT_EQ(program->launch(), "");
  int pollsLeft = 2;
  int *payload = &pollsLeft;
  cuda::CUstream compute = context->getComputeStream();
  ASSERT_EQ(
      enqueue(compute, countDown, pollCountDown, &payload, sizeof payload), 0);
  cuda::CUevent done = nullptr;
  ASSERT_EQ(context->createEvent(false, done), "");
  ASSERT_EQ(context->record(done, compute), "");
  const cuda::DriverApi &api = gpu.driver->api();
  // Each query runs what it can: the launch before the polled work, then
  // one poll of it per query until it says done.
  EXPECT_EQ(api.cuEventQuery(done), cuda::kCudaErrorNotReady);
  EXPECT_EQ(program->peek(2)[5], 7.0f);
  EXPECT_EQ(api.cuEventQuery(done), cuda::kCudaErrorNotReady);
  EXPECT_EQ(api.cuEventQuery(done), cuda::kCudaSuccess);
  EXPECT_EQ(pollsLeft, -1);
  EXPECT_EQ(context->destroyEvent(done), "");
  dlclose(fake);
}

TEST_F(CudaStreams, PinnedUploadsReadTheHostWhenTheyRun) {
  void *pinned = nullptr;
  ASSERT_EQ(context->allocateHost(24, pinned), "");
  std::vector<float> first = {1, 1, 1, 1, 1, 1}, second = {2, 2, 2, 2, 2, 2};
  std::memcpy(pinned, first.data(), 24);
  cuda::CUstream copy = context->getCopyStream();
  ASSERT_EQ(context->copyToDevice(program->buffers[0], pinned, 24, copy), "");
  // Rewritten before anything waited: the queued copy takes the new bytes,
  // as a DMA engine would. (A pageable source is read at the call.)
  std::memcpy(pinned, second.data(), 24);
  cuda::CUevent uploaded = nullptr;
  ASSERT_EQ(context->createEvent(false, uploaded), "");
  ASSERT_EQ(context->record(uploaded, copy), "");
  ASSERT_EQ(context->synchronize(uploaded), "");
  EXPECT_EQ(program->peek(0)[0], 2.0f);
  // The compute stream orders itself after the upload through the event.
  std::memcpy(pinned, first.data(), 24);
  ASSERT_EQ(context->copyToDevice(program->buffers[1], pinned, 24, copy), "");
  ASSERT_EQ(context->record(uploaded, copy), "");
  ASSERT_EQ(context->wait(context->getComputeStream(), uploaded), "");
  ASSERT_EQ(program->launch(), "");
  ASSERT_EQ(context->synchronize(), "");
  EXPECT_EQ(program->peek(2)[0], 3.0f);
  EXPECT_EQ(context->destroyEvent(uploaded), "");
  EXPECT_EQ(context->releaseHost(pinned), "");
}

TEST_F(CudaStreams, AGraphReplaysWhatItsCaptureFroze) {
  ASSERT_EQ(program->upload(0, {1, 2, 3, 4, 5, 6}), "");
  ASSERT_EQ(program->upload(1, {1, 1, 1, 1, 1, 1}), "");
  ASSERT_EQ(program->upload(2, std::vector<float>(6, 0)), "");
  ASSERT_EQ(context->beginCapture(), "");
  ASSERT_EQ(program->launch(), "");
  // Captured, not run.
  cuda::CUgraph graph = nullptr;
  ASSERT_EQ(context->endCapture(graph), "");
  ASSERT_EQ(context->synchronize(), "");
  EXPECT_EQ(program->peek(2)[0], 0.0f);
  cuda::CUgraphExec exec = nullptr;
  ASSERT_EQ(context->instantiate(graph, exec), "");
  EXPECT_EQ(context->destroyGraph(graph), "");
  ASSERT_EQ(context->launchGraph(exec), "");
  ASSERT_EQ(context->synchronize(), "");
  EXPECT_EQ(program->peek(2)[0], 2.0f);
  // The pointers were frozen, not the bytes behind them: new bytes in the
  // same buffers give new sums.
  ASSERT_EQ(program->upload(1, {10, 10, 10, 10, 10, 10}), "");
  ASSERT_EQ(context->launchGraph(exec), "");
  ASSERT_EQ(context->synchronize(), "");
  EXPECT_EQ(program->peek(2)[0], 11.0f);
  EXPECT_EQ(context->destroyGraphExec(exec), "");
}

TEST_F(CudaStreams, ASynchronousCallInvalidatesACapture) {
  ASSERT_EQ(context->beginCapture(), "");
  ASSERT_EQ(program->launch(), "");
  EXPECT_EQ(context->synchronize(),
            "cuStreamSynchronize: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED "
            "(operation not permitted when stream is capturing)");
  cuda::CUdeviceptr more = 0;
  EXPECT_NE(context->allocate(4, more), "");
  cuda::CUgraph graph = nullptr;
  EXPECT_EQ(context->endCapture(graph),
            "cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED "
            "(operation failed due to a previous error during capture)");
  EXPECT_EQ(graph, nullptr);
  // The stream works again.
  ASSERT_EQ(program->launch(), "");
  EXPECT_EQ(context->synchronize(), "");
}

TEST_F(CudaStreams, EventsTimeTheWorkBetweenThem) {
  cuda::CUevent start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(context->createEvent(true, start), "");
  ASSERT_EQ(context->createEvent(true, end), "");
  ASSERT_EQ(context->createEvent(false, untimed), "");
  cuda::CUstream compute = context->getComputeStream();
  ASSERT_EQ(context->record(start, compute), "");
  ASSERT_EQ(program->launch(), "");
  ASSERT_EQ(context->record(end, compute), "");
  float milliseconds = -1;
  EXPECT_EQ(context->elapsed(start, end, milliseconds),
            "cuEventElapsedTime: CUDA_ERROR_NOT_READY (device not ready)");
  ASSERT_EQ(context->synchronize(end), "");
  ASSERT_EQ(context->elapsed(start, end, milliseconds), "");
  EXPECT_GE(milliseconds, 0.0f);
  ASSERT_EQ(context->record(untimed, compute), "");
  ASSERT_EQ(context->synchronize(untimed), "");
  EXPECT_NE(context->elapsed(start, untimed, milliseconds), "");
  for (cuda::CUevent event : {start, end, untimed})
    EXPECT_EQ(context->destroyEvent(event), "");
}

TEST_F(CudaStreams, DynamicSharedMemoryPast48KiBIsOptedInto) {
  unsigned bytes = 64 * 1024;
  EXPECT_NE(context->launch(program->add, "kiln_test_add", 6, 32, bytes,
                            program->buffers),
            "");
  ASSERT_EQ(context->allowSharedBytes(program->add, "kiln_test_add", bytes),
            "");
  EXPECT_EQ(context->launch(program->add, "kiln_test_add", 6, 32, bytes,
                            program->buffers),
            "");
  EXPECT_EQ(context->synchronize(), "");
  EXPECT_NE(context->allowSharedBytes(program->add, "kiln_test_add", 300 << 10),
            "");
}

} // namespace
