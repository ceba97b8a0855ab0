//===- Device.h - What a session runs its entries on ------------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A Session (Session.h) is the same on every device: it owns the host copy
// of each persistent buffer (parameters, optimizer state, gradients,
// inputs, outputs, constants, RNG and status words) and everything done by
// name: binding, steps, checkpoints, initialization, diagnostics. A Device
// owns where the entries run: the transients' arena, the prepared ops and
// their kernels, and on a GPU the device's copy of every buffer, kept in
// step with the session's host copies through the calls below.
//
//   cpu            CpuDevice (devices/cpu/CpuDevice.h): the ops run in
//   cuda-emulator  the session's host memory, over a thread pool.
//   cuda           CudaDevice (devices/cuda/CudaDevice.h): device memory,
//                  the driver API, cuBLASLt, CUDA Graphs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DEVICE_H
#define KILN_RUNTIME_DEVICE_H

#include "Artifact.h"
#include "Result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {

/// What kiln_session_gemm_info reports.
struct GemmInfo {
  std::string library, version, isa, others, warning;
};

/// The buffers an op's results may be checked in.
struct OpBuffers {
  /// Floating-point buffers it may write (check-numerics).
  std::vector<uint32_t> checked;
  /// Status buffers (kiln.status) a kernel may set.
  std::vector<uint32_t> status;
};
/// The buffers of `op` of `artifact`'s plan.
OpBuffers listOpBuffers(const Artifact &artifact, const plan::Op &op);
/// Calls `visit` with every buffer `op` reads or writes, and whether it
/// may write it.
void visitOpBuffers(
    const plan::Op &op,
    const std::function<void(uint32_t id, bool written)> &visit);

/// Per-op calls and time of one entry, filled while profiling.
struct EntryProfile {
  std::vector<uint64_t> calls, nanoseconds;
};

/// The checks a session makes on an op's results, given their bytes; the
/// device calls them where those bytes can be read.
class OpChecks {
public:
  virtual ~OpChecks();
  /// Status words buffer `id` holds after op `op` of entry `entry`.
  virtual Result status(size_t entry, size_t op, uint32_t id,
                        const void *bytes) const = 0;
  /// check-numerics: a buffer op `op` may have written.
  virtual Result numerics(size_t entry, size_t op, uint32_t id,
                          const void *bytes) const = 0;
};

/// Called before the first op (with -1) and after each op of a run, where
/// the device runs its ops on the host (Device::runsOpsOnHost).
class OpHook {
public:
  virtual ~OpHook();
  virtual Result afterOp(long op) = 0;
};

struct RunOptions {
  /// Check every floating-point buffer after each op that writes it.
  bool checkNumerics = false;
  /// Time each op into this profile (null: not profiling).
  EntryProfile *profile = nullptr;
  OpHook *hook = nullptr;
};

/// A persistent f32 buffer's collective over the ranks (Device::
/// collectOverRanks): summed whole, or, for ZeRO-1, tiled by the ranks'
/// runs (`parts[r]` values for rank r, in rank order), each run reduced
/// onto its rank (the rest left undefined) or gathered from it.
struct RankCollective {
  enum class Kind { Sum, ReduceParts, GatherParts };
  uint32_t id;
  Kind kind = Kind::Sum;
  std::vector<size_t> parts;
};

class Device {
public:
  virtual ~Device();
  virtual const GemmInfo &getGemmInfo() const = 0;
  /// Host threads the ops run on (1 where a GPU runs them).
  virtual int getNumThreads() const = 0;
  /// Whether the ops run on the host, one after another, in the session's
  /// host buffers: then a run calls RunOptions::hook between them.
  virtual bool runsOpsOnHost() const { return false; }
  /// Runs entry `entry` (the plan's order). Where the device runs
  /// asynchronously the run may still be in flight when it returns; the
  /// host copies and any failure are the device's after finish().
  virtual Result run(size_t entry, const RunOptions &options,
                     const OpChecks &checks) = 0;
  /// Waits for the runs in flight, checks their status words and reports
  /// the first failure.
  virtual Result finish() = 0;
  /// The session wrote the host copy of persistent buffer `id`. An input
  /// just bound may be uploaded while a run is in flight; anything else is
  /// written only after finish().
  virtual Result hostWrote(uint32_t id) = 0;
  /// Brings the host copy of persistent buffer `id` up to date.
  virtual Result syncToHost(uint32_t id) = 0;
  /// A caller holds buffer `id`'s host pointer (kiln_session_buffer_data)
  /// from now on and may read or write it between any two runs.
  virtual Result handOut(uint32_t id) = 0;
  /// What op `op` of entry `entry` is on this device: a kernel's launch, a
  /// GEMM's library and (on cuda) the algorithm chosen for it.
  virtual std::string describeOp(size_t entry, size_t op) const = 0;
  /// Data parallelism through the device's own collectives (cuda: NCCL):
  /// joins rank `rank` of `world` in the group NCCL's unique `id` names,
  /// every collective after it watched for `timeoutSeconds` (0: forever).
  /// The cpu devices have none (the caller sums their host buffers).
  virtual Result joinRanks(const void *id, int rank, int world,
                           double timeoutSeconds);
  /// Runs `work`'s collectives on f32 persistent buffers over the joined
  /// ranks, in place, once the runs before it are done; the device then
  /// holds the newer bytes.
  virtual Result collectOverRanks(const std::vector<RankCollective> &work);
  /// Arms the next run of entry `entry` to run the plan's gradient sums
  /// (CollectiveStart/Wait) over the joined ranks with the device's own
  /// collectives; that run returns once they are done, with the time the
  /// host waited for them in `*waitedNs`. The cpu devices run them through
  /// the caller's collectives instead (GradientOverlap).
  virtual Result armGradientSums(size_t entry, uint64_t *waitedNs);
  /// Those sums reduce persistent f32 buffer `id` in `parts` (ZeRO-1: rank
  /// r's run of parts[r] values onto rank r) instead of summing it whole.
  virtual Result reduceInParts(uint32_t id, std::vector<size_t> parts);
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_DEVICE_H
