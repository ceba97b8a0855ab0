//===- Session.cpp - Buffers of a session and access to them by name ------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "Session.h"
#include "devices/cuda/CudaDriver.h"
#include "devices/cuda/CudaExecutor.h"

#include <cstdlib>
#include <cstring>
#include <system_error>

using namespace kiln;
using namespace kiln::runtime;

/// The largest thread pool a session accepts.
static constexpr int kMaxThreads = 4096;

AlignedMemory::~AlignedMemory() { std::free(data_); }

Result AlignedMemory::allocate(size_t size, const std::string &what) {
  // aligned_alloc needs a multiple of the alignment, and a non-zero size so
  // that every buffer has a distinct, valid address.
  size_t rounded = (size + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_)
    return Result::error(KILN_ERROR_INTERNAL, "out of memory allocating " +
                                                  std::to_string(size) +
                                                  " bytes for " + what);
  std::memset(data_, 0, rounded);
  return Result::ok();
}

/// Device "cuda": the driver and its first GPU (`found` describes it), or
/// KILN_ERROR_DEVICE.
static Result loadCudaDevice(cuda::DeviceInfo &gpu, std::string &found) {
  std::string error;
  std::unique_ptr<cuda::Driver> driver = cuda::Driver::load(error);
  if (!driver)
    return Result::error(KILN_ERROR_DEVICE, "device 'cuda': " + error);
  if (!driver->describeDevice(0, gpu, error))
    return Result::error(KILN_ERROR_DEVICE, "device 'cuda': " + error);
  found = gpu.name + " (" + gpu.arch() + ") through " + driver->getPath() +
          " (CUDA " + driver->getVersionText() + ")";
  return Result::ok();
}

Result Session::checkDevice(const std::string &device) {
  if (device == "cpu" || device == "cuda-emulator")
    return Result::ok();
  if (device != "cuda")
    return invalidArgument("unknown device '" + device +
                           "' (expected \"cpu\", \"cuda\" or "
                           "\"cuda-emulator\")");
  cuda::DeviceInfo gpu;
  std::string found;
  return loadCudaDevice(gpu, found);
}

Result Session::create(std::shared_ptr<const Artifact> artifact,
                       const std::string &device, int numThreads,
                       std::unique_ptr<Session> &session, int deviceIndex) {
  // The GPU emulator runs a cuda plan on the host: its kernels from
  // kernels.emu.so, its GEMMs through the reference GEMM.
  bool emulator = device == "cuda-emulator";
  bool gpu = device == "cuda";
  if (device != "cpu" && !emulator && !gpu)
    return invalidArgument("unknown device '" + device +
                           "' (expected \"cpu\", \"cuda\" or "
                           "\"cuda-emulator\")");
  std::string target = artifact->getTarget();
  std::string wanted = emulator || gpu ? "cuda" : device;
  if (target != wanted)
    return invalidArgument("the artifact '" + artifact->getDirectory() +
                           "' was compiled for target '" + target +
                           "', not for device '" + device + "'");
  if (emulator && !artifact->hasHostKernels())
    return invalidArgument("the artifact '" + artifact->getDirectory() +
                           "' has no GPU emulator kernels (kernels.emu.so)");
  if (numThreads < 0 || numThreads > kMaxThreads)
    return invalidArgument("thread count " + std::to_string(numThreads) +
                           " is outside [0, " + std::to_string(kMaxThreads) +
                           "] (0: KILN_NUM_THREADS or the hardware's)");
  std::unique_ptr<Session> created(new Session());
  // On the GPU the buffers live in device memory too, and its ops run
  // there; the host side (copies, the prepared host ops) stays as is.
  if (gpu)
    KILN_RETURN_IF_ERROR(
        cuda::Executor::create(artifact, deviceIndex, created->cuda_));
  // The GPU runs every op: host threads would do nothing, so a count asked
  // for is refused rather than ignored, and the pool is the calling thread.
  if (gpu && numThreads != 0)
    return invalidArgument("thread count " + std::to_string(numThreads) +
                           " on device 'cuda', whose ops all run on the GPU "
                           "(pass 0)");
  if (gpu)
    numThreads = 1;
  if (numThreads == 0) {
    std::string error;
    std::optional<int> size = ThreadPool::defaultSize(kMaxThreads, error);
    if (!size)
      return invalidArgument(error);
    numThreads = *size;
  }
  created->artifact_ = std::move(artifact);
  created->emulator_ = emulator;
  std::string gemmError;
  created->gemm_ =
      cpu::getGemmLibrary(emulator || gpu ? "reference" : "", gemmError);
  if (!created->gemm_)
    return invalidArgument(gemmError);
  KILN_RETURN_IF_ERROR(created->allocate());
  KILN_RETURN_IF_ERROR(created->prepare());
  size_t count = created->artifact_->getBuffers().size();
  created->hostNewer_.assign(count, false);
  created->deviceNewer_.assign(count, false);
  created->handedOut_.assign(count, false);
  // Constants and the zeroed buffers go to the device before the first run.
  created->markAllHostNewer();
  created->describeGemms();
  if (gpu) {
    // The GPU's GEMMs are cuBLASLt's; its kernels are the artifact's own.
    created->gemmInfo_ = GemmInfo();
    created->gemmInfo_.library = "cublaslt";
    created->gemmInfo_.version = "cuBLASLt";
    created->gemmInfo_.isa = created->cuda_->describe();
  }
  try {
    created->pool_ = std::make_unique<ThreadPool>(numThreads);
  } catch (const std::system_error &error) {
    return Result::error(KILN_ERROR_INTERNAL,
                         std::string("cannot start the thread pool: ") +
                             error.what());
  }
  session = std::move(created);
  return Result::ok();
}

Session::~Session() = default;

void Session::markHostNewer(size_t id) {
  if (!cuda_)
    return;
  hostNewer_[id] = true;
  deviceNewer_[id] = false;
}

void Session::markAllHostNewer() {
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id)
    if (isPersistent(buffers[id].kind))
      markHostNewer(id);
}

Result Session::syncToHost(size_t id) {
  if (!cuda_ || !deviceNewer_[id])
    return Result::ok();
  KILN_RETURN_IF_ERROR(
      cuda_->copyOut(static_cast<uint32_t>(id), pointers_[id]));
  deviceNewer_[id] = false;
  return Result::ok();
}

Result Session::syncAllToHost() {
  for (size_t id = 0; id < pointers_.size(); ++id)
    KILN_RETURN_IF_ERROR(syncToHost(id));
  return Result::ok();
}

Result Session::allocate() {
  const plan::Plan &plan = artifact_->getPlan();
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  KILN_RETURN_IF_ERROR(
      arena_.allocate(static_cast<size_t>(plan.arena_bytes()), "the arena"));
  pointers_.assign(buffers.size(), nullptr);
  storage_.reserve(buffers.size());
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (buffer.kind == plan::BufferKind::Transient) {
      pointers_[id] = static_cast<char *>(arena_.data()) + buffer.arenaOffset;
      continue;
    }
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
  if (buffer.sizeBytes)
    std::memcpy(pointers_[id], data, static_cast<size_t>(buffer.sizeBytes));
  bound_[id] = true;
  markHostNewer(id);
  return Result::ok();
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
  if (sizeBytes)
    std::memcpy(pointers_[id], data, sizeBytes);
  bound_[id] = true;
  markHostNewer(id);
  return Result::ok();
}

Result Session::bufferData(const std::string &name, void *&data) {
  int64_t id;
  KILN_RETURN_IF_ERROR(findPersistent(name, "access", id));
  // On the GPU the pointer is the host copy, kept in step with the
  // device's around every run from now on.
  KILN_RETURN_IF_ERROR(syncToHost(id));
  data = pointers_[id];
  // The caller may fill an input through this pointer.
  bound_[id] = true;
  if (cuda_)
    handedOut_[id] = true;
  return Result::ok();
}
