//===- GpuEmulatorTest.cpp - The GPU emulator's checked mode --------------===//
//
// Part of Kiln. GPU kernels compiled by the emulator (kernels.emu.so) and run
// on buffers of their sizes: a planted out-of-bounds read and a planted
// missing barrier are trapped by the checked build, naming the kernel and
// the model line; the correct kernels run through the checks and give the
// GPU's results (a block reversing its elements through shared memory).
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

/// Two blocks of 64 threads each reversing their 64 elements through shared
/// memory: thread t stores x[t] to s[t], then (after the barrier, when
/// `barrier`) reads s[63 - t], which thread 63 - t wrote.
std::string reverseSource(bool barrier) {
  return std::string(R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k7(%x: memref<128xf32>, %y: memref<128xf32>) workgroup(%s : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 2, 1, 1>} {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %c64 = arith.constant 64 : index
      %base = arith.muli %b, %c64 : index
      %i = arith.addi %base, %t : index
      %v = memref.load %x[%i] : memref<128xf32>
      memref.store %v, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>> loc("planted.kiln":19:7)
)mlir") + (barrier ? "      gpu.barrier\n" : "") +
         R"mlir(
      %c63 = arith.constant 63 : index
      %r = arith.subi %c63, %t : index
      %w = memref.load %s[%r] : memref<64xf32, #gpu.address_space<workgroup>> loc("planted.kiln":20:9)
      memref.store %w, %y[%i] : memref<128xf32>
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

  /// Runs blocks [0, blocks) on x = 0, 1, 2, ... of `size` elements (with
  /// room behind it, so that an unchecked overrun reads memory that
  /// exists) and returns y.
  std::vector<float> run(int64_t size = 150, int64_t blocks = 3) {
    std::vector<float> x(size + 16), y(size, 0.0f);
    for (int64_t i = 0; i < size + 16; ++i)
      x[i] = float(i);
    void *buffers[] = {x.data(), y.data()};
    kernel(buffers, 0, blocks);
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

TEST(GpuEmulator, BarriersSplitABlocksThreads) {
  // Each block's threads run up to the barrier, then on: every thread
  // reads what another thread wrote before it.
  for (bool checked : {false, true}) {
    SCOPED_TRACE(checked ? "checked" : "unchecked");
    EmulatedKernel reverse(reverseSource(/*barrier=*/true), checked);
    ASSERT_TRUE(reverse.kernel);
    std::vector<float> y = reverse.run(128, 2);
    for (int i = 0; i < 128; ++i)
      ASSERT_EQ(y[i], float(i / 64 * 64 + 63 - i % 64)) << "element " << i;
  }
}

TEST(GpuEmulator, CheckedModeTrapsAMissingBarrier) {
  // Without the barrier, thread 63 - t has not written s[63 - t] when
  // thread t reads it on a GPU; running the threads in order would hide
  // that. The checked mode sees two threads on one word between the same
  // barriers: thread 63 writes s[63], which thread 0 read.
  EmulatedKernel planted(reverseSource(/*barrier=*/false), /*checked=*/true);
  ASSERT_TRUE(planted.kernel);
  EXPECT_DEATH(planted.run(128, 2),
               "GPU emulator: kernel kiln_k7: shared-memory race(.|\n)*"
               "missing gpu.barrier(.|\n)*planted.kiln\":19:7");
}

} // namespace
