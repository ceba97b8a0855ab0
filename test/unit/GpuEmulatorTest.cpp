//===- GpuEmulatorTest.cpp - The GPU emulator's checked mode --------------===//
//
// Part of Kiln. GPU kernels compiled by the emulator (kernels.emu.so) and run
// on buffers of their sizes: a planted out-of-bounds read, missing barrier,
// divergent barrier and shuffle and misaligned buffer are trapped by the
// checked build, naming the kernel and the model line; the correct kernels
// run through the checks and give the GPU's results (a block reversing its
// elements through shared memory, warp shuffles, a tree sum with barriers
// in a loop).
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

/// A module of one kernel, @kiln_k7 on one block of 64 threads (two
/// warps) over x and y (memref<64xf32>, or `arguments`), with the
/// `workgroup` attributions and `body` before its gpu.return; `location`
/// follows the kernel.
std::string oneBlockKernel(
    const std::string &body, const std::string &workgroup = "",
    const std::string &arguments = "%x: memref<64xf32>, %y: memref<64xf32>",
    const std::string &location = "") {
  return R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @kiln_k7()mlir" +
         arguments + ")" +
         (workgroup.empty() ? "" : " workgroup(" + workgroup + ")") +
         R"mlir( kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
)mlir" + body +
         R"mlir(      gpu.return
    })mlir" +
         location + R"mlir(
  }
}
)mlir";
}

/// One block of 64 threads (two warps) summing each warp's 32 elements by
/// a butterfly of xor shuffles: every lane ends with its warp's sum.
std::string butterflySource() {
  std::string source = R"mlir(      %t = gpu.thread_id x
      %width = arith.constant 32 : i32
      %v0 = memref.load %x[%t] : memref<64xf32>
)mlir";
  int step = 0;
  for (int offset : {16, 8, 4, 2, 1}) {
    std::string from = "%v" + std::to_string(step);
    std::string to = "%v" + std::to_string(step + 1);
    std::string o = std::to_string(offset);
    source += "      %o" + o + " = arith.constant " + o + " : i32\n";
    source += "      %s" + o + ", %ok" + o + " = gpu.shuffle xor " + from +
              ", %o" + o + ", %width : f32\n";
    source += "      " + to + " = arith.addf " + from + ", %s" + o + " : f32\n";
    ++step;
  }
  source += "      memref.store %v5, %y[%t] : memref<64xf32>\n";
  return oneBlockKernel(source);
}

/// `gpu.shuffle up` by one: lane l reads lane l - 1 of its warp; lane 0 has
/// no source (its own value, valid = false: y = -1).
std::string shiftUpSource() {
  return oneBlockKernel(R"mlir(      %t = gpu.thread_id x
      %one = arith.constant 1 : i32
      %width = arith.constant 32 : i32
      %v = memref.load %x[%t] : memref<64xf32>
      %s, %ok = gpu.shuffle up %v, %one, %width : f32
      %none = arith.constant -1.0 : f32
      %w = arith.select %ok, %s, %none : f32
      memref.store %w, %y[%t] : memref<64xf32>
)mlir");
}

/// A block's tree sum through shared memory: six halving steps in an
/// scf.for, each ending at a barrier every thread reaches (block-uniform
/// control flow); thread 0 writes the total.
std::string treeSumSource() {
  return oneBlockKernel(R"mlir(      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
      %v = memref.load %x[%t] : memref<64xf32>
      memref.store %v, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      scf.for %i = %c0 to %c6 step %c1 {
        %stride = arith.shrui %c32, %i : index
        %low = arith.cmpi ult, %t, %stride : index
        scf.if %low {
          %o = arith.addi %t, %stride : index
          %a = memref.load %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
          %b = memref.load %s[%o] : memref<64xf32, #gpu.address_space<workgroup>>
          %sum = arith.addf %a, %b : f32
          memref.store %sum, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %total = memref.load %s[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
        memref.store %total, %y[%c0] : memref<64xf32>
      }
)mlir",
                        "%s : memref<64xf32, #gpu.address_space<workgroup>>");
}

/// A split point only some threads reach: a barrier (or a shuffle) under a
/// condition that differs between the threads of a block (of a warp).
std::string divergentSource(const std::string &splitPoint) {
  return oneBlockKernel(R"mlir(      %t = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %v = memref.load %x[%t] : memref<64xf32>
      %low = arith.cmpi ult, %t, %c16 : index
      scf.if %low {
)mlir" + splitPoint +
                        R"mlir(
      }
      memref.store %v, %y[%t] : memref<64xf32>
)mlir");
}

/// A kernel whose buffers are said 16-byte aligned (as the elementwise
/// template says of its 128-bit accesses).
std::string alignedSource() {
  return oneBlockKernel(R"mlir(      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<64xf32>
      memref.store %v, %y[%t] : memref<64xf32>
)mlir",
                        "",
                        "%x: memref<64xf32> {llvm.align = 16 : i64}, "
                        "%y: memref<64xf32> {llvm.align = 16 : i64}",
                        " loc(\"planted.kiln\":3:1)");
}

/// One block of two warps, each computing D = A B + C with one
/// mma.sync.m16n8k16 over x = [A (16 x 16), B (16 x 8), C (16 x 8)]
/// (row-major f32, rounded to `type` for A and B), warp w writing D to
/// y[w * 128 ...]. The fragments are loaded and stored by the PTX ISA's
/// layouts, written out here independently of the emulator: bf16 pairs
/// packed in an i32, f16 pairs as vector<2xf16>.
std::string mmaSource(const std::string &type) {
  bool bf16 = type == "bf16";
  std::string pair = "vector<2x" + type + ">";
  std::string body = R"mlir(      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %c384 = arith.constant 384 : index
      %lane = arith.remui %t, %c32 : index
      %warp = arith.divui %t, %c32 : index
      %g = arith.divui %lane, %c4 : index
      %tig = arith.remui %lane, %c4 : index
      %col0 = arith.muli %tig, %c2 : index
      %col1 = arith.addi %col0, %c1 : index
      %g8 = arith.addi %g, %c8 : index
      %col8 = arith.addi %col0, %c8 : index
      %out = arith.muli %warp, %c128 : index
)mlir";
  auto line = [&](const std::string &text) { body += "      " + text + "\n"; };
  // %name = row * stride + col + base.
  auto address = [&](const std::string &name, const std::string &row,
                     const std::string &stride, const std::string &col,
                     const std::string &base) {
    line("%" + name + "r = arith.muli " + row + ", " + stride + " : index");
    line("%" + name + "s = arith.addi %" + name + "r, " + col + " : index");
    line("%" + name + " = arith.addi %" + name + "s, " + base + " : index");
  };
  // A(row, col) = x[row * 16 + col]; B(k, n) = x[256 + k * 8 + n];
  // C(row, col) = x[384 + row * 8 + col]. A register holds the elements at
  // `first` and `first + step`: along A's row, down B's column.
  struct Register {
    const char *name, *row, *stride, *col, *base, *step;
  } registers[] = {{"a0", "%g", "%c16", "%col0", "%c0", "%c1"},
                   {"a1", "%g8", "%c16", "%col0", "%c0", "%c1"},
                   {"a2", "%g", "%c16", "%col8", "%c0", "%c1"},
                   {"a3", "%g8", "%c16", "%col8", "%c0", "%c1"},
                   {"b0", "%col0", "%c8", "%g", "%c256", "%c8"},
                   {"b1", "%col8", "%c8", "%g", "%c256", "%c8"}};
  std::vector<std::string> values;
  for (const Register &r : registers) {
    std::string n = r.name;
    address(n, r.row, r.stride, r.col, r.base);
    line("%" + n + "n = arith.addi %" + n + ", " + r.step + " : index");
    line("%" + n + "x = memref.load %x[%" + n + "] : memref<512xf32>");
    line("%" + n + "y = memref.load %x[%" + n + "n] : memref<512xf32>");
    line("%" + n + "h = arith.truncf %" + n + "x : f32 to " + type);
    line("%" + n + "k = arith.truncf %" + n + "y : f32 to " + type);
    line("%" + n + "p = vector.from_elements %" + n + "h, %" + n +
         "k : " + pair);
    if (bf16) {
      line("%" + n + "q = vector.bitcast %" + n + "p : " + pair +
           " to vector<1xi32>");
      line("%" + n + "i = vector.extract %" + n +
           "q[0] : i32 from "
           "vector<1xi32>");
    }
    values.push_back("%" + n + (bf16 ? "i" : "p"));
  }
  // c_i and d_i at (g + 8 * (i / 2), col0 + i % 2).
  for (int i = 0; i < 4; ++i) {
    std::string n = "acc" + std::to_string(i);
    address(n, i < 2 ? "%g" : "%g8", "%c8", i % 2 ? "%col1" : "%col0", "%c384");
    line("%" + n + "v = memref.load %x[%" + n + "] : memref<512xf32>");
    values.push_back("%" + n + "v");
  }
  std::string regType = bf16 ? "i32" : pair;
  line("%d = nvvm.mma.sync A[" + values[0] + ", " + values[1] + ", " +
       values[2] + ", " + values[3] + "] B[" + values[4] + ", " + values[5] +
       "] C[" + values[6] + ", " + values[7] + ", " + values[8] + ", " +
       values[9] +
       "] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
       "multiplicandAPtxType = #nvvm.mma_type<" +
       type + ">, multiplicandBPtxType = #nvvm.mma_type<" + type +
       ">, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (" + regType + ", " +
       regType + ", f32) -> !llvm.struct<(f32, f32, f32, f32)>");
  for (int i = 0; i < 4; ++i) {
    std::string n = "d" + std::to_string(i);
    line("%" + n + "v = llvm.extractvalue %d[" + std::to_string(i) +
         "] : !llvm.struct<(f32, f32, f32, f32)>");
    address(n, i < 2 ? "%g" : "%g8", "%c8", i % 2 ? "%col1" : "%col0", "%out");
    line("memref.store %" + n + "v, %y[%" + n + "] : memref<256xf32>");
  }
  return oneBlockKernel(body, "", "%x: memref<512xf32>, %y: memref<256xf32>");
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
  /// `shift` elements into x's storage (a misaligned start for shift 1).
  std::vector<float> run(int64_t size = 150, int64_t blocks = 3,
                         int64_t shift = 0) {
    std::vector<float> x(size + 16), y(size, 0.0f);
    for (int64_t i = 0; i < size + 16; ++i)
      x[i] = float(i);
    void *buffers[] = {x.data() + shift, y.data()};
    kernel(buffers, 0, blocks);
    return y;
  }

  /// Runs one block on `x`; y has `size` elements.
  std::vector<float> run(std::vector<float> x, int64_t size) {
    std::vector<float> y(size, 0.0f);
    void *buffers[] = {x.data(), y.data()};
    kernel(buffers, 0, 1);
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

TEST(GpuEmulator, WarpShufflesReadTheirWarpsLanes) {
  // Each warp's lanes meet at each shuffle: every lane holds its warp's
  // sum, 0 + ... + 31 and 32 + ... + 63, whatever order the lanes run in.
  for (bool checked : {false, true}) {
    SCOPED_TRACE(checked ? "checked" : "unchecked");
    EmulatedKernel butterfly(butterflySource(), checked);
    ASSERT_TRUE(butterfly.kernel);
    std::vector<float> y = butterfly.run(64, 1);
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(y[i], i < 32 ? 496.0f : 1520.0f) << "lane " << i;
    EmulatedKernel shift(shiftUpSource(), checked);
    ASSERT_TRUE(shift.kernel);
    y = shift.run(64, 1);
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(y[i], i % 32 == 0 ? -1.0f : float(i - 1)) << "lane " << i;
  }
}

TEST(GpuEmulator, BarriersInBlockUniformLoops) {
  // The scf.for around the barrier runs once for the block, its body's
  // segments as loops over the threads; the checked build sees no race.
  for (bool checked : {false, true}) {
    SCOPED_TRACE(checked ? "checked" : "unchecked");
    EmulatedKernel tree(treeSumSource(), checked);
    ASSERT_TRUE(tree.kernel);
    std::vector<float> y = tree.run(64, 1);
    EXPECT_EQ(y[0], 2016.0f);
  }
}

TEST(GpuEmulator, CheckedModeTrapsADivergentBarrier) {
  // Threads 0-15 reach the barrier, 16-63 do not: on a GPU the block
  // hangs or worse. The checked build compares every thread's condition
  // with the first's and names the barrier's line.
  EmulatedKernel planted(
      divergentSource("        gpu.barrier loc(\"planted.kiln\":31:9)"),
      /*checked=*/true);
  ASSERT_TRUE(planted.kernel);
  EXPECT_DEATH(planted.run(64, 1),
               "GPU emulator: kernel kiln_k7: divergent barrier(.|\n)*"
               "planted.kiln\":31:9");
}

TEST(GpuEmulator, CheckedModeTrapsADivergentShuffle) {
  EmulatedKernel planted(
      divergentSource("        %one = arith.constant 1 : i32\n"
                      "        %width = arith.constant 32 : i32\n"
                      "        %s, %ok = gpu.shuffle xor %v, %one, %width : "
                      "f32 loc(\"planted.kiln\":32:11)"),
      /*checked=*/true);
  ASSERT_TRUE(planted.kernel);
  EXPECT_DEATH(planted.run(64, 1),
               "GPU emulator: kernel kiln_k7: divergent shuffle(.|\n)*"
               "planted.kiln\":32:11");
}

TEST(GpuEmulator, CheckedModeTrapsAMisalignedVectorAccess) {
  EmulatedKernel aligned(alignedSource(), /*checked=*/true);
  ASSERT_TRUE(aligned.kernel);
  // From an aligned start it runs (std::vector's storage is 16-byte
  // aligned); one element in, the 128-bit accesses it promises would fault
  // or split on a GPU.
  std::vector<float> y = aligned.run(64, 1);
  EXPECT_EQ(y[63], 63.0f);
  EXPECT_DEATH(aligned.run(64, 1, /*shift=*/1),
               "GPU emulator: kernel kiln_k7: misaligned vector access: "
               "buffer argument 0(.|\n)*planted.kiln\":3:1");
}

TEST(GpuEmulator, MmaSyncComputesAWarpsMatrixProduct) {
  // Small integers: every product and sum is exact in f32, so D must equal
  // the plain product whatever the order of accumulation. Each warp holds
  // its own copy of the fragments; both must give the product.
  std::vector<float> x(512);
  for (int i = 0; i < 512; ++i)
    x[i] = float((i * 7) % 11 - 5);
  std::vector<float> expected(128);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      float sum = x[384 + r * 8 + n];
      for (int k = 0; k < 16; ++k)
        sum += x[r * 16 + k] * x[256 + k * 8 + n];
      expected[r * 8 + n] = sum;
    }
  for (const char *type : {"bf16", "f16"})
    for (bool checked : {false, true}) {
      SCOPED_TRACE(std::string(type) + (checked ? " checked" : " unchecked"));
      EmulatedKernel mma(mmaSource(type), checked);
      ASSERT_TRUE(mma.kernel);
      std::vector<float> y = mma.run(x, 256);
      for (int i = 0; i < 256; ++i)
        ASSERT_EQ(y[i], expected[i % 128]) << "element " << i;
    }
}

} // namespace
