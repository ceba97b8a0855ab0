//===- CpuDevice.h - Entries run in host memory over a thread pool -*- C++
//-*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Device "cpu" (a cpu plan, its kernels from kernels.so, its GEMMs through
// the chosen GEMM library) and "cuda-emulator" (a cuda plan run on the
// host: its kernels from the GPU emulator's build, kernels.emu.so, blocks
// as iterations; its GEMMs through the reference GEMM). The ops compute in
// place in the session's host buffers; the transients live in an arena at
// their planned offsets. At creation each entry's ops are resolved into
// PreparedOps holding raw pointers, so running a step does no lookups.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DEVICES_CPU_CPUDEVICE_H
#define KILN_DEVICES_CPU_CPUDEVICE_H

#include "AlignedMemory.h"
#include "Device.h"
#include "GemmEpilogue.h"
#include "ThreadPool.h"
#include "devices/cpu/GemmLibrary.h"

#include <memory>
#include <utility>
#include <vector>

namespace kiln {
namespace cpu {

using runtime::Artifact;
using runtime::Result;

/// One op of an entry, resolved against the device's memory.
struct PreparedOp {
  plan::Call kind;
  const plan::Op *op;
  // KernelCall.
  runtime::KernelFunction kernel = nullptr;
  std::vector<void *> arguments;
  int64_t range = 0;
  int64_t grain = 1;
  // GemmCall: the library that computes it and its tiles of C.
  const plan::GemmCall *gemm = nullptr;
  const GemmLibrary *gemmLibrary = nullptr;
  /// Whether asynchronous signals are blocked while it runs (its library
  /// moves the stack pointer: SignalMask.h).
  bool gemmBlocksSignals = false;
  GemmTypes gemmTypes = GemmTypes::F32;
  int64_t tileRows = 0, tileColumns = 0;
  // CopyCall (source, destination) and ZeroCall (destination).
  void *source = nullptr;
  void *destination = nullptr;
  size_t sizeBytes = 0;
  runtime::OpBuffers buffers;
};

class CpuDevice : public runtime::Device {
public:
  /// A device for `artifact` with `numThreads` threads (0: the default,
  /// ThreadPool::defaultSize) whose persistent
  /// buffers are `hostBuffers` (indexed by buffer id; null for the
  /// transients, which it places in its arena). `emulator`: device
  /// "cuda-emulator".
  static Result create(std::shared_ptr<const Artifact> artifact, bool emulator,
                       int numThreads, const std::vector<void *> &hostBuffers,
                       std::unique_ptr<runtime::Device> &device);
  ~CpuDevice() override;

  const runtime::GemmInfo &getGemmInfo() const override { return gemmInfo_; }
  int getNumThreads() const override { return pool_->size(); }
  bool runsOpsOnHost() const override { return true; }
  Result run(size_t entry, const runtime::RunOptions &options,
             const runtime::OpChecks &checks) override;
  // The ops compute in the host buffers: nothing to wait for or copy.
  Result finish() override { return Result::ok(); }
  Result hostWrote(uint32_t) override { return Result::ok(); }
  Result syncToHost(uint32_t) override { return Result::ok(); }
  Result handOut(uint32_t) override { return Result::ok(); }
  std::string describeOp(size_t entry, size_t op) const override;

private:
  CpuDevice() = default;
  Result prepare();
  Result prepareOp(const plan::Op &op, PreparedOp &prepared);
  Result prepareGemm(const plan::GemmCall &call, PreparedOp &prepared);
  /// The single-threaded library call for one tile of C of a batch entry.
  GemmProblem gemmTile(const PreparedOp &op, int64_t batch, int64_t row,
                       int64_t rows, int64_t column, int64_t columns) const;
  /// Where the epilogue's bias and aux elements of that tile start.
  GemmEpilogueTile gemmEpilogueTile(const PreparedOp &op, int64_t batch,
                                    int64_t row, int64_t column) const;
  /// Fills gemmInfo_ from gemm_ and gemmUses_.
  void describeGemms();
  void runOp(const PreparedOp &op);
  void runKernel(const PreparedOp &op);
  void runGemm(const PreparedOp &op);

  std::shared_ptr<const Artifact> artifact_;
  std::unique_ptr<runtime::ThreadPool> pool_;
  runtime::AlignedMemory arena_;
  /// The base pointer of every buffer id.
  std::vector<void *> pointers_;
  std::vector<std::vector<PreparedOp>> entries_;
  /// The GEMM library chosen for this device ($KILN_GEMM), and each
  /// distinct (types, library) its GEMMs use: another library computes the
  /// types the chosen one lacks. Libraries live as long as the process.
  std::shared_ptr<const GemmLibrary> gemm_;
  std::vector<std::pair<GemmTypes, const GemmLibrary *>> gemmUses_;
  runtime::GemmInfo gemmInfo_;
  /// A cuda plan run by the GPU emulator: its GEMMs go through the
  /// reference GEMM on purpose, not for want of a library.
  bool emulator_ = false;
};

} // namespace cpu
} // namespace kiln

#endif // KILN_DEVICES_CPU_CPUDEVICE_H
