//===- CublasLt.cpp - A plan's GEMMs through cuBLASLt ---------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"

#include <algorithm>

#include <cstdlib>

using namespace kiln;
using namespace kiln::cuda;

LtGemm::~LtGemm() {
  for (lt::Layout layout : {a_, b_, d_})
    if (layout)
      api_.layoutDestroy(layout);
  if (desc_)
    api_.descDestroy(desc_);
}

CublasLt::~CublasLt() {
  if (handle_)
    api_.destroy(handle_);
}

std::unique_ptr<CublasLt> CublasLt::load(std::string &error) {
  std::unique_ptr<CublasLt> library(new CublasLt());
  const char *chosen = std::getenv("KILN_LIBCUBLASLT");
  library->path_ = chosen && *chosen ? chosen : "libcublasLt.so.13";
  std::string reason;
  if (!library->library_.open(library->path_, reason)) {
    error =
        "no cuBLASLt: " + library->path_ + " cannot be loaded (" + reason + ")";
    return nullptr;
  }
  CublasLtApi &api = library->api_;
  bool found = true;
  auto take = [&](const char *symbol, auto &function) {
    if (!library->library_.resolve(symbol, function) && found) {
      error = library->path_ + " has no " + symbol;
      found = false;
    }
  };
  take("cublasLtCreate", api.create);
  take("cublasLtDestroy", api.destroy);
  take("cublasLtMatmulDescCreate", api.descCreate);
  take("cublasLtMatmulDescDestroy", api.descDestroy);
  take("cublasLtMatmulDescSetAttribute", api.descSetAttribute);
  take("cublasLtMatrixLayoutCreate", api.layoutCreate);
  take("cublasLtMatrixLayoutDestroy", api.layoutDestroy);
  take("cublasLtMatrixLayoutSetAttribute", api.layoutSetAttribute);
  take("cublasLtMatmulPreferenceCreate", api.preferenceCreate);
  take("cublasLtMatmulPreferenceDestroy", api.preferenceDestroy);
  take("cublasLtMatmulPreferenceSetAttribute", api.preferenceSetAttribute);
  take("cublasLtMatmulAlgoGetHeuristic", api.heuristic);
  take("cublasLtMatmul", api.matmul);
  take("cublasLtGetStatusName", api.statusName);
  take("cublasLtGetStatusString", api.statusString);
  if (!found)
    return nullptr;
  if (lt::Status status = api.create(&library->handle_);
      status != lt::kSuccess) {
    library->handle_ = nullptr;
    error = library->path_ + ": " +
            library->describeError("cublasLtCreate", status);
    return nullptr;
  }
  return library;
}

std::string CublasLt::describeError(const char *call, lt::Status status) const {
  const char *name = api_.statusName ? api_.statusName(status) : nullptr;
  const char *text = api_.statusString ? api_.statusString(status) : nullptr;
  std::string message =
      std::string(call) + ": " +
      (name ? name : "cuBLAS status " + std::to_string(status));
  if (text)
    message += std::string(" (") + text + ")";
  return message;
}

namespace {
/// cuBLASLt's data type of a plan's element type, or -1.
int getDataType(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::F32:
    return lt::kR32F;
  case plan::DType::F64:
    return lt::kR64F;
  case plan::DType::BF16:
    return lt::kR16BF;
  case plan::DType::F16:
    return lt::kR16F;
  default:
    return -1;
  }
}

/// The cuBLASLt epilogue of a plan's (with or without its aux output).
int getEpilogue(plan::GemmEpilogue epilogue, bool aux) {
  switch (epilogue) {
  case plan::GemmEpilogue::None:
    return lt::kEpilogueDefault;
  case plan::GemmEpilogue::Bias:
    return lt::kEpilogueBias;
  case plan::GemmEpilogue::Gelu:
    return aux ? lt::kEpilogueGeluAux : lt::kEpilogueGelu;
  case plan::GemmEpilogue::BiasGelu:
    return aux ? lt::kEpilogueGeluAuxBias : lt::kEpilogueGeluBias;
  case plan::GemmEpilogue::DGelu:
    return lt::kEpilogueDGelu;
  case plan::GemmEpilogue::BiasGrad:
    // The sum over the k rows of the plan's op(B), which is cuBLASLt's A.
    return lt::kEpilogueBGradA;
  }
  return -1;
}
} // namespace

std::string CublasLt::prepare(const plan::GemmCall &call, size_t workspaceBytes,
                              int candidates,
                              std::unique_ptr<LtGemm> &gemm) const {
  int abType = getDataType(call.ab_dtype()), cType = getDataType(call.dtype());
  bool f64 = call.dtype() == plan::DType::F64;
  // f32, f64, and bf16 x bf16 or f16 x f16 -> f32 or the operands' type
  // (f32 accumulation and scale).
  bool halfC = cType == lt::kR16BF || cType == lt::kR16F;
  bool typesOk = abType >= 0 && cType >= 0 &&
                 (f64 ? abType == lt::kR64F : abType != lt::kR64F) &&
                 (!halfC || abType == cType);
  if (!typesOk)
    return std::string("cuBLASLt: a GEMM of ") +
           plan::EnumNameDType(call.ab_dtype()) + " x " +
           plan::EnumNameDType(call.ab_dtype()) + " -> " +
           plan::EnumNameDType(call.dtype()) +
           " (the cuda device computes f32, f64, and bf16 x bf16 or f16 x "
           "f16 -> f32 or the operands' type)";
  if (halfC && call.epilogue() != plan::GemmEpilogue::None)
    return std::string("cuBLASLt: the epilogue ") +
           plan::EnumNameGemmEpilogue(call.epilogue()) +
           " of a GEMM with a 16-bit C (the compiler folds epilogues into "
           "f32 GEMMs only)";
  std::unique_ptr<LtGemm> made(new LtGemm(api_));
  made->scaleType_ = f64 ? lt::kR64F : lt::kR32F;
  made->alpha_ = call.alpha();
  made->beta_ = call.beta();
  made->epilogue_ = call.epilogue();
  int64_t m = call.m(), n = call.n(), k = call.k();
  bool ta = call.transpose_a(), tb = call.transpose_b();
  auto check = [&](const char *what, lt::Status status) {
    return status == lt::kSuccess ? std::string() : describeError(what, status);
  };
  std::string error;
  auto step = [&](const char *what, lt::Status status) {
    if (error.empty())
      error = check(what, status);
  };
  // C^T (n x m, column-major, ld = ldc) = op'(A') op'(B'): A' is the plan's
  // B, whose stored rows are cuBLASLt's columns (likewise B' = the plan's A).
  step("cublasLtMatmulDescCreate",
       api_.descCreate(&made->desc_, f64 ? lt::kCompute64F : lt::kCompute32F,
                       made->scaleType_));
  int transA = tb ? lt::kOpT : lt::kOpN, transB = ta ? lt::kOpT : lt::kOpN;
  if (error.empty()) {
    step("cublasLtMatmulDescSetAttribute",
         api_.descSetAttribute(made->desc_, lt::kDescTransA, &transA,
                               sizeof transA));
    step("cublasLtMatmulDescSetAttribute",
         api_.descSetAttribute(made->desc_, lt::kDescTransB, &transB,
                               sizeof transB));
    int epilogue = getEpilogue(call.epilogue(), call.aux() >= 0);
    step("cublasLtMatmulDescSetAttribute",
         api_.descSetAttribute(made->desc_, lt::kDescEpilogue, &epilogue,
                               sizeof epilogue));
    if (call.aux() >= 0) {
      int64_t auxLd = call.ldc(), auxStride = call.stride_c();
      step("cublasLtMatmulDescSetAttribute",
           api_.descSetAttribute(made->desc_, lt::kDescAuxLd, &auxLd,
                                 sizeof auxLd));
      if (call.batch() > 1)
        step("cublasLtMatmulDescSetAttribute",
             api_.descSetAttribute(made->desc_, lt::kDescAuxBatchStride,
                                   &auxStride, sizeof auxStride));
    }
  }
  auto layout = [&](lt::Layout &made, int type, int64_t rows, int64_t columns,
                    int64_t ld, int64_t stride) {
    step("cublasLtMatrixLayoutCreate",
         api_.layoutCreate(&made, type, rows, columns, ld));
    if (!error.empty() || call.batch() == 1)
      return;
    int32_t count = static_cast<int32_t>(call.batch());
    step("cublasLtMatrixLayoutSetAttribute",
         api_.layoutSetAttribute(made, lt::kLayoutBatchCount, &count,
                                 sizeof count));
    step("cublasLtMatrixLayoutSetAttribute",
         api_.layoutSetAttribute(made, lt::kLayoutStridedBatchOffset, &stride,
                                 sizeof stride));
  };
  layout(made->a_, abType, tb ? k : n, tb ? n : k, call.ldb(), call.stride_b());
  layout(made->b_, abType, ta ? m : k, ta ? k : m, call.lda(), call.stride_a());
  layout(made->d_, cType, n, m, call.ldc(), call.stride_c());
  if (!error.empty())
    return error;

  lt::Preference preference = nullptr;
  step("cublasLtMatmulPreferenceCreate", api_.preferenceCreate(&preference));
  uint64_t workspace = workspaceBytes;
  if (error.empty())
    step("cublasLtMatmulPreferenceSetAttribute",
         api_.preferenceSetAttribute(preference,
                                     lt::kPreferenceMaxWorkspaceBytes,
                                     &workspace, sizeof workspace));
  std::vector<lt::HeuristicResult> results(
      static_cast<size_t>(std::max(candidates, 1)));
  int returned = 0;
  if (error.empty())
    step("cublasLtMatmulAlgoGetHeuristic",
         api_.heuristic(handle_, made->desc_, made->a_, made->b_, made->d_,
                        made->d_, preference, static_cast<int>(results.size()),
                        results.data(), &returned));
  if (preference)
    api_.preferenceDestroy(preference);
  made->description_ =
      "cuBLASLt m=" + std::to_string(n) + " n=" + std::to_string(m) +
      " k=" + std::to_string(k) + (tb ? " A^T" : " A") + (ta ? " B^T" : " B") +
      (call.batch() > 1 ? " batch=" + std::to_string(call.batch()) : "") +
      " epilogue " + plan::EnumNameGemmEpilogue(call.epilogue());
  for (int i = 0; error.empty() && i < returned; ++i)
    if (results[i].state == lt::kSuccess &&
        results[i].workspaceSize <= workspaceBytes)
      made->candidates_.push_back(results[i]);
  if (error.empty() && made->candidates_.empty())
    error =
        "cublasLtMatmulAlgoGetHeuristic: no algorithm for " +
        made->description_ +
        (returned < 1 ? "" : ": " + describeError("state", results[0].state));
  if (!error.empty())
    return error + " (" + made->description_ + ")";
  made->choice_ = "algorithm 1 of " + std::to_string(made->candidates_.size()) +
                  " (the heuristic's first)";
  gemm = std::move(made);
  return "";
}

std::string CublasLt::run(const LtGemm &gemm, const LtGemmPointers &pointers,
                          void *workspace, void *stream) const {
  auto set = [&](int attribute, void *pointer) {
    return api_.descSetAttribute(gemm.desc_, attribute, &pointer,
                                 sizeof pointer);
  };
  if (pointers.bias)
    if (lt::Status status = set(lt::kDescBiasPointer, pointers.bias);
        status != lt::kSuccess)
      return describeError("cublasLtMatmulDescSetAttribute", status);
  if (pointers.aux)
    if (lt::Status status = set(lt::kDescAuxPointer, pointers.aux);
        status != lt::kSuccess)
      return describeError("cublasLtMatmulDescSetAttribute", status);
  float alpha32 = static_cast<float>(gemm.alpha_),
        beta32 = static_cast<float>(gemm.beta_);
  bool f64 = gemm.scaleType_ == lt::kR64F;
  const void *alpha = f64 ? static_cast<const void *>(&gemm.alpha_)
                          : static_cast<const void *>(&alpha32);
  const void *beta = f64 ? static_cast<const void *>(&gemm.beta_)
                         : static_cast<const void *>(&beta32);
  // The swapped operands: the plan's B is cuBLASLt's A.
  lt::Status status =
      api_.matmul(handle_, gemm.desc_, alpha, pointers.b, gemm.a_, pointers.a,
                  gemm.b_, beta, pointers.c, gemm.d_, pointers.c, gemm.d_,
                  &gemm.candidates_[gemm.chosen_].algo, workspace,
                  gemm.getWorkspaceBytes(), static_cast<lt::Stream>(stream));
  if (status != lt::kSuccess)
    return describeError("cublasLtMatmul", status) + " (" + gemm.description_ +
           ")";
  return "";
}
