//===- Artifact.cpp - Writing OUT.kiln.d ----------------------------------===//
//
// Part of Kiln. Writes plan.kpl, kernels.so and model.h into one directory.
// The directory appears whole or not at all, and the plan records a hash
// of the kernels it goes with.
//
//===----------------------------------------------------------------------===//

#include "kiln/Artifact/Artifact.h"
#include "kiln/Files.h"
#include "kiln/KernelSignatures.h"

#include "mlir/Support/Timing.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <thread>

using namespace mlir;
using namespace kiln;

/// Writes `contents` to `path` through a ToolOutputFile (removed on error).
static LogicalResult
writeFile(ModuleOp module, StringRef path,
          llvm::function_ref<void(llvm::raw_ostream &)> contents) {
  std::error_code error;
  llvm::ToolOutputFile file(path, error, llvm::sys::fs::OF_None);
  if (error)
    return mlir::emitError(UnknownLoc::get(module.getContext()))
           << "cannot write " << path << ": " << error.message();
  contents(file.os());
  file.os().flush();
  if (std::error_code writeError = file.os().error()) {
    file.os().clear_error(); // Reported here; it must not abort later.
    return mlir::emitError(UnknownLoc::get(module.getContext()))
           << "cannot write " << path << ": " << writeError.message();
  }
  file.keep();
  return success();
}

/// Whether `directory` may be replaced by a new artifact: it holds nothing
/// but the files an artifact is made of.
static bool holdsOnlyArtifactFiles(const std::string &directory) {
  static const llvm::StringRef kArtifactFiles[] = {
      "plan.kpl",    "kernels.so",    "model.h",       "kernels.so.tmp",
      "kernels.ptx", "kernels.cubin", "kernels.emu.so"};
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(directory, error), end;
       it != end && !error; it.increment(error))
    if (!llvm::is_contained(kArtifactFiles,
                            llvm::sys::path::filename(it->path())))
      return false;
  return !error;
}

/// The cuda kernels into `pathOf`'s files: kernels.emu.so (the GPU
/// emulator's host build of the exact GPU kernels), kernels.ptx, and
/// kernels.cubin where the toolkit's ptxas is; their hashes and launches
/// into `planOptions`.
static LogicalResult
writeCudaKernels(ModuleOp module,
                 llvm::function_ref<std::string(StringRef)> pathOf,
                 const ArtifactOptions &options, TimingScope &timing,
                 ArtifactOptions &planOptions) {
  FailureOr<OwningOpRef<ModuleOp>> gpu;
  {
    TimingScope mapping = timing.nest("map kernels onto blocks and threads");
    gpu = buildGpuModule(module, options.cuda);
  }
  if (failed(gpu))
    return failure();
  planOptions.launches = getGpuLaunches(**gpu);
  if (options.templates)
    *options.templates = countGpuTemplates(**gpu);
  // The emulator builds from the kernels as mapped, while ptxas (a process
  // of its own) assembles the PTX: the two longest stages overlap.
  OwningOpRef<ModuleOp> emulated = (**gpu).clone();

  FailureOr<std::string> ptx;
  {
    TimingScope translating = timing.nest("PTX (NVVM, NVPTX)");
    if (failed(lowerGpuModuleToNvvm(**gpu)))
      return failure();
    ptx = translateToPtx(**gpu, options.cuda);
  }
  if (failed(ptx) ||
      failed(writeFile(module, pathOf("kernels.ptx"),
                       [&](llvm::raw_ostream &os) { os << *ptx; })))
    return failure();
  planOptions.kernelsHash = hashBytes(ptx->data(), ptx->size());
  if (options.onStageDone)
    options.onStageDone("code generation (kernels.ptx)");

  // A cubin where the toolkit's ptxas is; PTX that ptxas refuses is an
  // error, not a file left for the driver to refuse.
  bool assemble = !findPtxas().empty();
  FailureOr<std::string> cubin = failure();
  std::string ptxasError;
  std::thread assembler;
  if (assemble)
    assembler = std::thread([&] {
      TimingScope assembling = timing.nest("ptxas (kernels.cubin)");
      cubin = runPtxas(*ptx, options.cuda.arch, ptxasError);
    });
  auto joinAssembler = llvm::make_scope_exit([&] {
    if (assembler.joinable())
      assembler.join();
  });

  {
    if (failed(convertToEmulator(*emulated, options.checkedEmulator)))
      return failure();
    TimingScope building = timing.nest("GPU emulator (kernels.emu.so)");
    std::string bytes;
    if (failed(buildKernelsSharedObject(*emulated, pathOf("kernels.emu.so"),
                                        options.host, &building, &bytes)))
      return failure();
    planOptions.emulatorHash = hashBytes(bytes.data(), bytes.size());
  }
  if (options.onStageDone)
    options.onStageDone("GPU emulator (kernels.emu.so)");

  if (!assemble)
    return success();
  assembler.join();
  if (failed(cubin))
    return mlir::emitError(UnknownLoc::get(module.getContext())) << ptxasError;
  planOptions.cubinHash = hashBytes(cubin->data(), cubin->size());
  if (options.onStageDone)
    options.onStageDone("ptxas (kernels.cubin)");
  return writeFile(module, pathOf("kernels.cubin"),
                   [&](llvm::raw_ostream &os) { os << *cubin; });
}

LogicalResult kiln::writeArtifact(ModuleOp module, StringRef directory,
                                  const ArtifactOptions &options) {
  // Everything goes into a locked temporary directory beside DIRECTORY,
  // put in place whole at the end (kiln/Files.h): an interrupted or failed
  // compile leaves the old artifact, or none, never a mix of both.
  // Errors about files are not about a model line.
  auto fileError = [&](const Status &status) {
    return mlir::emitError(UnknownLoc::get(module.getContext()))
           << status.message();
  };
  TemporaryDirectory temporary;
  if (Status status = temporary.create(directory.str()); !status.isOk())
    return fileError(status);
  auto pathOf = [&](StringRef name) {
    llvm::SmallString<256> path(temporary.path());
    llvm::sys::path::append(path, name);
    return std::string(path);
  };

  TimingScope none;
  TimingScope &timing = options.timing ? *options.timing : none;
  // The kernels first: the plan records their hashes.
  ArtifactOptions planOptions = options;
  if (options.target == TargetKind::Cuda) {
    if (failed(writeCudaKernels(module, pathOf, options, timing, planOptions)))
      return failure();
  } else {
    std::string kernels;
    if (failed(buildKernelsSharedObject(module, pathOf("kernels.so"),
                                        options.host, &timing, &kernels)))
      return failure();
    if (options.onStageDone)
      options.onStageDone("code generation (kernels.so)");
    planOptions.kernelsHash = hashBytes(kernels.data(), kernels.size());
  }

  FailureOr<std::vector<uint8_t>> plan;
  {
    TimingScope planning = timing.nest("plan.kpl");
    plan = serializePlan(module, planOptions);
  }
  if (failed(plan))
    return failure();
  if (failed(writeFile(module, pathOf("plan.kpl"), [&](llvm::raw_ostream &os) {
        os.write(reinterpret_cast<const char *>(plan->data()), plan->size());
      })))
    return failure();
  LogicalResult header = success();
  if (failed(writeFile(module, pathOf("model.h"), [&](llvm::raw_ostream &os) {
        header = writeModelHeader(module, os);
      })))
    return failure();
  if (failed(header))
    return failure();
  if (Status status = temporary.commit(holdsOnlyArtifactFiles); !status.isOk())
    return fileError(status);
  return success();
}
