//===- OneDnnGemm.cpp - GEMMs through oneDNN ------------------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// oneDNN generates its kernels for the CPU's features at run time (AVX-512
// f32 GEMMs, AVX512-BF16 and AMX bf16 matmuls), so its speed does not hang
// on a table of CPU models. f32 goes through dnnl_sgemm; bf16 x bf16 -> f32
// or bf16 and f16 x f16 -> f16 through a matmul primitive (fp32
// accumulation), created once per shape and kept, since creating one costs a
// fraction of a millisecond. Where oneDNN makes no such matmul (bf16 on a
// CPU without AVX-512; f16 wherever this oneDNN has no f16 kernels) those
// GEMMs widen A and B to f32 (exactly) and run dnnl_sgemm, the same products
// accumulated in f32, C rounded once, and isa() says so. oneDNN has no f64
// GEMM: those go to the next library built in.
//
// Debian's oneDNN threads with OpenMP (libgomp). Each thread that calls it
// limits its own OpenMP team to one thread, so oneDNN computes on the
// calling thread and no OpenMP workers spin beside the session's pool.
//
//===----------------------------------------------------------------------===//

#include "GemmLibrary.h"

#include <oneapi/dnnl/dnnl.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

extern "C" void omp_set_num_threads(int);

using namespace kiln;
using namespace kiln::cpu;

namespace {

/// Makes the calling thread's oneDNN calls single-threaded, once per thread.
void useOneThreadHere() {
  thread_local bool done = (omp_set_num_threads(1), true);
  (void)done;
}

const char *isaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41:
    return "sse41";
  case dnnl_cpu_isa_avx:
    return "avx";
  case dnnl_cpu_isa_avx2:
    return "avx2";
  case dnnl_cpu_isa_avx2_vnni:
    return "avx2_vnni";
  case dnnl_cpu_isa_avx512_mic:
  case dnnl_cpu_isa_avx512_mic_4ops:
    return "avx512_mic";
  case dnnl_cpu_isa_avx512_core:
    return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx:
    return "avx512_core_amx";
  default:
    return "generic";
  }
}

/// oneDNN's ISA on cpuIsaRank's scale.
int isaRank(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_avx2:
  case dnnl_cpu_isa_avx2_vnni:
    return 1;
  case dnnl_cpu_isa_avx512_core:
  case dnnl_cpu_isa_avx512_core_vnni:
    return 2;
  case dnnl_cpu_isa_avx512_core_bf16:
    return 3;
  case dnnl_cpu_isa_avx512_core_amx:
    return 4;
  default:
    return 0;
  }
}

/// What identifies a bf16 matmul primitive (C's type, then the problem).
using MatmulKey = std::tuple<GemmTypes, bool, bool, int64_t, int64_t, int64_t,
                             int64_t, int64_t, int64_t, double, double>;

#if defined(__x86_64__)
/// IEEE halves to floats and back (round to nearest even) with the F16C
/// instructions, 8 at a time: the scalar conversions cost more than the
/// GEMM they feed. The same values as halfToFloat and floatToHalf (a NaN
/// stays a NaN, its payload aside).
__attribute__((target("avx,f16c"))) void halvesToFloatsF16c(
    const uint16_t *in, float *out, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(in + i))));
  for (; i < count; ++i)
    out[i] = halfToFloat(in[i]);
}
__attribute__((target("avx,f16c"))) void floatsToHalvesF16c(const float *in,
                                                           uint16_t *out,
                                                           int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                     _MM_FROUND_TO_NEAREST_INT |
                                         _MM_FROUND_NO_EXC));
  for (; i < count; ++i)
    out[i] = floatToHalf(in[i]);
}
bool hasF16c() {
  static const bool has = __builtin_cpu_supports("f16c");
  return has;
}
#endif

/// `count` halves or bf16s (`half` says which) widened to floats.
void widenRow(const uint16_t *in, float *out, int64_t count, bool half) {
#if defined(__x86_64__)
  if (half && hasF16c())
    return halvesToFloatsF16c(in, out, count);
#endif
  for (int64_t i = 0; i < count; ++i)
    out[i] = half ? halfToFloat(in[i]) : bf16ToFloat(in[i]);
}

/// `count` floats rounded to halves or bf16s.
void narrowRow(const float *in, uint16_t *out, int64_t count, bool half) {
#if defined(__x86_64__)
  if (half && hasF16c())
    return floatsToHalvesF16c(in, out, count);
#endif
  for (int64_t i = 0; i < count; ++i)
    out[i] = half ? floatToHalf(in[i]) : floatToBf16(in[i]);
}

/// The 16-bit elements (bf16, or IEEE halves with `half`) of a `rows` x
/// `columns` matrix with leading dim `ld`, widened into `wide` (leading dim
/// `columns`).
void widenHalves(const void *matrix, int64_t rows, int64_t columns, int64_t ld,
                 bool half, std::vector<float> &wide) {
  wide.resize(static_cast<size_t>(rows * columns));
  const auto *bits = static_cast<const uint16_t *>(matrix);
  for (int64_t r = 0; r < rows; ++r)
    widenRow(bits + r * ld, wide.data() + r * columns, columns, half);
}

/// oneDNN's type of A and B, and of C, in a GEMM of `types` (not F32/F64).
dnnl_data_type_t operandType(GemmTypes types) {
  return gemmOperandsAreHalves(types) ? dnnl_f16 : dnnl_bf16;
}
dnnl_data_type_t resultType(GemmTypes types) {
  return gemmResultBytes(types) == 2 ? operandType(types) : dnnl_f32;
}

struct Matmul {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_desc_t a, b, c, scratchpad;
  size_t scratchpadBytes = 0;
};

/// A oneDNN stream of the calling thread, destroyed when the thread ends.
struct ThreadStream {
  dnnl_stream_t stream = nullptr;
  ~ThreadStream() {
    if (stream)
      dnnl_stream_destroy(stream);
  }
};

class OneDnnGemm final : public GemmLibrary {
public:
  OneDnnGemm() {
    if (dnnl_engine_create(&engine_, dnnl_cpu, 0) != dnnl_success)
      engine_ = nullptr;
  }
  ~OneDnnGemm() override {
    for (auto &entry : matmuls_)
      dnnl_primitive_destroy(entry.second.primitive);
    if (engine_)
      dnnl_engine_destroy(engine_);
  }
  const char *name() const override { return "onednn"; }
  std::string version() const override {
    const dnnl_version_t *v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." +
           std::to_string(v->minor) + "." + std::to_string(v->patch);
  }
  std::string isa() const override {
    std::string isa = isaName(dnnl_get_effective_cpu_isa());
    if (!hasMatmul(GemmTypes::BF16_F32))
      isa += "; bf16 widened to f32";
    return isa;
  }
  std::string typesNote(GemmTypes types) const override {
    return gemmOperandsAreHalves(types) && !hasMatmul(types) ? "widened to f32"
                                                             : "";
  }
  /// Before 3.11 its JIT f32 GEMM points rsp into a heap buffer (oneDNN
  /// issue #4845): a signal delivered meanwhile corrupts the heap.
  bool movesStackPointer() const override {
    return dnnl_version()->major < 3 ||
           (dnnl_version()->major == 3 && dnnl_version()->minor < 11);
  }
  bool supports(GemmTypes types) const override {
    if (types == GemmTypes::F32)
      return true;
    return types != GemmTypes::F64 && engine_;
  }
  std::string fallbackWarning() const override {
    int cpu = cpuIsaRank();
    dnnl_cpu_isa_t effective = dnnl_get_effective_cpu_isa();
    if (isaRank(effective) >= cpu)
      return "";
    std::string cap;
    if (const char *limit = std::getenv("ONEDNN_MAX_CPU_ISA"))
      cap = std::string(" (ONEDNN_MAX_CPU_ISA=") + limit + ")";
    else if (const char *limit = std::getenv("DNNL_MAX_CPU_ISA"))
      cap = std::string(" (DNNL_MAX_CPU_ISA=") + limit + ")";
    return std::string("oneDNN runs its '") + isaName(effective) + "' kernels" +
           cap + " on this CPU, which has " + cpuIsaRankName(cpu) +
           ": GEMMs are slower than they could be";
  }
  void run(const GemmProblem &p) const override {
    if (p.m <= 0 || p.n <= 0)
      return;
    useOneThreadHere();
    if (p.types == GemmTypes::F32) {
      dnnl_status_t status = dnnl_sgemm(
          p.transposeA ? 'T' : 'N', p.transposeB ? 'T' : 'N', p.m, p.n, p.k,
          static_cast<float>(p.alpha), static_cast<const float *>(p.a),
          p.lda > 0 ? p.lda : 1, static_cast<const float *>(p.b),
          p.ldb > 0 ? p.ldb : 1, static_cast<float>(p.beta),
          static_cast<float *>(p.c), p.ldc > 0 ? p.ldc : 1);
      check(status, "dnnl_sgemm");
      return;
    }
    runMatmul(p);
  }
  std::string prepare(const GemmProblem &p) const override {
    if (p.types == GemmTypes::F32 || p.m <= 0 || p.n <= 0 ||
        !hasMatmul(p.types))
      return "";
    const Matmul *found = nullptr;
    return findMatmul(p, found);
  }

private:
  /// Whether oneDNN makes matmuls of 16-bit `types` on this CPU (bf16 needs
  /// AVX-512, f16 AVX512-FP16 and a oneDNN that knows it), tried once on a
  /// small one for bf16 and once for f16.
  bool hasMatmul(GemmTypes types) const {
    std::call_once(probed_, [&] {
      if (!engine_)
        return;
      GemmProblem probe;
      probe.m = probe.n = probe.k = 2;
      probe.lda = probe.ldb = probe.ldc = 2;
      const Matmul *found = nullptr;
      probe.types = GemmTypes::BF16_F32;
      bf16Matmul_ = findMatmul(probe, found).empty();
      probe.types = GemmTypes::F16;
      f16Matmul_ = findMatmul(probe, found).empty();
    });
    return gemmOperandsAreHalves(types) ? f16Matmul_ : bf16Matmul_;
  }

  /// bf16 x bf16 -> f32 or bf16, or f16 x f16 -> f16, as an f32 GEMM of the
  /// widened operands (and of C widened, and rounded back, for a 16-bit C).
  void runWidened(const GemmProblem &p) const {
    thread_local std::vector<float> a, b, c;
    int64_t aRows = p.transposeA ? p.k : p.m,
            aColumns = p.transposeA ? p.m : p.k;
    int64_t bRows = p.transposeB ? p.n : p.k,
            bColumns = p.transposeB ? p.k : p.n;
    bool half = gemmOperandsAreHalves(p.types);
    widenHalves(p.a, aRows, aColumns, p.lda, half, a);
    widenHalves(p.b, bRows, bColumns, p.ldb, half, b);
    bool narrowC = gemmResultBytes(p.types) == 2;
    if (narrowC)
      widenHalves(p.c, p.m, p.n, p.ldc, half, c);
    float *target = narrowC ? c.data() : static_cast<float *>(p.c);
    int64_t ldTarget = narrowC ? p.n : p.ldc;
    check(dnnl_sgemm(p.transposeA ? 'T' : 'N', p.transposeB ? 'T' : 'N', p.m,
                     p.n, p.k, static_cast<float>(p.alpha), a.data(),
                     std::max<int64_t>(aColumns, 1), b.data(),
                     std::max<int64_t>(bColumns, 1), static_cast<float>(p.beta),
                     target, std::max<int64_t>(ldTarget, 1)),
          "dnnl_sgemm (16-bit widened)");
    if (narrowC)
      for (int64_t r = 0; r < p.m; ++r)
        narrowRow(c.data() + r * p.n, static_cast<uint16_t *>(p.c) + r * p.ldc,
                  p.n, half);
  }

  /// Aborts on a failed call while a step runs: prepare() created every
  /// primitive and the shapes were validated when the plan was loaded, so a
  /// failure here is a broken invariant, not bad input.
  static void check(dnnl_status_t status, const char *call) {
    if (status == dnnl_success)
      return;
    std::fprintf(stderr, "kiln: %s failed with oneDNN status %d\n", call,
                 static_cast<int>(status));
    std::abort();
  }

  /// The primitive of `p`, created on first use; an error message when
  /// oneDNN cannot create it.
  std::string findMatmul(const GemmProblem &p, const Matmul *&found) const {
    MatmulKey key{p.types, p.transposeA, p.transposeB, p.m,     p.n,   p.k,
                  p.lda,   p.ldb,        p.ldc,        p.alpha, p.beta};
    std::lock_guard<std::mutex> lock(mutex_);
    auto cached = matmuls_.find(key);
    if (cached != matmuls_.end()) {
      found = &cached->second;
      return "";
    }
    Matmul matmul;
    dnnl_dims_t aDims = {p.m, p.k}, bDims = {p.k, p.n}, cDims = {p.m, p.n};
    dnnl_dims_t aStrides = {p.transposeA ? 1 : p.lda, p.transposeA ? p.lda : 1};
    dnnl_dims_t bStrides = {p.transposeB ? 1 : p.ldb, p.transposeB ? p.ldb : 1};
    dnnl_dims_t cStrides = {p.ldc, 1};
    check(dnnl_memory_desc_init_by_strides(&matmul.a, 2, aDims,
                                           operandType(p.types), aStrides),
          "dnnl_memory_desc_init_by_strides");
    check(dnnl_memory_desc_init_by_strides(&matmul.b, 2, bDims,
                                           operandType(p.types), bStrides),
          "dnnl_memory_desc_init_by_strides");
    check(dnnl_memory_desc_init_by_strides(&matmul.c, 2, cDims,
                                           resultType(p.types), cStrides),
          "dnnl_memory_desc_init_by_strides");
    dnnl_matmul_desc_t desc;
    check(
        dnnl_matmul_desc_init(&desc, &matmul.a, &matmul.b, nullptr, &matmul.c),
        "dnnl_matmul_desc_init");
    dnnl_primitive_attr_t attr;
    check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    check(dnnl_primitive_attr_set_scratchpad_mode(attr,
                                                  dnnl_scratchpad_mode_user),
          "dnnl_primitive_attr_set_scratchpad_mode");
    if (p.alpha != 1.0) {
      float alpha = static_cast<float>(p.alpha);
      check(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha),
            "dnnl_primitive_attr_set_output_scales");
    }
    dnnl_post_ops_t postOps = nullptr;
    if (p.beta != 0.0) {
      check(dnnl_post_ops_create(&postOps), "dnnl_post_ops_create");
      check(dnnl_post_ops_append_sum(postOps, static_cast<float>(p.beta)),
            "dnnl_post_ops_append_sum");
      check(dnnl_primitive_attr_set_post_ops(attr, postOps),
            "dnnl_primitive_attr_set_post_ops");
    }
    dnnl_primitive_desc_t pd;
    dnnl_status_t created =
        dnnl_primitive_desc_create(&pd, &desc, attr, engine_, nullptr);
    if (created != dnnl_success) {
      if (postOps)
        dnnl_post_ops_destroy(postOps);
      dnnl_primitive_attr_destroy(attr);
      return std::string("oneDNN has no ") + gemmTypesName(p.types) +
             " matmul for " + std::to_string(p.m) + "x" +
             std::to_string(p.n) + "x" + std::to_string(p.k) + " (status " +
             std::to_string(static_cast<int>(created)) + ")";
    }
    matmul.scratchpad =
        *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    matmul.scratchpadBytes = dnnl_memory_desc_get_size(&matmul.scratchpad);
    check(dnnl_primitive_create(&matmul.primitive, pd),
          "dnnl_primitive_create");
    dnnl_primitive_desc_destroy(pd);
    if (postOps)
      dnnl_post_ops_destroy(postOps);
    dnnl_primitive_attr_destroy(attr);
    found = &matmuls_.emplace(key, matmul).first->second;
    return "";
  }

  void runMatmul(const GemmProblem &p) const {
    if (!hasMatmul(p.types)) {
      runWidened(p);
      return;
    }
    const Matmul *found = nullptr;
    std::string error = findMatmul(p, found);
    if (!error.empty()) {
      std::fprintf(stderr, "kiln: %s\n", error.c_str());
      std::abort();
    }
    const Matmul &matmul = *found;
    thread_local ThreadStream stream;
    thread_local std::vector<char> scratchpad;
    if (!stream.stream)
      check(dnnl_stream_create(&stream.stream, engine_,
                               dnnl_stream_default_flags),
            "dnnl_stream_create");
    if (scratchpad.size() < matmul.scratchpadBytes)
      scratchpad.resize(matmul.scratchpadBytes);
    dnnl_memory_t a, b, c, pad;
    check(dnnl_memory_create(&a, &matmul.a, engine_, const_cast<void *>(p.a)),
          "dnnl_memory_create");
    check(dnnl_memory_create(&b, &matmul.b, engine_, const_cast<void *>(p.b)),
          "dnnl_memory_create");
    check(dnnl_memory_create(&c, &matmul.c, engine_, p.c),
          "dnnl_memory_create");
    check(dnnl_memory_create(&pad, &matmul.scratchpad, engine_,
                             scratchpad.data()),
          "dnnl_memory_create");
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, a},
                              {DNNL_ARG_WEIGHTS, b},
                              {DNNL_ARG_DST, c},
                              {DNNL_ARG_SCRATCHPAD, pad}};
    check(dnnl_primitive_execute(matmul.primitive, stream.stream, 4, args),
          "dnnl_primitive_execute (16-bit matmul)");
    check(dnnl_stream_wait(stream.stream), "dnnl_stream_wait");
    dnnl_memory_destroy(a);
    dnnl_memory_destroy(b);
    dnnl_memory_destroy(c);
    dnnl_memory_destroy(pad);
  }

  dnnl_engine_t engine_ = nullptr;
  mutable std::once_flag probed_;
  mutable bool bf16Matmul_ = false, f16Matmul_ = false;
  mutable std::mutex mutex_;
  mutable std::map<MatmulKey, Matmul> matmuls_;
};

} // namespace

std::shared_ptr<const GemmLibrary> kiln::cpu::createOneDnnGemm() {
  return std::make_shared<OneDnnGemm>();
}
