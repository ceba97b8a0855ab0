//===- CudaDevice.cpp - A session's entries on an NVIDIA GPU --------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#include "CudaExecutor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace kiln;
using namespace kiln::cuda;
using runtime::BufferInfo;

CudaDevice::~CudaDevice() = default;

Result CudaDevice::checkAvailable() {
  std::string error;
  std::unique_ptr<Driver> driver = Driver::load(error);
  DeviceInfo gpu;
  if (!driver || !driver->describeDevice(0, gpu, error))
    return Result::error(KILN_ERROR_DEVICE, "device 'cuda': " + error);
  return Result::ok();
}

Result CudaDevice::create(std::shared_ptr<const Artifact> artifact, int ordinal,
                          bool deterministic, int numThreads,
                          const std::vector<void *> &hostBuffers,
                          std::unique_ptr<runtime::Device> &device) {
  std::unique_ptr<CudaDevice> made(new CudaDevice());
  KILN_RETURN_IF_ERROR(
      Executor::create(artifact, ordinal, deterministic, made->executor_));
  // The GPU runs every op: host threads would do nothing, so a count asked
  // for is refused rather than ignored.
  if (numThreads != 0)
    return runtime::invalidArgument(
        "thread count " + std::to_string(numThreads) +
        " on device 'cuda', whose ops all run on the GPU (pass 0)");
  made->artifact_ = std::move(artifact);
  made->host_ = hostBuffers;
  size_t count = made->artifact_->getBuffers().size();
  made->hostNewer_.assign(count, false);
  made->deviceNewer_.assign(count, false);
  made->handedOut_.assign(count, false);
  if (const auto *entries = made->artifact_->getPlan().entries())
    for (const plan::Entry *entry : *entries) {
      made->firstOp_.push_back(made->opBuffers_.size());
      if (entry->ops())
        for (const plan::Op *op : *entry->ops())
          made->opBuffers_.push_back(
              runtime::listOpBuffers(*made->artifact_, *op));
    }
  made->firstOp_.push_back(made->opBuffers_.size());
  // KILN_CUDA_GRAPHS: 1 (the default) or 0; anything else is refused, not
  // read as one of them.
  const char *graphs = std::getenv("KILN_CUDA_GRAPHS");
  if (graphs && *graphs && std::strcmp(graphs, "0") != 0 &&
      std::strcmp(graphs, "1") != 0)
    return runtime::invalidArgument(std::string("KILN_CUDA_GRAPHS='") + graphs +
                                    "': expected 0 or 1");
  made->graphs_ = !(graphs && std::strcmp(graphs, "0") == 0);
  // The GPU's GEMMs are cuBLASLt's; its kernels are the artifact's own.
  made->gemmInfo_.library = "cublaslt";
  made->gemmInfo_.version = "cuBLASLt";
  made->gemmInfo_.isa = made->executor_->describe();
  device = std::move(made);
  return Result::ok();
}

Result CudaDevice::hostWrote(uint32_t id) {
  // An input goes up at once, overlapping a run in flight; anything else
  // is written after it (the session finishes first; so does this).
  if (artifact_->getBuffers()[id].kind == plan::BufferKind::Input)
    return executor_->stageInput(id, host_[id]);
  KILN_RETURN_IF_ERROR(finish());
  hostNewer_[id] = true;
  deviceNewer_[id] = false;
  return Result::ok();
}

Result CudaDevice::syncToHost(uint32_t id) {
  KILN_RETURN_IF_ERROR(finish());
  if (!deviceNewer_[id])
    return Result::ok();
  KILN_RETURN_IF_ERROR(executor_->copyOut(id, host_[id]));
  deviceNewer_[id] = false;
  return Result::ok();
}

std::string CudaDevice::describeOp(size_t entry, size_t op) const {
  return executor_->describeDeviceOp(entry, op);
}

Result CudaDevice::handOut(uint32_t id) {
  handedOut_[id] = true;
  return Result::ok();
}

Result CudaDevice::joinRanks(const void *id, int rank, int world,
                             double timeoutSeconds) {
  return executor_->joinRanks(id, rank, world, timeoutSeconds);
}

Result
CudaDevice::collectOverRanks(const std::vector<runtime::RankCollective> &work) {
  KILN_RETURN_IF_ERROR(finish());
  std::vector<uint32_t> ids;
  for (const runtime::RankCollective &collective : work)
    ids.push_back(collective.id);
  // The device works on its own copies: the host's newer bytes go up
  // first.
  for (uint32_t id : ids)
    if (hostNewer_[id] || handedOut_[id]) {
      KILN_RETURN_IF_ERROR(executor_->copyIn(id, host_[id]));
      hostNewer_[id] = false;
    }
  KILN_RETURN_IF_ERROR(executor_->collectOverRanks(work));
  for (uint32_t id : ids) {
    deviceNewer_[id] = true;
    if (handedOut_[id])
      KILN_RETURN_IF_ERROR(syncToHost(id));
  }
  return Result::ok();
}

Result CudaDevice::armGradientSums(size_t entry, uint64_t *waitedNs) {
  armedSums_ = static_cast<long>(entry);
  sumsWaitedNs_ = waitedNs;
  return Result::ok();
}

Result CudaDevice::reduceInParts(uint32_t id, std::vector<size_t> parts) {
  executor_->reduceInParts(id, std::move(parts));
  return Result::ok();
}

Result CudaDevice::finishGradientSums() {
  auto start = std::chrono::steady_clock::now();
  Result done = executor_->finishGradientSums();
  if (sumsWaitedNs_)
    *sumsWaitedNs_ = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now() - start)
            .count());
  sumsWaitedNs_ = nullptr;
  return done;
}

Result CudaDevice::run(size_t entry, const runtime::RunOptions &options,
                       const runtime::OpChecks &checks) {
  KILN_RETURN_IF_ERROR(finish());
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  // What the host wrote (set buffers, the run's RNG and status words) and
  // what a caller may have written through its pointer; then the inputs
  // staged since the last run, except where a caller's pointer has the
  // newer bytes. (A copy from pageable memory waits for the stream: these
  // go first, so that the staged inputs' copies stay queued.)
  auto copyIn = [&](bool inputs) -> Result {
    for (uint32_t id = 0; id < buffers.size(); ++id)
      if ((hostNewer_[id] || handedOut_[id]) &&
          inputs == (buffers[id].kind == plan::BufferKind::Input)) {
        KILN_RETURN_IF_ERROR(executor_->copyIn(id, host_[id]));
        hostNewer_[id] = false;
      }
    return Result::ok();
  };
  KILN_RETURN_IF_ERROR(copyIn(false));
  KILN_RETURN_IF_ERROR(executor_->takeStagedInputs());
  KILN_RETURN_IF_ERROR(copyIn(true));
  // The armed run queues its sums op by op (a captured graph holds an
  // unarmed run's ops) and returns once they are done.
  bool armed = armedSums_ == static_cast<long>(entry);
  armedSums_ = -1;
  if (armed)
    executor_->armGradientSums();
  Result done = options.checkNumerics || options.profile
                    ? runChecked(entry, options, checks, armed)
                    : executor_->runEntry(entry, graphs_ && !armed);
  // A run that failed midway still waits for the sums it started (within
  // the timeout), so that none stays in flight and no later run is armed.
  if (armed && !done.isOk())
    (void)finishGradientSums();
  KILN_RETURN_IF_ERROR(std::move(done));
  if (options.checkNumerics || options.profile)
    return Result::ok();
  if (armed)
    KILN_RETURN_IF_ERROR(finishGradientSums());
  inFlight_ = static_cast<long>(entry);
  inFlightChecks_ = &checks;
  return Result::ok();
}

Result CudaDevice::finish() {
  if (inFlight_ < 0)
    return Result::ok();
  size_t entry = static_cast<size_t>(inFlight_);
  inFlight_ = -1;
  KILN_RETURN_IF_ERROR(executor_->synchronize());
  KILN_RETURN_IF_ERROR(checkStatus(entry, *inFlightChecks_));
  return ran();
}

Result CudaDevice::checkStatus(size_t entry, const runtime::OpChecks &checks) {
  // Each status buffer read once, then the ops' words checked in order.
  std::vector<uint32_t> read;
  for (size_t op = firstOp_[entry]; op < firstOp_[entry + 1]; ++op)
    for (uint32_t id : opBuffers_[op].status)
      if (std::find(read.begin(), read.end(), id) == read.end()) {
        KILN_RETURN_IF_ERROR(executor_->copyOut(id, host_[id]));
        read.push_back(id);
      }
  for (size_t op = firstOp_[entry]; op < firstOp_[entry + 1]; ++op)
    for (uint32_t id : opBuffers_[op].status)
      KILN_RETURN_IF_ERROR(
          checks.status(entry, op - firstOp_[entry], id, host_[id]));
  return Result::ok();
}

Result CudaDevice::runChecked(size_t entry, const runtime::RunOptions &options,
                              const runtime::OpChecks &checks, bool armed) {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  std::vector<char> scratch;
  for (size_t op = 0; op < firstOp_[entry + 1] - firstOp_[entry]; ++op) {
    if (options.profile) {
      double milliseconds = 0;
      KILN_RETURN_IF_ERROR(executor_->timeOp(entry, op, milliseconds));
      options.profile->nanoseconds[op] +=
          static_cast<uint64_t>(milliseconds * 1e6);
      options.profile->calls[op] += 1;
    } else {
      KILN_RETURN_IF_ERROR(executor_->runOp(entry, op));
    }
    const runtime::OpBuffers &opBuffers = opBuffers_[firstOp_[entry] + op];
    for (uint32_t id : opBuffers.status) {
      KILN_RETURN_IF_ERROR(executor_->copyOut(id, host_[id]));
      KILN_RETURN_IF_ERROR(checks.status(entry, op, id, host_[id]));
    }
    if (!options.checkNumerics)
      continue;
    // A transient has no host copy: its bytes come into scratch memory.
    for (uint32_t id : opBuffers.checked) {
      scratch.resize(static_cast<size_t>(buffers[id].sizeBytes));
      KILN_RETURN_IF_ERROR(executor_->copyOut(id, scratch.data()));
      KILN_RETURN_IF_ERROR(checks.numerics(entry, op, id, scratch.data()));
    }
  }
  if (armed)
    KILN_RETURN_IF_ERROR(finishGradientSums());
  KILN_RETURN_IF_ERROR(executor_->synchronize());
  return ran();
}

Result CudaDevice::ran() {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (uint32_t id = 0; id < buffers.size(); ++id) {
    plan::BufferKind kind = buffers[id].kind;
    if (!runtime::isPersistent(kind) || kind == plan::BufferKind::Constant ||
        kind == plan::BufferKind::Input)
      continue;
    deviceNewer_[id] = true;
    // A handed-out buffer's host copy is refreshed at once.
    if (handedOut_[id])
      KILN_RETURN_IF_ERROR(syncToHost(id));
  }
  return Result::ok();
}
