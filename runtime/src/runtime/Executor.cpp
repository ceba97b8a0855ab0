//===- Executor.cpp - Running an entry point's ops on the cpu -------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Ops run in plan order on the calling thread; only a KernelCall fans out
// over the thread pool. Its parallel dim [0, range) is cut into chunks of at
// least `grain` iterations, at most four per thread (so a slow thread does
// not hold up the others); the kernel ABI guarantees that each iteration's
// results depend on nothing another chunk computes, so the bytes produced do
// not depend on how many threads there are or which ran which chunk.
// GEMMs go to CBLAS one batch entry at a time; BLAS threads as it likes.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include <cblas.h>

#include <chrono>
#include <cstring>
#include <mutex>

using namespace kiln;
using namespace kiln::runtime;

/// Chunks per thread: enough slack to balance uneven chunks.
static constexpr int64_t kChunksPerThread = 4;
/// Below this many multiply-adds a GEMM is not worth splitting.
static constexpr int64_t kSingleThreadedGemmWork = 65536 * 4;
/// Rows and columns of C a GEMM task computes are multiples of this.
static constexpr int64_t kGemmBlock = 64;
/// GEMM tasks per thread, for balance when a core is slowed down.
static constexpr int64_t kGemmTasksPerThread = 4;

static bool isFloat(plan::DType dtype) {
  return dtype == plan::DType::F32 || dtype == plan::DType::F64 ||
         dtype == plan::DType::F16 || dtype == plan::DType::BF16;
}

Result Session::prepare() {
  const plan::Plan &plan = artifact_->getPlan();
  if (!plan.entries())
    return Result::ok();
  for (const plan::Entry *entry : *plan.entries()) {
    PreparedEntry prepared;
    prepared.entry = entry;
    prepared.name = entry->name()->str();
    size_t count = entry->ops() ? entry->ops()->size() : 0;
    prepared.ops.resize(count);
    for (size_t i = 0; i < count; ++i)
      KILN_RETURN_IF_ERROR(prepareOp(*entry->ops()->Get(i), prepared.ops[i])
                               .withContext("entry '" + prepared.name +
                                            "' op " + std::to_string(i)));
    prepared.calls.assign(count, 0);
    prepared.nanoseconds.assign(count, 0);
    entries_.push_back(std::move(prepared));
  }
  return Result::ok();
}

Result Session::prepareOp(const plan::Op &op, PreparedOp &prepared) {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  prepared.kind = op.call_type();
  prepared.op = &op;
  auto checkIfFloat = [&](uint32_t id) {
    if (isFloat(buffers[id].dtype) &&
        buffers[id].kind != plan::BufferKind::Constant)
      prepared.checkedBuffers.push_back(id);
  };
  switch (op.call_type()) {
  case plan::Call::KernelCall: {
    const plan::KernelCall &call = *op.call_as_KernelCall();
    prepared.kernel = artifact_->getKernel(call.symbol()->str());
    if (!prepared.kernel)
      return Result::error(KILN_ERROR_KERNELS, "kernel '" +
                                                   call.symbol()->str() +
                                                   "' was not resolved");
    if (call.buffers())
      for (uint32_t id : *call.buffers()) {
        prepared.arguments.push_back(pointers_[id]);
        checkIfFloat(id);
        if (buffers[id].kind == plan::BufferKind::Status)
          prepared.statusBuffers.push_back(id);
      }
    prepared.range = call.range();
    prepared.grain = call.grain() > 0 ? call.grain() : 1;
    return Result::ok();
  }
  case plan::Call::GemmCall: {
    const plan::GemmCall &call = *op.call_as_GemmCall();
    if (call.dtype() != plan::DType::F32 && call.dtype() != plan::DType::F64)
      return Result::error(KILN_ERROR_UNSUPPORTED,
                           std::string("a GEMM in ") + dtypeName(call.dtype()) +
                               ": the cpu executor's BLAS computes f32 and "
                               "f64 only");
    prepared.gemm = &call;
    checkIfFloat(call.c());
    return Result::ok();
  }
  case plan::Call::CopyCall: {
    const plan::CopyCall &call = *op.call_as_CopyCall();
    prepared.source = pointers_[call.source()];
    prepared.destination = pointers_[call.destination()];
    prepared.sizeBytes = static_cast<size_t>(call.size_bytes());
    checkIfFloat(call.destination());
    return Result::ok();
  }
  case plan::Call::ZeroCall: {
    uint32_t id = op.call_as_ZeroCall()->buffer();
    prepared.destination = pointers_[id];
    prepared.sizeBytes = static_cast<size_t>(buffers[id].sizeBytes);
    return Result::ok();
  }
  default:
    return invalidFormat("an op without a call");
  }
}

void Session::runKernel(const PreparedOp &op) {
  void **arguments = const_cast<void **>(op.arguments.data());
  int64_t range = op.range;
  int64_t maxChunks = static_cast<int64_t>(pool_->size()) * kChunksPerThread;
  int64_t chunks = std::min(range / op.grain, maxChunks);
  if (chunks <= 1 || pool_->size() == 1) {
    if (range > 0)
      op.kernel(arguments, 0, range);
    return;
  }
  // Chunk c covers [range * c / chunks, range * (c + 1) / chunks): every
  // chunk holds at least floor(range / chunks) >= grain iterations.
  KernelFunction kernel = op.kernel;
  pool_->parallelFor(chunks, [=](int64_t chunk) {
    int64_t begin =
        static_cast<int64_t>(static_cast<__int128>(range) * chunk / chunks);
    int64_t end = static_cast<int64_t>(static_cast<__int128>(range) *
                                       (chunk + 1) / chunks);
    kernel(arguments, begin, end);
  });
}

void kiln::runtime::useSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void Session::runGemm(const PreparedOp &op) {
  const plan::GemmCall &call = *op.gemm;
  int64_t m = call.m(), n = call.n(), k = call.k();
  if (m == 0 || n == 0)
    return;
  CBLAS_TRANSPOSE ta = call.transpose_a() ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = call.transpose_b() ? CblasTrans : CblasNoTrans;
  void *a = pointers_[call.a()], *b = pointers_[call.b()],
       *c = pointers_[call.c()];
  // BLAS requires leading dimensions >= 1 even for empty operands.
  auto ld = [](int64_t value) {
    return static_cast<blasint>(value > 0 ? value : 1);
  };
  // The block [row, row + rows) x [column, column + columns) of C for one
  // batch entry, from the same rows of A (columns of the stored A when
  // transposed) and columns of B (rows of the stored B when transposed).
  auto multiply = [&](int64_t batch, int64_t row, int64_t rows,
                      int64_t column, int64_t columns) {
    int64_t aOffset = batch * call.stride_a() +
                      (call.transpose_a() ? row : row * call.lda());
    int64_t bOffset = batch * call.stride_b() +
                      (call.transpose_b() ? column * call.ldb() : column);
    int64_t cOffset = batch * call.stride_c() + row * call.ldc() + column;
    if (call.dtype() == plan::DType::F32)
      cblas_sgemm(CblasRowMajor, ta, tb, rows, columns, k,
                  static_cast<float>(call.alpha()),
                  static_cast<const float *>(a) + aOffset, ld(call.lda()),
                  static_cast<const float *>(b) + bOffset, ld(call.ldb()),
                  static_cast<float>(call.beta()),
                  static_cast<float *>(c) + cOffset, ld(call.ldc()));
    else
      cblas_dgemm(CblasRowMajor, ta, tb, rows, columns, k, call.alpha(),
                  static_cast<const double *>(a) + aOffset, ld(call.lda()),
                  static_cast<const double *>(b) + bOffset, ld(call.ldb()),
                  call.beta(), static_cast<double *>(c) + cOffset,
                  ld(call.ldc()));
  };
  // OpenBLAS runs on the calling thread (useSingleThreadedBlas): the pool
  // spreads the work, so that one set of threads owns the cores. A large
  // product is cut into tiles of C of whole kGemmBlock-row (or column)
  // blocks, so that every element is computed by the same micro-kernel
  // with the same k order whatever the cut, several tiles per thread so
  // that a core slowed by another process does not hold up the step; a
  // batch of small products (the attention heads) is spread by entry.
  // Each task writes its own tile of C: the results do not depend on the
  // split or the thread count.
  int64_t batches = call.batch();
  int64_t threads = static_cast<int64_t>(pool_->size());
  int64_t rowBlocks = m / kGemmBlock, columnBlocks = n / kGemmBlock;
  int64_t wanted = threads * kGemmTasksPerThread;
  int64_t rowParts = 1, columnParts = 1;
  if (threads > 1 && m * n * k > kSingleThreadedGemmWork) {
    rowParts = std::max<int64_t>(1, std::min(wanted, rowBlocks));
    if (rowParts < wanted)
      columnParts = std::max<int64_t>(
          1, std::min((wanted + rowParts - 1) / rowParts, columnBlocks));
  }
  int64_t parts = rowParts * columnParts;
  if (parts <= 1) {
    if (batches > 1 && threads > 1)
      pool_->parallelFor(batches,
                         [&](int64_t batch) { multiply(batch, 0, m, 0, n); });
    else
      for (int64_t batch = 0; batch < batches; ++batch)
        multiply(batch, 0, m, 0, n);
    return;
  }
  // Part p of `count` blocks of a dim of `size`: whole blocks, the rest of
  // the dim to the last part.
  auto bounds = [](int64_t part, int64_t partCount, int64_t blocks,
                   int64_t size) {
    int64_t first = blocks * part / partCount * kGemmBlock;
    int64_t last = part + 1 == partCount
                       ? size
                       : blocks * (part + 1) / partCount * kGemmBlock;
    return std::make_pair(first, last);
  };
  pool_->parallelFor(batches * parts, [&](int64_t task) {
    int64_t batch = task / parts, part = task % parts;
    auto [row, rowEnd] = bounds(part / columnParts, rowParts, rowBlocks, m);
    auto [column, columnEnd] =
        bounds(part % columnParts, columnParts, columnBlocks, n);
    if (rowEnd > row && columnEnd > column)
      multiply(batch, row, rowEnd - row, column, columnEnd - column);
  });
}

void Session::runOp(const PreparedOp &op) {
  switch (op.kind) {
  case plan::Call::KernelCall:
    runKernel(op);
    return;
  case plan::Call::GemmCall:
    runGemm(op);
    return;
  case plan::Call::CopyCall:
    if (op.sizeBytes && op.source != op.destination)
      std::memmove(op.destination, op.source, op.sizeBytes);
    return;
  case plan::Call::ZeroCall:
    std::memset(op.destination, 0, op.sizeBytes);
    return;
  default:
    return;
  }
}

void Session::prepareRunBuffers() {
  // Dropout's Philox key and step (kiln/Philox.h): the step of the run, i.e.
  // the number of train steps completed before it.
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id) {
    if (buffers[id].kind == plan::BufferKind::RngState) {
      uint32_t words[4] = {static_cast<uint32_t>(seed_),
                           static_cast<uint32_t>(seed_ >> 32),
                           static_cast<uint32_t>(step_), 0};
      std::memcpy(pointers_[id], words, sizeof words);
    } else if (buffers[id].kind == plan::BufferKind::Status) {
      std::memset(pointers_[id], 0, static_cast<size_t>(buffers[id].sizeBytes));
    }
  }
}

Result Session::run(const std::string &entryName) {
  PreparedEntry *entry = nullptr;
  for (PreparedEntry &candidate : entries_)
    if (candidate.name == entryName)
      entry = &candidate;
  if (!entry) {
    std::string names;
    for (const PreparedEntry &candidate : entries_)
      names += (names.empty() ? "'" : ", '") + candidate.name + "'";
    return invalidArgument(
        "the plan has no entry point '" + entryName +
        "' (its entries: " + (names.empty() ? "none" : names) + ")");
  }
  if (const auto *inputs = entry->entry->inputs())
    for (uint32_t id : *inputs)
      if (!bound_[id])
        return invalidArgument("entry '" + entryName + "' reads input '" +
                               artifact_->getBuffers()[id].name +
                               "', which was never bound");

  prepareRunBuffers();
  using Clock = std::chrono::steady_clock;
  for (size_t i = 0; i < entry->ops.size(); ++i) {
    const PreparedOp &op = entry->ops[i];
    if (profiling_) {
      Clock::time_point start = Clock::now();
      runOp(op);
      entry->nanoseconds[i] += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                               start)
              .count());
      entry->calls[i] += 1;
    } else {
      runOp(op);
    }
    if (!op.statusBuffers.empty())
      KILN_RETURN_IF_ERROR(checkStatus(*entry, i));
    if (checkNumerics_)
      KILN_RETURN_IF_ERROR(checkNumerics(*entry, i));
  }
  if (entryName == "train_step" || entryName == "apply_step")
    ++step_;
  return Result::ok();
}
