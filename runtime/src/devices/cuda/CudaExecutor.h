//===- CudaExecutor.h - A plan's steps on an NVIDIA GPU ---------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR, no CUDA headers.
//
// What a session on device "cuda" runs its entries with: the plan's buffers
// in device memory (the arena at its planned offsets, one allocation per
// persistent buffer), its kernels from the artifact's cubin when it was
// assembled for this GPU's arch, else its PTX (compiled by the driver),
// launched with the plan's grid, block and shared bytes, its GEMMs through
// cuBLASLt, its copies and zeros as driver calls. The session keeps a host
// copy of every buffer and moves bytes between the two only where one side
// changed (Session.h).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CUDA_CUDAEXECUTOR_H
#define KILN_DEVICES_CUDA_CUDAEXECUTOR_H

#include "Artifact.h"
#include "CublasLt.h"
#include "CudaContext.h"
#include "Result.h"

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
  /// of `artifact` (a cuda plan), every op of every entry readied.
  static Result create(std::shared_ptr<const Artifact> artifact, int ordinal,
                       std::unique_ptr<Executor> &executor);
  ~Executor();

  /// "Kiln Fake GPU (sm_90), CUDA 13.0, PTX compiled by the driver".
  const std::string &describe() const { return description_; }
  /// Buffer `id`'s bytes from or into host memory.
  Result copyIn(uint32_t id, const void *host) const;
  Result copyOut(uint32_t id, void *host) const;
  /// Runs op `index` of entry `entry` (the plan's order).
  Result runOp(size_t entry, size_t index) const;
  /// Waits for the ops launched so far.
  Result synchronize() const;

private:
  Executor() = default;
  struct Op;
  Result prepareOp(const plan::Op &op, Op &prepared);
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
  std::string description_;
};

} // namespace cuda
} // namespace kiln

#endif // KILN_DEVICES_CUDA_CUDAEXECUTOR_H
