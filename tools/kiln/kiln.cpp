//===- kiln.cpp - The Kiln command-line interface -------------------------===//
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
        &kiln::cli::gradCommand, &kiln::cli::plotCommand,
        &kiln::cli::trainCommand(), &kiln::cli::inspectCommand,
        &kiln::cli::sampleCommand})
    cl::HideUnrelatedOptions(kiln::cli::optionCategory, *command);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Kiln: a compiler for neural-network training\n\n"
      "  kiln check MODEL.kiln             parse, verify, summarize\n"
      "  kiln compile MODEL.kiln --emit=graph\n"
      "  kiln run MODEL.kiln --input NAME=FILE.npy ...\n"
      "  kiln grad MODEL.kiln --input NAME=FILE.npy ... -o GRADS.safetensors\n"
      "  kiln train MODEL.kiln (--data NAME=FILE.npy ... | --tokens FILE)\n"
      "  kiln inspect OUT.kiln.d\n"
      "  kiln plot METRICS.jsonl ... -o loss.svg\n"
      "  kiln sample CKPT.safetensors --model MODEL.kiln --prompt TEXT\n\n"
      "Run `kiln SUBCOMMAND --help` for a subcommand's options.\n");

  int status = -1;
  if (kiln::cli::checkCommand)
    status = kiln::cli::runCheck();
  else if (kiln::cli::compileCommand)
    status = kiln::cli::runCompile();
  else if (kiln::cli::runCommand || kiln::cli::gradCommand)
    status = kiln::cli::runRun();
  else if (kiln::cli::plotCommand)
    status = kiln::cli::runPlot();
  else if (kiln::cli::trainCommand())
    status = kiln::cli::runTrain();
  else if (kiln::cli::inspectCommand)
    status = kiln::cli::runInspect();
  else if (kiln::cli::sampleCommand)
    status = kiln::cli::runSample();
  if (status >= 0) {
    // Standard output that could not be written (a full disk, /dev/full)
    // is an error with its reason, not LLVM's fatal "IO failure" at exit.
    outs().flush();
    if (std::error_code error = outs().error()) {
      outs().clear_error();
      WithColor::error(errs(), "kiln")
          << "cannot write to standard output: " << error.message() << "\n";
      return status ? status : 1;
    }
    return status;
  }

  WithColor::error(errs(), "kiln")
      << "missing subcommand: expected check, compile, run, train, sample, "
         "inspect or plot (see `kiln --help`)\n";
  return 1;
}
