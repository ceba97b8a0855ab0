//===- CudaExecutor.cpp - A plan's ops on an NVIDIA GPU -------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include "CudaExecutor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace kiln;
using namespace kiln::cuda;
using namespace kiln::runtime;

/// The cuBLASLt workspace every GEMM may use (what the heuristic is told).
static constexpr size_t kWorkspaceBytes = 32 << 20;
/// The heuristic's candidates a GEMM is timed over, and the runs timed.
static constexpr int kGemmCandidates = 8;
static constexpr int kTimedRuns = 3;

struct Executor::Op {
  plan::Call kind = plan::Call::NONE;
  // KernelCall.
  CUfunction function = nullptr;
  std::string name;
  unsigned grid = 1, block = 1, sharedBytes = 0;
  std::vector<CUdeviceptr> arguments;
  // GemmCall.
  std::unique_ptr<LtGemm> gemm;
  LtGemmPointers pointers;
  // CopyCall (source, destination) and ZeroCall (destination).
  CUdeviceptr source = 0, destination = 0;
  size_t bytes = 0;
  // CollectiveStart: its bucket's block of `bucketFloats` values (gaps
  // zero), and its buffers.
  CUdeviceptr bucketBlock = 0;
  size_t bucketFloats = 0;
  std::vector<uint32_t> bucketBuffers;
};

/// An input's way up: pinned host memory, a device buffer, and the events
/// that order the two streams around them.
struct Executor::Staging {
  void *pinned = nullptr;
  CUdeviceptr device = 0;
  size_t bytes = 0;
  /// Recorded on the copy stream after an upload, and on the compute
  /// stream after the run that took it.
  CUevent uploaded = nullptr, taken = nullptr;
  bool pending = false;
};

struct Executor::EntryGraph {
  unsigned runs = 0;
  CUgraphExec exec = nullptr;
};

/// A failure of the device, as the session reports it.
static Result deviceError(const std::string &message) {
  return Result::error(KILN_ERROR_DEVICE, "device 'cuda': " + message);
}

Executor::~Executor() {
  if (!context_)
    return;
  // Nothing is freed under queued work.
  context_->synchronize();
  ranks_.reset();
  for (EntryGraph &graph : graphs_)
    if (graph.exec)
      context_->destroyGraphExec(graph.exec);
  for (Staging &staging : staging_) {
    if (staging.pinned) {
      // The copy stream's last upload out of it is done.
      context_->synchronize(staging.uploaded);
      context_->releaseHost(staging.pinned);
    }
    if (staging.device)
      context_->release(staging.device);
    for (CUevent event : {staging.uploaded, staging.taken})
      if (event)
        context_->destroyEvent(event);
  }
  for (CUevent event : {start_, end_})
    if (event)
      context_->destroyEvent(event);
  for (CUdeviceptr allocation : allocations_)
    context_->release(allocation);
  if (arena_)
    context_->release(arena_);
  if (workspace_)
    context_->release(workspace_);
  entries_.clear();
  if (module_)
    context_->unloadModule(module_);
}

Result Executor::create(std::shared_ptr<const Artifact> artifact, int ordinal,
                        bool deterministic,
                        std::unique_ptr<Executor> &executor) {
  std::unique_ptr<Executor> made(new Executor());
  made->artifact_ = artifact;
  made->deterministic_ = deterministic;
  std::string error;
  made->driver_ = Driver::load(error);
  if (!made->driver_)
    return deviceError(error);
  made->context_ = Context::create(*made->driver_, ordinal, error);
  if (!made->context_)
    return deviceError(error);
  const DeviceInfo &gpu = made->context_->getDevice();
  std::string found = gpu.name + " (" + gpu.arch() + ") through " +
                      made->driver_->getPath() + " (CUDA " +
                      made->driver_->getVersionText() + ")";
  const plan::Plan &plan = artifact->getPlan();
  // PTX for sm_XY runs on that compute capability and later ones (the
  // driver compiles it); an artifact for a newer one cannot run here.
  std::string arch = artifact->getArch();
  if (arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 &&
      std::atoi(arch.c_str() + 3) > gpu.major * 10 + gpu.minor)
    return invalidArgument("the artifact '" + artifact->getDirectory() +
                           "' was compiled for " + arch + "; the GPU is " +
                           found + ": compile it with --arch=" + gpu.arch());
  // The cubin when ptxas assembled it for this very arch, else the PTX.
  bool cubin = plan.cubin_file() && arch == gpu.arch();
  std::string file = artifact->getDirectory() + "/" +
                     (cubin                 ? plan.cubin_file()->str()
                      : plan.kernels_file() ? plan.kernels_file()->str()
                                            : std::string("kernels.ptx"));
  if (std::string failed = made->context_->loadModule(file, made->module_);
      !failed.empty()) {
    made->module_ = nullptr;
    return deviceError(failed);
  }
  made->cublas_ = CublasLt::load(error);
  if (!made->cublas_)
    return deviceError(error);
  made->description_ = gpu.name + ", " + gpu.arch() + ", CUDA " +
                       made->driver_->getVersionText() + ", " +
                       (cubin ? "its cubin" : "PTX compiled by the driver");

  // Device memory: the arena at its planned offsets, a block per gradient
  // bucket (its accumulators one after another, the gaps zero, so that
  // NCCL sums the block whole), a block per other persistent buffer
  // (constants copied in by the session with the rest).
  const std::vector<BufferInfo> &buffers = artifact->getBuffers();
  made->pointers_.assign(buffers.size(), 0);
  if (std::string failed = made->context_->allocate(
          static_cast<size_t>(plan.arena_bytes()), made->arena_);
      !failed.empty())
    return deviceError(failed + " for the arena");
  KILN_RETURN_IF_ERROR(runtime::listPlanBuckets(plan, buffers, made->buckets_));
  std::vector<size_t> offsets;
  for (const runtime::PlanBucket &bucket : made->buckets_) {
    size_t bytes = runtime::layOutBucket(buffers, bucket, offsets);
    CUdeviceptr block = 0;
    std::string failed = made->context_->allocate(bytes, block);
    if (failed.empty())
      failed = made->context_->zero(block, bytes);
    if (!failed.empty())
      return deviceError(failed + " for gradient bucket " +
                         std::to_string(bucket.number));
    made->allocations_.push_back(block);
    made->bucketBlocks_.push_back({block, bytes / sizeof(float)});
    for (size_t i = 0; i < bucket.buffers.size(); ++i)
      made->pointers_[bucket.buffers[i]] = block + offsets[i];
  }
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (made->pointers_[id])
      continue;
    if (buffer.kind == plan::BufferKind::Transient) {
      made->pointers_[id] =
          made->arena_ + static_cast<CUdeviceptr>(buffer.arenaOffset);
      continue;
    }
    CUdeviceptr allocation = 0;
    if (std::string failed = made->context_->allocate(
            static_cast<size_t>(buffer.sizeBytes), allocation);
        !failed.empty())
      return deviceError(failed + " for buffer '" + buffer.name + "'");
    made->allocations_.push_back(allocation);
    made->pointers_[id] = allocation;
  }
  if (std::string failed =
          made->context_->allocate(kWorkspaceBytes, made->workspace_);
      !failed.empty())
    return deviceError(failed + " for cuBLASLt's workspace");
  made->workspaceBytes_ = kWorkspaceBytes;
  KILN_RETURN_IF_ERROR(made->prepareStaging());
  for (CUevent *event : {&made->start_, &made->end_})
    if (std::string failed = made->context_->createEvent(true, *event);
        !failed.empty())
      return deviceError(failed);

  if (plan.entries())
    for (const plan::Entry *entry : *plan.entries()) {
      std::vector<Op> ops(entry->ops() ? entry->ops()->size() : 0);
      made->preparingEntry_ = made->entries_.size();
      for (size_t i = 0; i < ops.size(); ++i)
        KILN_RETURN_IF_ERROR(made->prepareOp(*entry->ops()->Get(i), ops[i])
                                 .withContext("entry '" + entry->name()->str() +
                                              "' op " + std::to_string(i)));
      made->entries_.push_back(std::move(ops));
    }
  made->graphs_.resize(made->entries_.size());
  if (!deterministic)
    KILN_RETURN_IF_ERROR(made->tuneGemms());
  executor = std::move(made);
  return Result::ok();
}

Result Executor::prepareOp(const plan::Op &op, Op &prepared) {
  prepared.kind = op.call_type();
  switch (op.call_type()) {
  case plan::Call::KernelCall: {
    const plan::KernelCall &call = *op.call_as_KernelCall();
    prepared.name = call.symbol()->str();
    if (std::string failed =
            context_->getFunction(module_, prepared.name, prepared.function);
        !failed.empty())
      return deviceError(failed);
    prepared.grid = static_cast<unsigned>(call.grid_x());
    prepared.block = static_cast<unsigned>(call.block_x());
    prepared.sharedBytes = static_cast<unsigned>(call.shared_bytes());
    // Past 48 KiB of dynamic shared memory a kernel must opt in.
    if (prepared.sharedBytes > 48 * 1024)
      if (std::string failed = context_->allowSharedBytes(
              prepared.function, prepared.name, prepared.sharedBytes);
          !failed.empty())
        return deviceError(failed);
    if (call.buffers())
      for (uint32_t id : *call.buffers())
        prepared.arguments.push_back(pointer(id));
    return Result::ok();
  }
  case plan::Call::GemmCall: {
    const plan::GemmCall &call = *op.call_as_GemmCall();
    if (std::string failed = cublas_->prepare(
            call, workspaceBytes_, deterministic_ ? 1 : kGemmCandidates,
            prepared.gemm);
        !failed.empty())
      return Result::error(KILN_ERROR_UNSUPPORTED, failed);
    prepared.pointers.a = reinterpret_cast<const void *>(pointer(call.a()));
    prepared.pointers.b = reinterpret_cast<const void *>(pointer(call.b()));
    prepared.pointers.c = reinterpret_cast<void *>(pointer(call.c()));
    if (call.bias() >= 0)
      prepared.pointers.bias = reinterpret_cast<void *>(pointer(call.bias()));
    if (call.aux() >= 0)
      prepared.pointers.aux = reinterpret_cast<void *>(pointer(call.aux()));
    return Result::ok();
  }
  case plan::Call::CopyCall: {
    const plan::CopyCall &call = *op.call_as_CopyCall();
    prepared.source = pointer(call.source());
    prepared.destination = pointer(call.destination());
    prepared.bytes = static_cast<size_t>(call.size_bytes());
    return Result::ok();
  }
  case plan::Call::ZeroCall: {
    uint32_t id = op.call_as_ZeroCall()->buffer();
    prepared.destination = pointer(id);
    prepared.bytes = static_cast<size_t>(artifact_->getBuffers()[id].sizeBytes);
    return Result::ok();
  }
  case plan::Call::CollectiveStart: {
    // The bucket's block (buckets_ is in entry, then bucket order).
    uint32_t number = op.call_as_CollectiveStart()->bucket();
    for (size_t i = 0; i < buckets_.size(); ++i)
      if (buckets_[i].entry == preparingEntry_ &&
          buckets_[i].number == number) {
        prepared.bucketBlock = bucketBlocks_[i].first;
        prepared.bucketFloats = bucketBlocks_[i].second;
        prepared.bucketBuffers = buckets_[i].buffers;
      }
    return Result::ok();
  }
  case plan::Call::CollectiveWait:
    return Result::ok();
  default:
    return invalidFormat("an op without a call");
  }
}

Result Executor::prepareStaging() {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  staging_.resize(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (buffer.kind != plan::BufferKind::Input || buffer.sizeBytes == 0)
      continue;
    Staging &staging = staging_[id];
    staging.bytes = static_cast<size_t>(buffer.sizeBytes);
    std::string failed = context_->allocateHost(staging.bytes, staging.pinned);
    if (failed.empty())
      failed = context_->allocate(staging.bytes, staging.device);
    if (failed.empty())
      failed = context_->createEvent(false, staging.uploaded);
    if (failed.empty())
      failed = context_->createEvent(false, staging.taken);
    if (!failed.empty())
      return deviceError(failed + " to stage input '" + buffer.name + "'");
  }
  return Result::ok();
}

std::string Executor::describeOp(size_t entry, size_t index) const {
  const plan::Entry &planEntry = *artifact_->getPlan().entries()->Get(entry);
  const plan::Op &op = *planEntry.ops()->Get(index);
  return runtime::formatLocation(op.loc()) + ": op '" +
         (op.name() ? op.name()->str() : "") + "' (entry '" +
         planEntry.name()->str() + "' op " + std::to_string(index) + ")";
}

Result Executor::copyIn(uint32_t id, const void *host) const {
  size_t bytes = static_cast<size_t>(artifact_->getBuffers()[id].sizeBytes);
  if (!bytes)
    return Result::ok();
  std::string failed = context_->copyToDevice(pointer(id), host, bytes,
                                              context_->getComputeStream());
  return failed.empty() ? Result::ok()
                        : deviceError(failed + " into buffer '" +
                                      artifact_->getBuffers()[id].name + "'");
}

Result Executor::copyOut(uint32_t id, void *host) const {
  size_t bytes = static_cast<size_t>(artifact_->getBuffers()[id].sizeBytes);
  if (!bytes)
    return Result::ok();
  std::string failed = context_->copyToHost(host, pointer(id), bytes);
  return failed.empty() ? Result::ok()
                        : deviceError(failed + " from buffer '" +
                                      artifact_->getBuffers()[id].name + "'");
}

Result Executor::stageInput(uint32_t id, const void *host) {
  Staging &staging = staging_[id];
  if (!staging.pinned)
    return Result::ok();
  const std::string &name = artifact_->getBuffers()[id].name;
  auto fail = [&](const std::string &failed) {
    return deviceError(failed + " staging input '" + name + "'");
  };
  // The pinned memory is rewritten once its last upload is done, and the
  // device staging buffer once the run that took its last bytes is.
  if (std::string failed = context_->synchronize(staging.uploaded);
      !failed.empty())
    return fail(failed);
  std::memcpy(staging.pinned, host, staging.bytes);
  CUstream copy = context_->getCopyStream();
  std::string failed = context_->wait(copy, staging.taken);
  if (failed.empty())
    failed = context_->copyToDevice(staging.device, staging.pinned,
                                    staging.bytes, copy);
  if (failed.empty())
    failed = context_->record(staging.uploaded, copy);
  if (!failed.empty())
    return fail(failed);
  staging.pending = true;
  return Result::ok();
}

Result Executor::takeStagedInputs() {
  CUstream compute = context_->getComputeStream();
  for (size_t id = 0; id < staging_.size(); ++id) {
    Staging &staging = staging_[id];
    if (!staging.pending)
      continue;
    std::string failed = context_->wait(compute, staging.uploaded);
    if (failed.empty())
      failed = context_->copyOnDevice(pointer(static_cast<uint32_t>(id)),
                                      staging.device, staging.bytes);
    if (failed.empty())
      failed = context_->record(staging.taken, compute);
    if (!failed.empty())
      return deviceError(failed + " taking input '" +
                         artifact_->getBuffers()[id].name + "'");
    staging.pending = false;
  }
  return Result::ok();
}

Result Executor::runEntry(size_t entry, bool graph) {
  EntryGraph &entryGraph = graphs_[entry];
  if (graph && entryGraph.exec) {
    std::string failed = context_->launchGraph(entryGraph.exec);
    return failed.empty()
               ? Result::ok()
               : deviceError(
                     failed + " replaying entry '" +
                     artifact_->getPlan().entries()->Get(entry)->name()->str() +
                     "'");
  }
  // The first run goes op by op: cuBLASLt and the driver load what they
  // load lazily outside any capture.
  if (graph && entryGraph.runs > 0)
    return capture(entry, entryGraph);
  for (size_t i = 0; i < entries_[entry].size(); ++i)
    KILN_RETURN_IF_ERROR(runOp(entry, i));
  ++entryGraph.runs;
  return Result::ok();
}

Result Executor::capture(size_t entry, EntryGraph &entryGraph) {
  const std::string name =
      artifact_->getPlan().entries()->Get(entry)->name()->str();
  if (std::string failed = context_->beginCapture(); !failed.empty())
    return deviceError(failed + " capturing entry '" + name + "'");
  Result queued = Result::ok();
  for (size_t i = 0; i < entries_[entry].size() && queued.isOk(); ++i)
    queued = runOp(entry, i);
  // The capture is ended whatever happened, so that the stream is usable.
  CUgraph captured = nullptr;
  std::string failed = context_->endCapture(captured);
  if (!queued.isOk()) {
    if (captured)
      context_->destroyGraph(captured);
    return std::move(queued).withContext("capturing entry '" + name + "'");
  }
  if (failed.empty())
    failed = context_->instantiate(captured, entryGraph.exec);
  if (captured)
    context_->destroyGraph(captured);
  if (failed.empty())
    failed = context_->launchGraph(entryGraph.exec);
  if (!failed.empty())
    return deviceError(failed + " capturing entry '" + name + "'");
  return Result::ok();
}

Result Executor::tuneGemms() {
  // Timed on zeroes, not on whatever the allocations held (a NaN or a
  // denormal can change a GEMM's speed). The session copies every buffer's
  // bytes in before the first run.
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (uint32_t id = 0; id < buffers.size(); ++id)
    if (buffers[id].kind != plan::BufferKind::Transient)
      if (std::string failed = context_->zero(
              pointer(id), static_cast<size_t>(buffers[id].sizeBytes));
          !failed.empty())
        return deviceError(failed);
  if (std::string failed = context_->zero(
          arena_, static_cast<size_t>(artifact_->getPlan().arena_bytes()));
      !failed.empty())
    return deviceError(failed);
  // Each distinct problem is timed once, on the first op that has it.
  struct Tuned {
    std::string problem;
    size_t chosen;
    std::string text;
  };
  std::vector<Tuned> tuned;
  for (size_t entry = 0; entry < entries_.size(); ++entry)
    for (size_t index = 0; index < entries_[entry].size(); ++index) {
      Op &op = entries_[entry][index];
      if (op.kind != plan::Call::GemmCall)
        continue;
      LtGemm &gemm = *op.gemm;
      auto known =
          std::find_if(tuned.begin(), tuned.end(), [&](const Tuned &t) {
            return t.problem == gemm.describe();
          });
      if (known != tuned.end()) {
        gemm.choose(known->chosen);
        gemm.setChoiceText(known->text);
        continue;
      }
      size_t count = gemm.getCandidateCount();
      std::vector<double> times(count);
      for (size_t candidate = 0; candidate < count; ++candidate) {
        gemm.choose(candidate);
        // One run first, untimed (the library loads its kernel), then the
        // median of the timed runs.
        KILN_RETURN_IF_ERROR(runOp(entry, index));
        std::vector<double> runs(kTimedRuns);
        for (double &milliseconds : runs)
          KILN_RETURN_IF_ERROR(timeOp(entry, index, milliseconds));
        std::sort(runs.begin(), runs.end());
        times[candidate] = runs[kTimedRuns / 2];
      }
      size_t best = static_cast<size_t>(
          std::min_element(times.begin(), times.end()) - times.begin());
      gemm.choose(best);
      char text[160];
      std::snprintf(text, sizeof text,
                    "algorithm %zu of %zu (timed: %.4f ms; the heuristic's "
                    "first %.4f ms)",
                    best + 1, count, times[best], times[0]);
      gemm.setChoiceText(text);
      tuned.push_back({gemm.describe(), best, text});
    }
  KILN_RETURN_IF_ERROR(synchronize());
  return Result::ok();
}

std::string Executor::describeDeviceOp(size_t entry, size_t index) const {
  const Op &op = entries_[entry][index];
  switch (op.kind) {
  case plan::Call::KernelCall:
    return op.name + ": " + std::to_string(op.grid) + " blocks of " +
           std::to_string(op.block) + " threads" +
           (op.sharedBytes ? ", " + std::to_string(op.sharedBytes) +
                                 " bytes of dynamic shared memory"
                           : std::string());
  case plan::Call::GemmCall:
    return op.gemm->describe() + ", " + op.gemm->describeChoice();
  default:
    return "";
  }
}

Result Executor::runOp(size_t entry, size_t index) const {
  const Op &op = entries_[entry][index];
  std::string failed;
  switch (op.kind) {
  case plan::Call::KernelCall:
    failed = context_->launch(op.function, op.name, op.grid, op.block,
                              op.sharedBytes, op.arguments);
    break;
  case plan::Call::GemmCall:
    failed = cublas_->run(*op.gemm, op.pointers,
                          reinterpret_cast<void *>(workspace_),
                          context_->getComputeStream());
    break;
  case plan::Call::CopyCall:
    if (op.bytes && op.source != op.destination)
      failed = context_->copyOnDevice(op.destination, op.source, op.bytes);
    break;
  case plan::Call::ZeroCall:
    failed = context_->zero(op.destination, op.bytes);
    break;
  case plan::Call::CollectiveStart:
  case plan::Call::CollectiveWait:
    // Only the run armed for them sums (a step's last micro-batch).
    if (!sumsArmed_)
      break;
    if (!ranks_)
      return invalidArgument("the plan's gradient sums need the ranks "
                             "joined first (kiln_session_join_nccl)");
    if (op.kind == plan::Call::CollectiveWait)
      return ranks_->joinCompute().withContext(describeOp(entry, index));
    sumsStarted_ = true;
    return ranks_->startFloats(bucketCollectives(op))
        .withContext(describeOp(entry, index));
  default:
    break;
  }
  // A failing call names the op's model line too.
  return failed.empty()
             ? Result::ok()
             : deviceError(failed).withContext(describeOp(entry, index));
}

Result Executor::timeOp(size_t entry, size_t index,
                        double &milliseconds) const {
  // A collective's time is not the compute stream's: it is queued, and
  // waited for by finishGradientSums.
  plan::Call kind = entries_[entry][index].kind;
  if (kind == plan::Call::CollectiveStart ||
      kind == plan::Call::CollectiveWait) {
    milliseconds = 0;
    return runOp(entry, index);
  }
  CUstream compute = context_->getComputeStream();
  std::string failed = context_->record(start_, compute);
  if (!failed.empty())
    return deviceError(failed);
  KILN_RETURN_IF_ERROR(runOp(entry, index));
  float elapsed = 0;
  failed = context_->record(end_, compute);
  if (failed.empty())
    failed = context_->synchronize(end_);
  if (failed.empty())
    failed = context_->elapsed(start_, end_, elapsed);
  if (!failed.empty())
    return deviceError(failed).withContext(describeOp(entry, index));
  milliseconds = elapsed;
  return Result::ok();
}

std::vector<NcclFloats> Executor::bucketCollectives(const Op &op) const {
  using Kind = runtime::RankCollective::Kind;
  bool parted = false;
  for (uint32_t id : op.bucketBuffers)
    parted = parted || reduceParts_.count(id);
  if (!parted)
    return {{op.bucketBlock, op.bucketFloats, Kind::Sum, {}}};
  // ZeRO-1: each parted accumulator's runs reduced onto their ranks, the
  // others summed whole; one NCCL group either way.
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  std::vector<NcclFloats> collectives;
  for (uint32_t id : op.bucketBuffers) {
    auto found = reduceParts_.find(id);
    size_t count = static_cast<size_t>(buffers[id].numElements);
    if (found == reduceParts_.end())
      collectives.push_back({pointer(id), count, Kind::Sum, {}});
    else
      collectives.push_back(
          {pointer(id), count, Kind::ReduceParts, found->second});
  }
  return collectives;
}

Result Executor::finishGradientSums() {
  bool started = sumsStarted_;
  sumsArmed_ = sumsStarted_ = false;
  return started ? ranks_->waitStarted() : Result::ok();
}

Result Executor::synchronize() const {
  std::string failed = context_->synchronize();
  return failed.empty() ? Result::ok() : deviceError(failed);
}

Result Executor::joinRanks(const void *id, int rank, int world,
                           double timeoutSeconds) {
  if (ranks_)
    return invalidArgument("the session already joined its ranks");
  return NcclRanks::join(*driver_, *context_, id, rank, world, timeoutSeconds,
                         ranks_);
}

Result
Executor::collectOverRanks(const std::vector<runtime::RankCollective> &work) {
  if (!ranks_)
    return invalidArgument("the session joined no ranks "
                           "(kiln_session_join_nccl)");
  const std::vector<runtime::BufferInfo> &buffers = artifact_->getBuffers();
  std::vector<NcclFloats> floats;
  for (const runtime::RankCollective &collective : work) {
    const runtime::BufferInfo &buffer = buffers[collective.id];
    if (buffer.dtype != plan::DType::F32)
      return invalidArgument("cannot collect '" + buffer.name +
                             "' over the ranks: it is not f32");
    floats.push_back({pointer(collective.id),
                      static_cast<size_t>(buffer.numElements), collective.kind,
                      collective.parts});
  }
  return ranks_->collectFloats(floats);
}
