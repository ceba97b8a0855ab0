//===- CudaContext.h - A GPU's primary context and what lives in it -*- C++
//-*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// The pieces the cuda device's executor is built from, over the driver API
// (CudaDriver.h): the device's primary context (which cuBLASLt and NCCL
// share), two streams, device and pinned host memory, copies, modules,
// launches, events and CUDA Graphs. Every op runs on the compute stream, in
// order; inputs go up on the copy stream while the compute stream works.
// Both are non-blocking: the legacy default stream never waits for them,
// so nothing here uses a synchronous call. Every failing call comes back
// as one line naming the call, the driver's error name and text, and for a
// launch the kernel.
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

  CUstream getComputeStream() const { return compute_; }
  CUstream getCopyStream() const { return copy_; }

  /// Each call returns "" or what failed.
  std::string allocate(size_t bytes, CUdeviceptr &pointer) const;
  std::string release(CUdeviceptr pointer) const;
  /// Page-locked host memory, which copies read and write asynchronously.
  std::string allocateHost(size_t bytes, void *&pointer) const;
  std::string releaseHost(void *pointer) const;
  /// Queued on `stream`: from pageable memory the driver has read `source`
  /// when it returns, from pinned memory only once the copy ran.
  std::string copyToDevice(CUdeviceptr destination, const void *source,
                           size_t bytes, CUstream stream) const;
  /// Queued on the compute stream and waited for: the bytes are there.
  std::string copyToHost(void *destination, CUdeviceptr source,
                         size_t bytes) const;
  /// Queued on the compute stream.
  std::string copyOnDevice(CUdeviceptr destination, CUdeviceptr source,
                           size_t bytes) const;
  std::string zero(CUdeviceptr destination, size_t bytes) const;
  /// Loads the module in file `path` (a cubin, or PTX the driver compiles).
  std::string loadModule(const std::string &path, CUmodule &module) const;
  std::string unloadModule(CUmodule module) const;
  std::string getFunction(CUmodule module, const std::string &name,
                          CUfunction &function) const;
  /// Lets `function` (`name`) take up to `bytes` of dynamic shared memory
  /// per block, past the 48 KiB every kernel may have.
  std::string allowSharedBytes(CUfunction function, const std::string &name,
                               unsigned bytes) const;
  /// Queues `function` (called `name` in messages) on the compute stream
  /// over `grid` blocks of `block` threads with `sharedBytes` of dynamic
  /// shared memory, its buffer arguments the device pointers `arguments`
  /// (the kernels' bare pointer convention: one pointer per memref).
  std::string launch(CUfunction function, const std::string &name,
                     unsigned grid, unsigned block, unsigned sharedBytes,
                     const std::vector<CUdeviceptr> &arguments) const;
  /// Waits for everything queued on the compute stream.
  std::string synchronize() const;

  /// Events: `timing` ones can be timed against each other.
  std::string createEvent(bool timing, CUevent &event) const;
  std::string destroyEvent(CUevent event) const;
  std::string record(CUevent event, CUstream stream) const;
  /// `stream` waits for the work before `event`'s last record.
  std::string wait(CUstream stream, CUevent event) const;
  std::string synchronize(CUevent event) const;
  std::string elapsed(CUevent start, CUevent end, float &milliseconds) const;

  /// CUDA Graphs: what the compute stream is given between beginCapture
  /// and endCapture is recorded, not run, every parameter frozen.
  std::string beginCapture() const;
  std::string endCapture(CUgraph &graph) const;
  std::string instantiate(CUgraph graph, CUgraphExec &exec) const;
  /// Queues one replay of `exec` on the compute stream.
  std::string launchGraph(CUgraphExec exec) const;
  std::string destroyGraph(CUgraph graph) const;
  std::string destroyGraphExec(CUgraphExec exec) const;

private:
  Context(const Driver &driver) : driver_(driver) {}
  /// "" for success, else the call and the driver's error.
  std::string check(const char *call, CUresult result) const;
  const Driver &driver_;
  DeviceInfo device_;
  CUdevice handle_ = 0;
  CUcontext context_ = nullptr;
  CUstream compute_ = nullptr, copy_ = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUDACONTEXT_H
