//===- FakeCublasLt.cpp - cuBLASLt for machines without a GPU -------------===//
//
// Part of Kiln's tests. A stand-in for libcublasLt.so.13, loaded through
// KILN_LIBCUBLASLT=<this library>: the entry points the runtime calls, on
// host memory (the fake driver's device memory). A matmul is read as
// cuBLASLt defines it, column-major D = alpha op(A) op(B) + beta C, and
// computed as its row-major transpose by the host executor's reference
// GEMM and epilogues (runtime/src/devices/cpu/ReferenceGemm.cpp,
// runtime/src/runtime/GemmEpilogue.cpp), so that a run through it is bit
// for bit the host executor's. It refuses what the real library refuses
// (an auxiliary leading dimension not a multiple of 8 or below D's rows, a
// missing bias or aux pointer, unsupported types) and, with
// CUBLAS_STATUS_NOT_SUPPORTED, what it does not model (C apart from D,
// BGRADB, an aux matrix laid out unlike D, a batched bias gradient).
// KILN_FAKE_CUBLASLT_FAIL=F=S makes entry point F return status S.
//
//===----------------------------------------------------------------------===//

#include "GemmEpilogue.h"
#include "devices/cpu/GemmLibrary.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <thread>

using namespace kiln;

namespace {
using Status = int;
constexpr Status kSuccess = 0, kNotInitialized = 1, kInvalidValue = 7,
                 kExecutionFailed = 13, kNotSupported = 15;

struct Handle {
  int magic = 0x4c74;
};
struct Desc {
  int compute = 0, scale = 0;
  int32_t transA = 0, transB = 0;
  uint32_t epilogue = 1;
  void *bias = nullptr, *aux = nullptr;
  int64_t auxLd = 0, auxStride = 0;
};
struct Layout {
  int type = 0;
  uint64_t rows = 0, columns = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Preference {
  uint64_t workspace = 0;
};

Status injected(const char *function) {
  const char *fail = std::getenv("KILN_FAKE_CUBLASLT_FAIL");
  size_t length = std::strlen(function);
  if (!fail || std::strncmp(fail, function, length) != 0 || fail[length] != '=')
    return kSuccess;
  return std::atoi(fail + length + 1);
}

template <typename T> bool read(const void *value, size_t bytes, T &into) {
  if (!value || bytes != sizeof(T))
    return false;
  std::memcpy(&into, value, sizeof(T));
  return true;
}

/// The plan epilogue a cuBLASLt one computes, with whether it takes a bias
/// and an aux matrix; false for what the fake does not model.
bool toPlanEpilogue(uint32_t epilogue, plan::GemmEpilogue &kind, bool &bias,
                    bool &aux) {
  using Kind = plan::GemmEpilogue;
  bias = aux = false;
  switch (epilogue) {
  case 1:
    kind = Kind::None;
    return true;
  case 4:
    kind = Kind::Bias;
    bias = true;
    return true;
  case 32:
    kind = Kind::Gelu;
    return true;
  case 160:
    kind = Kind::Gelu;
    aux = true;
    return true;
  case 36:
    kind = Kind::BiasGelu;
    bias = true;
    return true;
  case 164:
    kind = Kind::BiasGelu;
    bias = aux = true;
    return true;
  case 192:
    kind = Kind::DGelu;
    aux = true;
    return true;
  case 256: // BGRADA: over the k columns of op(A).
    kind = Kind::BiasGrad;
    bias = true;
    return true;
  default:
    return false;
  }
}

/// What the problem is, or why not: cuBLASLt's checks, then the fake's.
struct Problem {
  cpu::GemmTypes types = cpu::GemmTypes::F32;
  uint64_t m = 0, n = 0, k = 0;
  plan::GemmEpilogue epilogue = plan::GemmEpilogue::None;
  bool bias = false, aux = false;
  size_t cBytes = 4, abBytes = 4;
};

Status describe(const Desc &desc, const Layout &a, const Layout &b,
                const Layout &c, const Layout &d, Problem &problem) {
  if (a.type == 0 && b.type == 0 && d.type == 0 && desc.compute == 68)
    problem.types = cpu::GemmTypes::F32;
  else if (a.type == 1 && b.type == 1 && d.type == 1 && desc.compute == 70)
    problem.types = cpu::GemmTypes::F64;
  else if (a.type == 14 && b.type == 14 && d.type == 0 && desc.compute == 68)
    problem.types = cpu::GemmTypes::BF16_F32;
  else if (a.type == 14 && b.type == 14 && d.type == 14 && desc.compute == 68)
    problem.types = cpu::GemmTypes::BF16;
  else if (a.type == 2 && b.type == 2 && d.type == 0 && desc.compute == 68)
    problem.types = cpu::GemmTypes::F16_F32;
  else if (a.type == 2 && b.type == 2 && d.type == 2 && desc.compute == 68)
    problem.types = cpu::GemmTypes::F16;
  else
    return kNotSupported;
  // The scale type (alpha, beta) of each compute type, as cuBLASLt's table.
  if (desc.scale != (desc.compute == 70 ? 1 : 0))
    return kNotSupported;
  problem.cBytes = cpu::gemmResultBytes(problem.types);
  problem.abBytes = cpu::gemmOperandBytes(problem.types);
  problem.m = d.rows;
  problem.n = d.columns;
  problem.k = desc.transA ? a.rows : a.columns;
  uint64_t aRows = desc.transA ? a.columns : a.rows;
  uint64_t bRows = desc.transB ? b.columns : b.rows;
  uint64_t bColumns = desc.transB ? b.rows : b.columns;
  if (aRows != problem.m || bRows != problem.k || bColumns != problem.n ||
      c.rows != d.rows || c.columns != d.columns)
    return kInvalidValue;
  for (const Layout *layout : {&a, &b, &d})
    if (layout->ld < static_cast<int64_t>(layout->rows ? layout->rows : 1))
      return kInvalidValue;
  if (a.batch != d.batch || b.batch != d.batch || c.batch != d.batch)
    return kInvalidValue;
  if (!toPlanEpilogue(desc.epilogue, problem.epilogue, problem.bias,
                      problem.aux))
    return kNotSupported;
  if (problem.aux) {
    if (desc.auxLd % 8 != 0 || desc.auxLd < static_cast<int64_t>(d.rows) ||
        (d.batch > 1 && desc.auxStride % 8 != 0))
      return kInvalidValue;
    // The host epilogue keeps aux with D's layout.
    if (desc.auxLd != d.ld || (d.batch > 1 && desc.auxStride != d.stride))
      return kNotSupported;
  }
  if (problem.epilogue == plan::GemmEpilogue::BiasGrad && d.batch > 1)
    return kNotSupported;
  return kSuccess;
}

const char *statusName(Status status) {
  switch (status) {
  case 0:
    return "CUBLAS_STATUS_SUCCESS";
  case 1:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case 13:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 15:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "CUBLAS_STATUS_UNKNOWN";
  }
}
} // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))

FAKE_API const char *cublasLtGetStatusName(Status status) {
  return statusName(status);
}

FAKE_API const char *cublasLtGetStatusString(Status status) {
  switch (status) {
  case 0:
    return "success";
  case 7:
    return "an invalid value was used as an argument";
  case 15:
    return "the functionality requested is not supported";
  default:
    return "unknown error";
  }
}

FAKE_API Status cublasLtCreate(Handle **handle) {
  if (Status status = injected("cublasLtCreate"))
    return status;
  *handle = new Handle();
  return kSuccess;
}

FAKE_API Status cublasLtDestroy(Handle *handle) {
  delete handle;
  return kSuccess;
}

FAKE_API Status cublasLtMatmulDescCreate(Desc **desc, int compute, int scale) {
  if (Status status = injected("cublasLtMatmulDescCreate"))
    return status;
  *desc = new Desc();
  (*desc)->compute = compute;
  (*desc)->scale = scale;
  return kSuccess;
}

FAKE_API Status cublasLtMatmulDescDestroy(Desc *desc) {
  delete desc;
  return kSuccess;
}

FAKE_API Status cublasLtMatmulDescSetAttribute(Desc *desc, int attribute,
                                               const void *value,
                                               size_t bytes) {
  bool ok = false;
  switch (attribute) {
  case 3:
    ok = read(value, bytes, desc->transA);
    break;
  case 4:
    ok = read(value, bytes, desc->transB);
    break;
  case 7:
    ok = read(value, bytes, desc->epilogue);
    break;
  case 8:
    ok = read(value, bytes, desc->bias);
    break;
  case 11:
    ok = read(value, bytes, desc->aux);
    break;
  case 12:
    ok = read(value, bytes, desc->auxLd);
    break;
  case 13:
    ok = read(value, bytes, desc->auxStride);
    break;
  default:
    return kNotSupported; // an attribute the fake does not model
  }
  return ok ? kSuccess : kInvalidValue;
}

FAKE_API Status cublasLtMatrixLayoutCreate(Layout **layout, int type,
                                           uint64_t rows, uint64_t columns,
                                           int64_t ld) {
  *layout = new Layout();
  (*layout)->type = type;
  (*layout)->rows = rows;
  (*layout)->columns = columns;
  (*layout)->ld = ld;
  return kSuccess;
}

FAKE_API Status cublasLtMatrixLayoutDestroy(Layout *layout) {
  delete layout;
  return kSuccess;
}

FAKE_API Status cublasLtMatrixLayoutSetAttribute(Layout *layout, int attribute,
                                                 const void *value,
                                                 size_t bytes) {
  if (attribute == 5)
    return read(value, bytes, layout->batch) ? kSuccess : kInvalidValue;
  if (attribute == 6)
    return read(value, bytes, layout->stride) ? kSuccess : kInvalidValue;
  return kNotSupported;
}

FAKE_API Status cublasLtMatmulPreferenceCreate(Preference **preference) {
  *preference = new Preference();
  return kSuccess;
}

FAKE_API Status cublasLtMatmulPreferenceDestroy(Preference *preference) {
  delete preference;
  return kSuccess;
}

FAKE_API Status cublasLtMatmulPreferenceSetAttribute(Preference *preference,
                                                     int attribute,
                                                     const void *value,
                                                     size_t bytes) {
  if (attribute != 1)
    return kNotSupported;
  return read(value, bytes, preference->workspace) ? kSuccess : kInvalidValue;
}

/// The heuristic's results: three algorithms (ids 1, 2, 3, needing no
/// workspace, computing the same bytes) for every problem the fake can
/// compute. KILN_FAKE_CUBLASLT_SLOW=ID makes algorithm ID take 5 ms more
/// per matmul, for the runtime's timed choice to avoid.
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

FAKE_API Status cublasLtMatmulAlgoGetHeuristic(
    Handle *handle, Desc *desc, Layout *a, Layout *b, Layout *c, Layout *d,
    Preference *preference, int requested, HeuristicResult *results,
    int *returned) {
  if (!handle || !desc || !a || !b || !c || !d || !preference)
    return kInvalidValue;
  if (Status status = injected("cublasLtMatmulAlgoGetHeuristic"))
    return status;
  Problem problem;
  if (Status status = describe(*desc, *a, *b, *c, *d, problem))
    return status;
  if (requested < 1)
    return kInvalidValue;
  *returned = requested < 3 ? requested : 3;
  for (int i = 0; i < *returned; ++i) {
    std::memset(&results[i], 0, sizeof results[i]);
    results[i].algo[0] = static_cast<uint64_t>(i + 1);
    results[i].state = kSuccess;
    results[i].wavesCount = 1;
  }
  return kSuccess;
}

/// One matmul as stream work: everything it reads from the call and the
/// descriptors, copied when it is issued (so that a graph replays the
/// values its capture saw, as the real library's kernels would).
struct MatmulWork {
  Problem problem;
  Desc desc;
  Layout a, b, d;
  double alpha = 0, beta = 0;
  const void *aData = nullptr, *bData = nullptr;
  void *dData = nullptr;
  uint64_t algo = 0;
};

static void computeMatmul(const void *payload) {
  const MatmulWork &work = *static_cast<const MatmulWork *>(payload);
  if (const char *slow = std::getenv("KILN_FAKE_CUBLASLT_SLOW"))
    if (static_cast<uint64_t>(std::atoi(slow)) == work.algo)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const Problem &problem = work.problem;
  std::string error;
  std::shared_ptr<const cpu::GemmLibrary> reference =
      cpu::getGemmLibrary("reference", error);
  // D (m x n, column-major) is the row-major n x m matrix C = op(B)^T
  // op(A)^T: B is the row-major problem's A, transposed where cuBLASLt's op
  // does not transpose it (and likewise A).
  for (int32_t entry = 0; entry < work.d.batch; ++entry) {
    cpu::GemmProblem row;
    row.types = problem.types;
    row.m = static_cast<int64_t>(problem.n);
    row.n = static_cast<int64_t>(problem.m);
    row.k = static_cast<int64_t>(problem.k);
    row.alpha = work.alpha;
    row.beta = work.beta;
    row.transposeA = work.desc.transB != 0;
    row.transposeB = work.desc.transA != 0;
    row.a = static_cast<const char *>(work.bData) +
            entry * work.b.stride * problem.abBytes;
    row.lda = work.b.ld;
    row.b = static_cast<const char *>(work.aData) +
            entry * work.a.stride * problem.abBytes;
    row.ldb = work.a.ld;
    row.c = static_cast<char *>(work.dData) +
            entry * work.d.stride * problem.cBytes;
    row.ldc = work.d.ld;
    if (row.m > 0 && row.n > 0)
      reference->run(row);
    GemmEpilogueTile tile;
    tile.kind = problem.epilogue;
    tile.bias = work.desc.bias;
    tile.aux = work.desc.aux ? static_cast<char *>(work.desc.aux) +
                                   entry * work.desc.auxStride * problem.cBytes
                             : nullptr;
    tile.firstRow = true;
    applyGemmEpilogue(row, tile);
  }
}

/// The fake driver's kiln_fake_cuda_enqueue, when it is the driver loaded
/// (KILN_LIBCUDA): the way onto its streams.
using Enqueue = int (*)(void *stream, void (*run)(const void *),
                        const void *payload, size_t bytes);
static Enqueue findFakeDriver() {
  const char *path = std::getenv("KILN_LIBCUDA");
  void *driver = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return driver ? reinterpret_cast<Enqueue>(
                      dlsym(driver, "kiln_fake_cuda_enqueue"))
                : nullptr;
}

FAKE_API Status cublasLtMatmul(Handle *handle, Desc *desc, const void *alpha,
                               const void *aData, Layout *a, const void *bData,
                               Layout *b, const void *beta, const void *cData,
                               Layout *c, void *dData, Layout *d,
                               const uint64_t *algo, void *workspace,
                               size_t workspaceBytes, void *stream) {
  (void)workspace;
  (void)workspaceBytes;
  if (!handle)
    return kNotInitialized;
  if (!desc || !alpha || !beta || !aData || !bData || !cData || !dData || !algo)
    return kInvalidValue;
  if (Status status = injected("cublasLtMatmul"))
    return status;
  MatmulWork work;
  if (Status status = describe(*desc, *a, *b, *c, *d, work.problem))
    return status;
  if ((work.problem.bias && !desc->bias) || (work.problem.aux && !desc->aux))
    return kInvalidValue;
  if (cData != dData || c->ld != d->ld || c->stride != d->stride)
    return kNotSupported;
  std::string error;
  if (!cpu::getGemmLibrary("reference", error))
    return kNotSupported;
  bool f64 = work.problem.types == cpu::GemmTypes::F64;
  work.desc = *desc;
  work.a = *a;
  work.b = *b;
  work.d = *d;
  work.alpha = f64 ? *static_cast<const double *>(alpha)
                   : *static_cast<const float *>(alpha);
  work.beta = f64 ? *static_cast<const double *>(beta)
                  : *static_cast<const float *>(beta);
  work.aData = aData;
  work.bData = bData;
  work.dData = dData;
  work.algo = algo[0];
  if (work.algo < 1 || work.algo > 3)
    return kInvalidValue;
  if (!stream) {
    computeMatmul(&work);
    return kSuccess;
  }
  // A stream is the fake driver's: the matmul runs as its work, in order.
  Enqueue enqueue = findFakeDriver();
  if (!enqueue)
    return kExecutionFailed;
  return enqueue(stream, computeMatmul, &work, sizeof work) == 0
             ? kSuccess
             : kExecutionFailed;
}
