//===- Distributed.cpp - The ranks of a data-parallel kiln train ----------===//
//
// Part of Kiln. Collectives are non-blocking MPI calls polled against a
// deadline (--collective-timeout), so that a rank that stopped (SIGSTOP, a
// hang, a dead node) makes the others fail with its name instead of
// waiting forever: each step's heartbeat names the ranks that did not
// reach it, and an all-reduce that does not finish is followed by a probe
// that names the ranks that no longer answer.
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

#ifdef KILN_HAVE_MPI
// The C API only: not the deprecated C++ bindings' library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace llvm;
using namespace kiln::cli;

/// The world size a launcher announced in the environment (Open MPI's
/// mpirun, a PMI or PMIx launcher such as srun), or 0.
static int getLaunchedWorld() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::optional<std::string> value = sys::Process::GetEnv(name))
      return std::atoi(value->c_str());
  // srun without --mpi sets SLURM_NTASKS but no PMI: MPI_Init still works
  // through Slurm's PMI there.
  if (sys::Process::GetEnv("SLURM_STEP_ID"))
    if (std::optional<std::string> tasks = sys::Process::GetEnv("SLURM_NTASKS"))
      return std::atoi(tasks->c_str());
  return 0;
}

#ifdef KILN_HAVE_MPI
static Error mpiError(const char *what, int code) {
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  return createStringError(std::string(what) +
                           " failed: " + std::string(message, length));
}

namespace {
constexpr int kHeartbeatTag = 7301;
constexpr int kProbeTag = 7302;

/// Polls `requests` until all complete (true) or `timeout` seconds pass
/// (false; 0 waits forever).
bool waitWithin(std::vector<MPI_Request> &requests, double timeout) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
    if (done)
      return true;
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeout > 0 && waited > timeout)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}
} // namespace
#endif

Expected<Communicator> Communicator::join() {
  int launched = getLaunchedWorld();
#ifdef KILN_HAVE_MPI
  if (launched < 1)
    return Communicator(0, 1, /*joined=*/false);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    if (int code = MPI_Init(nullptr, nullptr); code != MPI_SUCCESS)
      return mpiError("MPI_Init", code);
  // Errors come back as codes, not as an abort inside the library.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Communicator joined(rank, world, /*joined=*/true);
  // The ranks on this machine: each binds the GPU of its index among them.
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                          MPI_INFO_NULL, &local) == MPI_SUCCESS) {
    MPI_Comm_rank(local, &joined.localRank_);
    MPI_Comm_free(&local);
  }
  return std::move(joined);
#else
  if (launched > 1)
    return createStringError(
        "this process was started as one of " + std::to_string(launched) +
        " ranks (mpirun or srun), but this kiln was built without MPI: "
        "install Open MPI (libopenmpi-dev) and rebuild");
  return Communicator(0, 1, /*joined=*/false);
#endif
}

int Communicator::gpu() const {
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible && *visible && !std::strchr(visible, ','))
    return 0;
  return localRank_;
}

Communicator::Communicator(Communicator &&other) noexcept
    : rank_(other.rank_), localRank_(other.localRank_), world_(other.world_),
      joined_(other.joined_), timeoutSeconds_(other.timeoutSeconds_),
      step_(other.step_), pending_(std::move(other.pending_)),
      scattered_(std::move(other.scattered_)) {
  other.joined_ = false;
}

Communicator::~Communicator() {
#ifdef KILN_HAVE_MPI
  if (joined_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
#endif
}

std::string Communicator::exchange(int tag) {
  std::string silent;
#ifdef KILN_HAVE_MPI
  // Static: a send still in flight when this returns (a rank that stopped)
  // keeps its buffer; the run is then aborted.
  static std::vector<int64_t> sent, received;
  sent.assign(1, step_);
  received.assign(world_, -1);
  std::vector<MPI_Request> receives, sends;
  std::vector<int> peers;
  for (int peer = 0; peer < world_; ++peer) {
    if (peer == rank_)
      continue;
    peers.push_back(peer);
    MPI_Request request;
    MPI_Irecv(&received[peer], 1, MPI_INT64_T, peer, tag, MPI_COMM_WORLD,
              &request);
    receives.push_back(request);
    MPI_Isend(sent.data(), 1, MPI_INT64_T, peer, tag, MPI_COMM_WORLD, &request);
    sends.push_back(request);
  }
  // The sends are small (eager): they finish once their receives are up.
  if (waitWithin(receives, timeoutSeconds_) &&
      waitWithin(sends, timeoutSeconds_))
    return silent;
  for (auto [peer, request] : llvm::zip(peers, receives)) {
    int arrived = 1;
    if (request != MPI_REQUEST_NULL)
      MPI_Test(&request, &arrived, MPI_STATUS_IGNORE);
    if (!arrived)
      silent += (silent.empty() ? "" : ", ") + std::to_string(peer);
  }
#endif
  return silent;
}

Error Communicator::heartbeat(int64_t step) {
  step_ = step;
  if (world_ == 1)
    return Error::success();
  std::string silent = exchange(kHeartbeatTag);
  if (silent.empty())
    return Error::success();
  return createStringError(formatv(
      "rank {0}: rank(s) {1} did not reach step {2} within {3} s "
      "(--collective-timeout): stopped, hung or dead; ending every rank",
      rank_, silent, step, timeoutSeconds_));
}

#ifdef KILN_HAVE_MPI
/// Posts the in-place sum of `count` values as MPI_Iallreduce calls (MPI
/// counts are ints: large buffers go in pieces), adding their requests.
static Error postSum(void *values, size_t count, size_t elementBytes,
                     MPI_Datatype datatype,
                     std::vector<MPI_Request> &requests) {
  constexpr size_t kPiece = size_t(1) << 30;
  auto *bytes = static_cast<char *>(values);
  for (size_t done = 0; done < count; done += kPiece) {
    int n = static_cast<int>(std::min(kPiece, count - done));
    requests.emplace_back();
    if (int code =
            MPI_Iallreduce(MPI_IN_PLACE, bytes + done * elementBytes, n,
                           datatype, MPI_SUM, MPI_COMM_WORLD, &requests.back());
        code != MPI_SUCCESS)
      return mpiError("MPI_Iallreduce", code);
  }
  return Error::success();
}
#endif

Error Communicator::timedOut(const char *what) {
  std::string silent = exchange(kProbeTag);
  return createStringError(
      formatv("rank {0}: {1} of step {2} did not finish within {3} s "
              "(--collective-timeout); {4}; ending every rank",
              rank_, what, step_, timeoutSeconds_,
              silent.empty() ? std::string("every rank still answers")
                             : "rank(s) " + silent + " no longer answer"));
}

Error Communicator::sum(void *values, size_t count, size_t elementBytes,
                        const void *type) {
  if (world_ == 1 || count == 0)
    return Error::success();
#ifdef KILN_HAVE_MPI
  std::vector<MPI_Request> requests;
  if (Error error = postSum(values, count, elementBytes,
                            *static_cast<const MPI_Datatype *>(type), requests))
    return error;
  if (!waitWithin(requests, timeoutSeconds_))
    return timedOut("the all-reduce");
#endif
  return Error::success();
}

#ifdef KILN_HAVE_MPI
struct Communicator::PendingSums {
  /// Each started bucket's requests, by bucket number.
  std::map<uint32_t, std::vector<MPI_Request>> buckets;
  /// A reduce-scatter's result, which MPI_IN_PLACE leaves at the buffer's
  /// start, to move to this rank's run once its bucket is done.
  struct Move {
    float *buffer;
    size_t offset, count;
  };
  std::map<uint32_t, std::vector<Move>> moves;
};
#else
struct Communicator::PendingSums {};
#endif

Error Communicator::startSum(uint32_t bucket, float *const *data,
                             const size_t *counts, size_t count) {
  if (world_ == 1)
    return Error::success();
#ifdef KILN_HAVE_MPI
  if (!pending_)
    pending_ = std::make_shared<PendingSums>();
  std::vector<MPI_Request> &requests = pending_->buckets[bucket];
  for (size_t i = 0; i < count; ++i) {
    auto scattered = scattered_.find(data[i]);
    if (scattered == scattered_.end()) {
      // Accumulators that follow one another in memory (the runtime lays a
      // bucket out in one block, each at a 64-byte boundary, the gaps
      // zero) are summed as one run, gaps and all.
      constexpr size_t kAligned = 64 / sizeof(float);
      size_t end = i + 1;
      float *runEnd = data[i] + counts[i];
      for (; end < count && !scattered_.count(data[end]); ++end) {
        float *next = data[i] + (size_t(runEnd - data[i]) + kAligned - 1) /
                                    kAligned * kAligned;
        if (data[end] != next)
          break;
        runEnd = data[end] + counts[end];
      }
      if (Error error = postSum(data[i], size_t(runEnd - data[i]),
                                sizeof(float), MPI_FLOAT, requests))
        return error;
      i = end - 1;
      continue;
    }
    const std::vector<int> &parts = scattered->second;
    requests.emplace_back();
    if (int code =
            MPI_Ireduce_scatter(MPI_IN_PLACE, data[i], parts.data(), MPI_FLOAT,
                                MPI_SUM, MPI_COMM_WORLD, &requests.back());
        code != MPI_SUCCESS)
      return mpiError("MPI_Ireduce_scatter", code);
    size_t offset = 0;
    for (int peer = 0; peer < rank_; ++peer)
      offset += size_t(parts[peer]);
    pending_->moves[bucket].push_back({data[i], offset, size_t(parts[rank_])});
  }
#endif
  return Error::success();
}

Error Communicator::progress() {
#ifdef KILN_HAVE_MPI
  // Open MPI moves a non-blocking collective on only inside MPI calls.
  if (pending_)
    for (auto &[bucket, requests] : pending_->buckets) {
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                  MPI_STATUSES_IGNORE);
    }
#endif
  return Error::success();
}

Error Communicator::waitSum(uint32_t bucket) {
#ifdef KILN_HAVE_MPI
  if (!pending_)
    return Error::success();
  auto found = pending_->buckets.find(bucket);
  if (found == pending_->buckets.end())
    return Error::success();
  std::vector<MPI_Request> requests = std::move(found->second);
  pending_->buckets.erase(found);
  if (!waitWithin(requests, timeoutSeconds_))
    return timedOut(
        formatv("the gradient all-reduce (bucket {0})", bucket).str().c_str());
  for (const PendingSums::Move &move : pending_->moves[bucket])
    std::memmove(move.buffer + move.offset, move.buffer,
                 move.count * sizeof(float));
  pending_->moves.erase(bucket);
#endif
  return Error::success();
}

template <typename T> Error Communicator::sumInPlace(T *values, size_t count) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
#ifdef KILN_HAVE_MPI
  MPI_Datatype type = std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
  return sum(values, count, sizeof(T), &type);
#else
  return Error::success();
#endif
}
template Error Communicator::sumInPlace(float *, size_t);
template Error Communicator::sumInPlace(double *, size_t);

void Communicator::scatterSums(const float *buffer, std::vector<int> counts) {
  scattered_[buffer] = std::move(counts);
}

Error Communicator::allGather(
    const std::vector<std::pair<float *, std::vector<int>>> &buffers) {
  if (world_ == 1)
    return Error::success();
#ifdef KILN_HAVE_MPI
  // All posted, then waited for together.
  std::vector<std::vector<int>> displacements;
  std::vector<MPI_Request> requests(buffers.size());
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    const std::vector<int> &counts = buffer.second;
    std::vector<int> &offsets = displacements.emplace_back(counts.size(), 0);
    for (size_t peer = 1; peer < counts.size(); ++peer)
      offsets[peer] = offsets[peer - 1] + counts[peer - 1];
    if (int code = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                   buffer.first, counts.data(), offsets.data(),
                                   MPI_FLOAT, MPI_COMM_WORLD, &requests[index]);
        code != MPI_SUCCESS)
      return mpiError("MPI_Iallgatherv", code);
  }
  if (!waitWithin(requests, timeoutSeconds_))
    return timedOut("the parameter all-gather");
#endif
  return Error::success();
}

Error Communicator::gatherToLeader(const void *part, size_t bytes, void *whole,
                                   size_t wholeBytes) {
  if (world_ == 1) {
    if (bytes != wholeBytes)
      return createStringError("one rank's part is not the whole tensor");
    std::memcpy(whole, part, bytes);
    return Error::success();
  }
#ifdef KILN_HAVE_MPI
  if (bytes > size_t(INT32_MAX))
    return createStringError(
        formatv("a part of {0} bytes is beyond MPI's int counts", bytes));
  int count = static_cast<int>(bytes);
  std::vector<int> counts(world_, 0), displacements(world_, 0);
  std::vector<MPI_Request> request(1);
  if (int code = MPI_Igather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0,
                             MPI_COMM_WORLD, &request[0]);
      code != MPI_SUCCESS)
    return mpiError("MPI_Igather", code);
  if (!waitWithin(request, timeoutSeconds_))
    return timedOut("the checkpoint's gather");
  if (rank_ == 0) {
    size_t total = 0;
    for (int peer = 0; peer < world_; ++peer) {
      displacements[peer] = static_cast<int>(total);
      total += size_t(counts[peer]);
    }
    if (total != wholeBytes || total > size_t(INT32_MAX))
      return createStringError(
          formatv("the ranks' parts hold {0} bytes, the whole tensor {1}",
                  total, wholeBytes));
  }
  if (int code = MPI_Igatherv(part, count, MPI_BYTE, whole, counts.data(),
                              displacements.data(), MPI_BYTE, 0, MPI_COMM_WORLD,
                              &request[0]);
      code != MPI_SUCCESS)
    return mpiError("MPI_Igatherv", code);
  if (!waitWithin(request, timeoutSeconds_))
    return timedOut("the checkpoint's gather");
#endif
  return Error::success();
}

Error Communicator::broadcast(void *bytes, size_t count) {
  if (world_ == 1)
    return Error::success();
#ifdef KILN_HAVE_MPI
  std::vector<MPI_Request> request(1);
  if (int code = MPI_Ibcast(bytes, static_cast<int>(count), MPI_BYTE, 0,
                            MPI_COMM_WORLD, &request[0]);
      code != MPI_SUCCESS)
    return mpiError("MPI_Ibcast", code);
  if (!waitWithin(request, timeoutSeconds_))
    return createStringError(
        formatv("rank {0}: rank 0's broadcast did not arrive within {1} s "
                "(--collective-timeout); ending every rank",
                rank_, timeoutSeconds_));
#endif
  return Error::success();
}

Error Communicator::barrier() {
  if (world_ == 1)
    return Error::success();
#ifdef KILN_HAVE_MPI
  if (int code = MPI_Barrier(MPI_COMM_WORLD); code != MPI_SUCCESS)
    return mpiError("MPI_Barrier", code);
#endif
  return Error::success();
}

void Communicator::abortAll(int code) {
  if (world_ == 1)
    return;
#ifdef KILN_HAVE_MPI
  MPI_Abort(MPI_COMM_WORLD, code);
#endif
}

const char *Communicator::describeTransport() {
#ifdef KILN_HAVE_MPI
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  // The first line ("Open MPI v4.1.4, package: ...").
  for (int i = 0; i < length; ++i)
    if (version[i] == ',' || version[i] == '\n') {
      version[i] = '\0';
      break;
    }
  return version;
#else
  return "no MPI (built without it)";
#endif
}
