//===- CudaExecutor.h - A plan's ops on an NVIDIA GPU -----------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// The cuda device's machinery (CudaDevice.h keeps it in step with the
// session): the plan's buffers in device memory (the arena at its planned
// offsets, one allocation per persistent buffer), its kernels from the
// artifact's cubin when it was assembled for this GPU's arch, else its PTX
// (compiled by the driver), launched with the plan's grid, block and
// shared bytes, its GEMMs through cuBLASLt, its copies and zeros as driver
// calls, all queued in order on the context's compute stream.
//
// An entry runs op by op on its first run; on its second it is captured
// as a CUDA Graph, which every later run replays in one launch. Everything
// that changes from step to step (the RNG's words, the step, the batch,
// the status words) lives in device buffers the graph reads; the
// parameters frozen at capture are device pointers, which never change.
//
// An input's new bytes go up through pinned staging memory on the copy
// stream, into a device staging buffer, while the compute stream may still
// be running the last step; the next run copies them into the input on the
// compute stream, after the upload and before its first op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_CUDAEXECUTOR_H
#define KILN_DEVICES_CUDA_CUDAEXECUTOR_H

#include "Artifact.h"
#include "CublasLt.h"
#include "CudaContext.h"
#include "Nccl.h"
#include "PlanCollectives.h"
#include "Result.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace cuda {

using runtime::Artifact;
using runtime::Result;

class Executor {
public:
  /// The driver, GPU `ordinal`, the module, cuBLASLt and the device memory
  /// of `artifact` (a cuda plan), every op of every entry readied. Each
  /// distinct GEMM runs the fastest of the heuristic's candidates, timed
  /// here, or with `deterministic` the heuristic's first.
  static Result create(std::shared_ptr<const Artifact> artifact, int ordinal,
                       bool deterministic, std::unique_ptr<Executor> &executor);
  ~Executor();

  /// "Kiln Fake GPU, sm_90, CUDA 13.0, its cubin".
  const std::string &describe() const { return description_; }
  /// Queues a copy of buffer `id`'s bytes from pageable host memory, which
  /// is read before this returns.
  Result copyIn(uint32_t id, const void *host) const;
  /// Copies buffer `id`'s bytes into host memory once the queued work
  /// before it ran.
  Result copyOut(uint32_t id, void *host) const;
  /// Uploads input `id`'s new bytes from `host` through its staging
  /// buffers; the next run takes them.
  Result stageInput(uint32_t id, const void *host);
  /// Queues the staged inputs' copies into the inputs.
  Result takeStagedInputs();
  /// Queues entry `entry`'s ops: op by op, or from its CUDA Graph when
  /// `graph` (captured on its second such run).
  Result runEntry(size_t entry, bool graph);
  /// Queues op `index` of entry `entry` (the plan's order).
  Result runOp(size_t entry, size_t index) const;
  /// Runs that op alone and waits for it: its time on the GPU.
  Result timeOp(size_t entry, size_t index, double &milliseconds) const;
  /// Waits for the work queued so far.
  Result synchronize() const;
  /// Joins the data-parallel ranks NCCL's unique `id` names (NcclRanks).
  Result joinRanks(const void *id, int rank, int world, double timeoutSeconds);
  /// Sums f32 buffers `ids` over the joined ranks in place, after the work
  /// queued so far; returns once done.
  Result collectOverRanks(const std::vector<runtime::RankCollective> &work);
  /// The next runs' CollectiveStart/Wait ops queue the plan's gradient
  /// sums over the joined ranks (NCCL on its stream, each bucket after the
  /// compute stream's work before its start op; the compute stream's work
  /// after a wait op after every bucket started)...
  void armGradientSums() { sumsArmed_ = true; }
  /// Those sums reduce buffer `id` in `parts` (ZeRO-1), not whole.
  void reduceInParts(uint32_t id, std::vector<size_t> parts) {
    reduceParts_[id] = std::move(parts);
  }
  /// ... until this, which returns once the sums started are done
  /// (watched for errors and the timeout). Unarmed runs skip those ops.
  Result finishGradientSums();
  /// What op `index` of entry `entry` runs on the GPU: a kernel's grid and
  /// block, a GEMM's cuBLASLt problem and algorithm.
  std::string describeDeviceOp(size_t entry, size_t index) const;

private:
  Executor() = default;
  struct Op;
  struct Staging;
  struct EntryGraph;
  Result prepareOp(const plan::Op &op, Op &prepared);
  Result prepareStaging();
  Result capture(size_t entry, EntryGraph &graph);
  /// What a CollectiveStart `op` queues: its block summed whole, or each
  /// accumulator summed or reduced in parts (reduceInParts).
  std::vector<NcclFloats> bucketCollectives(const Op &op) const;
  /// Times each distinct GEMM's candidates on its own buffers (zeroed
  /// first) and keeps the fastest.
  Result tuneGemms();
  /// "model.kiln:3:5: op 'matmul' (entry 'train_step' op 4)".
  std::string describeOp(size_t entry, size_t index) const;
  CUdeviceptr pointer(uint32_t id) const { return pointers_[id]; }

  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<Driver> driver_;
  std::unique_ptr<Context> context_;
  std::unique_ptr<CublasLt> cublas_;
  CUmodule module_ = nullptr;
  CUdeviceptr arena_ = 0;
  std::vector<CUdeviceptr> allocations_;
  std::vector<CUdeviceptr> pointers_;
  CUdeviceptr workspace_ = 0;
  size_t workspaceBytes_ = 0;
  std::vector<std::vector<Op>> entries_;
  std::vector<EntryGraph> graphs_;
  /// Per buffer id; only the inputs' are set up.
  std::vector<Staging> staging_;
  CUevent start_ = nullptr, end_ = nullptr;
  bool deterministic_ = false;
  std::string description_;
  /// The data-parallel ranks, once joined.
  std::unique_ptr<NcclRanks> ranks_;
  /// The plan's gradient buckets and each one's block and f32 count.
  std::vector<runtime::PlanBucket> buckets_;
  std::vector<std::pair<CUdeviceptr, size_t>> bucketBlocks_;
  size_t preparingEntry_ = 0;
  bool sumsArmed_ = false;
  std::map<uint32_t, std::vector<size_t>> reduceParts_;
  mutable bool sumsStarted_ = false;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUDAEXECUTOR_H
