//===- CudaDriver.h - The NVIDIA driver, loaded at run time -----*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// The cuda device reaches the GPU through the driver API of libcuda.so.1,
// which it loads with dlopen and whose entry points it takes from
// cuGetProcAddress: no Kiln binary links libcuda, so every tool starts on
// a machine without a driver and says so when asked for the GPU.
// `KILN_LIBCUDA=PATH` loads another file in its place (the tests' fake
// driver, test/unit/fakes/FakeLibcuda.c).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_CUDADRIVER_H
#define KILN_DEVICES_CUDA_CUDADRIVER_H

#include "DynamicLibrary.h"

#include <cstdint>
#include <memory>
#include <string>

namespace kiln {
namespace cuda {

/// The driver API's types and the values Kiln passes or reads, as cuda.h
/// declares them (CudaDriverTest checks them against the toolkit's header
/// where one is installed).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
/// Opaque handles (pointers to the driver's structs).
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorNoDevice = 100;
constexpr CUresult kCudaErrorNotReady = 600;
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDefault = 0, kEventDisableTiming = 2;
constexpr int kStreamCaptureModeGlobal = 0;
constexpr int kFuncAttributeMaxDynamicSharedSizeBytes = 8;
constexpr int kAttributeComputeCapabilityMajor = 75;
constexpr int kAttributeComputeCapabilityMinor = 76;
constexpr int kGetProcAddressDefault = 0;
constexpr int kGetProcAddressSuccess = 0;
/// The API version whose entry points are asked for (CUDA 12.0).
constexpr int kDriverApiVersion = 12000;

/// The entry points Kiln calls, taken from cuGetProcAddress.
struct DriverApi {
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int *version) = nullptr;
  CUresult (*cuDeviceGetCount)(int *count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char *name, int length,
                              CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute,
                                   CUdevice device) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char **name) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char **text) = nullptr;
  // Contexts, modules, memory and launches (CudaContext.h).
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context,
                                       CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext context) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoad)(CUmodule *module, const char *path) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr pointer) = nullptr;
  CUresult (*cuMemHostAlloc)(void **pointer, size_t bytes,
                             unsigned flags) = nullptr;
  CUresult (*cuMemFreeHost)(void *pointer) = nullptr;
  // Streams, and the copies and sets queued on them.
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event,
                                unsigned flags) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr destination, const void *source,
                                size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *destination, CUdeviceptr source,
                                size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr destination, CUdeviceptr source,
                                size_t bytes, CUstream stream) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr destination, unsigned char value,
                              size_t bytes, CUstream stream) = nullptr;
  // Events.
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventQuery)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float *milliseconds, CUevent start,
                                 CUevent end) = nullptr;
  // CUDA Graphs, captured from a stream.
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph graph) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute,
                                 int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream,
                             void **parameters, void **extra) = nullptr;
};

/// A GPU the driver sees.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  /// Compute capability: sm_<major><minor>.
  int major = 0, minor = 0;
  std::string arch() const {
    return "sm_" + std::to_string(major) + std::to_string(minor);
  }
};

/// libcuda, loaded and initialized.
class Driver {
public:
  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  /// Loads the driver (KILN_LIBCUDA, else libcuda.so.1), resolves its
  /// entry points and calls cuInit; null with the reason in `error` (one
  /// line naming the library and the failing call) when any step fails.
  static std::unique_ptr<Driver> load(std::string &error);
  /// The library loaded, as dlopen was given it.
  const std::string &getPath() const { return path_; }
  /// cuDriverGetVersion: 13000 for CUDA 13.0.
  int getVersion() const { return version_; }
  /// "13.0".
  std::string getVersionText() const;
  int getDeviceCount() const { return deviceCount_; }
  /// Device `ordinal`'s name and compute capability; false with the reason
  /// in `error`.
  bool describeDevice(int ordinal, DeviceInfo &info, std::string &error) const;
  /// "cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string describeError(const char *call, CUresult result) const;
  const DriverApi &api() const { return api_; }

private:
  Driver() = default;
  runtime::DynamicLibrary library_;
  std::string path_;
  DriverApi api_;
  int version_ = 0;
  int deviceCount_ = 0;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUDADRIVER_H
