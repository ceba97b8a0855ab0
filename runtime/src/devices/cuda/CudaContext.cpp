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
  return context;
}

Context::~Context() {
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

std::string Context::copyToDevice(CUdeviceptr destination, const void *source,
                                  size_t bytes) const {
  return check("cuMemcpyHtoD",
               driver_.api().cuMemcpyHtoD(destination, source, bytes));
}

std::string Context::copyToHost(void *destination, CUdeviceptr source,
                                size_t bytes) const {
  return check("cuMemcpyDtoH",
               driver_.api().cuMemcpyDtoH(destination, source, bytes));
}

std::string Context::copyOnDevice(CUdeviceptr destination, CUdeviceptr source,
                                  size_t bytes) const {
  return check("cuMemcpyDtoD",
               driver_.api().cuMemcpyDtoD(destination, source, bytes));
}

std::string Context::zero(CUdeviceptr destination, size_t bytes) const {
  return check("cuMemsetD8", driver_.api().cuMemsetD8(destination, 0, bytes));
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
                                nullptr, parameters.data(), nullptr));
  if (!error.empty())
    error += " launching " + name + " (" + std::to_string(grid) +
             " blocks of " + std::to_string(block) + " threads)";
  return error;
}

std::string Context::synchronize() const {
  return check("cuCtxSynchronize", driver_.api().cuCtxSynchronize());
}
