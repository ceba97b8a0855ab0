//===- StopSignals.cpp - Stopping a training run cleanly on a signal ------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "StopSignals.h"

#include <csignal>
#include <unistd.h>

using namespace kiln::cli;

namespace {
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t pending = 0;
struct sigaction previous[sizeof(kStopSignals) / sizeof(kStopSignals[0])];

extern "C" void onStopSignal(int signal) {
  if (pending != 0)
    ::_exit(128 + signal); // The second signal: stop now.
  pending = signal;
}
} // namespace

StopSignalScope::StopSignalScope() {
  pending = 0;
  struct sigaction action = {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < sizeof(kStopSignals) / sizeof(kStopSignals[0]); ++i)
    ::sigaction(kStopSignals[i], &action, &previous[i]);
}

StopSignalScope::~StopSignalScope() {
  for (size_t i = 0; i < sizeof(kStopSignals) / sizeof(kStopSignals[0]); ++i)
    ::sigaction(kStopSignals[i], &previous[i], nullptr);
}

int StopSignalScope::pendingSignal() { return pending; }

const char *StopSignalScope::signalName(int signal) {
  switch (signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  default:
    return "a signal";
  }
}
