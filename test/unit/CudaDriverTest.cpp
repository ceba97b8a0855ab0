//===- CudaDriverTest.cpp - The cuda device's driver loader ---------------===//
//
// Part of Kiln. devices/cuda/CudaDriver.h against the fake driver
// (fakes/FakeLibcuda.c, loaded through KILN_LIBCUDA): what it finds, and
// the one line it gives for each way loading can fail.
//
//===----------------------------------------------------------------------===//

#include "FakeGpu.h"

#ifdef KILN_HAVE_CUDA_H
#include <cuda.h>
#endif

using namespace kiln;
using namespace kiln::test;

namespace {

#ifdef KILN_HAVE_CUDA_H
// The values the runtime declares for itself are the toolkit's.
static_assert(cuda::kCudaSuccess == CUDA_SUCCESS);
static_assert(cuda::kCudaErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(cuda::kAttributeComputeCapabilityMajor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(cuda::kAttributeComputeCapabilityMinor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(cuda::kGetProcAddressDefault == CU_GET_PROC_ADDRESS_DEFAULT);
static_assert(cuda::kGetProcAddressSuccess == CU_GET_PROC_ADDRESS_SUCCESS);
static_assert(cuda::kCudaErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(cuda::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(cuda::kEventDefault == CU_EVENT_DEFAULT);
static_assert(cuda::kEventDisableTiming == CU_EVENT_DISABLE_TIMING);
static_assert(cuda::kStreamCaptureModeGlobal == CU_STREAM_CAPTURE_MODE_GLOBAL);
static_assert(cuda::kFuncAttributeMaxDynamicSharedSizeBytes ==
              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(sizeof(cuda::CUdevice) == sizeof(CUdevice));
static_assert(sizeof(cuda::CUresult) == sizeof(CUresult));
#endif

/// Loads the driver that KILN_LIBCUDA names; the error when it fails.
std::string loadError(const std::string &path) {
  ScopedEnvironment library("KILN_LIBCUDA", path);
  std::string error;
  std::unique_ptr<cuda::Driver> driver = cuda::Driver::load(error);
  EXPECT_EQ(driver == nullptr, !error.empty());
  return error;
}

TEST(CudaDriver, FindsTheFakeDriversDevices) {
  ScopedEnvironment library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA);
  ScopedEnvironment devices("KILN_FAKE_CUDA_DEVICES", "2");
  ScopedEnvironment arch("KILN_FAKE_CUDA_ARCH", "80");
  std::string error;
  std::unique_ptr<cuda::Driver> driver = cuda::Driver::load(error);
  ASSERT_TRUE(driver) << error;
  EXPECT_EQ(driver->getPath(), KILN_FAKE_LIBCUDA);
  EXPECT_EQ(driver->getVersion(), 13000);
  EXPECT_EQ(driver->getVersionText(), "13.0");
  EXPECT_EQ(driver->getDeviceCount(), 2);
  cuda::DeviceInfo info;
  ASSERT_TRUE(driver->describeDevice(1, info, error)) << error;
  EXPECT_EQ(info.ordinal, 1);
  EXPECT_EQ(info.name, "Kiln Fake GPU");
  EXPECT_EQ(info.arch(), "sm_80");
  EXPECT_FALSE(driver->describeDevice(2, info, error));
  EXPECT_EQ(error, "no CUDA device 2: the driver sees 2");
  EXPECT_EQ(driver->describeError("cuMemAlloc", 2),
            "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_EQ(driver->describeError("cuMemAlloc", 12345),
            "cuMemAlloc: CUDA error 12345");
}

TEST(CudaDriver, NoDriverIsOneLineNamingTheLibrary) {
  std::string error = loadError("/nonexistent/libcuda.so.1");
  EXPECT_EQ(error.rfind("no NVIDIA driver: /nonexistent/libcuda.so.1 cannot "
                        "be loaded (",
                        0),
            0u)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  // A library that is not a driver.
  EXPECT_EQ(loadError(KILN_TEST_KERNELS),
            std::string(KILN_TEST_KERNELS) +
                " has no cuGetProcAddress_v2: not an NVIDIA driver of CUDA 12 "
                "or later");
}

TEST(CudaDriver, EachFailingStepIsNamed) {
  {
    ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuInit=100");
    EXPECT_EQ(loadError(KILN_FAKE_LIBCUDA),
              std::string(KILN_FAKE_LIBCUDA) +
                  ": cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
                  "detected)");
  }
  {
    ScopedEnvironment devices("KILN_FAKE_CUDA_DEVICES", "0");
    EXPECT_EQ(loadError(KILN_FAKE_LIBCUDA),
              std::string("no CUDA device: the driver ") + KILN_FAKE_LIBCUDA +
                  " (CUDA 13.0) sees none");
  }
  {
    ScopedEnvironment missing("KILN_FAKE_CUDA_MISSING", "cuDeviceGetName");
    std::string error = loadError(KILN_FAKE_LIBCUDA);
    EXPECT_NE(error.find("has no cuDeviceGetName for CUDA 12"),
              std::string::npos)
        << error;
  }
}

TEST(CudaDriver, DeviceCheckSaysWhatIsThere) {
  EXPECT_EQ(kiln_device_check("cpu"), KILN_OK);
  EXPECT_EQ(kiln_device_check("cuda-emulator"), KILN_OK);
  EXPECT_EQ(kiln_device_check("tpu"), KILN_ERROR_INVALID_ARGUMENT);
  {
    ScopedEnvironment library("KILN_LIBCUDA", "/nonexistent/libcuda.so.1");
    EXPECT_EQ(kiln_device_check("cuda"), KILN_ERROR_DEVICE);
    EXPECT_NE(std::string(kiln_last_error()).find("no NVIDIA driver"),
              std::string::npos)
        << kiln_last_error();
  }
  ScopedEnvironment library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA);
  EXPECT_EQ(kiln_device_check("cuda"), KILN_OK) << kiln_last_error();
}

} // namespace

namespace {

TEST(CudaContext, RunsAKernelOnDeviceMemory) {
  FakeGpu gpu;
  ASSERT_TRUE(gpu.context) << gpu.error;
  cuda::Context *context = gpu.context.get();
  EXPECT_EQ(context->getDevice().name, "Kiln Fake GPU");
  long before = liveFakeAllocations();

  TempDir dir;
  cuda::CUmodule module = nullptr;
  ASSERT_EQ(context->loadModule(writeFakeModule(dir), module), "");
  cuda::CUfunction add = nullptr;
  ASSERT_EQ(context->getFunction(module, "kiln_test_add", add), "");
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30, 40, 50, 60};
  std::vector<cuda::CUdeviceptr> buffers(3);
  for (cuda::CUdeviceptr &buffer : buffers)
    ASSERT_EQ(context->allocate(a.size() * 4, buffer), "");
  cuda::CUstream stream = context->getComputeStream();
  ASSERT_EQ(context->copyToDevice(buffers[0], a.data(), a.size() * 4, stream),
            "");
  ASSERT_EQ(context->copyToDevice(buffers[1], b.data(), b.size() * 4, stream),
            "");
  ASSERT_EQ(context->zero(buffers[2], a.size() * 4), "");
  ASSERT_EQ(context->launch(add, "kiln_test_add", 6, 32, 0, buffers), "");
  ASSERT_EQ(context->synchronize(), "");
  std::vector<float> out(a.size(), -1);
  ASSERT_EQ(context->copyToHost(out.data(), buffers[2], out.size() * 4), "");
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(out[i], a[i] + b[i]) << i;
  for (cuda::CUdeviceptr buffer : buffers)
    EXPECT_EQ(context->release(buffer), "");
  EXPECT_EQ(liveFakeAllocations(), before);
  EXPECT_EQ(context->unloadModule(module), "");
}

TEST(CudaContext, EachFailingCallIsNamed) {
  FakeGpu gpu;
  ASSERT_TRUE(gpu.context) << gpu.error;
  cuda::Context *context = gpu.context.get();
  std::string error;
  cuda::CUdeviceptr pointer = 0;
  {
    ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuMemAlloc=2");
    EXPECT_EQ(context->allocate(100, pointer),
              "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) "
              "allocating 100 bytes");
  }
  cuda::CUmodule module = nullptr;
  EXPECT_EQ(context->loadModule("/nonexistent/kernels.ptx", module),
            "cuModuleLoad: CUDA_ERROR_FILE_NOT_FOUND (file not found) "
            "loading /nonexistent/kernels.ptx");
  TempDir dir;
  ASSERT_EQ(context->loadModule(writeFakeModule(dir), module), "");
  cuda::CUfunction function = nullptr;
  EXPECT_EQ(context->getFunction(module, "kiln_k404", function),
            "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (named symbol not "
            "found) for kernel kiln_k404");
  ASSERT_EQ(context->getFunction(module, "kiln_test_add", function), "");
  {
    ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuLaunchKernel=700");
    EXPECT_EQ(context->launch(function, "kiln_test_add", 6, 32, 0, {0, 0, 0}),
              "cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory "
              "access was encountered) launching kiln_test_add (6 blocks of "
              "32 threads)");
  }
  EXPECT_EQ(context->unloadModule(module), "");
  // The primary context goes with its last user.
  ScopedEnvironment fail("KILN_FAKE_CUDA_FAIL", "cuDevicePrimaryCtxRetain=201");
  EXPECT_EQ(cuda::Context::create(*gpu.driver, 0, error), nullptr);
  EXPECT_EQ(error, "cuDevicePrimaryCtxRetain: CUDA_ERROR_INVALID_CONTEXT "
                   "(invalid device context)");
}

} // namespace
