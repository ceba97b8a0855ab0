//===- StopSignals.cpp - Stopping a training run cleanly on a signal ------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "StopSignals.h"

#include <atomic>
#include <csignal>
#include <unistd.h>

using namespace kiln::cli;

namespace {
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
// Any thread may take a signal (the runtime's and the GEMM library's workers
// do not block them), so two signals that arrive together can run their
// handlers at once: exactly one of them claims `pending`.
std::atomic<int> pending{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");
struct sigaction previous[sizeof(kStopSignals) / sizeof(kStopSignals[0])];

extern "C" void onStopSignal(int signal) {
  int none = 0;
  if (!pending.compare_exchange_strong(none, signal))
    ::_exit(128 + signal); // The second signal: stop now.
}
} // namespace

StopSignalScope::StopSignalScope() {
  pending.store(0);
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

int StopSignalScope::pendingSignal() { return pending.load(); }

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
