//===- Nccl.cpp - NCCL, loaded at run time, between GPU ranks -------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA or NCCL
// headers.
//
//===----------------------------------------------------------------------===//

#include "Nccl.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace kiln;
using namespace kiln::cuda;

namespace {
Result deviceError(const std::string &message) {
  return Result::error(KILN_ERROR_DEVICE, message);
}

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", seconds);
  return text;
}
} // namespace

Nccl::~Nccl() = default;

std::unique_ptr<Nccl> Nccl::load(std::string &error) {
  std::unique_ptr<Nccl> nccl(new Nccl());
  const char *chosen = std::getenv("KILN_LIBNCCL");
  std::string path = chosen && *chosen ? chosen : "libnccl.so.2";
  std::string reason;
  if (!nccl->library_.open(path, reason)) {
    error = "no NCCL: " + path + " cannot be loaded (" + reason + ")";
    return nullptr;
  }
  // Every entry point up front: a library that lacks one fails here, not
  // in the middle of a step.
  bool resolved = true;
  auto take = [&](const char *symbol, auto &function) {
    if (!resolved)
      return;
    if (!nccl->library_.resolve(symbol, function)) {
      error = path + " has no " + symbol +
              ": Kiln needs NCCL 2.14 or later (non-blocking communicators)";
      resolved = false;
    }
  };
  NcclApi &api = nccl->api_;
  take("ncclGetVersion", api.ncclGetVersion);
  take("ncclGetUniqueId", api.ncclGetUniqueId);
  take("ncclCommInitRankConfig", api.ncclCommInitRankConfig);
  take("ncclCommGetAsyncError", api.ncclCommGetAsyncError);
  take("ncclCommAbort", api.ncclCommAbort);
  take("ncclCommFinalize", api.ncclCommFinalize);
  take("ncclCommDestroy", api.ncclCommDestroy);
  take("ncclAllReduce", api.ncclAllReduce);
  take("ncclReduce", api.ncclReduce);
  take("ncclBroadcast", api.ncclBroadcast);
  take("ncclGroupStart", api.ncclGroupStart);
  take("ncclGroupEnd", api.ncclGroupEnd);
  take("ncclGetErrorString", api.ncclGetErrorString);
  take("ncclGetLastError", api.ncclGetLastError);
  if (!resolved)
    return nullptr;
  int version = 0;
  if (NcclResult result = api.ncclGetVersion(&version);
      result != kNcclSuccess) {
    error =
        path + ": " + nccl->describeError("ncclGetVersion", result, nullptr);
    return nullptr;
  }
  // NCCL 2.9 and later: major * 10000 + minor * 100 + patch.
  nccl->description_ = "NCCL " + std::to_string(version / 10000) + "." +
                       std::to_string(version / 100 % 100) + "." +
                       std::to_string(version % 100) + " (" + path + ")";
  return nccl;
}

std::string Nccl::describeError(const char *call, NcclResult result,
                                NcclComm comm) const {
  std::string text = std::string(call) + ": ";
  const char *name = api_.ncclGetErrorString(result);
  text += name ? name : "error " + std::to_string(result);
  const char *last = api_.ncclGetLastError(comm);
  if (last && *last)
    text += std::string(" (") + last + ")";
  return text;
}

Result cuda::makeNcclUniqueId(void *id, std::string &description) {
  std::string error;
  std::unique_ptr<Nccl> nccl = Nccl::load(error);
  if (!nccl)
    return deviceError(error);
  if (NcclResult result = nccl->api().ncclGetUniqueId(id);
      result != kNcclSuccess)
    return deviceError(nccl->describeError("ncclGetUniqueId", result, nullptr));
  description = nccl->describe();
  return Result::ok();
}

Result NcclRanks::join(const Driver &driver, const Context &context,
                       const void *id, int rank, int world,
                       double timeoutSeconds,
                       std::unique_ptr<NcclRanks> &ranks) {
  std::unique_ptr<NcclRanks> made(new NcclRanks(driver, context));
  std::string error;
  made->nccl_ = Nccl::load(error);
  if (!made->nccl_)
    return deviceError(error);
  made->rank_ = rank;
  made->world_ = world;
  made->timeoutSeconds_ = timeoutSeconds;
  const DriverApi &cu = driver.api();
  if (CUresult result = cu.cuStreamCreate(&made->stream_, kStreamNonBlocking);
      result != kCudaSuccess)
    return deviceError(driver.describeError("cuStreamCreate", result));
  for (CUevent *event : {&made->queued_, &made->reduced_})
    if (std::string failed = context.createEvent(false, *event);
        !failed.empty())
      return deviceError(failed);
  // Non-blocking: the call returns at once and the host watches the
  // communicator come up, so that a rank that never joins is a timeout,
  // not a hang.
  NcclConfig config;
  NcclResult result = made->nccl_->api().ncclCommInitRankConfig(
      &made->comm_, world, id, rank, &config);
  if (result != kNcclSuccess && result != kNcclInProgress) {
    std::string message = made->nccl_->describeError("ncclCommInitRankConfig",
                                                     result, made->comm_);
    return made->fail("rank " + std::to_string(rank) + " of " +
                      std::to_string(world) + ": " + message);
  }
  KILN_RETURN_IF_ERROR(made->watch("joining the ranks", [] { return true; }));
  ranks = std::move(made);
  return Result::ok();
}

NcclRanks::~NcclRanks() {
  if (comm_) {
    const NcclApi &api = nccl_->api();
    if (failed_) {
      api.ncclCommAbort(comm_);
    } else {
      // Finalize flushes the communicator's work; a non-blocking one says
      // when it is done through its asynchronous error.
      NcclResult state = api.ncclCommFinalize(comm_);
      auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (state == kNcclInProgress &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        api.ncclCommGetAsyncError(comm_, &state);
      }
      if (state == kNcclSuccess)
        api.ncclCommDestroy(comm_);
      else
        api.ncclCommAbort(comm_);
    }
  }
  const DriverApi &cu = driver_.api();
  for (CUevent event : {queued_, reduced_})
    if (event)
      cu.cuEventDestroy(event);
  if (stream_)
    cu.cuStreamDestroy(stream_);
}

Result NcclRanks::fail(const std::string &message) {
  failed_ = true;
  return deviceError(message);
}

template <typename Done>
Result NcclRanks::watch(const std::string &what, Done done) {
  const NcclApi &api = nccl_->api();
  auto start = std::chrono::steady_clock::now();
  std::string who =
      "rank " + std::to_string(rank_) + " of " + std::to_string(world_);
  for (;;) {
    NcclResult state = kNcclSuccess;
    if (NcclResult result = api.ncclCommGetAsyncError(comm_, &state);
        result != kNcclSuccess)
      state = result;
    if (state != kNcclSuccess && state != kNcclInProgress) {
      std::string message =
          nccl_->describeError("NCCL", state, comm_) + " while " + what;
      api.ncclCommAbort(comm_);
      comm_ = nullptr;
      return fail(who + ": " + message + "; the communicator is aborted");
    }
    if (state == kNcclSuccess && done())
      return Result::ok();
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeoutSeconds_ > 0 && waited > timeoutSeconds_) {
      api.ncclCommAbort(comm_);
      comm_ = nullptr;
      return fail(who + ": NCCL did not finish " + what + " within " +
                  formatSeconds(timeoutSeconds_) +
                  ": another rank stopped answering (--collective-timeout); "
                  "the communicator is aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Result NcclRanks::collectFloats(const std::vector<NcclFloats> &buffers) {
  KILN_RETURN_IF_ERROR(startFloats(buffers));
  KILN_RETURN_IF_ERROR(joinCompute());
  return waitStarted();
}

Result NcclRanks::startFloats(const std::vector<NcclFloats> &buffers) {
  if (failed_ || !comm_)
    return deviceError("the NCCL communicator was aborted after an earlier "
                       "failure");
  const NcclApi &api = nccl_->api();
  // The collective stream starts after the compute stream's work so far.
  CUstream compute = context_.getComputeStream();
  for (const std::string &failed :
       {context_.record(queued_, compute), context_.wait(stream_, queued_)})
    if (!failed.empty())
      return fail(failed);
  size_t bytes = 0;
  using Kind = runtime::RankCollective::Kind;
  const char *call = "ncclAllReduce";
  // One group: NCCL fuses the buffers' collectives into few kernels.
  NcclResult result = api.ncclGroupStart();
  for (const NcclFloats &buffer : buffers) {
    auto *data = reinterpret_cast<float *>(buffer.pointer);
    bytes += buffer.count * sizeof(float);
    if (buffer.kind == Kind::Sum) {
      if (result == kNcclSuccess)
        result = api.ncclAllReduce(data, data, buffer.count, kNcclFloat32,
                                   kNcclSum, comm_, stream_);
      continue;
    }
    // Rank r's run: reduced onto r, or broadcast from it.
    size_t offset = 0;
    for (int root = 0; root < world_ && result == kNcclSuccess; ++root) {
      size_t count = buffer.parts[root];
      float *run = data + offset;
      offset += count;
      if (buffer.kind == Kind::ReduceParts) {
        call = "ncclReduce";
        result = api.ncclReduce(run, run, count, kNcclFloat32, kNcclSum, root,
                                comm_, stream_);
      } else {
        call = "ncclBroadcast";
        result = api.ncclBroadcast(run, run, count, kNcclFloat32, root, comm_,
                                   stream_);
      }
    }
  }
  NcclResult ended = api.ncclGroupEnd();
  if (result == kNcclSuccess)
    result = ended;
  if (result != kNcclSuccess && result != kNcclInProgress)
    return fail(nccl_->describeError(call, result, comm_));
  Kind kind = buffers.empty() ? Kind::Sum : buffers.front().kind;
  startedBytes_ += bytes;
  started_ = std::string(kind == Kind::Sum           ? "the all-reduce"
                         : kind == Kind::ReduceParts ? "the reduce"
                                                     : "the gather") +
             " of " + std::to_string(startedBytes_) +
             (kind == Kind::GatherParts ? " parameter" : " gradient") +
             " bytes";
  // A non-blocking communicator may still be queueing the group's work
  // when ncclGroupEnd returns: the stream is NCCL's until its state says
  // success.
  if (result == kNcclInProgress)
    KILN_RETURN_IF_ERROR(watch("queueing " + started_, [] { return true; }));
  return Result::ok();
}

Result NcclRanks::joinCompute() {
  for (const std::string &failed :
       {context_.record(reduced_, stream_),
        context_.wait(context_.getComputeStream(), reduced_)})
    if (!failed.empty())
      return fail(failed);
  return Result::ok();
}

Result NcclRanks::waitStarted() {
  const DriverApi &cu = driver_.api();
  std::string queryError;
  Result watched = watch(started_, [&] {
    CUresult state = cu.cuEventQuery(reduced_);
    if (state != kCudaSuccess && state != kCudaErrorNotReady)
      queryError = driver_.describeError("cuEventQuery", state);
    return state != kCudaErrorNotReady;
  });
  started_.clear();
  startedBytes_ = 0;
  if (!watched.isOk())
    return watched;
  if (!queryError.empty())
    return fail(queryError);
  return Result::ok();
}
