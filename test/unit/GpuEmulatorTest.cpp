//===- GpuEmulatorTest.cpp - The GPU emulator's checked mode --------------===//
//
// Part of Kiln. A GPU kernel with a planted out-of-bounds read, compiled by
// the emulator with and without its bounds checks (kernels.emu.so), run on
// buffers of its size: the checked build aborts naming the kernel and the
// model line of the access; a correct kernel runs through the checks.
//
//===----------------------------------------------------------------------===//

#include "kiln/InitKiln.h"
#include "kiln/Target/Cuda/CudaTarget.h"
#include "kiln/Target/Host/HostTarget.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <string>
#include <vector>

using namespace mlir;

namespace {

/// A kernel reading x[i + shift] for thread i of 150: with shift 1 the
/// last thread reads one element past the buffer.
std::string kernelSource(int shift) {
  return R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k7(%x: memref<150xf32>, %y: memref<150xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 3, 1, 1>} {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %c64 = arith.constant 64 : index
      %base = arith.muli %b, %c64 : index
      %i = arith.addi %base, %t : index
      %c150 = arith.constant 150 : index
      %in = arith.cmpi ult, %i, %c150 : index
      scf.if %in {
        %shift = arith.constant )mlir" +
         std::to_string(shift) + R"mlir( : index
        %j = arith.addi %i, %shift : index
        %v = memref.load %x[%j] : memref<150xf32> loc("planted.kiln":12:7)
        memref.store %v, %y[%i] : memref<150xf32>
      }
      gpu.return
    }
  }
}
)mlir";
}

using Kernel = void (*)(void **, int64_t, int64_t);

/// kernels.emu.so of `source`, opened; null after a failure.
class EmulatedKernel {
public:
  EmulatedKernel(const std::string &source, bool checked) {
    DialectRegistry registry;
    kiln::registerKilnDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return;
    EXPECT_TRUE(succeeded(kiln::convertToEmulator(*module, checked)));
    llvm::SmallString<128> path;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("kiln-emulated", "so", path));
    this->path = std::string(path);
    EXPECT_TRUE(succeeded(kiln::buildKernelsSharedObject(*module, path, {})));
    library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(library) << ::dlerror();
    if (library)
      kernel = reinterpret_cast<Kernel>(::dlsym(library, "kiln_k7"));
    EXPECT_TRUE(kernel);
  }
  ~EmulatedKernel() {
    if (library)
      ::dlclose(library);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }

  /// Runs every block on buffers of the kernel's sizes (with room behind
  /// x, so that an unchecked overrun reads memory that exists).
  std::vector<float> run() {
    std::vector<float> x(160), y(150, 0.0f);
    for (int i = 0; i < 160; ++i)
      x[i] = float(i);
    void *buffers[] = {x.data(), y.data()};
    kernel(buffers, 0, 3);
    return y;
  }

  MLIRContext context;
  std::string path;
  void *library = nullptr;
  Kernel kernel = nullptr;
};

TEST(GpuEmulator, CheckedModeTrapsAnOutOfBoundsAccess) {
  EmulatedKernel planted(kernelSource(1), /*checked=*/true);
  ASSERT_TRUE(planted.kernel);
  EXPECT_DEATH(planted.run(),
               "GPU emulator: kernel kiln_k7: ERROR: Runtime op verification "
               "failed(.|\n)*out-of-bounds access(.|\n)*planted.kiln\":12:7");
}

TEST(GpuEmulator, CheckedModeRunsACorrectKernel) {
  EmulatedKernel correct(kernelSource(0), /*checked=*/true);
  ASSERT_TRUE(correct.kernel);
  std::vector<float> y = correct.run();
  for (int i = 0; i < 150; ++i)
    ASSERT_EQ(y[i], float(i)) << "element " << i;
}

TEST(GpuEmulator, UncheckedBuildHasNoChecks) {
  // The same planted overrun without checks reads x[150] (memory that
  // exists here) and does not stop: the checks are what catches it.
  EmulatedKernel planted(kernelSource(1), /*checked=*/false);
  ASSERT_TRUE(planted.kernel);
  std::vector<float> y = planted.run();
  EXPECT_EQ(y[149], 150.0f);
}

} // namespace
