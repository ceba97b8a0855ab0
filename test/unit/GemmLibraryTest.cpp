//===- GemmLibraryTest.cpp - The cpu device's GEMM libraries --------------===//
//
// Part of Kiln. Every GEMM library built into the runtime (oneDNN, OpenBLAS,
// the reference kernel) against a plain loop in double, for every element
// type it offers (f32, f64, bf16 x bf16 -> f32 on the bf16-rounded inputs);
// the bf16 conversions against hand-worked bit patterns; and which kernels
// the libraries say they run on this CPU.
//
//===----------------------------------------------------------------------===//

#include "devices/cpu/GemmLibrary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <limits>
#include <random>

using namespace kiln;
using namespace kiln::cpu;

namespace {

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(GemmLibrary, HalfRoundsToNearestEvenWithSubnormals) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to the even one, 1;
  // 1 + 3 * 2^-11 halfway between 1 + 2^-10 and 1 + 2^-9: up, to even.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // 65504 is the largest half; from 65520 on a float rounds to infinity.
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  // Subnormals: 2^-24 is the smallest; half of it rounds to (even) zero.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(floatToHalf(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(fromBits(0x7f800001)))));
  // Widening is exact, subnormals and infinity included.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = halfToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(value))
      ASSERT_EQ(floatToHalf(value), bits) << bits;
  }
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x7c00), std::numeric_limits<float>::infinity());
}

TEST(GemmLibrary, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(floatToBf16(fromBits(0x3f808000)), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: up, to even.
  EXPECT_EQ(floatToBf16(fromBits(0x3f818000)), 0x3f82);
  // Just above the halfway point rounds up; just below, down.
  EXPECT_EQ(floatToBf16(fromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBf16(fromBits(0x3f807fff)), 0x3f80);
  // The largest float rounds past bf16's largest finite value: infinity.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  // A NaN whose payload lies in the low bits stays a NaN.
  uint16_t nan = floatToBf16(fromBits(0x7f800001));
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  EXPECT_EQ(bf16ToFloat(0x3f81), 1.0f + 1.0f / 128);
}

/// One problem: shapes, transposes, padding of the leading dims, scalars.
struct Case {
  int64_t m, n, k;
  bool ta, tb;
  int64_t pad;
  double alpha, beta;
};

const Case kCases[] = {
    {1, 1, 1, false, false, 0, 1.0, 0.0},
    {5, 7, 3, false, false, 0, 1.0, 0.0},
    {5, 7, 3, true, false, 2, 1.0, 0.0},
    {5, 7, 3, false, true, 0, 0.5, 0.0},
    {33, 65, 17, true, true, 3, 1.0, 1.0},
    {64, 300, 257, false, false, 0, 1.0, 0.0},
    {130, 70, 513, false, true, 1, -1.5, 0.25},
    {70, 129, 64, true, false, 0, 1.0, 1.0},
};

/// The 16-bit bits of `value` in `types` (IEEE half for F16, bf16 else),
/// and their value.
uint16_t toHalfBits(GemmTypes types, float value) {
  return gemmOperandsAreHalves(types) ? floatToHalf(value) : floatToBf16(value);
}
float fromHalfBits(GemmTypes types, uint16_t bits) {
  return gemmOperandsAreHalves(types) ? halfToFloat(bits) : bf16ToFloat(bits);
}

/// `values` as f32 and as 16 bits, and `values` replaced by what `types`
/// computes with: themselves for f64, the f32 or the 16-bit rounding else.
void roundInputs(GemmTypes types, std::vector<double> &values,
                 std::vector<float> &f32, std::vector<uint16_t> &half) {
  f32.resize(values.size());
  half.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    f32[i] = static_cast<float>(values[i]);
    half[i] = toHalfBits(types, f32[i]);
    if (types == GemmTypes::F32)
      values[i] = f32[i];
    else if (types != GemmTypes::F64)
      values[i] = fromHalfBits(types, half[i]);
  }
}

/// Runs `c` through `library` in `types` and checks every element of C
/// against a sum in double of the same (rounded) inputs, and that the
/// padding of C is never written.
void checkLibrary(const GemmLibrary &library, GemmTypes types, const Case &c) {
  SCOPED_TRACE(std::string(library.name()) + " " + gemmTypesName(types) +
               " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
               " k=" + std::to_string(c.k) + " ta=" + std::to_string(c.ta) +
               " tb=" + std::to_string(c.tb));
  int64_t aRows = c.ta ? c.k : c.m, aCols = c.ta ? c.m : c.k;
  int64_t bRows = c.tb ? c.n : c.k, bCols = c.tb ? c.k : c.n;
  int64_t lda = aCols + c.pad, ldb = bCols + c.pad, ldc = c.n + c.pad;
  std::mt19937 engine(static_cast<uint32_t>(c.m * 131 + c.n * 7 + c.k));
  std::uniform_real_distribution<double> uniform(-2, 2);
  // The inputs as each type holds them, and their exact values in double.
  std::vector<double> a(aRows * lda), b(bRows * ldb), c0(c.m * ldc);
  for (double &x : a)
    x = uniform(engine);
  for (double &x : b)
    x = uniform(engine);
  for (double &x : c0)
    x = uniform(engine);
  std::vector<float> af, bf, cf(c0.size());
  std::vector<uint16_t> a16, b16, c16(c0.size());
  roundInputs(types, a, af, a16);
  roundInputs(types, b, bf, b16);
  bool halfC = gemmResultBytes(types) == 2;
  for (size_t i = 0; i < c0.size(); ++i) {
    cf[i] = static_cast<float>(c0[i]);
    c16[i] = toHalfBits(types, cf[i]);
    if (halfC)
      c0[i] = fromHalfBits(types, c16[i]);
    else if (types != GemmTypes::F64)
      c0[i] = cf[i];
  }
  std::vector<double> cd = c0;

  GemmProblem problem;
  problem.types = types;
  problem.transposeA = c.ta;
  problem.transposeB = c.tb;
  problem.m = c.m;
  problem.n = c.n;
  problem.k = c.k;
  problem.alpha = c.alpha;
  problem.beta = c.beta;
  problem.lda = lda;
  problem.ldb = ldb;
  problem.ldc = ldc;
  if (types == GemmTypes::F64) {
    problem.a = a.data();
    problem.b = b.data();
    problem.c = cd.data();
  } else {
    problem.a = types == GemmTypes::F32 ? static_cast<const void *>(af.data())
                                        : a16.data();
    problem.b = types == GemmTypes::F32 ? static_cast<const void *>(bf.data())
                                        : b16.data();
    problem.c = halfC ? static_cast<void *>(c16.data()) : cf.data();
  }
  ASSERT_EQ(library.prepare(problem), "");
  library.run(problem);

  // f32 accumulation (f32 and 16-bit inputs) against f64's; a 16-bit C
  // adds its rounding, at most half a unit in the last of its 8 (bf16) or
  // 11 (f16) bits.
  double tolerance = types == GemmTypes::F64 ? 1e-13 : 1e-5;
  int halfUlpExponent = types == GemmTypes::F16 ? -11 : -8;
  auto stored = [&](int64_t at) -> double {
    if (types == GemmTypes::F64)
      return cd[at];
    return halfC ? fromHalfBits(types, c16[at]) : cf[at];
  };
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        double x = a[c.ta ? p * lda + i : i * lda + p];
        double y = b[c.tb ? j * ldb + p : p * ldb + j];
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      int64_t at = i * ldc + j;
      double expected = c.alpha * sum + c.beta * c0[at];
      double scale =
          std::fabs(c.alpha) * magnitude + std::fabs(c.beta * c0[at]) + 1;
      double rounding =
          halfC ? std::ldexp(std::fabs(expected), halfUlpExponent) : 0;
      ASSERT_NEAR(stored(at), expected, tolerance * scale + rounding)
          << "C[" << i << ", " << j << "]";
    }
    for (int64_t j = c.n; j < ldc; ++j) {
      ASSERT_EQ(stored(i * ldc + j), c0[i * ldc + j]) << "padding of C written";
    }
  }
}

TEST(GemmLibrary, EveryLibraryMatchesALoopInDouble) {
  int checked = 0;
  for (const std::string &name : builtInGemmLibraries()) {
    std::string error;
    std::shared_ptr<const GemmLibrary> library = getGemmLibrary(name, error);
    ASSERT_TRUE(library) << error;
    EXPECT_EQ(name, library->name());
    for (GemmTypes types : {GemmTypes::F32, GemmTypes::F64, GemmTypes::BF16_F32,
                            GemmTypes::BF16, GemmTypes::F16_F32,
                            GemmTypes::F16}) {
      if (!library->supports(types))
        continue;
      for (const Case &c : kCases)
        checkLibrary(*library, types, c);
      ++checked;
    }
  }
  // The reference kernel alone does all four types.
  EXPECT_GE(checked, 4);
}

TEST(GemmLibrary, BetaZeroIgnoresWhatCHeld) {
  for (const std::string &name : builtInGemmLibraries()) {
    std::string error;
    std::shared_ptr<const GemmLibrary> library = getGemmLibrary(name, error);
    ASSERT_TRUE(library) << error;
    for (GemmTypes types : {GemmTypes::F32, GemmTypes::BF16_F32}) {
      if (!library->supports(types))
        continue;
      SCOPED_TRACE(name + " " + gemmTypesName(types));
      std::vector<float> af = {1, 2, 3, 4}, bf = {1, 0, 0, 1};
      std::vector<uint16_t> a16, b16;
      for (float x : af)
        a16.push_back(floatToBf16(x));
      for (float x : bf)
        b16.push_back(floatToBf16(x));
      std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
      GemmProblem problem;
      problem.types = types;
      problem.m = problem.n = problem.k = 2;
      problem.lda = problem.ldb = problem.ldc = 2;
      problem.a = types == GemmTypes::F32 ? static_cast<const void *>(af.data())
                                          : a16.data();
      problem.b = types == GemmTypes::F32 ? static_cast<const void *>(bf.data())
                                          : b16.data();
      problem.c = c.data();
      ASSERT_EQ(library->prepare(problem), "");
      library->run(problem);
      EXPECT_EQ(c, af);
    }
  }
}

TEST(GemmLibrary, UnknownNameListsTheBuiltInOnes) {
  std::string error;
  EXPECT_FALSE(getGemmLibrary("mkl", error));
  EXPECT_NE(error.find("'mkl' is not built into this runtime (built in: "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("reference"), std::string::npos) << error;
}

TEST(GemmLibrary, TypesALibraryLacksGoToOneThatHasThem) {
  std::string error;
  std::shared_ptr<const GemmLibrary> reference =
      getGemmLibrary("reference", error);
  ASSERT_TRUE(reference);
  for (const std::string &name : builtInGemmLibraries()) {
    std::shared_ptr<const GemmLibrary> chosen = getGemmLibrary(name, error);
    for (GemmTypes types : {GemmTypes::F32, GemmTypes::F64, GemmTypes::BF16_F32,
                            GemmTypes::BF16, GemmTypes::F16_F32,
                            GemmTypes::F16}) {
      std::shared_ptr<const GemmLibrary> used =
          getGemmLibraryFor(types, chosen);
      ASSERT_TRUE(used);
      EXPECT_TRUE(used->supports(types));
      if (chosen->supports(types))
        EXPECT_EQ(used, chosen);
    }
  }
}

#ifdef KILN_HAVE_ONEDNN
// oneDNN picks its kernels from the CPU's features: on a CPU with AMX-BF16
// it must say it runs them, unless the environment caps its ISA.
TEST(GemmLibrary, OneDnnRunsTheBestKernelsOfThisCpu) {
  if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA"))
    GTEST_SKIP() << "oneDNN's ISA is capped by the environment";
  std::string error;
  std::shared_ptr<const GemmLibrary> library = getGemmLibrary("onednn", error);
  ASSERT_TRUE(library) << error;
  int rank = cpuIsaRank();
  std::string isa = library->isa();
  if (rank >= 4)
    EXPECT_EQ(isa, "avx512_core_amx");
  else if (rank >= 2)
    EXPECT_EQ(isa.rfind("avx512_core", 0), 0u) << isa;
  EXPECT_EQ(library->fallbackWarning(), "");
}
#endif

#ifdef KILN_HAVE_OPENBLAS
// OpenBLAS's table of CPU models may not know this CPU: then it must say so
// rather than run its generic kernels silently.
TEST(GemmLibrary, OpenBlasWarnsWhenItRunsGenericKernels) {
  std::string error;
  std::shared_ptr<const GemmLibrary> library =
      getGemmLibrary("openblas", error);
  ASSERT_TRUE(library) << error;
  std::string core = library->isa();
  if (cpuIsaRank() >= 1 && (core == "Prescott" || core == "Nehalem" ||
                            core == "Core2" || core == "Atom"))
    EXPECT_NE(library->fallbackWarning().find(core), std::string::npos)
        << library->fallbackWarning();
  else if (core == "SkylakeX" || core == "Cooperlake")
    EXPECT_EQ(library->fallbackWarning(), "");
}

/// The threads of this process.
size_t countThreads() {
  size_t threads = 0;
  if (DIR *tasks = ::opendir("/proc/self/task")) {
    while (dirent *entry = ::readdir(tasks))
      threads += entry->d_name[0] != '.';
    ::closedir(tasks);
  }
  return threads;
}

/// The checks of OpenBlasLoadsOnDemandWithoutThreads, in a fresh process:
/// the first failure, or "".
std::string checkOpenBlasLoadsOnDemand() {
  if (::dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD))
    return "OpenBLAS was loaded before the runtime asked for it";
  size_t threadsBefore = countThreads();
  ::setenv("OPENBLAS_NUM_THREADS", "3", 1);
  std::string error;
  std::shared_ptr<const GemmLibrary> library =
      getGemmLibrary("openblas", error);
  if (!library)
    return error;
  const char *variable = std::getenv("OPENBLAS_NUM_THREADS");
  if (!variable || std::string(variable) != "3")
    return "OPENBLAS_NUM_THREADS is not restored";
  if (countThreads() != threadsBefore)
    return "loading OpenBLAS started " +
           std::to_string(countThreads() - threadsBefore) + " threads";
  void *loaded = ::dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (!loaded)
    return "OpenBLAS is not loaded";
  auto threads =
      reinterpret_cast<int (*)()>(::dlsym(loaded, "openblas_get_num_threads"));
  if (!threads || threads() != 1)
    return "OpenBLAS does not compute on one thread";
  float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, c[4] = {};
  GemmProblem problem;
  problem.m = problem.n = problem.k = 2;
  problem.a = a;
  problem.b = b;
  problem.c = c;
  problem.lda = problem.ldb = problem.ldc = 2;
  library->run(problem);
  if (c[0] != 19 || c[1] != 22 || c[2] != 43 || c[3] != 50)
    return "a 2x2 product is wrong";
  return "";
}

// OpenBLAS is loaded when first asked for, not at the process's start, and
// its load starts no thread of its own (OPENBLAS_NUM_THREADS=1 during the
// load); the variable is then what it was, here a value the runtime must
// not keep. In a fresh process (a death test re-runs this binary), where no
// other test has loaded it.
TEST(GemmLibraryDeathTest, OpenBlasLoadsOnDemandWithoutThreads) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::string failure = checkOpenBlasLoadsOnDemand();
        std::fprintf(stderr, "%s\n", failure.c_str());
        std::exit(failure.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

} // namespace
