//===- Nccl.h - NCCL, loaded at run time, between GPU ranks -----*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA or NCCL
// headers.
//
// The cuda device's data-parallel collectives: NCCL's libnccl.so.2,
// loaded with dlopen like the driver (`KILN_LIBNCCL=PATH` loads another
// file: the tests' fake NCCL, test/unit/fakes/FakeNccl.c). Rank 0 makes
// the group's unique id, the caller hands it to the other ranks (kiln
// train: over MPI), and each joins with a non-blocking communicator on its
// own GPU. A collective runs on a stream of its own, after the work queued
// on the compute stream, which waits for it; the host watches it
// (ncclCommGetAsyncError, the completion event) and past the timeout
// aborts the communicator (ncclCommAbort) instead of hanging.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_NCCL_H
#define KILN_DEVICES_CUDA_NCCL_H

#include "CudaContext.h"
#include "Device.h"
#include "DynamicLibrary.h"
#include "Result.h"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace cuda {

using runtime::Result;

/// nccl.h's types and the values Kiln passes or reads (NcclTest checks them
/// against the toolkit's header where one is installed).
using NcclResult = int;
using NcclComm = struct ncclComm *;
constexpr NcclResult kNcclSuccess = 0, kNcclInProgress = 7;
constexpr int kNcclFloat32 = 7, kNcclSum = 0;
constexpr size_t kNcclUniqueIdBytes = 128;
constexpr unsigned kNcclConfigMagic = 0xcafebeef;
constexpr int kNcclUndefined = -2147483647 - 1;
/// The config fields of NCCL 2.14, the first with non-blocking
/// communicators; later versions read only the `size` bytes given.
struct NcclConfig {
  size_t size = sizeof(NcclConfig);
  unsigned magic = kNcclConfigMagic;
  unsigned version = 21400;
  int blocking = 0;
  int cgaClusterSize = kNcclUndefined;
  int minCTAs = kNcclUndefined;
  int maxCTAs = kNcclUndefined;
  const char *netName = nullptr;
};

/// The entry points Kiln calls.
struct NcclApi {
  NcclResult (*ncclGetVersion)(int *version) = nullptr;
  NcclResult (*ncclGetUniqueId)(void *id) = nullptr;
  NcclResult (*ncclCommInitRankConfig)(NcclComm *comm, int world,
                                       const void *idBytes, int rank,
                                       NcclConfig *config) = nullptr;
  NcclResult (*ncclCommGetAsyncError)(NcclComm comm,
                                      NcclResult *error) = nullptr;
  NcclResult (*ncclCommAbort)(NcclComm comm) = nullptr;
  NcclResult (*ncclCommFinalize)(NcclComm comm) = nullptr;
  NcclResult (*ncclCommDestroy)(NcclComm comm) = nullptr;
  NcclResult (*ncclAllReduce)(const void *send, void *receive, size_t count,
                              int dataType, int op, NcclComm comm,
                              CUstream stream) = nullptr;
  NcclResult (*ncclReduce)(const void *send, void *receive, size_t count,
                           int dataType, int op, int root, NcclComm comm,
                           CUstream stream) = nullptr;
  NcclResult (*ncclBroadcast)(const void *send, void *receive, size_t count,
                              int dataType, int root, NcclComm comm,
                              CUstream stream) = nullptr;
  NcclResult (*ncclGroupStart)() = nullptr;
  NcclResult (*ncclGroupEnd)() = nullptr;
  const char *(*ncclGetErrorString)(NcclResult result) = nullptr;
  const char *(*ncclGetLastError)(NcclComm comm) = nullptr;
};

/// libnccl, loaded.
class Nccl {
public:
  ~Nccl();
  Nccl(const Nccl &) = delete;
  Nccl &operator=(const Nccl &) = delete;

  /// Loads NCCL (KILN_LIBNCCL, else libnccl.so.2) and resolves its entry
  /// points; null with the reason in `error`.
  static std::unique_ptr<Nccl> load(std::string &error);
  /// "NCCL 2.28.9 (libnccl.so.2)".
  const std::string &describe() const { return description_; }
  const NcclApi &api() const { return api_; }
  /// "ncclAllReduce: remote process exited or there was a network error
  /// (<NCCL's last error>)".
  std::string describeError(const char *call, NcclResult result,
                            NcclComm comm) const;

private:
  Nccl() = default;
  runtime::DynamicLibrary library_;
  NcclApi api_;
  std::string description_;
};

/// One f32 buffer's collective (runtime::RankCollective on the device).
struct NcclFloats {
  CUdeviceptr pointer;
  size_t count;
  runtime::RankCollective::Kind kind;
  std::vector<size_t> parts;
};

/// This rank's communicator among `world` GPUs, and its stream.
class NcclRanks {
public:
  /// Joins the group `id` names as rank `rank` of `world` on the GPU of
  /// `context`, within `timeoutSeconds` (0: forever) like every collective
  /// after it.
  static Result join(const Driver &driver, const Context &context,
                     const void *id, int rank, int world, double timeoutSeconds,
                     std::unique_ptr<NcclRanks> &ranks);
  /// Finalizes and destroys the communicator, or aborts it after a failure.
  ~NcclRanks();

  /// Runs `buffers`' collectives over the ranks, in place, as one NCCL
  /// group, after the work queued on the compute stream: an all-reduce,
  /// or one ncclReduce (ncclBroadcast) per rank's run onto (from) that
  /// rank; returns once done.
  Result collectFloats(const std::vector<NcclFloats> &buffers);

  /// The same in three parts, so that the collectives overlap the compute
  /// stream's later work (a plan's gradient sums during the backward):
  /// queues them on the collective stream after the work queued so far on
  /// the compute stream, and returns once NCCL took them...
  Result startFloats(const std::vector<NcclFloats> &buffers);
  /// ... makes the compute stream's later work wait for every collective
  /// started so far ...
  Result joinCompute();
  /// ... and returns once they are done, watching the communicator's
  /// errors and the timeout.
  Result waitStarted();

private:
  NcclRanks(const Driver &driver, const Context &context)
      : driver_(driver), context_(context) {}
  /// Waits for `done` to hold, watching the communicator's asynchronous
  /// error and the timeout; aborts the communicator on either.
  template <typename Done> Result watch(const std::string &what, Done done);
  Result fail(const std::string &message);

  const Driver &driver_;
  const Context &context_;
  std::unique_ptr<Nccl> nccl_;
  NcclComm comm_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent queued_ = nullptr, reduced_ = nullptr;
  /// What the collectives started and not yet waited for move ("the
  /// all-reduce of 1024 gradient bytes"), for messages.
  std::string started_;
  size_t startedBytes_ = 0;
  int rank_ = 0, world_ = 1;
  double timeoutSeconds_ = 0;
  bool failed_ = false;
};

/// kiln_nccl_unique_id: a new group's id from NCCL, and which NCCL made it.
Result makeNcclUniqueId(void *id, std::string &description);

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_NCCL_H
