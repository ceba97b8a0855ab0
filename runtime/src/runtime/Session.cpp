//===- Session.cpp - Buffers of a session and access to them by name ------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "Session.h"
#include "ThreadPool.h"
#include "devices/cpu/CpuDevice.h"
#ifdef KILN_HAVE_CUDA_DEVICE
#include "devices/cuda/CudaDevice.h"
#include "devices/cuda/Nccl.h"
#endif

#include <algorithm>
#include <cstring>

using namespace kiln;
using namespace kiln::runtime;

/// Whether `device` names a device of this runtime.
static Result checkDeviceName(const std::string &device) {
  if (device == "cpu" || device == "cuda" || device == "cuda-emulator")
    return Result::ok();
  return invalidArgument("unknown device '" + device +
                         "' (expected \"cpu\", \"cuda\" or "
                         "\"cuda-emulator\")");
}

#ifndef KILN_HAVE_CUDA_DEVICE
static Result builtWithoutCuda() {
  return Result::error(KILN_ERROR_DEVICE,
                       "device 'cuda': this runtime was built without it "
                       "(KILN_WITH_CUDA=OFF)");
}
#endif

Result Session::checkDevice(const std::string &device) {
  KILN_RETURN_IF_ERROR(checkDeviceName(device));
  if (device != "cuda")
    return Result::ok();
#ifdef KILN_HAVE_CUDA_DEVICE
  return cuda::CudaDevice::checkAvailable();
#else
  return builtWithoutCuda();
#endif
}

Result Session::makeNcclUniqueId(void *id, std::string &description) {
#ifdef KILN_HAVE_CUDA_DEVICE
  return cuda::makeNcclUniqueId(id, description);
#else
  (void)id;
  (void)description;
  return builtWithoutCuda();
#endif
}

Result Session::armGradientSums(const kiln_collectives *collectives) {
  auto found =
      std::find(entryNames_.begin(), entryNames_.end(), "accumulate_step");
  if (found == entryNames_.end())
    return invalidArgument("the plan has no 'accumulate_step' (compile it "
                           "for data parallelism or gradient accumulation)");
  size_t entry = size_t(found - entryNames_.begin());
  std::vector<PlanBucket> buckets;
  for (const PlanBucket &bucket : buckets_)
    if (bucket.entry == entry)
      buckets.push_back(bucket);
  if (buckets.empty())
    return invalidArgument("the plan's 'accumulate_step' has no gradient "
                           "sums: compile the step for a world over 1");
  const auto *ops = artifact_->getPlan().entries()->Get(entry)->ops();
  if (!device_->runsOpsOnHost()) {
    // The device's own collectives (cuda: NCCL over the joined ranks).
    if (collectives)
      return invalidArgument("this device sums over the ranks it joined "
                             "(kiln_session_join_nccl): pass no collectives");
    deviceSums_ = GradientOverlap::plannedStats(buckets, ops->size());
    deviceSumsArmed_ = true;
    return device_->armGradientSums(entry, &deviceSums_.blocked_ns);
  }
  if (!collectives || !collectives->start || !collectives->progress ||
      !collectives->wait)
    return invalidArgument("the collectives need start, progress and wait");
  armedOverlap_ = std::make_unique<GradientOverlap>(
      *artifact_, std::move(buckets), *collectives, pointers_, ops->size());
  return Result::ok();
}

Result Session::reduceInParts(const std::string &name, const uint64_t *parts) {
  int64_t id;
  KILN_RETURN_IF_ERROR(findPersistent(name, "reduce in parts", id));
  const BufferInfo &buffer = artifact_->getBuffers()[size_t(id)];
  if (!isGradientAccumulator(buffer) || buffer.dtype != plan::DType::F32)
    return invalidArgument("'" + name + "' is not an f32 gradient accumulator");
  std::vector<size_t> perRank(parts, parts + world_);
  uint64_t total = 0;
  for (size_t part : perRank)
    total += part;
  if (total != uint64_t(buffer.numElements))
    return invalidArgument("the ranks' parts of '" + name + "' hold " +
                           std::to_string(total) + " values, the buffer " +
                           std::to_string(buffer.numElements));
  return device_->reduceInParts(uint32_t(id), std::move(perRank));
}

Result Session::joinRanks(const void *id, double timeoutSeconds) {
  // A group of one is NCCL's too (its sums are the values themselves).
  return device_->joinRanks(id, static_cast<int>(rank_),
                            static_cast<int>(world_), timeoutSeconds);
}

Result Session::collectOverRanks(const std::vector<std::string> &names,
                                 RankCollective::Kind kind,
                                 const uint64_t *parts) {
  std::vector<RankCollective> work;
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  const char *what = kind == RankCollective::Kind::Sum ? "sum over the ranks"
                     : kind == RankCollective::Kind::ReduceParts
                         ? "reduce in parts over the ranks"
                         : "gather in parts over the ranks";
  for (size_t i = 0; i < names.size(); ++i) {
    int64_t id;
    KILN_RETURN_IF_ERROR(findPersistent(names[i], what, id));
    RankCollective collective{static_cast<uint32_t>(id), kind, {}};
    if (kind != RankCollective::Kind::Sum) {
      uint64_t total = 0;
      for (uint64_t rank = 0; rank < world_; ++rank) {
        collective.parts.push_back(parts[i * world_ + rank]);
        total += parts[i * world_ + rank];
      }
      if (total != static_cast<uint64_t>(buffers[id].numElements))
        return invalidArgument("the ranks' parts of '" + names[i] + "' hold " +
                               std::to_string(total) + " values, the buffer " +
                               std::to_string(buffers[id].numElements));
    }
    work.push_back(std::move(collective));
  }
  return device_->collectOverRanks(work);
}

Result Session::create(std::shared_ptr<const Artifact> artifact,
                       const Options &options,
                       std::unique_ptr<Session> &session) {
  const std::string &device = options.device;
  int numThreads = options.numThreads;
  // The GPU emulator runs a cuda plan on the host: its kernels from
  // kernels.emu.so, its GEMMs through the reference GEMM.
  KILN_RETURN_IF_ERROR(checkDeviceName(device));
  bool emulator = device == "cuda-emulator";
  bool gpu = device == "cuda";
  std::string target = artifact->getTarget();
  std::string wanted = emulator || gpu ? "cuda" : device;
  if (target != wanted)
    return invalidArgument("the artifact '" + artifact->getDirectory() +
                           "' was compiled for target '" + target +
                           "', not for device '" + device + "'");
  if (numThreads < 0 || numThreads > ThreadPool::kMaxSize)
    return invalidArgument("thread count " + std::to_string(numThreads) +
                           " is outside [0, " +
                           std::to_string(ThreadPool::kMaxSize) +
                           "] (0: KILN_NUM_THREADS or the hardware's)");
  std::unique_ptr<Session> created(new Session());
  created->artifact_ = artifact;
  KILN_RETURN_IF_ERROR(created->allocate());
  KILN_RETURN_IF_ERROR(created->findWeightCopies());
  if (gpu) {
#ifdef KILN_HAVE_CUDA_DEVICE
    KILN_RETURN_IF_ERROR(cuda::CudaDevice::create(
        artifact, options.deviceIndex, options.deterministic, numThreads,
        created->pointers_, created->device_));
#else
    return builtWithoutCuda();
#endif
  } else {
    KILN_RETURN_IF_ERROR(cpu::CpuDevice::create(
        artifact, emulator, numThreads, created->pointers_, created->device_));
  }
  created->checks_ = std::make_unique<Checks>(*created);
  int64_t skipped = created->artifact_->findBuffer("skipped");
  created->defersNumerics_ = skipped >= 0 && created->isOutput(skipped);
  if (const auto *entries = created->artifact_->getPlan().entries())
    for (const plan::Entry *entry : *entries) {
      created->entryNames_.push_back(entry->name()->str());
      size_t ops = entry->ops() ? entry->ops()->size() : 0;
      created->profiles_.push_back(
          {std::vector<uint64_t>(ops), std::vector<uint64_t>(ops)});
    }
  // Constants and the zeroed buffers go to the device before the first run.
  const std::vector<BufferInfo> &buffers = created->artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id)
    if (isPersistent(buffers[id].kind))
      KILN_RETURN_IF_ERROR(created->device_->hostWrote(id));
  session = std::move(created);
  return Result::ok();
}

/// What the devices check after an op, worded by the session.
class Session::Checks : public OpChecks {
public:
  explicit Checks(Session &session) : session_(session) {}
  Result status(size_t entry, size_t op, uint32_t id,
                const void *bytes) const override {
    return session_.checkStatus(entry, op, id, bytes);
  }
  Result numerics(size_t entry, size_t op, uint32_t id,
                  const void *bytes) const override {
    Result found = session_.checkNumerics(entry, op, id, bytes);
    if (found.isOk() || !session_.defersNumerics_)
      return found;
    if (!session_.deferredNumerics_)
      session_.deferredNumerics_ = std::move(found);
    return Result::ok();
  }

private:
  Session &session_;
};

Session::~Session() = default;

Result Session::hostWrote(size_t id) {
  noteHostWrote(id);
  return device_->hostWrote(static_cast<uint32_t>(id));
}

Result Session::syncToHost(size_t id) {
  KILN_RETURN_IF_ERROR(device_->finish());
  return device_->syncToHost(static_cast<uint32_t>(id));
}

Result Session::syncAllToHost() {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id)
    if (isPersistent(buffers[id].kind))
      KILN_RETURN_IF_ERROR(syncToHost(id));
  return Result::ok();
}

Result Session::synchronize() { return device_->finish(); }

const plan::Op &Session::getOp(size_t entry, size_t op) const {
  return *artifact_->getPlan().entries()->Get(entry)->ops()->Get(op);
}

Result Session::allocate() {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  pointers_.assign(buffers.size(), nullptr);
  storage_.reserve(buffers.size());
  // Each gradient bucket in one zeroed block, so that its sum may run over
  // the block whole (kiln_collectives::start).
  KILN_RETURN_IF_ERROR(
      listPlanBuckets(artifact_->getPlan(), buffers, buckets_));
  std::vector<size_t> offsets;
  for (const PlanBucket &bucket : buckets_) {
    size_t bytes = layOutBucket(buffers, bucket, offsets);
    storage_.emplace_back();
    KILN_RETURN_IF_ERROR(storage_.back().allocate(
        bytes, "gradient bucket " + std::to_string(bucket.number)));
    for (size_t i = 0; i < bucket.buffers.size(); ++i)
      pointers_[bucket.buffers[i]] =
          static_cast<char *>(storage_.back().data()) + offsets[i];
  }
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (!isPersistent(buffer.kind) || pointers_[id])
      continue;
    storage_.emplace_back();
    KILN_RETURN_IF_ERROR(storage_.back().allocate(
        static_cast<size_t>(buffer.sizeBytes), "buffer '" + buffer.name + "'"));
    pointers_[id] = storage_.back().data();
    if (buffer.kind == plan::BufferKind::Constant && buffer.sizeBytes) {
      // All of the bytes, or a splat's one element repeated (validatePlan
      // checked that the data divides the buffer).
      const auto *data = buffer.table->data();
      char *out = static_cast<char *>(pointers_[id]);
      for (size_t at = 0; at < static_cast<size_t>(buffer.sizeBytes);
           at += data->size())
        std::memcpy(out + at, data->data(), data->size());
    }
  }
  bound_.assign(buffers.size(), false);
  return Result::ok();
}

Result Session::findPersistent(const std::string &name, const char *action,
                               int64_t &id) const {
  id = artifact_->findBuffer(name);
  if (id < 0)
    return invalidArgument("cannot " + std::string(action) + " '" + name +
                           "': the plan has no buffer of that "
                           "name");
  const BufferInfo &buffer = artifact_->getBuffers()[id];
  if (!isPersistent(buffer.kind))
    return invalidArgument("cannot " + std::string(action) + " '" + name +
                           "': it is a transient (its arena bytes are reused "
                           "within a step)");
  return Result::ok();
}

/// The name of a caller's dtype, which may be anything.
static std::string callerDTypeName(kiln_dtype dtype) {
  if (dtype >= KILN_F32 && dtype <= KILN_U8)
    return dtypeName(static_cast<plan::DType>(dtype));
  return "<dtype " + std::to_string(static_cast<int>(dtype)) + ">";
}

/// "f32[2, 3]" for a caller's dtype and shape, which may be anything.
static std::string formatCallerType(kiln_dtype dtype, const int64_t *shape,
                                    int32_t rank) {
  std::string text = callerDTypeName(dtype) + "[";
  for (int32_t i = 0; i < rank && shape; ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Result Session::bindInput(const std::string &name, const void *data,
                          kiln_dtype dtype, const int64_t *shape,
                          int32_t rank) {
  int64_t id = artifact_->findBuffer(name);
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  if (id < 0 || buffers[id].kind != plan::BufferKind::Input) {
    std::string inputs;
    for (const BufferInfo &buffer : buffers)
      if (buffer.kind == plan::BufferKind::Input)
        inputs += (inputs.empty() ? "'" : ", '") + buffer.name + "'";
    return invalidArgument(
        "the model has no input '" + name +
        "' (its inputs: " + (inputs.empty() ? "none" : inputs) + ")");
  }
  const BufferInfo &buffer = buffers[id];
  if (rank < 0 || (rank > 0 && !shape) || (!data && buffer.sizeBytes))
    return invalidArgument("input '" + name + "': null data or shape");
  bool sameShape = static_cast<size_t>(rank) == buffer.shape.size() &&
                   std::equal(buffer.shape.begin(), buffer.shape.end(), shape);
  if (static_cast<int>(dtype) != static_cast<int>(buffer.dtype) || !sameShape)
    return invalidArgument(
        "input '" + name + "' expects " +
        formatType(buffer.dtype, buffer.shape.data(), buffer.shape.size()) +
        " but was given " + formatCallerType(dtype, shape, rank));
  // The device may still be running on the input's last bytes: only the
  // host copy is written now, and the device takes it from there.
  if (buffer.sizeBytes)
    std::memcpy(pointers_[id], data, static_cast<size_t>(buffer.sizeBytes));
  bound_[id] = true;
  return hostWrote(id);
}

bool Session::isOutput(size_t id) const {
  const BufferInfo &buffer = artifact_->getBuffers()[id];
  if (buffer.kind == plan::BufferKind::Output)
    return true;
  if (!isPersistent(buffer.kind) || !artifact_->getPlan().entries())
    return false;
  for (const plan::Entry *entry : *artifact_->getPlan().entries())
    if (entry->outputs())
      for (uint32_t output : *entry->outputs())
        if (output == id)
          return true;
  return false;
}

Result Session::readOutput(const std::string &name, kiln_dtype dtype,
                           void *data, size_t sizeBytes) {
  int64_t id = artifact_->findBuffer(name);
  if (id < 0 || !isOutput(id)) {
    std::string outputs;
    for (size_t i = 0; i < artifact_->getBuffers().size(); ++i)
      if (isOutput(i))
        outputs += (outputs.empty() ? "'" : ", '") +
                   artifact_->getBuffers()[i].name + "'";
    return invalidArgument(
        "the model has no output '" + name +
        "' (its outputs: " + (outputs.empty() ? "none" : outputs) + ")");
  }
  const BufferInfo &buffer = artifact_->getBuffers()[id];
  if (static_cast<int>(dtype) != static_cast<int>(buffer.dtype))
    return invalidArgument(
        "output '" + name + "' is " +
        formatType(buffer.dtype, buffer.shape.data(), buffer.shape.size()) +
        " but was read as " + callerDTypeName(dtype));
  return getBuffer(name, data, sizeBytes);
}

Result Session::getBuffer(const std::string &name, void *data,
                          size_t sizeBytes) {
  int64_t id;
  KILN_RETURN_IF_ERROR(findPersistent(name, "read", id));
  const BufferInfo &buffer = artifact_->getBuffers()[id];
  if (sizeBytes != static_cast<size_t>(buffer.sizeBytes))
    return invalidArgument(
        "buffer '" + name + "' (" +
        formatType(buffer.dtype, buffer.shape.data(), buffer.shape.size()) +
        ") holds " + std::to_string(buffer.sizeBytes) + " bytes, not " +
        std::to_string(sizeBytes));
  if (!data && sizeBytes)
    return invalidArgument("buffer '" + name + "': null destination");
  KILN_RETURN_IF_ERROR(syncToHost(id));
  if (sizeBytes)
    std::memcpy(data, pointers_[id], sizeBytes);
  return Result::ok();
}

Result Session::setBuffer(const std::string &name, const void *data,
                          size_t sizeBytes) {
  int64_t id;
  KILN_RETURN_IF_ERROR(findPersistent(name, "write", id));
  const BufferInfo &buffer = artifact_->getBuffers()[id];
  if (buffer.kind == plan::BufferKind::Constant)
    return invalidArgument("cannot write '" + name +
                           "': it is a constant of the plan");
  if (buffer.kind == plan::BufferKind::RngState ||
      buffer.kind == plan::BufferKind::Status)
    return invalidArgument("cannot write '" + name + "': the runtime fills " +
                           "this " + bufferKindName(buffer.kind) +
                           " buffer before each run");
  if (sizeBytes != static_cast<size_t>(buffer.sizeBytes))
    return invalidArgument(
        "buffer '" + name + "' (" +
        formatType(buffer.dtype, buffer.shape.data(), buffer.shape.size()) +
        ") holds " + std::to_string(buffer.sizeBytes) + " bytes, not " +
        std::to_string(sizeBytes));
  if (!data && sizeBytes)
    return invalidArgument("buffer '" + name + "': null source");
  // Written after the runs in flight, which may write it too.
  KILN_RETURN_IF_ERROR(syncToHost(id));
  if (sizeBytes)
    std::memcpy(pointers_[id], data, sizeBytes);
  bound_[id] = true;
  return hostWrote(id);
}

Result Session::bufferData(const std::string &name, void *&data) {
  int64_t id;
  KILN_RETURN_IF_ERROR(findPersistent(name, "access", id));
  // On the GPU the pointer is the host copy, kept in step with the
  // device's around every run from now on.
  KILN_RETURN_IF_ERROR(syncToHost(id));
  data = pointers_[id];
  // The caller may fill an input (or a parameter) through this pointer.
  bound_[id] = true;
  noteHostWrote(id);
  return device_->handOut(static_cast<uint32_t>(id));
}

Result Session::prepareRunBuffers(uint32_t microBatch) {
  KILN_RETURN_IF_ERROR(refreshWeightCopies());
  // Dropout's Philox key and step (kiln/Philox.h): the step of the run, i.e.
  // the number of train steps completed before it.
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id) {
    if (buffers[id].kind == plan::BufferKind::RngState) {
      // Word 3: the micro-batch of an accumulated step, so that each of
      // the K micro-batches draws its own part of one mask (0 otherwise).
      uint32_t words[4] = {static_cast<uint32_t>(seed_),
                           static_cast<uint32_t>(seed_ >> 32),
                           static_cast<uint32_t>(step_), microBatch};
      std::memcpy(pointers_[id], words, sizeof words);
    } else if (buffers[id].kind == plan::BufferKind::Status) {
      std::memset(pointers_[id], 0, static_cast<size_t>(buffers[id].sizeBytes));
    } else {
      continue;
    }
    KILN_RETURN_IF_ERROR(hostWrote(id));
  }
  return Result::ok();
}

Result Session::run(const std::string &entryName) {
  auto found = std::find(entryNames_.begin(), entryNames_.end(), entryName);
  if (found == entryNames_.end()) {
    std::string names;
    for (const std::string &candidate : entryNames_)
      names += (names.empty() ? "'" : ", '") + candidate + "'";
    return invalidArgument(
        "the plan has no entry point '" + entryName +
        "' (its entries: " + (names.empty() ? "none" : names) + ")");
  }
  size_t index = static_cast<size_t>(found - entryNames_.begin());
  const plan::Entry &entry = *artifact_->getPlan().entries()->Get(index);
  if (const auto *inputs = entry.inputs())
    for (uint32_t id : *inputs)
      if (!bound_[id])
        return invalidArgument("entry '" + entryName + "' reads input '" +
                               artifact_->getBuffers()[id].name +
                               "', which was never bound");
  // The last run's RNG and status words are its own until it finished.
  KILN_RETURN_IF_ERROR(device_->finish());
  bool accumulating = entryName == "accumulate_step";
  // A data-parallel rank's k-th micro-batch is micro-batch k * world + rank
  // of the whole batch (setDataParallel).
  KILN_RETURN_IF_ERROR(
      prepareRunBuffers(accumulating ? microBatches_ * world_ + rank_ : 0));
  RunOptions options;
  options.checkNumerics = checkNumerics_;
  options.profile = profiling_ ? &profiles_[index] : nullptr;
  std::unique_ptr<GradientOverlap> overlap;
  if (accumulating)
    overlap = std::move(armedOverlap_);
  options.hook = overlap.get();
  KILN_RETURN_IF_ERROR(device_->run(index, options, *checks_));
  if (overlap) {
    KILN_RETURN_IF_ERROR(overlap->finish());
    overlapStats_ = overlap->getStats();
  }
  if (accumulating && deviceSumsArmed_) {
    deviceSumsArmed_ = false;
    overlapStats_ = deviceSums_;
  }
  if (accumulating)
    ++microBatches_;
  if (entryName == "train_step" || entryName == "apply_step") {
    ++step_;
    microBatches_ = 0;
    return resolveDeferredNumerics();
  }
  return Result::ok();
}

Result Session::resolveDeferredNumerics() {
  if (!deferredNumerics_)
    return Result::ok();
  Result found = std::move(*deferredNumerics_);
  deferredNumerics_.reset();
  float skipped = 0;
  KILN_RETURN_IF_ERROR(
      readOutput("skipped", KILN_F32, &skipped, sizeof skipped));
  // A skipped step's overflow was loss scaling's probe, not a failure.
  return skipped != 0 ? Result::ok() : std::move(found);
}
