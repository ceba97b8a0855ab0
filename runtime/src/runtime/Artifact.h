//===- Artifact.h - A loaded plan and its kernels ---------------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// An Artifact is an opened `OUT.kiln.d` directory: the bytes of plan.kpl,
// verified (file identifier, schema version, FlatBuffers structure, and the
// plan's own consistency: buffer ids, sizes, arena bounds, GEMM extents), and
// for a cpu plan the dlopen'ed kernels.so with every kernel symbol resolved.
// It is immutable once opened and shared by the sessions created from it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACT_H
#define KILN_RUNTIME_ARTIFACT_H

#include "DynamicLibrary.h"
#include "Result.h"

#include "kiln/plan_generated.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace runtime {

/// The cpu kernel ABI: computes [begin, end) of the outermost parallel dim.
using KernelFunction = void (*)(void **buffers, int64_t begin, int64_t end);

/// Bytes per element of `dtype` (I1 is stored as one byte).
size_t dtypeSize(plan::DType dtype);
/// The dtype's name as the model file writes it: "f32", "bf16", "i32".
const char *dtypeName(plan::DType dtype);
/// The kind's name: "param", "optimizer_state", "transient", ...
const char *bufferKindName(plan::BufferKind kind);
/// "f32[64, 128]" (or "f32[]" for a scalar).
std::string formatType(plan::DType dtype, const int64_t *shape, size_t rank);
/// "model.kiln:12:5", or "<unknown location>".
std::string formatLocation(const plan::SourceLoc *loc);
/// Whether buffers of `kind` persist across runs and are visible by name.
bool isPersistent(plan::BufferKind kind);

/// A buffer of the plan, decoded once.
struct BufferInfo {
  std::string name;
  plan::BufferKind kind;
  plan::DType dtype;
  std::vector<int64_t> shape;
  int64_t numElements;
  int64_t sizeBytes;
  int64_t arenaOffset;
  const plan::Buffer *table;
  /// One rank's part of a larger tensor (plan::Buffer::shard_offset): the
  /// 1-D run [shardOffset, shardOffset + numElements) of the row-major
  /// elements of a tensor of `wholeShape`; -1 for a whole buffer.
  int64_t shardOffset = -1;
  std::vector<int64_t> wholeShape;
};

/// An opened artifact directory.
class Artifact {
public:
  /// Opens `directory` (see the file comment); every failure names the file
  /// and what is wrong with it.
  static Result open(const std::string &directory,
                     std::shared_ptr<const Artifact> &artifact);
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const plan::Plan &getPlan() const { return *plan_; }
  const std::string &getDirectory() const { return directory_; }
  const std::vector<BufferInfo> &getBuffers() const { return buffers_; }
  /// The buffer named `name`, or -1.
  int64_t findBuffer(const std::string &name) const;
  /// The entry named `name`, or null.
  const plan::Entry *findEntry(const std::string &name) const;
  /// The resolved kernel `symbol` (resolved at open, so never null for a
  /// symbol the plan calls).
  KernelFunction getKernel(const std::string &symbol) const;
  /// The model name and target, for the C API (never null).
  const char *getModelName() const;
  const char *getTarget() const;
  /// cuda: the GPU architecture the kernels are for (sm_90); else "".
  const char *getArch() const;
  /// A cuda plan's GPU emulator build (kernels.emu.so), hash-checked at
  /// open, loaded (dlopen, every kernel resolved) by the first device that
  /// runs it on the host; a cuda device never loads it. Thread-safe.
  Result loadEmulatorKernels() const;

private:
  Artifact() = default;
  Result loadPlan();
  Result loadKernels();
  /// dlopens `file` (hash-checked when `hash` is not 0) and resolves every
  /// kernel the plan calls.
  Result loadHostKernels(std::string file, uint64_t hash) const;
  /// Checks that `file` (inside the artifact) hashes to `expected` (0: not
  /// checked); `what` names it in errors.
  Result checkFileHash(const std::string &file, uint64_t expected,
                       const char *what) const;
  /// Compares the kernels' own signature table (kiln/KernelSignatures.h)
  /// with every kernel call of the plan.
  Result checkKernelSignatures(const std::string &path) const;

  std::string directory_;
  std::string planBytes_;
  const plan::Plan *plan_ = nullptr;
  std::vector<BufferInfo> buffers_;
  std::unordered_map<std::string, int64_t> bufferByName_;
  // The host kernels: a cpu plan's at open, a cuda plan's emulator build
  // when first asked for (under emulatorMutex_).
  mutable std::unordered_map<std::string, KernelFunction> kernels_;
  mutable DynamicLibrary library_;
  mutable bool hostKernelsLoaded_ = false;
  mutable std::mutex emulatorMutex_;
};

/// Checks the plan's consistency beyond what the FlatBuffers verifier
/// checks, so that the executor never reads or writes out of bounds.
Result validatePlan(const plan::Plan &plan,
                    const std::vector<BufferInfo> &buffers);

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACT_H
