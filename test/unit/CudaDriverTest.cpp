//===- CudaDriverTest.cpp - The cuda device's driver loader ---------------===//
//
// Part of Kiln. devices/cuda/CudaDriver.h against the fake driver
// (fakes/FakeLibcuda.c, loaded through KILN_LIBCUDA): what it finds, and
// the one line it gives for each way loading can fail.
//
//===----------------------------------------------------------------------===//

#include "devices/cuda/CudaDriver.h"
#include "RuntimeTestUtil.h"

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
  EXPECT_EQ(kiln_device_check("cuda"), KILN_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(kiln_last_error())
                .find("found Kiln Fake GPU (sm_90) through " +
                      std::string(KILN_FAKE_LIBCUDA) + " (CUDA 13.0)"),
            std::string::npos)
      << kiln_last_error();
}

} // namespace
