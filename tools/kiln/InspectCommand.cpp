//===- InspectCommand.cpp - kiln inspect -----------------------------------===//
//
// Part of Kiln. Prints a compiled artifact's plan readably: its buffers
// (kind, dtype, shape, arena offset) and each entry point's ops with the
// model line each came from.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kiln/runtime.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

cl::SubCommand kiln::cli::inspectCommand(
    "inspect", "Print a compiled artifact's plan: buffers, entry points, ops");

static cl::opt<std::string>
    inspectArtifact(cl::Positional, cl::Required, cl::desc("OUT.kiln.d"),
                    cl::sub(kiln::cli::inspectCommand),
                    cl::cat(kiln::cli::optionCategory));

int kiln::cli::runInspect() {
  kiln_artifact *artifact = nullptr;
  // Opening checks the plan and resolves the kernels: a broken artifact is
  // reported here rather than printed.
  if (kiln_artifact_open(inspectArtifact.c_str(), &artifact) != KILN_OK) {
    WithColor::error(errs(), "kiln inspect") << kiln_last_error() << "\n";
    return 1;
  }
  char *text = nullptr;
  kiln_status status = kiln_artifact_print_plan(artifact, &text);
  if (status == KILN_OK)
    outs() << text;
  else
    WithColor::error(errs(), "kiln inspect") << kiln_last_error() << "\n";
  kiln_string_free(text);
  kiln_artifact_close(artifact);
  return status == KILN_OK ? 0 : 1;
}
