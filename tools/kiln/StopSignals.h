//===- StopSignals.h - Stopping a training run cleanly on a signal -*- C++
//-*-===//
//
// Part of Kiln. SIGINT, SIGTERM and SIGHUP ask a training run to stop after
// the step it is running: the loop polls stopRequested(), saves what it was
// asked to save, and exits with 128 + the signal's number (130, 143, 129). A
// second signal exits at once with the same code.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_STOPSIGNALS_H
#define KILN_TOOLS_KILN_STOPSIGNALS_H

namespace kiln::cli {

/// Replaces the handlers of SIGINT, SIGTERM and SIGHUP (LLVM's included)
/// until the returned scope ends, when the previous ones come back.
class StopSignalScope {
public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope &) = delete;
  StopSignalScope &operator=(const StopSignalScope &) = delete;

  /// The first signal received since the scope began, or 0.
  static int pendingSignal();
  /// "SIGINT", "SIGTERM" or "SIGHUP".
  static const char *signalName(int signal);
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_STOPSIGNALS_H
