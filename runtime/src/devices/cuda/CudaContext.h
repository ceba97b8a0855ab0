//===- CudaContext.h - A GPU's primary context and what lives in it -*- C++
//-*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// The pieces the cuda device's executor is built from, over the driver API
// (CudaDriver.h): the device's primary context (which cuBLASLt and NCCL
// share), device memory, copies, modules and launches. Every failing call
// comes back as one line naming the call, the driver's error name and text,
// and for a launch the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_CUDACONTEXT_H
#define KILN_DEVICES_CUDA_CUDACONTEXT_H

#include "CudaDriver.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace cuda {

/// The primary context of one GPU, current on the thread that made it.
class Context {
public:
  /// Retains device `ordinal`'s primary context and makes it current; null
  /// with the reason in `error`.
  static std::unique_ptr<Context> create(const Driver &driver, int ordinal,
                                         std::string &error);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  const DeviceInfo &getDevice() const { return device_; }

  /// Each call returns "" or what failed.
  std::string allocate(size_t bytes, CUdeviceptr &pointer) const;
  std::string release(CUdeviceptr pointer) const;
  std::string copyToDevice(CUdeviceptr destination, const void *source,
                           size_t bytes) const;
  std::string copyToHost(void *destination, CUdeviceptr source,
                         size_t bytes) const;
  std::string copyOnDevice(CUdeviceptr destination, CUdeviceptr source,
                           size_t bytes) const;
  std::string zero(CUdeviceptr destination, size_t bytes) const;
  /// Loads the module in file `path` (a cubin, or PTX the driver compiles).
  std::string loadModule(const std::string &path, CUmodule &module) const;
  std::string unloadModule(CUmodule module) const;
  std::string getFunction(CUmodule module, const std::string &name,
                          CUfunction &function) const;
  /// Launches `function` (called `name` in messages) over `grid` blocks of
  /// `block` threads with `sharedBytes` of dynamic shared memory, its
  /// buffer arguments the device pointers `arguments` (the kernels' bare
  /// pointer convention: one pointer per memref).
  std::string launch(CUfunction function, const std::string &name,
                     unsigned grid, unsigned block, unsigned sharedBytes,
                     const std::vector<CUdeviceptr> &arguments) const;
  /// Waits for everything launched so far.
  std::string synchronize() const;

private:
  Context(const Driver &driver) : driver_(driver) {}
  /// "" for success, else the call and the driver's error.
  std::string check(const char *call, CUresult result) const;
  const Driver &driver_;
  DeviceInfo device_;
  CUdevice handle_ = 0;
  CUcontext context_ = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUDACONTEXT_H
