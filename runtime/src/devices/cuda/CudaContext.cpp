//===- CudaContext.cpp - A GPU's primary context and what lives in it -----===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

using namespace kiln;
using namespace kiln::cuda;

std::unique_ptr<Context> Context::create(const Driver &driver, int ordinal,
                                         std::string &error) {
  std::unique_ptr<Context> context(new Context(driver));
  if (!driver.describeDevice(ordinal, context->device_, error))
    return nullptr;
  const DriverApi &api = driver.api();
  if (CUresult result = api.cuDeviceGet(&context->handle_, ordinal);
      result != kCudaSuccess) {
    error = driver.describeError("cuDeviceGet", result);
    return nullptr;
  }
  if (CUresult result =
          api.cuDevicePrimaryCtxRetain(&context->context_, context->handle_);
      result != kCudaSuccess) {
    error = driver.describeError("cuDevicePrimaryCtxRetain", result);
    context->context_ = nullptr;
    return nullptr;
  }
  if (CUresult result = api.cuCtxSetCurrent(context->context_);
      result != kCudaSuccess) {
    error = driver.describeError("cuCtxSetCurrent", result);
    return nullptr;
  }
  for (CUstream *stream : {&context->compute_, &context->copy_})
    if (CUresult result = api.cuStreamCreate(stream, kStreamNonBlocking);
        result != kCudaSuccess) {
      *stream = nullptr;
      error = driver.describeError("cuStreamCreate", result);
      return nullptr;
    }
  return context;
}

Context::~Context() {
  for (CUstream stream : {compute_, copy_})
    if (stream)
      driver_.api().cuStreamDestroy(stream);
  if (context_)
    driver_.api().cuDevicePrimaryCtxRelease(handle_);
}

std::string Context::check(const char *call, CUresult result) const {
  return result == kCudaSuccess ? "" : driver_.describeError(call, result);
}

std::string Context::allocate(size_t bytes, CUdeviceptr &pointer) const {
  std::string error = check(
      "cuMemAlloc", driver_.api().cuMemAlloc(&pointer, bytes ? bytes : 1));
  if (!error.empty())
    error += " allocating " + std::to_string(bytes) + " bytes";
  return error;
}

std::string Context::release(CUdeviceptr pointer) const {
  return check("cuMemFree", driver_.api().cuMemFree(pointer));
}

std::string Context::allocateHost(size_t bytes, void *&pointer) const {
  std::string error =
      check("cuMemHostAlloc",
            driver_.api().cuMemHostAlloc(&pointer, bytes ? bytes : 1, 0));
  if (!error.empty())
    error += " allocating " + std::to_string(bytes) + " pinned bytes";
  return error;
}

std::string Context::releaseHost(void *pointer) const {
  return check("cuMemFreeHost", driver_.api().cuMemFreeHost(pointer));
}

std::string Context::copyToDevice(CUdeviceptr destination, const void *source,
                                  size_t bytes, CUstream stream) const {
  return check("cuMemcpyHtoDAsync", driver_.api().cuMemcpyHtoDAsync(
                                        destination, source, bytes, stream));
}

std::string Context::copyToHost(void *destination, CUdeviceptr source,
                                size_t bytes) const {
  std::string error = check(
      "cuMemcpyDtoHAsync",
      driver_.api().cuMemcpyDtoHAsync(destination, source, bytes, compute_));
  return error.empty() ? synchronize() : error;
}

std::string Context::copyOnDevice(CUdeviceptr destination, CUdeviceptr source,
                                  size_t bytes) const {
  return check("cuMemcpyDtoDAsync", driver_.api().cuMemcpyDtoDAsync(
                                        destination, source, bytes, compute_));
}

std::string Context::zero(CUdeviceptr destination, size_t bytes) const {
  return check("cuMemsetD8Async",
               driver_.api().cuMemsetD8Async(destination, 0, bytes, compute_));
}

std::string Context::loadModule(const std::string &path,
                                CUmodule &module) const {
  std::string error =
      check("cuModuleLoad", driver_.api().cuModuleLoad(&module, path.c_str()));
  if (!error.empty())
    error += " loading " + path;
  return error;
}

std::string Context::unloadModule(CUmodule module) const {
  return check("cuModuleUnload", driver_.api().cuModuleUnload(module));
}

std::string Context::getFunction(CUmodule module, const std::string &name,
                                 CUfunction &function) const {
  std::string error =
      check("cuModuleGetFunction",
            driver_.api().cuModuleGetFunction(&function, module, name.c_str()));
  if (!error.empty())
    error += " for kernel " + name;
  return error;
}

std::string Context::launch(CUfunction function, const std::string &name,
                            unsigned grid, unsigned block, unsigned sharedBytes,
                            const std::vector<CUdeviceptr> &arguments) const {
  // cuLaunchKernel takes a pointer to each argument's value.
  std::vector<CUdeviceptr> values = arguments;
  std::vector<void *> parameters;
  parameters.reserve(values.size());
  for (CUdeviceptr &value : values)
    parameters.push_back(&value);
  std::string error = check("cuLaunchKernel",
                            driver_.api().cuLaunchKernel(
                                function, grid, 1, 1, block, 1, 1, sharedBytes,
                                compute_, parameters.data(), nullptr));
  if (!error.empty())
    error += " launching " + name + " (" + std::to_string(grid) +
             " blocks of " + std::to_string(block) + " threads)";
  return error;
}

std::string Context::allowSharedBytes(CUfunction function,
                                      const std::string &name,
                                      unsigned bytes) const {
  std::string error =
      check("cuFuncSetAttribute",
            driver_.api().cuFuncSetAttribute(
                function, kFuncAttributeMaxDynamicSharedSizeBytes,
                static_cast<int>(bytes)));
  if (!error.empty())
    error += " allowing " + name + " " + std::to_string(bytes) +
             " bytes of shared memory";
  return error;
}

std::string Context::synchronize() const {
  return check("cuStreamSynchronize",
               driver_.api().cuStreamSynchronize(compute_));
}

std::string Context::createEvent(bool timing, CUevent &event) const {
  return check("cuEventCreate",
               driver_.api().cuEventCreate(
                   &event, timing ? kEventDefault : kEventDisableTiming));
}

std::string Context::destroyEvent(CUevent event) const {
  return check("cuEventDestroy", driver_.api().cuEventDestroy(event));
}

std::string Context::record(CUevent event, CUstream stream) const {
  return check("cuEventRecord", driver_.api().cuEventRecord(event, stream));
}

std::string Context::wait(CUstream stream, CUevent event) const {
  return check("cuStreamWaitEvent",
               driver_.api().cuStreamWaitEvent(stream, event, 0));
}

std::string Context::synchronize(CUevent event) const {
  return check("cuEventSynchronize", driver_.api().cuEventSynchronize(event));
}

std::string Context::elapsed(CUevent start, CUevent end,
                             float &milliseconds) const {
  return check("cuEventElapsedTime",
               driver_.api().cuEventElapsedTime(&milliseconds, start, end));
}

std::string Context::beginCapture() const {
  return check("cuStreamBeginCapture", driver_.api().cuStreamBeginCapture(
                                           compute_, kStreamCaptureModeGlobal));
}

std::string Context::endCapture(CUgraph &graph) const {
  return check("cuStreamEndCapture",
               driver_.api().cuStreamEndCapture(compute_, &graph));
}

std::string Context::instantiate(CUgraph graph, CUgraphExec &exec) const {
  return check("cuGraphInstantiateWithFlags",
               driver_.api().cuGraphInstantiateWithFlags(&exec, graph, 0));
}

std::string Context::launchGraph(CUgraphExec exec) const {
  return check("cuGraphLaunch", driver_.api().cuGraphLaunch(exec, compute_));
}

std::string Context::destroyGraph(CUgraph graph) const {
  return check("cuGraphDestroy", driver_.api().cuGraphDestroy(graph));
}

std::string Context::destroyGraphExec(CUgraphExec exec) const {
  return check("cuGraphExecDestroy", driver_.api().cuGraphExecDestroy(exec));
}
