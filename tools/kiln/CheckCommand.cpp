//===- CheckCommand.cpp - kiln check --------------------------------------===//
//
// Part of Kiln. Parses and verifies a model and prints what it holds and
// costs, before anything runs.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "ModelLoading.h"

#include "kiln/Dialect/Graph/Analysis/ModelSummary.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;

cl::SubCommand kiln::cli::checkCommand(
    "check", "Parse and verify a model; print its parameters, inputs, "
             "outputs, ops and forward FLOPs");

static cl::opt<std::string> checkModel(cl::Positional, cl::Required,
                                       cl::desc("MODEL.kiln"),
                                       cl::sub(kiln::cli::checkCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> checkJSON("json",
                               cl::desc("Print the summary as one JSON object"),
                               cl::sub(kiln::cli::checkCommand), cl::cat(kiln::cli::optionCategory));

int kiln::cli::runCheck() {
  std::unique_ptr<LoadedModel> model = loadModelForCLI(checkModel);
  if (!model->module)
    return 1;
  FailureOr<graph::ModelSummary> summary = graph::summarizeModel(*model->module);
  if (failed(summary))
    return 1;
  if (checkJSON)
    outs() << formatv("{0:2}", summary->toJSON()) << "\n";
  else
    summary->print(outs());
  return 0;
}
