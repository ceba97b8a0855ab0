//===- Commands.h - The kiln CLI's subcommands ------------------*- C++ -*-===//
//
// Part of Kiln. Each subcommand lives in its own file, declares its options
// under its llvm::cl::SubCommand, and exposes one entry point here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_COMMANDS_H
#define KILN_TOOLS_KILN_COMMANDS_H

#include "llvm/Support/CommandLine.h"

namespace kiln::cli {

/// The category of every kiln option, so that --help shows them and hides
/// the LLVM options linked in with the compiler.
extern llvm::cl::OptionCategory optionCategory;

extern llvm::cl::SubCommand checkCommand;
extern llvm::cl::SubCommand compileCommand;
extern llvm::cl::SubCommand plotCommand;
extern llvm::cl::SubCommand runCommand;
extern llvm::cl::SubCommand gradCommand;
/// A function, not a global: options in several files register with it,
/// whatever the order their files' statics are constructed in.
llvm::cl::SubCommand &trainCommand();
extern llvm::cl::SubCommand inspectCommand;
extern llvm::cl::SubCommand sampleCommand;

/// `kiln check MODEL.kiln`: parse, verify, print a summary.
int runCheck();
/// `kiln compile MODEL.kiln --emit=graph`: print the IR of a stage.
int runCompile();
/// `kiln run MODEL.kiln --input NAME=FILE.npy ...`: evaluate the forward;
/// `kiln grad ... -o GRADS.safetensors`: every parameter's gradient too.
int runRun();
/// `kiln plot METRICS.jsonl... -o FILE.svg`: draw loss curves.
int runPlot();
/// `kiln train MODEL.kiln (--data NAME=FILE ... | --tokens FILE) ...`.
int runTrain();
/// `kiln inspect OUT.kiln.d`: print the plan of an artifact.
int runInspect();
/// `kiln sample CKPT --model MODEL --prompt TEXT`: generate text.
int runSample();

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_COMMANDS_H
