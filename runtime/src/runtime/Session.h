//===- Session.h - An artifact's buffers and executor on the cpu -*- C++
//-*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A Session owns the memory of one artifact on one device: the arena that
// holds every transient at its planned offset, one allocation per persistent
// buffer (parameters, optimizer state, gradients, inputs, outputs,
// constants), and a thread pool. At creation each entry's ops are resolved
// into PreparedOps holding raw pointers, so running a step does no lookups.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SESSION_H
#define KILN_RUNTIME_SESSION_H

#include "Artifact.h"
#include "GemmEpilogue.h"
#include "ThreadPool.h"
#include "devices/cpu/GemmLibrary.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace runtime {

/// Memory aligned to 64 bytes (a cache line, and any vector width), zeroed.
class AlignedMemory {
public:
  AlignedMemory() = default;
  AlignedMemory(AlignedMemory &&other) noexcept : data_(other.data_) {
    other.data_ = nullptr;
  }
  AlignedMemory &operator=(AlignedMemory &&) = delete;
  ~AlignedMemory();
  /// Allocates `size` zeroed bytes; `what` names the memory in the error.
  Result allocate(size_t size, const std::string &what);
  void *data() const { return data_; }

private:
  void *data_ = nullptr;
};

/// One op of an entry, resolved against the session's memory.
struct PreparedOp {
  plan::Call kind;
  const plan::Op *op;
  // KernelCall.
  KernelFunction kernel = nullptr;
  std::vector<void *> arguments;
  int64_t range = 0;
  int64_t grain = 1;
  // GemmCall: the library that computes it and its tiles of C.
  const plan::GemmCall *gemm = nullptr;
  const cpu::GemmLibrary *gemmLibrary = nullptr;
  /// Whether asynchronous signals are blocked while it runs (its library
  /// moves the stack pointer: SignalMask.h).
  bool gemmBlocksSignals = false;
  cpu::GemmTypes gemmTypes = cpu::GemmTypes::F32;
  int64_t tileRows = 0, tileColumns = 0;
  // CopyCall (source, destination) and ZeroCall (destination).
  void *source = nullptr;
  void *destination = nullptr;
  size_t sizeBytes = 0;
  /// Floating-point buffers this op may write, for check-numerics.
  std::vector<uint32_t> checkedBuffers;
  /// Status buffers (kiln.status) the kernel may set, checked after it runs.
  std::vector<uint32_t> statusBuffers;
};

/// The prepared ops of one entry, and their profile.
struct PreparedEntry {
  const plan::Entry *entry;
  std::string name;
  std::vector<PreparedOp> ops;
  std::vector<uint64_t> calls;
  std::vector<uint64_t> nanoseconds;
};

/// What kiln_session_gemm_info reports.
struct GemmInfo {
  std::string library, version, isa, others, warning;
};

} // namespace runtime
namespace cuda {
class Executor;
} // namespace cuda
namespace runtime {

class Session {
public:
  ~Session();
  /// kiln_device_check: whether sessions can run on `device` here.
  static Result checkDevice(const std::string &device);
  /// Creates a session of `artifact` on `device` with `numThreads` threads
  /// (0: ThreadPool::defaultSize()).
  static Result create(std::shared_ptr<const Artifact> artifact,
                       const std::string &device, int numThreads,
                       std::unique_ptr<Session> &session, int deviceIndex = 0);

  const Artifact &getArtifact() const { return *artifact_; }
  int getNumThreads() const { return pool_->size(); }
  const GemmInfo &getGemmInfo() const { return gemmInfo_; }

  /// Parameters from their initializers with `seed`; state and gradients
  /// zeroed; step 0.
  Result initialize(uint64_t seed);
  Result bindInput(const std::string &name, const void *data, kiln_dtype dtype,
                   const int64_t *shape, int32_t rank);
  Result run(const std::string &entry);
  Result readOutput(const std::string &name, kiln_dtype dtype, void *data,
                    size_t sizeBytes);
  Result getBuffer(const std::string &name, void *data, size_t sizeBytes);
  Result setBuffer(const std::string &name, const void *data, size_t sizeBytes);
  Result bufferData(const std::string &name, void *&data);

  uint64_t getStep() const { return step_; }
  void setStep(uint64_t step) { step_ = step; }
  uint64_t getSeed() const { return seed_; }

  Result saveCheckpoint(const std::string &path,
                        const std::string &userMetadata);
  Result loadCheckpoint(const std::string &path, int32_t flags,
                        std::string *userMetadata);

  void setCheckNumerics(bool enabled) { checkNumerics_ = enabled; }
  void setProfiling(bool enabled);
  size_t getProfileCount() const;
  Result getProfile(size_t index, kiln_op_profile &profile) const;

  /// The last error on this session, for kiln_session_last_error.
  std::string lastError;

private:
  Session() = default;
  Result allocate();
  Result prepare();
  Result prepareOp(const plan::Op &op, PreparedOp &prepared);
  Result prepareGemm(const plan::GemmCall &call, PreparedOp &prepared);
  /// The single-threaded library call for one tile of C of a batch entry.
  cpu::GemmProblem gemmTile(const PreparedOp &op, int64_t batch, int64_t row,
                            int64_t rows, int64_t column,
                            int64_t columns) const;
  /// Where the epilogue's bias and aux elements of that tile start.
  GemmEpilogueTile gemmEpilogueTile(const PreparedOp &op, int64_t batch,
                                    int64_t row, int64_t column) const;
  /// Fills gemmInfo_ from gemm_ and gemmUses_.
  void describeGemms();
  /// The persistent buffer `name`; `action` words the error message.
  Result findPersistent(const std::string &name, const char *action,
                        int64_t &id) const;
  /// Whether buffer `id` is an output (its kind, or an entry lists it).
  bool isOutput(size_t id) const;
  void runOp(const PreparedOp &op);
  void runKernel(const PreparedOp &op);
  void runGemm(const PreparedOp &op);
  Result checkNumerics(const PreparedEntry &entry, size_t index) const;
  /// Fails (KILN_ERROR_NUMERICS) if a parameter or optimizer state holds a
  /// NaN or an infinity, naming it, with `purpose` after the message.
  Result checkFiniteState(const std::string &purpose) const;
  /// Fails if a kernel reported bad input through a status buffer.
  Result checkStatus(const PreparedEntry &entry, size_t index) const;
  /// Fills the rng_state buffers and zeroes the status buffers.
  void prepareRunBuffers();
  /// Device "cuda": runs `entry` (the plan's `index`-th) on the GPU.
  Result runOnDevice(PreparedEntry &entry, size_t index);
  /// cuda: brings buffer `id`'s host copy (or every buffer's) up to date
  /// with the device's. No-ops on the host devices.
  Result syncToHost(size_t id);
  Result syncAllToHost();
  /// cuda: the host copy of buffer `id` (or of every persistent buffer) was
  /// written and is the newer one.
  void markHostNewer(size_t id);
  void markAllHostNewer();

  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<ThreadPool> pool_;
  AlignedMemory arena_;
  std::vector<AlignedMemory> storage_;
  /// The base pointer of every buffer id.
  std::vector<void *> pointers_;
  std::vector<PreparedEntry> entries_;
  /// The GEMM library chosen for this session ($KILN_GEMM), and each
  /// distinct (types, library) its GEMMs use: another library computes the
  /// types the chosen one lacks. Libraries live as long as the process.
  std::shared_ptr<const cpu::GemmLibrary> gemm_;
  std::vector<std::pair<cpu::GemmTypes, const cpu::GemmLibrary *>> gemmUses_;
  GemmInfo gemmInfo_;
  /// Inputs bound at least once.
  std::vector<bool> bound_;
  uint64_t step_ = 0;
  uint64_t seed_ = 0;
  bool checkNumerics_ = false;
  bool profiling_ = false;
  /// A cuda plan run by the GPU emulator: its GEMMs go through the
  /// reference GEMM on purpose, not for want of a library.
  bool emulator_ = false;
  /// Device "cuda": the plan's buffers also live in device memory and run
  /// there; pointers_ are their host copies. Per buffer, which copy is the
  /// newer (both false: they agree), and whether a caller holds its host
  /// pointer (kiln_session_buffer_data), so that it is copied both ways
  /// around every run.
  std::unique_ptr<cuda::Executor> cuda_;
  std::vector<bool> hostNewer_, deviceNewer_, handedOut_;
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_SESSION_H
