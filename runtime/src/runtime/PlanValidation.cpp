//===- PlanValidation.cpp - The plan's consistency checks -----------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// The FlatBuffers verifier proves that plan.kpl can be read safely; these
// checks prove that executing it stays inside its buffers: ids in range,
// sizes that match shapes, transients inside the arena, GEMM operands whose
// last element (over the whole batch) lies inside their buffers, copies that
// fit. A plan that passes cannot make the executor read or write out of
// bounds except through a kernel's own indexing.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "GemmEpilogue.h"
#include "PlanCollectives.h"

#include <unordered_set>

using namespace kiln;
using namespace kiln::runtime;

namespace {

/// Validates the references of one entry's ops; `where` prefixes messages.
class EntryValidator {
public:
  EntryValidator(const std::vector<BufferInfo> &buffers, std::string where)
      : buffers_(buffers), where_(std::move(where)) {}

  Result checkId(uint32_t id, const char *role) const {
    if (id >= buffers_.size())
      return invalidFormat(where_ + ": " + role + " buffer id " +
                           std::to_string(id) + " is out of range (the plan " +
                           "has " + std::to_string(buffers_.size()) +
                           " buffers)");
    return Result::ok();
  }

  /// `maxSharedBytes`: what a block of the plan's GPU may opt in to (0:
  /// not a cuda plan).
  Result checkKernel(const plan::KernelCall &call,
                     int64_t maxSharedBytes) const {
    bool cuda = maxSharedBytes > 0;
    if (!call.symbol() || call.symbol()->size() == 0)
      return invalidFormat(where_ + ": kernel call without a symbol");
    if (call.buffers())
      for (uint32_t id : *call.buffers())
        KILN_RETURN_IF_ERROR(checkId(id, "kernel argument"));
    if (call.range() < 0 || call.grain() < 0)
      return invalidFormat(where_ + ": kernel '" + call.symbol()->str() +
                           "' has a negative range or grain");
    // A GPU launch: the range is its blocks; CUDA's limits on a block.
    if (cuda && (call.grid_x() != call.range() || call.block_x() < 1 ||
                 call.block_x() > 1024 || call.shared_bytes() < 0 ||
                 call.shared_bytes() > maxSharedBytes))
      return invalidFormat(where_ + ": kernel '" + call.symbol()->str() +
                           "' launches " + std::to_string(call.grid_x()) +
                           " blocks of " + std::to_string(call.block_x()) +
                           " threads with " +
                           std::to_string(call.shared_bytes()) +
                           " bytes of shared memory over a range of " +
                           std::to_string(call.range()) +
                           " (a block has 1 to 1024 threads and at most " +
                           std::to_string(maxSharedBytes / 1024) +
                           " KiB of dynamic shared memory on the plan's GPU)");
    return Result::ok();
  }

  /// Checks that a rows x cols matrix with leading dimension `ld`, repeated
  /// `batch` times `stride` elements apart, fits in buffer `id`.
  Result checkMatrix(const plan::GemmCall &call, uint32_t id, char operand,
                     int64_t rows, int64_t cols, int64_t ld,
                     int64_t stride) const {
    const BufferInfo &buffer = buffers_[id];
    // 'X': the epilogue's aux matrix, laid out as C.
    bool result = operand == 'C' || operand == 'X';
    std::string what =
        where_ +
        (operand == 'X' ? std::string(": GEMM aux")
                        : std::string(": GEMM operand ") + operand) +
        " ('" + buffer.name + "')";
    plan::DType dtype = result ? call.dtype() : call.ab_dtype();
    if (buffer.dtype != dtype)
      return invalidFormat(
          what + " is " + dtypeName(buffer.dtype) + " but the GEMM's " +
          (result ? "result" : "operands") + " are " + dtypeName(dtype));
    if (rows == 0 || cols == 0)
      return Result::ok();
    if (ld < cols)
      return invalidFormat(what + ": leading dimension " + std::to_string(ld) +
                           " is smaller than its " + std::to_string(cols) +
                           " columns");
    if (stride < 0)
      return invalidFormat(what + ": negative batch stride");
    // In 128 bits: the plan's numbers are untrusted and may overflow int64.
    __int128 extent = static_cast<__int128>(rows - 1) * ld + cols +
                      static_cast<__int128>(call.batch() - 1) * stride;
    if (extent > buffer.numElements)
      return invalidFormat(what + " needs " +
                           std::to_string(static_cast<int64_t>(extent)) +
                           " elements but the buffer holds " +
                           std::to_string(buffer.numElements));
    return Result::ok();
  }

  Result checkGemm(const plan::GemmCall &call) const {
    KILN_RETURN_IF_ERROR(checkId(call.a(), "GEMM operand A"));
    KILN_RETURN_IF_ERROR(checkId(call.b(), "GEMM operand B"));
    KILN_RETURN_IF_ERROR(checkId(call.c(), "GEMM result C"));
    if (call.m() < 0 || call.n() < 0 || call.k() < 0 || call.batch() < 1)
      return invalidFormat(
          where_ + ": GEMM with m=" + std::to_string(call.m()) +
          " n=" + std::to_string(call.n()) + " k=" + std::to_string(call.k()) +
          " batch=" + std::to_string(call.batch()));
    if (call.tile_m() < 0 || call.tile_n() < 0)
      return invalidFormat(
          where_ + ": GEMM with tile_m=" + std::to_string(call.tile_m()) +
          " tile_n=" + std::to_string(call.tile_n()));
    int64_t m = call.m(), n = call.n(), k = call.k();
    bool ta = call.transpose_a(), tb = call.transpose_b();
    KILN_RETURN_IF_ERROR(checkMatrix(call, call.a(), 'A', ta ? k : m,
                                     ta ? m : k, call.lda(), call.stride_a()));
    KILN_RETURN_IF_ERROR(checkMatrix(call, call.b(), 'B', tb ? n : k,
                                     tb ? k : n, call.ldb(), call.stride_b()));
    // The batch's results must not overlap: tiles of different batch
    // entries run in parallel, and a batch of 2^40 stride-0 results would
    // fit any buffer.
    if (call.batch() > 1 && m > 0 && n > 0 &&
        static_cast<__int128>(call.stride_c()) <
            static_cast<__int128>(m - 1) * call.ldc() + n)
      return invalidFormat(where_ + ": the " + std::to_string(call.batch()) +
                           " results of a batched GEMM overlap (stride_c " +
                           std::to_string(call.stride_c()) + ")");
    KILN_RETURN_IF_ERROR(
        checkMatrix(call, call.c(), 'C', m, n, call.ldc(), call.stride_c()));
    return checkEpilogue(call);
  }

  /// The epilogue's buffers: a bias of n elements of C's type, an aux
  /// matrix laid out as C, each present exactly when the epilogue takes it
  /// (the aux of a GELU is optional).
  Result checkEpilogue(const plan::GemmCall &call) const {
    using Kind = plan::GemmEpilogue;
    Kind kind = call.epilogue();
    if (kind > Kind::MAX)
      return invalidFormat(where_ + ": GEMM with an unknown epilogue " +
                           std::to_string(static_cast<int>(kind)));
    std::string name = plan::EnumNameGemmEpilogue(kind);
    bool needsBias =
        kind == Kind::Bias || kind == Kind::BiasGelu || kind == Kind::BiasGrad;
    bool takesAux =
        kind == Kind::Gelu || kind == Kind::BiasGelu || kind == Kind::DGelu;
    if (needsBias != (call.bias() >= 0))
      return invalidFormat(where_ + ": a GEMM with the epilogue " + name +
                           (needsBias ? " needs" : " takes no") +
                           " bias buffer");
    if (!takesAux && call.aux() >= 0)
      return invalidFormat(where_ + ": a GEMM with the epilogue " + name +
                           " takes no aux buffer");
    if (kind == Kind::DGelu && call.aux() < 0)
      return invalidFormat(where_ + ": a GEMM with the epilogue DGelu needs "
                                    "the forward's pre-activation as aux");
    if (call.bias() >= 0) {
      KILN_RETURN_IF_ERROR(
          checkId(static_cast<uint32_t>(call.bias()), "GEMM bias"));
      const BufferInfo &bias = buffers_[call.bias()];
      if (bias.dtype != call.dtype() || bias.numElements < call.n())
        return invalidFormat(where_ + ": GEMM bias '" + bias.name + "' is " +
                             std::to_string(bias.numElements) + " " +
                             dtypeName(bias.dtype) + " elements; the GEMM " +
                             "needs " + std::to_string(call.n()) + " " +
                             dtypeName(call.dtype()));
    }
    if (call.aux() >= 0) {
      KILN_RETURN_IF_ERROR(
          checkId(static_cast<uint32_t>(call.aux()), "GEMM aux"));
      KILN_RETURN_IF_ERROR(checkMatrix(call, static_cast<uint32_t>(call.aux()),
                                       'X', call.m(), call.n(), call.ldc(),
                                       call.stride_c()));
    }
    std::string refused = checkGemmEpilogue(call);
    if (!refused.empty())
      return Result::error(KILN_ERROR_UNSUPPORTED, where_ + ": " + refused);
    return Result::ok();
  }

  Result checkCopy(const plan::CopyCall &call) const {
    KILN_RETURN_IF_ERROR(checkId(call.source(), "copy source"));
    KILN_RETURN_IF_ERROR(checkId(call.destination(), "copy destination"));
    const BufferInfo &source = buffers_[call.source()];
    const BufferInfo &destination = buffers_[call.destination()];
    if (call.size_bytes() < 0 || call.size_bytes() > source.sizeBytes ||
        call.size_bytes() > destination.sizeBytes)
      return invalidFormat(
          where_ + ": copy of " + std::to_string(call.size_bytes()) +
          " bytes from '" + source.name + "' (" +
          std::to_string(source.sizeBytes) + " bytes) to '" + destination.name +
          "' (" + std::to_string(destination.sizeBytes) + " bytes)");
    return Result::ok();
  }

private:
  const std::vector<BufferInfo> &buffers_;
  std::string where_;
};

Result validateBuffers(const plan::Plan &plan,
                       const std::vector<BufferInfo> &buffers) {
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferInfo &buffer = buffers[i];
    std::string what =
        "buffer " + std::to_string(i) + " ('" + buffer.name + "')";
    if (buffer.table->id() != i)
      return invalidFormat(what + " has id " +
                           std::to_string(buffer.table->id()) +
                           "; ids must equal positions in Plan.buffers");
    if (buffer.name.empty())
      return invalidFormat("buffer " + std::to_string(i) + " has no name");
    if (!names.insert(buffer.name).second)
      return invalidFormat("two buffers are named '" + buffer.name + "'");
    if (dtypeSize(buffer.dtype) == 0)
      return invalidFormat(what + " has an unknown dtype " +
                           std::to_string(static_cast<int>(buffer.dtype)));
    int64_t expected = 0;
    if (buffer.numElements < 0 ||
        __builtin_mul_overflow(buffer.numElements,
                               static_cast<int64_t>(dtypeSize(buffer.dtype)),
                               &expected))
      return invalidFormat(what + " has a negative or overflowing shape");
    if (buffer.sizeBytes != expected)
      return invalidFormat(
          what + " of type " +
          formatType(buffer.dtype, buffer.shape.data(), buffer.shape.size()) +
          " has size_bytes " + std::to_string(buffer.sizeBytes) +
          ", expected " + std::to_string(expected));
    if (buffer.kind == plan::BufferKind::Transient) {
      if (buffer.arenaOffset < 0 || buffer.arenaOffset % 64 != 0 ||
          buffer.arenaOffset > plan.arena_bytes() - buffer.sizeBytes)
        return invalidFormat(what + " at arena offset " +
                             std::to_string(buffer.arenaOffset) + " (" +
                             std::to_string(buffer.sizeBytes) +
                             " bytes) does not lie 64-byte aligned inside the "
                             "arena of " +
                             std::to_string(plan.arena_bytes()) + " bytes");
    }
    if (buffer.kind == plan::BufferKind::RngState &&
        (buffer.dtype != plan::DType::I32 ||
         buffer.shape != std::vector<int64_t>{4}))
      return invalidFormat(what + " is an rng_state buffer but not i32[4]");
    if (buffer.kind == plan::BufferKind::Status &&
        (buffer.dtype != plan::DType::I64 ||
         buffer.shape != std::vector<int64_t>{2}))
      return invalidFormat(what + " is a status buffer but not i64[2]");
    if (buffer.kind == plan::BufferKind::Constant) {
      const auto *data = buffer.table->data();
      int64_t size = data ? static_cast<int64_t>(data->size()) : 0;
      // A splat carries one element.
      int64_t expected = buffer.table->splat() && buffer.numElements > 0
                             ? buffer.sizeBytes / buffer.numElements
                             : buffer.sizeBytes;
      if (size != expected)
        return invalidFormat(
            what + " is a constant of " + std::to_string(buffer.sizeBytes) +
            " bytes" + (buffer.table->splat() ? " (a splat)" : "") +
            " but carries " + std::to_string(size) + " bytes of data");
    }
  }
  return Result::ok();
}

} // namespace

Result kiln::runtime::validatePlan(const plan::Plan &plan,
                                   const std::vector<BufferInfo> &buffers) {
  std::string target = plan.target() ? plan.target()->str() : "";
  // A block's dynamic shared memory: 48 KiB on any GPU, and what a kernel
  // may opt in to past that (cuFuncSetAttribute) on sm_80 and sm_90.
  std::string arch = plan.arch() ? plan.arch()->str() : "";
  int64_t maxSharedBytes = target != "cuda"  ? 0
                           : arch == "sm_90" ? 227 * 1024
                           : arch == "sm_80" ? 163 * 1024
                                             : 48 * 1024;
  if (target != "cpu" && target != "cuda")
    return invalidFormat("unknown target '" + target +
                         "' (expected \"cpu\" or \"cuda\")");
  if (plan.arena_bytes() < 0)
    return invalidFormat("negative arena size");
  KILN_RETURN_IF_ERROR(validateBuffers(plan, buffers));
  if (!plan.entries())
    return Result::ok();
  std::unordered_set<std::string> entryNames;
  for (const plan::Entry *entry : *plan.entries()) {
    if (!entry->name() || entry->name()->size() == 0)
      return invalidFormat("an entry point has no name");
    std::string name = entry->name()->str();
    if (!entryNames.insert(name).second)
      return invalidFormat("two entry points are named '" + name + "'");
    EntryValidator entryCheck(buffers, "entry '" + name + "'");
    for (const auto *ids : {entry->inputs(), entry->outputs()})
      if (ids)
        for (uint32_t id : *ids)
          KILN_RETURN_IF_ERROR(entryCheck.checkId(id, "input/output"));
    if (!entry->ops())
      continue;
    for (uint32_t index = 0; index < entry->ops()->size(); ++index) {
      const plan::Op *op = entry->ops()->Get(index);
      EntryValidator check(buffers, "entry '" + name + "' op " +
                                        std::to_string(index) + " (" +
                                        formatLocation(op->loc()) + ")");
      // A union whose type is set but whose table is absent verifies.
      if (!op->call())
        return invalidFormat("entry '" + name + "' op " +
                             std::to_string(index) + " has no call");
      switch (op->call_type()) {
      case plan::Call::KernelCall:
        KILN_RETURN_IF_ERROR(
            check.checkKernel(*op->call_as_KernelCall(), maxSharedBytes));
        break;
      case plan::Call::GemmCall:
        KILN_RETURN_IF_ERROR(check.checkGemm(*op->call_as_GemmCall()));
        break;
      case plan::Call::CopyCall:
        KILN_RETURN_IF_ERROR(check.checkCopy(*op->call_as_CopyCall()));
        break;
      case plan::Call::ZeroCall:
        KILN_RETURN_IF_ERROR(
            check.checkId(op->call_as_ZeroCall()->buffer(), "zeroed"));
        break;
      case plan::Call::CollectiveStart:
      case plan::Call::CollectiveWait:
        // Checked together below (listPlanBuckets).
        break;
      default:
        return invalidFormat("entry '" + name + "' op " +
                             std::to_string(index) +
                             " has no call (or one this runtime does not "
                             "know)");
      }
    }
  }
  std::vector<PlanBucket> buckets;
  return listPlanBuckets(plan, buffers, buckets);
}
