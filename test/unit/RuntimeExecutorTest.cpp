//===- RuntimeExecutorTest.cpp - libkiln_runtime executes plans -----------===//
//
// Part of Kiln. Kernel calls over the thread pool (results and chunking),
// GEMMs against a naive loop, copies and zeros, check-numerics, profiles and
// the plan printer, all through the C API.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"
#include "devices/cpu/GemmLibrary.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <optional>
#include <random>
#include <thread>
#include <utility>

using namespace kiln;
using namespace kiln::test;
using DType = plan::DType;
using Kind = plan::BufferKind;

namespace {

std::vector<float> randomFloats(size_t count, uint32_t seed, float low = -2,
                                float high = 2) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float &value : values)
    value = distribution(engine);
  return values;
}

TEST(RuntimeExecutor, ElementwiseKernelOverThreads) {
  const int64_t n = 1001;
  PlanWriter writer;
  uint32_t a = writer.buffer("a", Kind::Input, DType::F32, {n});
  uint32_t b =
      writer.buffer("b", Kind::Param, DType::F32, {n}, writer.init("zeros", 0));
  uint32_t t = writer.buffer("t", Kind::Transient, DType::F32, {n});
  uint32_t out = writer.buffer("out", Kind::Output, DType::F32, {n});
  writer.kernel("kiln_test_add", {a, b, t}, n, 16);
  writer.kernel("kiln_test_add", {t, b, out}, n, 16);
  writer.entry("predict", {a}, {out});
  Loaded loaded;
  ASSERT_EQ(loaded.open(writer.finish(), 4), KILN_OK) << kiln_last_error();

  std::vector<float> x = randomFloats(n, 1), w = randomFloats(n, 2);
  int64_t shape[] = {n};
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "a", x.data(), KILN_F32,
                                    shape, 1),
            KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_set_buffer(loaded.session, "b", w.data(), n * 4),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  std::vector<float> result(n);
  ASSERT_EQ(kiln_session_read_output(loaded.session, "out", KILN_F32,
                                     result.data(), n * 4),
            KILN_OK)
      << kiln_last_error();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], (x[i] + w[i]) + w[i]) << "element " << i;
}

/// Runs kiln_test_record_chunk over `range` with `grain` on `threads`
/// threads and checks the chunks: they tile [0, range) and each holds at
/// least `grain` iterations (or all of them, when range < grain).
void checkChunking(int64_t range, int64_t grain, int32_t threads,
                   size_t expectedChunksAtLeast) {
  SCOPED_TRACE("range " + std::to_string(range) + " grain " +
               std::to_string(grain) + " threads " + std::to_string(threads));
  PlanWriter writer;
  uint32_t begins = writer.buffer("begins", Kind::Output, DType::I64, {range});
  uint32_t ends = writer.buffer("ends", Kind::Output, DType::I64, {range});
  writer.kernel("kiln_test_record_chunk", {begins, ends}, range, grain);
  writer.entry("predict", {}, {begins, ends});
  Loaded loaded;
  ASSERT_EQ(loaded.open(writer.finish(), threads), KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  std::vector<int64_t> b = readBuffer<int64_t>(loaded.session, "begins", range);
  std::vector<int64_t> e = readBuffer<int64_t>(loaded.session, "ends", range);
  size_t chunks = 0;
  for (int64_t i = 0; i < range; i = e[i]) {
    ASSERT_EQ(b[i], i) << "chunks must tile the range";
    ASSERT_GT(e[i], i);
    ASSERT_LE(e[i], range);
    if (range >= grain) {
      EXPECT_GE(e[i] - b[i], grain);
    }
    for (int64_t j = i; j < e[i]; ++j)
      ASSERT_TRUE(b[j] == i && e[j] == e[i]) << "iteration " << j;
    ++chunks;
  }
  EXPECT_GE(chunks, expectedChunksAtLeast);
}

TEST(RuntimeExecutor, ChunksTileTheRangeAndRespectGrain) {
  checkChunking(1000, 64, 4, 4);
  checkChunking(1000, 1, 3, 3);
  checkChunking(100, 200, 4, 1); // Smaller than one grain: one call.
  checkChunking(129, 64, 8, 2);  // Two chunks of >= 64, not three.
  checkChunking(7, 0, 2, 2);     // Grain 0 counts as 1.
  checkChunking(500, 10, 1, 1);  // One thread: one call.
}

/// softmax(x) + x through two kernels, with `threads` threads.
std::vector<uint8_t> runSoftmaxPlan(int32_t threads,
                                    const std::vector<float> &x, int64_t rows,
                                    int64_t cols) {
  PlanWriter writer;
  int64_t colsValue = cols;
  std::vector<uint8_t> colsBytes(8);
  std::memcpy(colsBytes.data(), &colsValue, 8);
  uint32_t input = writer.buffer("x", Kind::Input, DType::F32, {rows, cols});
  uint32_t width =
      writer.buffer("cols", Kind::Constant, DType::I64, {1}, 0, &colsBytes);
  uint32_t soft = writer.buffer("s", Kind::Transient, DType::F32, {rows, cols});
  uint32_t out = writer.buffer("y", Kind::Output, DType::F32, {rows, cols});
  writer.kernel("kiln_test_row_softmax", {input, width, soft}, rows, 3);
  writer.kernel("kiln_test_add", {soft, input, out}, rows * cols, 100);
  writer.entry("predict", {input}, {out});
  Loaded loaded;
  EXPECT_EQ(loaded.open(writer.finish(), threads), KILN_OK)
      << kiln_last_error();
  int32_t actual = 0;
  EXPECT_EQ(kiln_session_num_threads(loaded.session, &actual), KILN_OK);
  EXPECT_EQ(actual, threads);
  int64_t shape[] = {rows, cols};
  EXPECT_EQ(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_F32,
                                    shape, 2),
            KILN_OK);
  EXPECT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  std::vector<uint8_t> bytes(rows * cols * 4);
  EXPECT_EQ(kiln_session_read_output(loaded.session, "y", KILN_F32,
                                     bytes.data(), bytes.size()),
            KILN_OK);
  return bytes;
}

TEST(RuntimeExecutor, ResultsDoNotDependOnThreadCount) {
  const int64_t rows = 257, cols = 33;
  std::vector<float> x = randomFloats(rows * cols, 3, -8, 8);
  std::vector<uint8_t> one = runSoftmaxPlan(1, x, rows, cols);
  for (int32_t threads : {2, 3, 7}) {
    std::vector<uint8_t> many = runSoftmaxPlan(threads, x, rows, cols);
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size()), 0)
        << threads << " threads";
  }
  // And the values are a softmax (plus x): rows of the softmax sum to 1.
  std::vector<float> y(rows * cols);
  std::memcpy(y.data(), one.data(), one.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c)
      sum += y[r * cols + c] - x[r * cols + c];
    EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << r;
  }
}

TEST(RuntimeExecutor, ThreadCountComesFromTheEnvironment) {
  PlanWriter writer;
  writer.buffer("x", Kind::Input, DType::F32, {1});
  std::string plan = writer.finish();
  ScopedEnvironment threadCount("KILN_NUM_THREADS", "");
  for (const char *value : {"3", "1", ""}) {
    threadCount.set(value);
    Loaded loaded;
    ASSERT_EQ(loaded.open(plan, 0), KILN_OK) << kiln_last_error();
    int32_t threads = 0;
    ASSERT_EQ(kiln_session_num_threads(loaded.session, &threads), KILN_OK);
    if (*value == '\0') // Empty means unset: the hardware's count.
      EXPECT_EQ(threads, static_cast<int32_t>(std::max(
                             1u, std::thread::hardware_concurrency())));
    else
      EXPECT_EQ(threads, std::atoi(value));
  }
  // Anything else is refused, naming the variable, not silently replaced.
  for (const char *value : {"junk", "0", "-2", "4097", "3x", "99999999999"}) {
    threadCount.set(value);
    Loaded loaded;
    EXPECT_EQ(loaded.open(plan, 0), KILN_ERROR_INVALID_ARGUMENT) << value;
    EXPECT_NE(std::string(kiln_last_error()).find("KILN_NUM_THREADS"),
              std::string::npos)
        << kiln_last_error();
  }
}

/// One GEMM case: shapes, transposes, batch strides (0 broadcasts), padded
/// leading dimensions, alpha and beta.
struct GemmCase {
  int64_t m, n, k, batch;
  bool ta, tb;
  bool broadcastB;
  int64_t pad;
  double alpha, beta;
  /// The plan's tiles of C (0: the whole dim).
  int64_t tileM = 0, tileN = 0;
};

template <typename T>
void checkGemm(const GemmCase &c, DType dtype, int32_t threads = 0) {
  SCOPED_TRACE(
      "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
      " k=" + std::to_string(c.k) + " batch=" + std::to_string(c.batch) +
      " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) +
      " broadcastB=" + std::to_string(c.broadcastB) +
      " tiles=" + std::to_string(c.tileM) + "x" + std::to_string(c.tileN));
  int64_t aRows = c.ta ? c.k : c.m, aCols = c.ta ? c.m : c.k;
  int64_t bRows = c.tb ? c.n : c.k, bCols = c.tb ? c.k : c.n;
  int64_t lda = aCols + c.pad, ldb = bCols + c.pad, ldc = c.n + c.pad;
  int64_t strideA = aRows * lda, strideB = c.broadcastB ? 0 : bRows * ldb;
  int64_t strideC = c.m * ldc;
  int64_t aSize = c.batch * strideA,
          bSize = c.broadcastB ? bRows * ldb : c.batch * strideB;
  int64_t cSize = c.batch * strideC;

  PlanWriter writer;
  uint32_t a = writer.buffer("a", Kind::Input, dtype, {aSize});
  uint32_t b = writer.buffer("b", Kind::Input, dtype, {bSize});
  uint32_t out = writer.buffer("c", Kind::Output, dtype, {cSize});
  writer.gemm(plan::CreateGemmCall(writer.fbb, a, b, out, c.m, c.n, c.k,
                                   c.batch, c.ta, c.tb, lda, ldb, ldc, strideA,
                                   strideB, strideC, c.alpha, c.beta, dtype,
                                   c.tileM, c.tileN, dtype));
  writer.entry("predict", {a, b}, {out});
  Loaded loaded;
  ASSERT_EQ(loaded.open(writer.finish(), threads), KILN_OK)
      << kiln_last_error();

  std::vector<float> af = randomFloats(aSize, 5), bf = randomFloats(bSize, 6),
                     cf = randomFloats(cSize, 7);
  std::vector<T> av(af.begin(), af.end()), bv(bf.begin(), bf.end()),
      cv(cf.begin(), cf.end());
  kiln_dtype kdtype = static_cast<kiln_dtype>(dtype);
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "a", av.data(), kdtype,
                                    &aSize, 1),
            KILN_OK)
      << kiln_last_error();
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "b", bv.data(), kdtype,
                                    &bSize, 1),
            KILN_OK);
  ASSERT_EQ(kiln_session_set_buffer(loaded.session, "c", cv.data(),
                                    cSize * sizeof(T)),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  std::vector<T> result = readBuffer<T>(loaded.session, "c", cSize);

  double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-13;
  for (int64_t p = 0; p < c.batch; ++p)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          double x = av[p * strideA + (c.ta ? l * lda + i : i * lda + l)];
          double y = bv[p * strideB + (c.tb ? j * ldb + l : l * ldb + j)];
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        int64_t at = p * strideC + i * ldc + j;
        double expected = c.alpha * sum + c.beta * cv[at];
        double scale =
            std::fabs(c.alpha) * magnitude + std::fabs(c.beta * cv[at]) + 1;
        ASSERT_NEAR(result[at], expected, tolerance * scale)
            << "batch " << p << " C[" << i << ", " << j << "]";
      }
  // The padding between rows is never written.
  for (int64_t p = 0; p < c.batch; ++p)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = c.n; j < ldc; ++j) {
        int64_t at = p * strideC + i * ldc + j;
        ASSERT_EQ(result[at], cv[at]) << "padding written";
      }
}

TEST(RuntimeExecutor, GemmMatchesNaiveLoop) {
  const GemmCase cases[] = {
      {5, 7, 3, 1, false, false, false, 0, 1.0, 0.0},
      {5, 7, 3, 1, true, false, false, 0, 1.0, 0.0},
      {5, 7, 3, 1, false, true, false, 0, 1.0, 0.0},
      {6, 4, 9, 1, true, true, false, 2, 1.0, 0.0},
      {4, 5, 6, 3, false, false, false, 0, 1.0, 0.0},
      {4, 5, 6, 3, true, true, false, 1, 1.0, 0.0},
      {3, 8, 5, 4, false, false, true, 0, 1.0, 0.0}, // B broadcast.
      {3, 8, 5, 4, false, true, true, 3, 1.0, 0.0},
      {17, 13, 11, 2, false, false, false, 0, 0.5, 1.0}, // Accumulate.
      // Tiles of C, the last row and column of tiles taking the rest.
      {130, 70, 33, 1, false, false, false, 0, 1.0, 0.0, 64, 32},
      {130, 70, 33, 2, true, true, false, 3, 0.5, 1.0, 64, 64},
      {96, 200, 17, 3, false, true, true, 1, 1.0, 0.0, 0, 64},
      {200, 9, 40, 1, true, false, false, 0, 2.0, 0.0, 32, 0},
  };
  // Every library built in: f64 goes to one that has it when the chosen
  // library does not (oneDNN).
  for (const char *library : {"onednn", "openblas", "reference"}) {
    SCOPED_TRACE(library);
    ScopedEnvironment scoped("KILN_GEMM", library);
    std::string error;
    if (!kiln::cpu::getGemmLibrary(library, error))
      continue; // not built in
    for (const GemmCase &c : cases)
      for (int32_t threads : {1, 3}) {
        checkGemm<float>(c, DType::F32, threads);
        checkGemm<double>(c, DType::F64, threads);
      }
  }
}

/// The bytes of a tiled GEMM's C with `threads` threads and `library`.
std::vector<float> tiledGemmBytes(const std::string &library, int32_t threads) {
  ScopedEnvironment scoped("KILN_GEMM", library);
  int64_t m = 300, n = 260, k = 517;
  PlanWriter writer;
  uint32_t a = writer.buffer("a", Kind::Input, DType::F32, {m * k});
  uint32_t b = writer.buffer("b", Kind::Input, DType::F32, {k * n});
  uint32_t out = writer.buffer("c", Kind::Output, DType::F32, {m * n});
  writer.gemm(plan::CreateGemmCall(writer.fbb, a, b, out, m, n, k, 1, false,
                                   false, k, n, n, 0, 0, 0, 1.0, 0.0,
                                   DType::F32, 64, 128));
  writer.entry("predict", {a, b}, {out});
  Loaded loaded;
  EXPECT_EQ(loaded.open(writer.finish(), threads), KILN_OK)
      << kiln_last_error();
  std::vector<float> av = randomFloats(m * k, 11), bv = randomFloats(k * n, 12);
  int64_t aSize = m * k, bSize = k * n;
  EXPECT_EQ(kiln_session_bind_input(loaded.session, "a", av.data(), KILN_F32,
                                    &aSize, 1),
            KILN_OK);
  EXPECT_EQ(kiln_session_bind_input(loaded.session, "b", bv.data(), KILN_F32,
                                    &bSize, 1),
            KILN_OK);
  EXPECT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
  return readBuffer<float>(loaded.session, "c", m * n);
}

TEST(RuntimeExecutor, TiledGemmBytesDoNotDependOnThreads) {
  for (const std::string &library : kiln::cpu::builtInGemmLibraries()) {
    SCOPED_TRACE(library);
    std::vector<float> one = tiledGemmBytes(library, 1);
    for (int32_t threads : {2, 3, 8}) {
      std::vector<float> many = tiledGemmBytes(library, threads);
      ASSERT_EQ(one.size(), many.size());
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * 4), 0)
          << threads << " threads";
    }
  }
}

/// A plan's bf16 x bf16 -> f32 GEMM (ab_dtype BF16, dtype F32), in tiles,
/// against a loop in double over the same bf16 values, under every library
/// built in.
TEST(RuntimeExecutor, Bf16GemmAccumulatesInF32) {
  int64_t m = 70, n = 90, k = 130;
  std::vector<float> af = randomFloats(m * k, 21), bf = randomFloats(k * n, 22);
  std::vector<uint16_t> ah, bh;
  for (float value : af)
    ah.push_back(kiln::floatToBf16(value));
  for (float value : bf)
    bh.push_back(kiln::floatToBf16(value));
  for (const std::string &library : kiln::cpu::builtInGemmLibraries()) {
    SCOPED_TRACE(library);
    ScopedEnvironment scoped("KILN_GEMM", library);
    PlanWriter writer;
    uint32_t a = writer.buffer("a", Kind::Input, DType::BF16, {m * k});
    uint32_t b = writer.buffer("b", Kind::Input, DType::BF16, {k * n});
    uint32_t out = writer.buffer("c", Kind::Output, DType::F32, {m * n});
    writer.gemm(plan::CreateGemmCall(writer.fbb, a, b, out, m, n, k, 1, false,
                                     false, k, n, n, 0, 0, 0, 1.0, 0.0,
                                     DType::F32, 64, 64, DType::BF16));
    writer.entry("predict", {a, b}, {out});
    Loaded loaded;
    ASSERT_EQ(loaded.open(writer.finish(), 2), KILN_OK) << kiln_last_error();
    ASSERT_EQ(
        kiln_session_set_buffer(loaded.session, "a", ah.data(), ah.size() * 2),
        KILN_OK)
        << kiln_last_error();
    ASSERT_EQ(
        kiln_session_set_buffer(loaded.session, "b", bh.data(), bh.size() * 2),
        KILN_OK);
    ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
        << kiln_last_error();
    std::vector<float> c = readBuffer<float>(loaded.session, "c", m * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t l = 0; l < k; ++l) {
          double product = double(kiln::bf16ToFloat(ah[i * k + l])) *
                           kiln::bf16ToFloat(bh[l * n + j]);
          sum += product;
          magnitude += std::fabs(product);
        }
        ASSERT_NEAR(c[i * n + j], sum, 1e-5 * (magnitude + 1))
            << "C[" << i << ", " << j << "]";
      }
  }
}

/// GEMM types the cpu executor has no kernel for, and epilogues it cannot
/// run as cuBLASLt would, fail the session with what the plan asked.
TEST(RuntimeExecutor, GemmTypesAndEpiloguesItCannotRunAreRefused) {
  struct Case {
    DType ab, c;
    plan::GemmEpilogue epilogue;
    int64_t n, batch;
    bool withBias;
    const char *message;
  } cases[] = {
      {DType::BF16, DType::F16, plan::GemmEpilogue::None, 2, 1, false,
       "a GEMM of bf16 x bf16 -> f16: the cpu executor computes f32, f64, "
       "and bf16 x bf16 or f16 x f16 -> f32 or the operands' type"},
      {DType::F32, DType::F32, plan::GemmEpilogue::BiasGelu, 2, 1, false,
       "a GEMM with the epilogue BiasGelu needs bias buffer"},
      {DType::F32, DType::F32, plan::GemmEpilogue::None, 2, 1, true,
       "a GEMM with the epilogue None takes no bias buffer"},
      {DType::F32, DType::F32, plan::GemmEpilogue::Gelu, 6, 1, false,
       "the epilogue Gelu keeps its auxiliary matrix with C's leading "
       "dimension, 6, which is not a multiple of 8"},
      {DType::F32, DType::F32, plan::GemmEpilogue::BiasGrad, 2, 2, true,
       "the epilogue BiasGrad sums one matrix's rows; this GEMM has a batch "
       "of 2"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.message);
    PlanWriter writer;
    int64_t elements = 2 * c.n * c.batch;
    uint32_t a = writer.buffer("a", Kind::Input, c.ab, {elements});
    uint32_t out = writer.buffer("c", Kind::Output, c.c, {elements});
    int32_t bias = c.withBias ? static_cast<int32_t>(writer.buffer(
                                    "bias", Kind::Output, c.c, {c.n}))
                              : -1;
    int32_t aux = c.epilogue == plan::GemmEpilogue::Gelu
                      ? static_cast<int32_t>(
                            writer.buffer("aux", Kind::Output, c.c, {elements}))
                      : -1;
    writer.gemm(plan::CreateGemmCall(
        writer.fbb, a, a, out, 2, c.n, 2, c.batch, false, true, 2, 2, c.n, 0, 0,
        2 * c.n, 1.0, 0.0, c.c, 0, 0, c.ab, c.epilogue, bias, aux));
    writer.entry("predict", {a}, {out});
    Loaded loaded;
    EXPECT_NE(loaded.open(writer.finish(), 1), KILN_OK);
    EXPECT_NE(std::string(kiln_last_error()).find(c.message), std::string::npos)
        << kiln_last_error();
  }
}

/// The tanh GELU and its derivative, in double.
double geluOf(double x) {
  return 0.5 * x *
         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double geluDerivativeOf(double x) {
  double c = std::sqrt(2 / M_PI), t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
}

/// Each epilogue of a tiled f32 GEMM (partial tiles in both dims) against
/// its definition in plan.fbs computed in double, under every library built
/// in: the executor applies it to each tile after the library's product.
TEST(RuntimeExecutor, GemmEpiloguesFollowThePlanSemantics) {
  using Epilogue = plan::GemmEpilogue;
  struct Case {
    Epilogue epilogue;
    bool withAux;
    bool transposeB;
    double alpha, beta;
  } cases[] = {
      {Epilogue::Bias, false, false, 1.0, 0.0},
      {Epilogue::Gelu, true, false, 1.0, 0.0},
      {Epilogue::Gelu, false, true, 0.5, 0.0},
      {Epilogue::BiasGelu, true, false, 1.0, 1.0},
      {Epilogue::DGelu, true, false, 0.5, 1.0},
      {Epilogue::BiasGrad, false, false, 1.0, 0.0},
      {Epilogue::BiasGrad, false, true, 2.0, 1.0},
  };
  int64_t m = 20, n = 24, k = 13;
  std::vector<float> av = randomFloats(m * k, 31), bv = randomFloats(k * n, 32),
                     cv = randomFloats(m * n, 33), biasv = randomFloats(n, 34),
                     auxv = randomFloats(m * n, 35);
  for (const std::string &library : kiln::cpu::builtInGemmLibraries())
    for (const Case &c : cases) {
      SCOPED_TRACE(library + " " + plan::EnumNameGemmEpilogue(c.epilogue) +
                   (c.withAux ? " aux" : "") + (c.transposeB ? " B^T" : ""));
      ScopedEnvironment scoped("KILN_GEMM", library);
      bool takesBias = c.epilogue == Epilogue::Bias ||
                       c.epilogue == Epilogue::BiasGelu ||
                       c.epilogue == Epilogue::BiasGrad;
      PlanWriter writer;
      uint32_t a = writer.buffer("a", Kind::Input, DType::F32, {m * k});
      uint32_t b = writer.buffer("b", Kind::Input, DType::F32, {k * n});
      uint32_t out = writer.buffer("c", Kind::Output, DType::F32, {m * n});
      uint32_t bias = writer.buffer("bias", Kind::Output, DType::F32, {n});
      uint32_t aux = writer.buffer("aux", Kind::Output, DType::F32, {m * n});
      writer.gemm(plan::CreateGemmCall(
          writer.fbb, a, b, out, m, n, k, 1, false, c.transposeB, k,
          c.transposeB ? k : n, n, 0, 0, 0, c.alpha, c.beta, DType::F32, 8, 16,
          DType::F32, c.epilogue, takesBias ? static_cast<int32_t>(bias) : -1,
          c.withAux ? static_cast<int32_t>(aux) : -1));
      writer.entry("predict", {a, b}, {out, bias, aux});
      Loaded loaded;
      ASSERT_EQ(loaded.open(writer.finish(), 3), KILN_OK) << kiln_last_error();
      int64_t aSize = m * k, bSize = k * n;
      ASSERT_EQ(kiln_session_bind_input(loaded.session, "a", av.data(),
                                        KILN_F32, &aSize, 1),
                KILN_OK);
      ASSERT_EQ(kiln_session_bind_input(loaded.session, "b", bv.data(),
                                        KILN_F32, &bSize, 1),
                KILN_OK);
      for (auto [name, values] :
           {std::pair<const char *, std::vector<float> *>{"c", &cv},
            {"bias", &biasv},
            {"aux", &auxv}})
        ASSERT_EQ(kiln_session_set_buffer(loaded.session, name, values->data(),
                                          values->size() * 4),
                  KILN_OK);
      ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
          << kiln_last_error();
      std::vector<float> result = readBuffer<float>(loaded.session, "c", m * n);
      std::vector<float> biasOut = readBuffer<float>(loaded.session, "bias", n);
      std::vector<float> auxOut =
          readBuffer<float>(loaded.session, "aux", m * n);
      auto bAt = [&](int64_t p, int64_t j) {
        return double(bv[c.transposeB ? j * k + p : p * n + j]);
      };
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            sum += av[i * k + p] * bAt(p, j);
            magnitude += std::fabs(av[i * k + p] * bAt(p, j));
          }
          int64_t at = i * n + j;
          double product = c.alpha * sum + c.beta * cv[at];
          double expected = product, expectedAux = auxv[at];
          switch (c.epilogue) {
          case Epilogue::Bias:
            expected = product + biasv[j];
            break;
          case Epilogue::Gelu:
            expected = geluOf(product);
            if (c.withAux)
              expectedAux = product;
            break;
          case Epilogue::BiasGelu:
            expectedAux = product + biasv[j];
            expected = geluOf(expectedAux);
            break;
          case Epilogue::DGelu:
            expected = product * geluDerivativeOf(auxv[at]);
            break;
          default:
            break;
          }
          double scale = std::fabs(c.alpha) * magnitude + std::fabs(cv[at]) +
                         std::fabs(biasv[j]) + 1;
          ASSERT_NEAR(result[at], expected, 1e-5 * scale)
              << "C[" << i << ", " << j << "]";
          ASSERT_NEAR(auxOut[at], expectedAux, 1e-5 * scale)
              << "aux[" << i << ", " << j << "]";
        }
      for (int64_t j = 0; j < n; ++j) {
        double expected = biasv[j], magnitude = 1;
        if (c.epilogue == Epilogue::BiasGrad) {
          expected = 0;
          for (int64_t p = 0; p < k; ++p) {
            expected += bAt(p, j);
            magnitude += std::fabs(bAt(p, j));
          }
        }
        ASSERT_NEAR(biasOut[j], expected, 1e-6 * magnitude)
            << "bias[" << j << "]";
      }
    }
}

TEST(RuntimeExecutor, GemmLibraryNamedByKilnGemm) {
  PlanWriter writer;
  uint32_t a = writer.buffer("a", Kind::Input, DType::F32, {4});
  uint32_t out = writer.buffer("c", Kind::Output, DType::F32, {4});
  writer.gemm(plan::CreateGemmCall(writer.fbb, a, a, out, 2, 2, 2, 1, false,
                                   false, 2, 2, 2, 0, 0, 0, 1.0, 0.0,
                                   DType::F32));
  writer.entry("predict", {a}, {out});
  std::string plan = writer.finish();
  {
    ScopedEnvironment scoped("KILN_GEMM", "mkl");
    Loaded loaded;
    EXPECT_EQ(loaded.open(plan), KILN_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error())
                  .find("KILN_GEMM='mkl' is not built into this runtime "
                        "(built in: "),
              std::string::npos)
        << kiln_last_error();
  }
  for (const std::string &library : kiln::cpu::builtInGemmLibraries()) {
    ScopedEnvironment scoped("KILN_GEMM", library);
    Loaded loaded;
    ASSERT_EQ(loaded.open(plan), KILN_OK) << kiln_last_error();
    kiln_gemm_info info;
    ASSERT_EQ(kiln_session_gemm_info(loaded.session, &info), KILN_OK);
    EXPECT_EQ(std::string(info.library), library);
    EXPECT_NE(std::string(info.version), "");
    EXPECT_NE(std::string(info.isa), "");
    // Kiln's own kernel is a fallback and says so.
    if (library == "reference")
      EXPECT_NE(std::string(info.warning).find("reference kernel"),
                std::string::npos)
          << info.warning;
  }
}

TEST(RuntimeExecutor, CopyAndZero) {
  PlanWriter writer;
  uint32_t x = writer.buffer("x", Kind::Input, DType::F32, {8});
  uint32_t acc = writer.buffer("acc", Kind::Gradient, DType::F32, {8});
  uint32_t y = writer.buffer("y", Kind::Output, DType::F32, {8});
  writer.copy(x, y, 16); // The first four elements only.
  writer.entry("copy", {x}, {y});
  writer.zero(acc);
  writer.entry("zero", {}, {});
  Loaded loaded;
  ASSERT_EQ(loaded.open(writer.finish()), KILN_OK) << kiln_last_error();
  std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  int64_t shape[] = {8};
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "x", values.data(),
                                    KILN_F32, shape, 1),
            KILN_OK);
  ASSERT_EQ(kiln_session_set_buffer(loaded.session, "acc", values.data(), 32),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "copy"), KILN_OK);
  EXPECT_EQ(readBuffer<float>(loaded.session, "y", 8),
            (std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0}));
  ASSERT_EQ(kiln_session_run(loaded.session, "zero"), KILN_OK);
  EXPECT_EQ(readBuffer<float>(loaded.session, "acc", 8),
            std::vector<float>(8, 0.0f));
}

/// A plan computing log(x) at model.kiln:7:3, then x + log(x) at 8:3.
std::string logPlan() {
  PlanWriter writer;
  uint32_t x = writer.buffer("x", Kind::Input, DType::F32, {6});
  uint32_t logs = writer.buffer("logs", Kind::Transient, DType::F32, {6});
  uint32_t y = writer.buffer("y", Kind::Output, DType::F32, {6});
  writer.kernel("kiln_test_log", {x, logs}, 6, 2, "graph.log", 7);
  writer.kernel("kiln_test_add", {x, logs, y}, 6, 2, "graph.add", 8);
  writer.entry("predict", {x}, {y});
  return writer.finish();
}

TEST(RuntimeExecutor, CheckNumericsNamesTheOpAndItsLocation) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(logPlan()), KILN_OK) << kiln_last_error();
  std::vector<float> x = {1, 2, 3, -4, 5, 6};
  int64_t shape[] = {6};
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_F32,
                                    shape, 1),
            KILN_OK);
  // Without the check, the NaN flows through silently.
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK);
  ASSERT_TRUE(std::isnan(readBuffer<float>(loaded.session, "y", 6)[3]));

  ASSERT_EQ(kiln_session_set_check_numerics(loaded.session, 1), KILN_OK);
  EXPECT_EQ(kiln_session_run(loaded.session, "predict"), KILN_ERROR_NUMERICS);
  std::string message = kiln_last_error();
  EXPECT_NE(message.find("kiln_session_run"), std::string::npos) << message;
  EXPECT_NE(message.find("NaN at model.kiln:7:3"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'graph.log'"), std::string::npos) << message;
  EXPECT_NE(message.find("kiln_test_log"), std::string::npos) << message;
  EXPECT_NE(message.find("buffer 'logs'"), std::string::npos) << message;
  EXPECT_NE(message.find("element 3"), std::string::npos) << message;
  EXPECT_EQ(message, kiln_session_last_error(loaded.session));

  // log(0) = -inf is reported as an infinity.
  x[3] = 0;
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_F32,
                                    shape, 1),
            KILN_OK);
  EXPECT_EQ(kiln_session_run(loaded.session, "predict"), KILN_ERROR_NUMERICS);
  EXPECT_NE(std::string(kiln_last_error()).find("infinity at model.kiln:7:3"),
            std::string::npos)
      << kiln_last_error();

  // Finite data passes.
  x[3] = 4;
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_F32,
                                    shape, 1),
            KILN_OK);
  EXPECT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK)
      << kiln_last_error();
}

TEST(RuntimeExecutor, ProfileCountsCallsPerOpWithLocations) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(logPlan()), KILN_OK) << kiln_last_error();
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  int64_t shape[] = {6};
  ASSERT_EQ(kiln_session_bind_input(loaded.session, "x", x.data(), KILN_F32,
                                    shape, 1),
            KILN_OK);
  ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK);
  ASSERT_EQ(kiln_session_set_profiling(loaded.session, 1), KILN_OK);
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(kiln_session_run(loaded.session, "predict"), KILN_OK);
  size_t count = 0;
  ASSERT_EQ(kiln_session_profile_count(loaded.session, &count), KILN_OK);
  ASSERT_EQ(count, 2u);
  kiln_op_profile profile;
  ASSERT_EQ(kiln_session_profile_op(loaded.session, 1, &profile), KILN_OK);
  EXPECT_STREQ(profile.entry, "predict");
  EXPECT_EQ(profile.index, 1);
  EXPECT_STREQ(profile.call, "kernel");
  EXPECT_STREQ(profile.name, "graph.add");
  EXPECT_STREQ(profile.file, "model.kiln");
  EXPECT_EQ(profile.line, 8u);
  EXPECT_EQ(profile.column, 3u);
  EXPECT_EQ(profile.calls, 3u); // The run before enabling is not counted.
  EXPECT_GE(profile.total_ms, 0.0);
  EXPECT_EQ(kiln_session_profile_op(loaded.session, 2, &profile),
            KILN_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeExecutor, PrintPlanShowsBuffersOpsAndLocations) {
  Loaded loaded;
  ASSERT_EQ(loaded.open(logPlan()), KILN_OK) << kiln_last_error();
  char *text = nullptr;
  ASSERT_EQ(kiln_artifact_print_plan(loaded.artifact, &text), KILN_OK);
  std::string printed = text;
  kiln_string_free(text);
  const std::string header = "plan of model 'test_model' for cpu (schema " +
                             std::to_string(KILN_PLAN_SCHEMA_VERSION) +
                             ", written by kiln test)";
  for (const char *expected :
       {header.c_str(), "kernels: kernels.so\n", "arena: 64 bytes",
        "buffers (3):",
        "%1   transient       f32[6]            24 B        logs @ arena+0",
        "entry predict (inputs: %0 x; outputs: %2 y), 2 ops:",
        "kernel kiln_test_log(%0 x, %1 logs) range 6 grain 2",
        "graph.log  model.kiln:7:3", "graph.add  model.kiln:8:3"})
    EXPECT_NE(printed.find(expected), std::string::npos)
        << "missing: " << expected << "\n"
        << printed;
}

TEST(RuntimeExecutor, SharedLibraryExportsOnlyTheCApi) {
  void *library = ::dlopen(KILN_RUNTIME_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  EXPECT_NE(::dlsym(library, "kiln_artifact_open"), nullptr);
  EXPECT_NE(::dlsym(library, "kiln_session_run"), nullptr);
  EXPECT_NE(::dlsym(library, "kiln_last_error"), nullptr);
  // kiln::runtime::ThreadPool::stop() stays internal.
  EXPECT_EQ(::dlsym(library, "_ZN4kiln7runtime10ThreadPool4stopEv"), nullptr);
  ::dlclose(library);
}

} // namespace
