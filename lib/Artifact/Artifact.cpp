//===- Artifact.cpp - Writing OUT.kiln.d -----------------------------------===//
//
// Part of Kiln. Writes plan.kpl, kernels.so and model.h into one directory.
// A file whose writing fails is removed rather than left half-written.
//
//===----------------------------------------------------------------------===//

#include "kiln/Artifact/Artifact.h"

#include "mlir/Support/Timing.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace kiln;

/// Writes `contents` to `path` through a ToolOutputFile (removed on error).
static LogicalResult
writeFile(ModuleOp module, StringRef path,
          llvm::function_ref<void(llvm::raw_ostream &)> contents) {
  std::error_code error;
  llvm::ToolOutputFile file(path, error, llvm::sys::fs::OF_None);
  if (error)
    return module.emitError() << "cannot write " << path << ": "
                              << error.message();
  contents(file.os());
  file.os().flush();
  if (file.os().has_error())
    return module.emitError() << "cannot write " << path;
  file.keep();
  return success();
}

LogicalResult kiln::writeArtifact(ModuleOp module, StringRef directory,
                                  const ArtifactOptions &options) {
  if (std::error_code error = llvm::sys::fs::create_directories(directory))
    return module.emitError() << "cannot create " << directory << ": "
                              << error.message();
  auto pathOf = [&](StringRef name) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };

  TimingScope none;
  TimingScope &timing = options.timing ? *options.timing : none;
  FailureOr<std::vector<uint8_t>> plan;
  {
    TimingScope planning = timing.nest("plan.kpl");
    plan = serializePlan(module, options);
  }
  if (failed(plan))
    return failure();

  std::string kernelsPath = pathOf("kernels.so");
  std::string temporaryKernels = kernelsPath + ".tmp";
  if (failed(buildKernelsSharedObject(module, temporaryKernels, options.host,
                                      &timing)))
    return failure();
  if (std::error_code error =
          llvm::sys::fs::rename(temporaryKernels, kernelsPath))
    return module.emitError() << "cannot write " << kernelsPath << ": "
                              << error.message();

  if (failed(writeFile(module, pathOf("plan.kpl"),
                       [&](llvm::raw_ostream &os) {
                         os.write(reinterpret_cast<const char *>(plan->data()),
                                  plan->size());
                       })))
    return failure();
  LogicalResult header = success();
  if (failed(writeFile(module, pathOf("model.h"), [&](llvm::raw_ostream &os) {
        header = writeModelHeader(module, os);
      })))
    return failure();
  return header;
}
