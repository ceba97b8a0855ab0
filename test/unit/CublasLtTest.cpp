//===- CublasLtTest.cpp - A plan's GEMMs through cuBLASLt -----------------===//
//
// Part of Kiln. devices/cuda/CublasLt.h against the fake cuBLASLt
// (fakes/FakeCublasLt.cpp). The fake is first held to cuBLASLt's own
// column-major definitions on small matrices worked out here; then every
// plan GEMM the mapping can meet (layouts, batches, types, epilogues) runs
// through the runtime's row-major to column-major mapping and the fake,
// and must give the host executor's bytes exactly.
//
//===----------------------------------------------------------------------===//

#include "devices/cuda/CublasLt.h"
#include "GemmEpilogue.h"
#include "RuntimeTestUtil.h"
#include "devices/cpu/GemmLibrary.h"

#ifdef KILN_HAVE_CUDA_H
#include <cublasLt.h>
#endif

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <random>

using namespace kiln;
using namespace kiln::test;
namespace lt = kiln::cuda::lt;

namespace {

#ifdef KILN_HAVE_CUDA_H
static_assert(lt::kSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(lt::kNotSupported == CUBLAS_STATUS_NOT_SUPPORTED);
static_assert(lt::kR32F == CUDA_R_32F && lt::kR64F == CUDA_R_64F &&
              lt::kR16BF == CUDA_R_16BF);
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F &&
              lt::kCompute64F == CUBLAS_COMPUTE_64F);
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T);
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB &&
              lt::kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              lt::kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
              lt::kDescAuxPointer ==
                  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER &&
              lt::kDescAuxLd == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD &&
              lt::kDescAuxBatchStride ==
                  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE);
static_assert(lt::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              lt::kLayoutStridedBatchOffset ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(lt::kPreferenceMaxWorkspaceBytes ==
              CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(lt::kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              lt::kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              lt::kEpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
              lt::kEpilogueGeluAux == CUBLASLT_EPILOGUE_GELU_AUX &&
              lt::kEpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS &&
              lt::kEpilogueGeluAuxBias == CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
              lt::kEpilogueDGelu == CUBLASLT_EPILOGUE_DGELU &&
              lt::kEpilogueBGradA == CUBLASLT_EPILOGUE_BGRADA &&
              lt::kEpilogueBGradB == CUBLASLT_EPILOGUE_BGRADB);
static_assert(sizeof(lt::HeuristicResult) ==
              sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(sizeof(lt::Algo) == sizeof(cublasLtMatmulAlgo_t));
#endif

std::unique_ptr<cuda::CublasLt> loadFake() {
  ScopedEnvironment library("KILN_LIBCUBLASLT", KILN_FAKE_CUBLASLT);
  std::string error;
  std::unique_ptr<cuda::CublasLt> cublas = cuda::CublasLt::load(error);
  EXPECT_TRUE(cublas) << error;
  return cublas;
}

/// The fake read as cuBLASLt defines a matmul: column-major D (2 x 2) =
/// op(A) op(B) with op(A) 2 x 3, a bias per row of D, and BGRADA summing
/// op(A) over its k columns. Worked out by hand from the definitions.
TEST(FakeCublasLt, FollowsCublasLtsColumnMajorDefinitions) {
  void *fake = dlopen(KILN_FAKE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto get = [&](const char *name) { return dlsym(fake, name); };
  auto create =
      reinterpret_cast<lt::Status (*)(lt::Handle *)>(get("cublasLtCreate"));
  cuda::CublasLtApi api;
  api.descCreate = reinterpret_cast<decltype(api.descCreate)>(
      get("cublasLtMatmulDescCreate"));
  api.descSetAttribute = reinterpret_cast<decltype(api.descSetAttribute)>(
      get("cublasLtMatmulDescSetAttribute"));
  api.layoutCreate = reinterpret_cast<decltype(api.layoutCreate)>(
      get("cublasLtMatrixLayoutCreate"));
  api.matmul = reinterpret_cast<decltype(api.matmul)>(get("cublasLtMatmul"));
  lt::Handle handle = nullptr;
  ASSERT_EQ(create(&handle), lt::kSuccess);
  // A stored 3 x 2 (ld 3), used transposed: op(A) = A^T is 2 x 3.
  // A = [[1, 4], [2, 5], [3, 6]] column-major: {1, 2, 3, 4, 5, 6}.
  float a[] = {1, 2, 3, 4, 5, 6};
  // B 3 x 2 (ld 3), not transposed: columns {1, 0, 2} and {0, 1, 1}.
  float b[] = {1, 0, 2, 0, 1, 1};
  float bias[] = {100, 200};
  float d[4] = {};
  lt::MatmulDesc desc = nullptr;
  ASSERT_EQ(api.descCreate(&desc, lt::kCompute32F, lt::kR32F), lt::kSuccess);
  int transA = lt::kOpT, transB = lt::kOpN, epilogue = lt::kEpilogueBias;
  void *biasPointer = bias;
  api.descSetAttribute(desc, lt::kDescTransA, &transA, sizeof transA);
  api.descSetAttribute(desc, lt::kDescTransB, &transB, sizeof transB);
  api.descSetAttribute(desc, lt::kDescEpilogue, &epilogue, sizeof epilogue);
  api.descSetAttribute(desc, lt::kDescBiasPointer, &biasPointer,
                       sizeof biasPointer);
  lt::Layout aLayout, bLayout, dLayout;
  api.layoutCreate(&aLayout, lt::kR32F, 3, 2, 3);
  api.layoutCreate(&bLayout, lt::kR32F, 3, 2, 3);
  api.layoutCreate(&dLayout, lt::kR32F, 2, 2, 2);
  float alpha = 1, beta = 0;
  // The fake heuristic's first algorithm (a zeroed one is refused).
  lt::Algo algo{};
  algo.data[0] = 1;
  ASSERT_EQ(api.matmul(handle, desc, &alpha, a, aLayout, b, bLayout, &beta, d,
                       dLayout, d, dLayout, &algo, nullptr, 0, nullptr),
            lt::kSuccess);
  // op(A) = [[1, 2, 3], [4, 5, 6]]; op(A) B = [[7, 5], [16, 11]]; plus the
  // bias per row: [[107, 105], [216, 211]], stored column by column.
  EXPECT_EQ(d[0], 107);
  EXPECT_EQ(d[1], 216);
  EXPECT_EQ(d[2], 105);
  EXPECT_EQ(d[3], 211);
  // BGRADA: bias[i] = sum over p of op(A)[i, p]: 6 and 15.
  epilogue = lt::kEpilogueBGradA;
  api.descSetAttribute(desc, lt::kDescEpilogue, &epilogue, sizeof epilogue);
  ASSERT_EQ(api.matmul(handle, desc, &alpha, a, aLayout, b, bLayout, &beta, d,
                       dLayout, d, dLayout, &algo, nullptr, 0, nullptr),
            lt::kSuccess);
  EXPECT_EQ(bias[0], 6);
  EXPECT_EQ(bias[1], 15);
  EXPECT_EQ(d[0], 7);
  EXPECT_EQ(d[3], 11);
  // What the real library refuses: an aux leading dimension not a
  // multiple of 8.
  epilogue = lt::kEpilogueGeluAux;
  int64_t auxLd = 2;
  float aux[4];
  void *auxPointer = aux;
  api.descSetAttribute(desc, lt::kDescEpilogue, &epilogue, sizeof epilogue);
  api.descSetAttribute(desc, lt::kDescAuxLd, &auxLd, sizeof auxLd);
  api.descSetAttribute(desc, lt::kDescAuxPointer, &auxPointer,
                       sizeof auxPointer);
  EXPECT_EQ(api.matmul(handle, desc, &alpha, a, aLayout, b, bLayout, &beta, d,
                       dLayout, d, dLayout, &algo, nullptr, 0, nullptr),
            7); // CUBLAS_STATUS_INVALID_VALUE
  dlclose(fake);
}

/// A plan GemmCall, built alone.
struct CallBuffer {
  flatbuffers::FlatBufferBuilder fbb;
  const plan::GemmCall *call = nullptr;
};

struct Case {
  int64_t m, n, k, batch;
  bool ta, tb, broadcastB;
  double alpha, beta;
  plan::DType ab, c;
  plan::GemmEpilogue epilogue;
  bool aux;
};

template <typename T> std::vector<T> randomValues(size_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<T> values(count);
  for (T &value : values)
    value = static_cast<T>(uniform(engine));
  return values;
}

/// Runs `c` through the mapping and the fake, and through the host
/// executor's reference GEMM and epilogue; both outputs (C, bias, aux) must
/// be the same bytes.
template <typename In, typename Out>
void checkCase(const cuda::CublasLt &cublas, const Case &c) {
  SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
               " k=" + std::to_string(c.k) + " batch=" +
               std::to_string(c.batch) + " ta=" + std::to_string(c.ta) +
               " tb=" + std::to_string(c.tb) + " epilogue " +
               plan::EnumNameGemmEpilogue(c.epilogue) + (c.aux ? " aux" : ""));
  int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n, ldc = c.n;
  int64_t strideA = c.m * c.k, strideB = c.broadcastB ? 0 : c.k * c.n,
          strideC = c.m * c.n;
  bool bias = c.epilogue == plan::GemmEpilogue::Bias ||
              c.epilogue == plan::GemmEpilogue::BiasGelu ||
              c.epilogue == plan::GemmEpilogue::BiasGrad;
  CallBuffer built;
  built.fbb.Finish(plan::CreateGemmCall(
      built.fbb, 0, 1, 2, c.m, c.n, c.k, c.batch, c.ta, c.tb, lda, ldb, ldc,
      strideA, strideB, strideC, c.alpha, c.beta, c.c, 0, 0, c.ab, c.epilogue,
      bias ? 3 : -1, c.aux ? 4 : -1));
  const plan::GemmCall &call =
      *flatbuffers::GetRoot<plan::GemmCall>(built.fbb.GetBufferPointer());

  std::vector<In> a = randomValues<In>(c.batch * strideA, 1);
  std::vector<In> b =
      randomValues<In>(c.broadcastB ? c.k * c.n : c.batch * strideB, 2);
  std::vector<Out> c0 = randomValues<Out>(c.batch * strideC, 3);
  std::vector<Out> bias0 = randomValues<Out>(c.n, 4);
  std::vector<Out> aux0 = randomValues<Out>(c.batch * strideC, 5);

  // The cuda device's way.
  std::unique_ptr<cuda::LtGemm> gemm;
  ASSERT_EQ(cublas.prepare(call, 1 << 20, 1, gemm), "");
  std::vector<Out> deviceC = c0, deviceBias = bias0, deviceAux = aux0;
  cuda::LtGemmPointers pointers;
  pointers.a = a.data();
  pointers.b = b.data();
  pointers.c = deviceC.data();
  pointers.bias = bias ? deviceBias.data() : nullptr;
  pointers.aux = c.aux ? deviceAux.data() : nullptr;
  ASSERT_EQ(cublas.run(*gemm, pointers, nullptr, nullptr), "");

  // The host executor's: the plan's row-major semantics, a tile per matrix.
  std::string error;
  std::shared_ptr<const cpu::GemmLibrary> reference =
      cpu::getGemmLibrary("reference", error);
  ASSERT_TRUE(reference) << error;
  std::vector<Out> hostC = c0, hostBias = bias0, hostAux = aux0;
  for (int64_t entry = 0; entry < c.batch; ++entry) {
    cpu::GemmProblem problem;
    problem.types = sizeof(Out) == 8  ? cpu::GemmTypes::F64
                    : sizeof(In) == 2 ? cpu::GemmTypes::BF16_F32
                                      : cpu::GemmTypes::F32;
    problem.transposeA = c.ta;
    problem.transposeB = c.tb;
    problem.m = c.m;
    problem.n = c.n;
    problem.k = c.k;
    problem.alpha = c.alpha;
    problem.beta = c.beta;
    problem.a = a.data() + entry * strideA;
    problem.lda = lda;
    problem.b = b.data() + entry * strideB;
    problem.ldb = ldb;
    problem.c = hostC.data() + entry * strideC;
    problem.ldc = ldc;
    reference->run(problem);
    GemmEpilogueTile tile;
    tile.kind = c.epilogue;
    tile.bias = bias ? hostBias.data() : nullptr;
    tile.aux = c.aux ? hostAux.data() + entry * strideC : nullptr;
    tile.firstRow = true;
    applyGemmEpilogue(problem, tile);
  }
  EXPECT_EQ(
      std::memcmp(deviceC.data(), hostC.data(), hostC.size() * sizeof(Out)), 0);
  EXPECT_EQ(std::memcmp(deviceBias.data(), hostBias.data(),
                        hostBias.size() * sizeof(Out)),
            0);
  EXPECT_EQ(std::memcmp(deviceAux.data(), hostAux.data(),
                        hostAux.size() * sizeof(Out)),
            0);
  // And the product is not trivially equal: C changed.
  EXPECT_NE(std::memcmp(deviceC.data(), c0.data(), c0.size() * sizeof(Out)), 0);
}

TEST(CublasLt, PlanGemmsGiveTheHostExecutorsBytes) {
  std::unique_ptr<cuda::CublasLt> cublas = loadFake();
  ASSERT_TRUE(cublas);
  using E = plan::GemmEpilogue;
  using D = plan::DType;
  // Odd shapes, every transpose, batches with and without a broadcast B,
  // alpha and beta, and each epilogue (widths multiples of 8 for aux).
  std::vector<Case> cases = {
      {7, 5, 3, 1, false, false, false, 1, 0, D::F32, D::F32, E::None, false},
      {7, 5, 3, 1, true, false, false, 0.5, 1, D::F32, D::F32, E::None, false},
      {7, 5, 3, 1, false, true, false, 1, 0, D::F32, D::F32, E::None, false},
      {6, 9, 4, 1, true, true, false, 2, 0.5, D::F32, D::F32, E::None, false},
      {4, 6, 5, 3, false, true, false, 1, 0, D::F32, D::F32, E::None, false},
      {4, 6, 5, 3, true, false, true, 1, 1, D::F32, D::F32, E::None, false},
      {9, 16, 7, 1, false, false, false, 1, 0, D::F32, D::F32, E::Bias, false},
      {9, 16, 7, 1, false, true, false, 1, 0, D::F32, D::F32, E::Gelu, true},
      {9, 16, 7, 1, false, false, false, 1, 0, D::F32, D::F32, E::Gelu, false},
      {9, 16, 7, 2, true, false, false, 1, 0, D::F32, D::F32, E::BiasGelu,
       true},
      {9, 16, 7, 1, false, false, false, 1, 0, D::F32, D::F32, E::BiasGelu,
       false},
      {9, 16, 7, 1, false, true, false, 1, 0, D::F32, D::F32, E::DGelu, true},
      {16, 24, 11, 1, true, false, false, 1, 0, D::F32, D::F32, E::BiasGrad,
       false},
      {16, 24, 11, 1, true, true, false, 1, 1, D::F32, D::F32, E::BiasGrad,
       false},
  };
  for (const Case &c : cases)
    checkCase<float, float>(*cublas, c);
  checkCase<double, double>(*cublas, {5, 8, 6, 2, true, false, false, 1, 0,
                                      D::F64, D::F64, E::Bias, false});
  // bf16 operands: the same bits through both (converted alike).
  Case bf16{8, 16, 9,       1,      false,   true, false,
            1, 0,  D::BF16, D::F32, E::Bias, false};
  checkCase<uint16_t, float>(*cublas, bf16);
}

TEST(CublasLt, RefusalsAndFailuresAreNamed) {
  {
    ScopedEnvironment library("KILN_LIBCUBLASLT",
                              "/nonexistent/libcublasLt.so");
    std::string error;
    EXPECT_EQ(cuda::CublasLt::load(error), nullptr);
    EXPECT_EQ(error.rfind("no cuBLASLt: /nonexistent/libcublasLt.so cannot be "
                          "loaded (",
                          0),
              0u)
        << error;
  }
  std::unique_ptr<cuda::CublasLt> cublas = loadFake();
  ASSERT_TRUE(cublas);
  auto prepare = [&](plan::DType ab, plan::DType c, int64_t n,
                     plan::GemmEpilogue epilogue, bool aux) {
    CallBuffer built;
    built.fbb.Finish(plan::CreateGemmCall(built.fbb, 0, 1, 2, 4, n, 4, 1, false,
                                          false, 4, n, n, 0, 0, 0, 1, 0, c, 0,
                                          0, ab, epilogue, -1, aux ? 3 : -1));
    std::unique_ptr<cuda::LtGemm> gemm;
    return cublas->prepare(
        *flatbuffers::GetRoot<plan::GemmCall>(built.fbb.GetBufferPointer()), 0,
        1, gemm);
  };
  EXPECT_EQ(prepare(plan::DType::F16, plan::DType::F32, 8,
                    plan::GemmEpilogue::None, false),
            "");
  EXPECT_EQ(prepare(plan::DType::BF16, plan::DType::F16, 8,
                    plan::GemmEpilogue::None, false),
            "cuBLASLt: a GEMM of BF16 x BF16 -> F16 (the cuda device computes "
            "f32, f64, and bf16 x bf16 or f16 x f16 -> f32 or the operands' "
            "type)");
  EXPECT_EQ(prepare(plan::DType::F32, plan::DType::F16, 8,
                    plan::GemmEpilogue::None, false),
            "cuBLASLt: a GEMM of F32 x F32 -> F16 (the cuda device computes "
            "f32, f64, and bf16 x bf16 or f16 x f16 -> f32 or the operands' "
            "type)");
  // bf16 x bf16 -> bf16 and f16 x f16 -> f16 (mixed precision's GEMMs): f32
  // compute and scale, which the fake checks; without an epilogue only.
  for (plan::DType half : {plan::DType::BF16, plan::DType::F16}) {
    EXPECT_EQ(prepare(half, half, 8, plan::GemmEpilogue::None, false), "");
    EXPECT_EQ(prepare(half, half, 8, plan::GemmEpilogue::Bias, false),
              "cuBLASLt: the epilogue Bias of a GEMM with a 16-bit C (the "
              "compiler folds epilogues into f32 GEMMs only)");
  }
  // An aux matrix 6 wide: its leading dimension is not a multiple of 8.
  std::string refused = prepare(plan::DType::F32, plan::DType::F32, 6,
                                plan::GemmEpilogue::Gelu, true);
  EXPECT_NE(refused.find("cublasLtMatmulAlgoGetHeuristic: "
                         "CUBLAS_STATUS_INVALID_VALUE"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("cuBLASLt m=6 n=4 k=4 A B epilogue Gelu"),
            std::string::npos)
      << refused;
  ScopedEnvironment fail("KILN_FAKE_CUBLASLT_FAIL", "cublasLtCreate=3");
  ScopedEnvironment library("KILN_LIBCUBLASLT", KILN_FAKE_CUBLASLT);
  std::string error;
  EXPECT_EQ(cuda::CublasLt::load(error), nullptr);
  EXPECT_EQ(error, std::string(KILN_FAKE_CUBLASLT) +
                       ": cublasLtCreate: CUBLAS_STATUS_ALLOC_FAILED "
                       "(unknown error)");
}

} // namespace
