//===- CompileCommand.cpp - kiln compile -----------------------------------===//
//
// Part of Kiln. Compiles a model and stops at the requested stage.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ModelLoading.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

cl::SubCommand kiln::cli::compileCommand(
    "compile", "Compile a model, stopping at a stage with --emit");

namespace {
enum class EmitStage { Graph };
} // namespace

static cl::opt<std::string> compileModel(cl::Positional, cl::Required,
                                         cl::desc("MODEL.kiln"),
                                         cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<EmitStage> emitStage(
    "emit", cl::desc("The stage to print"), cl::init(EmitStage::Graph),
    cl::values(clEnumValN(EmitStage::Graph, "graph",
                          "the forward graph as parsed (graph dialect)")),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> compileOutput("o", cl::desc("Output file"),
                                          cl::value_desc("FILE"),
                                          cl::init("-"),
                                          cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> printDebugInfo(
    "print-locations", cl::desc("Print each op's location in the model file"),
    cl::sub(kiln::cli::compileCommand), cl::cat(kiln::cli::optionCategory));

int kiln::cli::runCompile() {
  std::unique_ptr<LoadedModel> model = loadModelForCLI(compileModel);
  if (!model->module)
    return 1;

  std::error_code error;
  auto output = std::make_unique<ToolOutputFile>(compileOutput, error,
                                                 sys::fs::OF_TextWithCRLF);
  if (error) {
    WithColor::error(errs(), "kiln")
        << "cannot write '" << compileOutput << "': " << error.message() << "\n";
    return 1;
  }
  mlir::OpPrintingFlags flags;
  if (printDebugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  model->module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}
