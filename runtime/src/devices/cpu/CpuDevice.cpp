//===- CpuDevice.cpp - Entries run in host memory over a thread pool ------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Ops run in plan order on the calling thread; only a KernelCall fans out
// over the thread pool. Its parallel dim [0, range) is cut into chunks of at
// least `grain` iterations, at most four per thread (so a slow thread does
// not hold up the others); the kernel ABI guarantees that each iteration's
// results depend on nothing another chunk computes, so the bytes produced do
// not depend on how many threads there are or which ran which chunk.
// A GemmCall runs its tiles of C (fixed by the compiler) over the pool, one
// single-threaded GEMM library call per tile (GemmLibrary.h).
//
//===----------------------------------------------------------------------===//

#include "CpuDevice.h"
#include "SignalMask.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <system_error>

using namespace kiln;
using namespace kiln::cpu;
using runtime::BufferInfo;

/// Chunks per thread: enough slack to balance uneven chunks.
static constexpr int64_t kChunksPerThread = 4;

CpuDevice::~CpuDevice() = default;

Result CpuDevice::create(std::shared_ptr<const Artifact> artifact,
                         bool emulator, int numThreads,
                         const std::vector<void *> &hostBuffers,
                         std::unique_ptr<runtime::Device> &device) {
  if (numThreads == 0) {
    std::string error;
    std::optional<int> size =
        runtime::ThreadPool::defaultSize(runtime::ThreadPool::kMaxSize, error);
    if (!size)
      return runtime::invalidArgument(error);
    numThreads = *size;
  }
  // The GPU emulator runs a cuda plan's host build of its kernels.
  if (emulator)
    KILN_RETURN_IF_ERROR(artifact->loadEmulatorKernels());
  std::unique_ptr<CpuDevice> made(new CpuDevice());
  made->artifact_ = std::move(artifact);
  made->emulator_ = emulator;
  std::string gemmError;
  made->gemm_ = getGemmLibrary(emulator ? "reference" : "", gemmError);
  if (!made->gemm_)
    return runtime::invalidArgument(gemmError);
  // The transients at their planned offsets in the arena; the rest are the
  // session's.
  const std::vector<BufferInfo> &buffers = made->artifact_->getBuffers();
  KILN_RETURN_IF_ERROR(made->arena_.allocate(
      static_cast<size_t>(made->artifact_->getPlan().arena_bytes()),
      "the arena"));
  made->pointers_ = hostBuffers;
  for (size_t id = 0; id < buffers.size(); ++id)
    if (buffers[id].kind == plan::BufferKind::Transient)
      made->pointers_[id] =
          static_cast<char *>(made->arena_.data()) + buffers[id].arenaOffset;
  KILN_RETURN_IF_ERROR(made->prepare());
  made->describeGemms();
  try {
    made->pool_ = std::make_unique<runtime::ThreadPool>(numThreads);
  } catch (const std::system_error &error) {
    return Result::error(KILN_ERROR_INTERNAL,
                         std::string("cannot start the thread pool: ") +
                             error.what());
  }
  device = std::move(made);
  return Result::ok();
}

Result CpuDevice::prepare() {
  const plan::Plan &plan = artifact_->getPlan();
  if (!plan.entries())
    return Result::ok();
  for (const plan::Entry *entry : *plan.entries()) {
    size_t count = entry->ops() ? entry->ops()->size() : 0;
    std::vector<PreparedOp> ops(count);
    for (size_t i = 0; i < count; ++i)
      KILN_RETURN_IF_ERROR(prepareOp(*entry->ops()->Get(i), ops[i])
                               .withContext("entry '" + entry->name()->str() +
                                            "' op " + std::to_string(i)));
    entries_.push_back(std::move(ops));
  }
  return Result::ok();
}

Result CpuDevice::prepareOp(const plan::Op &op, PreparedOp &prepared) {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  prepared.kind = op.call_type();
  prepared.op = &op;
  prepared.buffers = runtime::listOpBuffers(*artifact_, op);
  switch (op.call_type()) {
  case plan::Call::KernelCall: {
    const plan::KernelCall &call = *op.call_as_KernelCall();
    prepared.kernel = artifact_->getKernel(call.symbol()->str());
    if (!prepared.kernel)
      return Result::error(KILN_ERROR_KERNELS, "kernel '" +
                                                   call.symbol()->str() +
                                                   "' was not resolved");
    if (call.buffers())
      for (uint32_t id : *call.buffers())
        prepared.arguments.push_back(pointers_[id]);
    prepared.range = call.range();
    prepared.grain = call.grain() > 0 ? call.grain() : 1;
    return Result::ok();
  }
  case plan::Call::GemmCall:
    return prepareGemm(*op.call_as_GemmCall(), prepared);
  case plan::Call::CopyCall: {
    const plan::CopyCall &call = *op.call_as_CopyCall();
    prepared.source = pointers_[call.source()];
    prepared.destination = pointers_[call.destination()];
    prepared.sizeBytes = static_cast<size_t>(call.size_bytes());
    return Result::ok();
  }
  case plan::Call::ZeroCall: {
    uint32_t id = op.call_as_ZeroCall()->buffer();
    prepared.destination = pointers_[id];
    prepared.sizeBytes = static_cast<size_t>(buffers[id].sizeBytes);
    return Result::ok();
  }
  case plan::Call::CollectiveStart:
  case plan::Call::CollectiveWait:
    // The run's OpHook starts and waits for them (the session's armed
    // collectives); the device has nothing to compute.
    return Result::ok();
  default:
    return runtime::invalidFormat("an op without a call");
  }
}

void CpuDevice::runKernel(const PreparedOp &op) {
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
  runtime::KernelFunction kernel = op.kernel;
  pool_->parallelFor(chunks, [=](int64_t chunk) {
    int64_t begin =
        static_cast<int64_t>(static_cast<__int128>(range) * chunk / chunks);
    int64_t end = static_cast<int64_t>(static_cast<__int128>(range) *
                                       (chunk + 1) / chunks);
    kernel(arguments, begin, end);
  });
}

Result CpuDevice::prepareGemm(const plan::GemmCall &call,
                              PreparedOp &prepared) {
  plan::DType ab = call.ab_dtype(), c = call.dtype();
  if (ab == plan::DType::F32 && c == plan::DType::F32)
    prepared.gemmTypes = GemmTypes::F32;
  else if (ab == plan::DType::F64 && c == plan::DType::F64)
    prepared.gemmTypes = GemmTypes::F64;
  else if (ab == plan::DType::BF16 && c == plan::DType::F32)
    prepared.gemmTypes = GemmTypes::BF16_F32;
  else if (ab == plan::DType::BF16 && c == plan::DType::BF16)
    prepared.gemmTypes = GemmTypes::BF16;
  else if (ab == plan::DType::F16 && c == plan::DType::F32)
    prepared.gemmTypes = GemmTypes::F16_F32;
  else if (ab == plan::DType::F16 && c == plan::DType::F16)
    prepared.gemmTypes = GemmTypes::F16;
  else
    return Result::error(
        KILN_ERROR_UNSUPPORTED,
        std::string("a GEMM of ") + runtime::dtypeName(ab) + " x " +
            runtime::dtypeName(ab) + " -> " + runtime::dtypeName(c) +
            ": the cpu executor computes f32, f64, and bf16 x bf16 or "
            "f16 x f16 -> f32 or the operands' type");
  if (gemmResultBytes(prepared.gemmTypes) == 2 &&
      call.epilogue() != plan::GemmEpilogue::None)
    return Result::error(KILN_ERROR_UNSUPPORTED,
                         std::string("the epilogue ") +
                             plan::EnumNameGemmEpilogue(call.epilogue()) +
                             " of a GEMM with a 16-bit C: the cpu executor "
                             "applies epilogues in f32 and f64");
  std::shared_ptr<const GemmLibrary> library =
      getGemmLibraryFor(prepared.gemmTypes, gemm_);
  std::pair<GemmTypes, const GemmLibrary *> use{prepared.gemmTypes,
                                                library.get()};
  if (std::find(gemmUses_.begin(), gemmUses_.end(), use) == gemmUses_.end())
    gemmUses_.push_back(use);
  prepared.gemm = &call;
  prepared.gemmLibrary = library.get();
  prepared.gemmBlocksSignals = library->movesStackPointer();
  int64_t m = call.m(), n = call.n();
  prepared.tileRows = call.tile_m() > 0 ? std::min(call.tile_m(), m) : m;
  prepared.tileColumns = call.tile_n() > 0 ? std::min(call.tile_n(), n) : n;
  if (m == 0 || n == 0)
    return Result::ok();
  // Every distinct tile shape readied now, so that a step cannot fail: the
  // full tiles, and the last row and column of tiles that take the rest.
  for (int64_t rows : {prepared.tileRows, m % prepared.tileRows})
    for (int64_t columns : {prepared.tileColumns, n % prepared.tileColumns}) {
      if (!rows || !columns)
        continue;
      std::string error =
          library->prepare(gemmTile(prepared, 0, 0, rows, 0, columns));
      if (!error.empty())
        return Result::error(KILN_ERROR_UNSUPPORTED, error);
    }
  return Result::ok();
}

GemmProblem CpuDevice::gemmTile(const PreparedOp &op, int64_t batch,
                                int64_t row, int64_t rows, int64_t column,
                                int64_t columns) const {
  const plan::GemmCall &call = *op.gemm;
  size_t elementBytes = gemmResultBytes(op.gemmTypes);
  size_t operandBytes = gemmOperandBytes(op.gemmTypes);
  auto at = [&](uint32_t id, int64_t offset, size_t bytes) {
    return static_cast<char *>(pointers_[id]) + offset * bytes;
  };
  // The rows of A (columns of the stored A when transposed) and the columns
  // of B (rows of the stored B when transposed) that the tile reads.
  int64_t aOffset =
      batch * call.stride_a() + (call.transpose_a() ? row : row * call.lda());
  int64_t bOffset = batch * call.stride_b() +
                    (call.transpose_b() ? column * call.ldb() : column);
  int64_t cOffset = batch * call.stride_c() + row * call.ldc() + column;
  GemmProblem problem;
  problem.types = op.gemmTypes;
  problem.transposeA = call.transpose_a();
  problem.transposeB = call.transpose_b();
  problem.m = rows;
  problem.n = columns;
  problem.k = call.k();
  problem.alpha = call.alpha();
  problem.beta = call.beta();
  problem.a = at(call.a(), aOffset, operandBytes);
  problem.lda = call.lda();
  problem.b = at(call.b(), bOffset, operandBytes);
  problem.ldb = call.ldb();
  problem.c = at(call.c(), cOffset, elementBytes);
  problem.ldc = call.ldc();
  return problem;
}

GemmEpilogueTile CpuDevice::gemmEpilogueTile(const PreparedOp &op,
                                             int64_t batch, int64_t row,
                                             int64_t column) const {
  const plan::GemmCall &call = *op.gemm;
  GemmEpilogueTile tile;
  tile.kind = call.epilogue();
  if (tile.kind == plan::GemmEpilogue::None)
    return tile;
  // The epilogue's vectors and matrices are in C's type.
  size_t bytes = gemmResultBytes(op.gemmTypes);
  if (call.bias() >= 0)
    tile.bias = static_cast<char *>(pointers_[call.bias()]) + column * bytes;
  if (call.aux() >= 0)
    tile.aux = static_cast<char *>(pointers_[call.aux()]) +
               (batch * call.stride_c() + row * call.ldc() + column) * bytes;
  tile.firstRow = row == 0;
  return tile;
}

void CpuDevice::describeGemms() {
  gemmInfo_ = runtime::GemmInfo();
  gemmInfo_.library = gemm_->name();
  gemmInfo_.version = gemm_->version();
  gemmInfo_.isa = gemm_->isa();
  auto append = [](std::string &list, const std::string &item) {
    if (!item.empty())
      list += (list.empty() ? "" : "; ") + item;
  };
  std::vector<const GemmLibrary *> libraries = {gemm_.get()};
  for (auto [types, library] : gemmUses_) {
    if (library == gemm_.get()) {
      std::string note = library->typesNote(types);
      if (!note.empty())
        append(gemmInfo_.isa, std::string(gemmTypesName(types)) + " " + note);
      continue;
    }
    append(gemmInfo_.others, std::string(gemmTypesName(types)) + ": " +
                                 library->version() + " (" + library->isa() +
                                 ")");
    if (std::find(libraries.begin(), libraries.end(), library) ==
        libraries.end())
      libraries.push_back(library);
  }
  // The emulator's reference GEMM is its choice, not a fallback.
  if (!emulator_)
    for (const GemmLibrary *library : libraries)
      append(gemmInfo_.warning, library->fallbackWarning());
}

void CpuDevice::runGemm(const PreparedOp &op) {
  const plan::GemmCall &call = *op.gemm;
  int64_t m = call.m(), n = call.n();
  if (m == 0 || n == 0)
    return;
  // The tiles of C were fixed by the compiler: tile (r, c) of batch entry b
  // is the same library call whichever thread runs it, so the bytes of C
  // do not depend on the thread count.
  int64_t tileRows = op.tileRows, tileColumns = op.tileColumns;
  int64_t rowTiles = (m + tileRows - 1) / tileRows;
  int64_t columnTiles = (n + tileColumns - 1) / tileColumns;
  int64_t perBatch = rowTiles * columnTiles;
  auto runTile = [&](int64_t task) {
    int64_t batch = task / perBatch, tile = task % perBatch;
    int64_t row = tile / columnTiles * tileRows;
    int64_t column = tile % columnTiles * tileColumns;
    GemmProblem problem = gemmTile(op, batch, row, std::min(tileRows, m - row),
                                   column, std::min(tileColumns, n - column));
    op.gemmLibrary->run(problem);
    applyGemmEpilogue(problem, gemmEpilogueTile(op, batch, row, column));
  };
  // No signal may interrupt a library kernel that moves the stack pointer
  // into the heap (SignalMask.h); the workers have them blocked already.
  std::optional<runtime::AsynchronousSignalsBlocked> blocked;
  if (op.gemmBlocksSignals)
    blocked.emplace();
  pool_->parallelFor(call.batch() * perBatch, runTile);
}

void CpuDevice::runOp(const PreparedOp &op) {
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

Result CpuDevice::run(size_t index, const runtime::RunOptions &options,
                      const runtime::OpChecks &checks) {
  using Clock = std::chrono::steady_clock;
  std::vector<PreparedOp> &ops = entries_[index];
  if (options.hook)
    KILN_RETURN_IF_ERROR(options.hook->afterOp(-1));
  for (size_t i = 0; i < ops.size(); ++i) {
    const PreparedOp &op = ops[i];
    if (options.profile) {
      Clock::time_point start = Clock::now();
      runOp(op);
      options.profile->nanoseconds[i] += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                               start)
              .count());
      options.profile->calls[i] += 1;
    } else {
      runOp(op);
    }
    for (uint32_t id : op.buffers.status)
      KILN_RETURN_IF_ERROR(checks.status(index, i, id, pointers_[id]));
    if (options.checkNumerics)
      for (uint32_t id : op.buffers.checked)
        KILN_RETURN_IF_ERROR(checks.numerics(index, i, id, pointers_[id]));
    if (options.hook)
      KILN_RETURN_IF_ERROR(options.hook->afterOp(long(i)));
  }
  return Result::ok();
}

std::string CpuDevice::describeOp(size_t entry, size_t index) const {
  const PreparedOp &op = entries_[entry][index];
  switch (op.kind) {
  case plan::Call::KernelCall:
    return op.op->call_as_KernelCall()->symbol()->str() + ": " +
           std::to_string(op.range) + " iterations in chunks of at least " +
           std::to_string(op.grain);
  case plan::Call::GemmCall: {
    const plan::GemmCall &call = *op.gemm;
    return std::string(op.gemmLibrary->name()) + " " +
           gemmTypesName(op.gemmTypes) + " m=" + std::to_string(call.m()) +
           " n=" + std::to_string(call.n()) + " k=" + std::to_string(call.k()) +
           (call.batch() > 1 ? " batch=" + std::to_string(call.batch()) : "") +
           " in tiles of " + std::to_string(op.tileRows) + " x " +
           std::to_string(op.tileColumns);
  }
  default:
    return "";
  }
}
