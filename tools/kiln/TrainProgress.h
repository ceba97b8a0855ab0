//===- TrainProgress.h - kiln train's progress lines ------------*- C++ -*-===//
//
// Part of Kiln. Private to the kiln tool.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_TRAINPROGRESS_H
#define KILN_TOOLS_KILN_TRAINPROGRESS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace kiln::cli {

/// Prints progress: one updating line on a terminal, plain lines otherwise.
class Progress {
public:
  Progress(int64_t steps, bool quiet)
      : steps(steps), quiet(quiet),
        terminal(llvm::sys::Process::StandardErrIsDisplayed()),
        every(std::max<int64_t>(1, steps / 25)) {}

  void step(int64_t step, double loss, double lr, double stepMs,
            double itemsPerSecond, llvm::StringRef itemName) {
    if (quiet)
      return;
    double remaining = double(steps - step) * stepMs / 1e3;
    std::string line =
        llvm::formatv("step {0,6}/{1}  loss {2:f4}  lr {3:e2}  "
                      "{4:f0} {5}/s  {6:f1} ms/step  ETA {7}",
                      step, steps, loss, lr, itemsPerSecond, itemName, stepMs,
                      formatDuration(remaining))
            .str();
    if (terminal) {
      llvm::errs() << "\r" << line << "\x1b[K";
      if (step == steps)
        llvm::errs() << "\n";
    } else if (step % every == 0 || step == steps || step == 1) {
      llvm::errs() << line << "\n";
    }
  }

  /// A line of news (compilation, evaluation, resuming); --quiet drops it.
  void message(const llvm::Twine &text) {
    if (quiet)
      return;
    if (terminal)
      llvm::errs() << "\r\x1b[K";
    llvm::errs() << text << "\n";
  }

  /// Clears the updating line before text that --quiet does not drop.
  void clearLine() {
    if (terminal && !quiet)
      llvm::errs() << "\r\x1b[K";
  }

  static std::string formatDuration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0)
      return "?";
    int64_t s = int64_t(seconds + 0.5);
    if (s >= 3600)
      return llvm::formatv("{0}h{1:02}m", s / 3600, (s / 60) % 60).str();
    if (s >= 60)
      return llvm::formatv("{0}m{1:02}s", s / 60, s % 60).str();
    return llvm::formatv("{0}s", s).str();
  }

private:
  int64_t steps;
  bool quiet, terminal;
  int64_t every;
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_TRAINPROGRESS_H
