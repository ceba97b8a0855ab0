//===- FakeGpu.h - The fake driver, loaded, with a context ------*- C++ -*-===//
//
// Part of Kiln's tests: what the cuda device's unit tests share to reach
// the fake driver (fakes/FakeLibcuda.c) through the runtime's own loader.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_FAKEGPU_H
#define KILN_TEST_UNIT_FAKEGPU_H

#include "devices/cuda/CudaContext.h"
#include "devices/cuda/CudaDriver.h"

#include "RuntimeTestUtil.h"
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

namespace kiln {
namespace test {

/// An artifact directory as the fake driver reads one: a module file and,
/// beside it, the emulator build (here the runtime tests' host kernels,
/// which have the same calling convention and signature table).
inline std::string writeFakeModule(TempDir &dir) {
  writeFile(dir.file("kernels.ptx"), "// PTX the fake driver does not read\n");
  std::ifstream kernels(KILN_TEST_KERNELS, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(kernels)),
                    std::istreambuf_iterator<char>());
  writeFile(dir.file("kernels.emu.so"), bytes);
  return dir.file("kernels.ptx");
}

/// How many of the fake driver's allocations are not freed yet.
inline long liveFakeAllocations() {
  void *fake = dlopen(KILN_FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(fake, nullptr);
  auto live = reinterpret_cast<long (*)()>(
      dlsym(fake, "kiln_fake_cuda_live_allocations"));
  long count = live ? live() : -1;
  dlclose(fake);
  return count;
}

/// The fake driver loaded through KILN_LIBCUDA, and GPU 0's context.
struct FakeGpu {
  FakeGpu() : library("KILN_LIBCUDA", KILN_FAKE_LIBCUDA) {
    driver = cuda::Driver::load(error);
    if (driver)
      context = cuda::Context::create(*driver, 0, error);
  }
  ScopedEnvironment library;
  std::string error;
  std::unique_ptr<cuda::Driver> driver;
  std::unique_ptr<cuda::Context> context;
};

} // namespace test
} // namespace kiln

#endif // KILN_TEST_UNIT_FAKEGPU_H
