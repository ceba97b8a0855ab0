//===- CudaDriver.cpp - The NVIDIA driver, loaded at run time -------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <cstdlib>

using namespace kiln;
using namespace kiln::cuda;

namespace {
/// cuGetProcAddress (the _v2 ABI of CUDA 12 and later).
using GetProcAddress = CUresult (*)(const char *symbol, void **function,
                                    int cudaVersion, uint64_t flags,
                                    int *symbolStatus);

/// Takes `symbol` from the driver into `function`; false with the reason.
template <typename Function>
bool resolve(GetProcAddress getProcAddress, const char *symbol,
             Function &function, const std::string &path, std::string &error) {
  void *address = nullptr;
  int status = -1;
  CUresult result = getProcAddress(symbol, &address, kDriverApiVersion,
                                   kGetProcAddressDefault, &status);
  if (result != kCudaSuccess || status != kGetProcAddressSuccess || !address) {
    error = path + " has no " + symbol + " for CUDA " +
            std::to_string(kDriverApiVersion / 1000) +
            " (cuGetProcAddress returned " + std::to_string(result) +
            ", symbol status " + std::to_string(status) +
            "): the driver is older than CUDA 12";
    return false;
  }
  function = reinterpret_cast<Function>(address);
  return true;
}
} // namespace

Driver::~Driver() = default;

std::unique_ptr<Driver> Driver::load(std::string &error) {
  std::unique_ptr<Driver> driver(new Driver());
  const char *chosen = std::getenv("KILN_LIBCUDA");
  driver->path_ = chosen && *chosen ? chosen : "libcuda.so.1";
  std::string reason;
  if (!driver->library_.open(driver->path_, reason)) {
    error = "no NVIDIA driver: " + driver->path_ + " cannot be loaded (" +
            reason + ")";
    return nullptr;
  }
  GetProcAddress getProcAddress = nullptr;
  if (!driver->library_.resolve("cuGetProcAddress_v2", getProcAddress)) {
    error = driver->path_ +
            " has no cuGetProcAddress_v2: not an NVIDIA driver of CUDA 12 "
            "or later";
    return nullptr;
  }
  DriverApi &api = driver->api_;
  const std::string &path = driver->path_;
  // Every entry point up front: a driver that lacks one fails here, not in
  // the middle of a step.
  bool resolved = true;
  auto take = [&](const char *symbol, auto &function) {
    resolved =
        resolved && resolve(getProcAddress, symbol, function, path, error);
  };
  take("cuGetErrorName", api.cuGetErrorName);
  take("cuGetErrorString", api.cuGetErrorString);
  take("cuInit", api.cuInit);
  take("cuDriverGetVersion", api.cuDriverGetVersion);
  take("cuDeviceGetCount", api.cuDeviceGetCount);
  take("cuDeviceGet", api.cuDeviceGet);
  take("cuDeviceGetName", api.cuDeviceGetName);
  take("cuDeviceGetAttribute", api.cuDeviceGetAttribute);
  take("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain);
  take("cuDevicePrimaryCtxRelease", api.cuDevicePrimaryCtxRelease);
  take("cuCtxSetCurrent", api.cuCtxSetCurrent);
  take("cuCtxSynchronize", api.cuCtxSynchronize);
  take("cuModuleLoad", api.cuModuleLoad);
  take("cuModuleUnload", api.cuModuleUnload);
  take("cuModuleGetFunction", api.cuModuleGetFunction);
  take("cuMemAlloc", api.cuMemAlloc);
  take("cuMemFree", api.cuMemFree);
  take("cuMemHostAlloc", api.cuMemHostAlloc);
  take("cuMemFreeHost", api.cuMemFreeHost);
  take("cuStreamCreate", api.cuStreamCreate);
  take("cuStreamDestroy", api.cuStreamDestroy);
  take("cuStreamSynchronize", api.cuStreamSynchronize);
  take("cuStreamWaitEvent", api.cuStreamWaitEvent);
  take("cuMemcpyHtoDAsync", api.cuMemcpyHtoDAsync);
  take("cuMemcpyDtoHAsync", api.cuMemcpyDtoHAsync);
  take("cuMemcpyDtoDAsync", api.cuMemcpyDtoDAsync);
  take("cuMemsetD8Async", api.cuMemsetD8Async);
  take("cuEventCreate", api.cuEventCreate);
  take("cuEventDestroy", api.cuEventDestroy);
  take("cuEventRecord", api.cuEventRecord);
  take("cuEventSynchronize", api.cuEventSynchronize);
  take("cuEventQuery", api.cuEventQuery);
  take("cuEventElapsedTime", api.cuEventElapsedTime);
  take("cuStreamBeginCapture", api.cuStreamBeginCapture);
  take("cuStreamEndCapture", api.cuStreamEndCapture);
  take("cuGraphInstantiateWithFlags", api.cuGraphInstantiateWithFlags);
  take("cuGraphLaunch", api.cuGraphLaunch);
  take("cuGraphExecDestroy", api.cuGraphExecDestroy);
  take("cuGraphDestroy", api.cuGraphDestroy);
  take("cuLaunchKernel", api.cuLaunchKernel);
  take("cuFuncSetAttribute", api.cuFuncSetAttribute);
  if (!resolved)
    return nullptr;
  if (CUresult result = api.cuInit(0); result != kCudaSuccess) {
    error = path + ": " + driver->describeError("cuInit", result);
    return nullptr;
  }
  if (CUresult result = api.cuDriverGetVersion(&driver->version_);
      result != kCudaSuccess) {
    error = path + ": " + driver->describeError("cuDriverGetVersion", result);
    return nullptr;
  }
  if (CUresult result = api.cuDeviceGetCount(&driver->deviceCount_);
      result != kCudaSuccess) {
    error = path + ": " + driver->describeError("cuDeviceGetCount", result);
    return nullptr;
  }
  if (driver->deviceCount_ < 1) {
    error = "no CUDA device: the driver " + path + " (CUDA " +
            driver->getVersionText() + ") sees none";
    return nullptr;
  }
  return driver;
}

std::string Driver::getVersionText() const {
  return std::to_string(version_ / 1000) + "." +
         std::to_string(version_ % 1000 / 10);
}

bool Driver::describeDevice(int ordinal, DeviceInfo &info,
                            std::string &error) const {
  if (ordinal < 0 || ordinal >= deviceCount_) {
    error = "no CUDA device " + std::to_string(ordinal) + ": the driver sees " +
            std::to_string(deviceCount_);
    return false;
  }
  CUdevice device = 0;
  if (CUresult result = api_.cuDeviceGet(&device, ordinal);
      result != kCudaSuccess) {
    error = describeError("cuDeviceGet", result);
    return false;
  }
  char name[256] = {};
  if (CUresult result = api_.cuDeviceGetName(name, sizeof name - 1, device);
      result != kCudaSuccess) {
    error = describeError("cuDeviceGetName", result);
    return false;
  }
  info.ordinal = ordinal;
  info.name = name;
  for (auto [attribute, value] :
       {std::pair<int, int *>{kAttributeComputeCapabilityMajor, &info.major},
        {kAttributeComputeCapabilityMinor, &info.minor}})
    if (CUresult result = api_.cuDeviceGetAttribute(value, attribute, device);
        result != kCudaSuccess) {
      error = describeError("cuDeviceGetAttribute", result);
      return false;
    }
  return true;
}

std::string Driver::describeError(const char *call, CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (!api_.cuGetErrorName || api_.cuGetErrorName(result, &name) != 0)
    name = nullptr;
  if (!api_.cuGetErrorString || api_.cuGetErrorString(result, &text) != 0)
    text = nullptr;
  std::string message = std::string(call) + ": " +
                        (name ? name : "CUDA error " + std::to_string(result));
  if (text)
    message += std::string(" (") + text + ")";
  return message;
}
