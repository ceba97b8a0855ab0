//===- kiln.cpp - The Kiln command-line interface --------------------------===//
//
// Part of Kiln. `kiln <subcommand> ...`: check, compile, run. Each subcommand
// has its own --help.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

cl::OptionCategory kiln::cli::optionCategory("kiln options");

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  for (cl::SubCommand *command :
       {&cl::SubCommand::getTopLevel(), &kiln::cli::checkCommand,
        &kiln::cli::compileCommand, &kiln::cli::runCommand,
        &kiln::cli::plotCommand,
        &kiln::cli::trainCommand, &kiln::cli::inspectCommand,
        &kiln::cli::sampleCommand})
    cl::HideUnrelatedOptions(kiln::cli::optionCategory, *command);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Kiln: a compiler for neural-network training\n\n"
      "  kiln check MODEL.kiln             parse, verify, summarize\n"
      "  kiln compile MODEL.kiln --emit=graph\n"
      "  kiln run MODEL.kiln --input NAME=FILE.npy ...\n"
      "  kiln train MODEL.kiln (--data NAME=FILE.npy ... | --tokens FILE)\n"
      "  kiln inspect OUT.kiln.d\n"
      "  kiln plot METRICS.jsonl ... -o loss.svg\n"
      "  kiln sample CKPT.safetensors --model MODEL.kiln --prompt TEXT\n\n"
      "Run `kiln SUBCOMMAND --help` for a subcommand's options.\n");

  if (kiln::cli::checkCommand)
    return kiln::cli::runCheck();
  if (kiln::cli::compileCommand)
    return kiln::cli::runCompile();
  if (kiln::cli::runCommand)
    return kiln::cli::runRun();
  if (kiln::cli::plotCommand)
    return kiln::cli::runPlot();
  if (kiln::cli::trainCommand)
    return kiln::cli::runTrain();
  if (kiln::cli::inspectCommand)
    return kiln::cli::runInspect();
  if (kiln::cli::sampleCommand)
    return kiln::cli::runSample();

  WithColor::error(errs(), "kiln")
      << "missing subcommand: expected check, compile, run, train, sample, "
         "inspect or plot (see `kiln --help`)\n";
  return 1;
}
