//===- Artifact.h - Writing OUT.kiln.d ---------------------------*- C++
//-*-===//
//
// Part of Kiln. The compiled artifact: a directory holding
//   plan.kpl    - the plan (runtime/schema/plan.fbs, FlatBuffers): buffers,
//                 entries and their ops with model locations, train config;
//   kernels.so  - the cpu kernels (kiln_kN, see kiln/Target/Host);
//   model.h     - a C header naming parameters, inputs, outputs and entries.
// Each file is written from a kernel-dialect module whose transients have
// arena offsets (--kernel-assign-offsets-naive or the memory planner).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_ARTIFACT_H
#define KILN_ARTIFACT_ARTIFACT_H

#include "kiln/Target/Cuda/CudaTarget.h"
#include "kiln/Target/Host/HostTarget.h"
#include "kiln/Target/TargetInfo.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

/// How the artifact is written.
struct ArtifactOptions {
  /// The compiler that writes it, recorded in the plan.
  std::string compilerVersion = "kiln 0.1.0";
  /// The target the kernels are compiled for (the plan's `target`).
  TargetKind target = TargetKind::Cpu;
  /// The host code: kernels.so (cpu), kernels.emu.so (cuda's emulator).
  HostTargetOptions host;
  /// cuda: the GPU code (architecture, block size).
  CudaTargetOptions cuda;
  /// cuda: compile the emulator's kernels with bounds checks.
  bool checkedEmulator = false;
  /// kiln::hashBytes of the kernels file the plan goes with (kernels.so,
  /// or kernels.ptx for cuda; writeArtifact sets it once the kernels are
  /// built).
  uint64_t kernelsHash = 0;
  /// cuda: each kernel's launch by exported name, and the hashes of
  /// kernels.cubin (0: none, without ptxas) and kernels.emu.so (set by
  /// writeArtifact).
  std::map<std::string, LaunchShape> launches;
  /// cuda: where writeArtifact reports its kernels' templates; may be null.
  GpuTemplateCounts *templates = nullptr;
  uint64_t cubinHash = 0;
  uint64_t emulatorHash = 0;
  /// Where writing it reports its phases (--timing); null: not timed.
  mlir::TimingScope *timing = nullptr;
  /// Called as each part is done ("kernels.so", "plan.kpl"), for progress
  /// on long compiles; may be empty.
  std::function<void(llvm::StringRef)> onStageDone;
};

/// The plan of `module` as FlatBuffers bytes (plan.kpl), or failure with an
/// error emitted at the offending op.
mlir::FailureOr<std::vector<uint8_t>>
serializePlan(mlir::ModuleOp module, const ArtifactOptions &options);

/// Writes model.h for `module` to `os`.
mlir::LogicalResult writeModelHeader(mlir::ModuleOp module,
                                     llvm::raw_ostream &os);

/// Writes the artifact directory `directory` (created if needed).
mlir::LogicalResult writeArtifact(mlir::ModuleOp module,
                                  llvm::StringRef directory,
                                  const ArtifactOptions &options);

} // namespace kiln

#endif // KILN_ARTIFACT_ARTIFACT_H
