//===- CudaDevice.h - A session's entries on an NVIDIA GPU ------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// Device "cuda": every buffer lives in device memory (CudaExecutor.h) and
// the session's host copies of the persistent ones are kept in step: per
// buffer, which copy is the newer (both false: they agree), and whether a
// caller holds its host pointer (kiln_session_buffer_data), which is then
// copied both ways around every run. Bytes move only where one side
// changed.
//
// A run is queued and returns: the host may bind the next batch (its
// upload overlaps the run) and read nothing until finish(), which waits,
// reads the entry's status words and reports the first failure. With
// check-numerics or the profile, a run goes op by op and waits for each
// (times from CUDA events). KILN_CUDA_GRAPHS=0 runs every entry op by op
// instead of replaying its CUDA Graph (1, the default, replays; another
// value is refused).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_CUDADEVICE_H
#define KILN_DEVICES_CUDA_CUDADEVICE_H

#include "Device.h"

#include <memory>
#include <vector>

namespace kiln {
namespace cuda {

class Executor;
using runtime::Artifact;
using runtime::Result;

class CudaDevice : public runtime::Device {
public:
  /// A device for `artifact` on GPU `ordinal` whose persistent buffers'
  /// host copies are `hostBuffers` (indexed by buffer id).
  /// `deterministic`: each GEMM runs the heuristic's first algorithm, not
  /// the fastest of its candidates timed at creation. `numThreads` must be
  /// 0: host threads would do nothing here.
  static Result create(std::shared_ptr<const Artifact> artifact, int ordinal,
                       bool deterministic, int numThreads,
                       const std::vector<void *> &hostBuffers,
                       std::unique_ptr<runtime::Device> &device);
  /// kiln_device_check("cuda"): whether the driver loads and sees a GPU,
  /// else KILN_ERROR_DEVICE saying why.
  static Result checkAvailable();
  ~CudaDevice() override;

  const runtime::GemmInfo &getGemmInfo() const override { return gemmInfo_; }
  int getNumThreads() const override { return 1; }
  Result run(size_t entry, const runtime::RunOptions &options,
             const runtime::OpChecks &checks) override;
  Result finish() override;
  Result hostWrote(uint32_t id) override;
  Result syncToHost(uint32_t id) override;
  Result handOut(uint32_t id) override;
  std::string describeOp(size_t entry, size_t op) const override;
  Result joinRanks(const void *id, int rank, int world,
                   double timeoutSeconds) override;
  Result
  collectOverRanks(const std::vector<runtime::RankCollective> &work) override;
  Result armGradientSums(size_t entry, uint64_t *waitedNs) override;
  Result reduceInParts(uint32_t id, std::vector<size_t> parts) override;

private:
  CudaDevice() = default;
  /// Runs `entry` op by op, waiting for each, for its checks and profile;
  /// with `armed` its gradient sums too, waited for before the end.
  Result runChecked(size_t entry, const runtime::RunOptions &options,
                    const runtime::OpChecks &checks, bool armed);
  /// Waits for the armed run's gradient sums, timing the wait.
  Result finishGradientSums();
  /// Reads the status words `entry`'s kernels set and checks them.
  Result checkStatus(size_t entry, const runtime::OpChecks &checks);
  /// After a run: the device holds the newer bytes of what it may write.
  Result ran();

  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<Executor> executor_;
  std::vector<void *> host_;
  std::vector<runtime::OpBuffers> opBuffers_;
  /// Each entry's first op in opBuffers_.
  std::vector<size_t> firstOp_;
  std::vector<bool> hostNewer_, deviceNewer_, handedOut_;
  runtime::GemmInfo gemmInfo_;
  bool graphs_ = true;
  /// The entry queued and not finished (-1: none), and its checks.
  long inFlight_ = -1;
  /// The entry whose next run sums the gradients, and where that run's
  /// wait for them goes.
  long armedSums_ = -1;
  uint64_t *sumsWaitedNs_ = nullptr;
  const runtime::OpChecks *inFlightChecks_ = nullptr;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUDADEVICE_H
