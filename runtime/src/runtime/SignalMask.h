//===- SignalMask.h - Keeping asynchronous signals off the runtime's work -===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// oneDNN 2.x's f32 GEMM kernels (jit_avx512_common_gemm_f32, the one Debian
// 12's oneDNN 2.6 runs here) point the stack pointer into a heap buffer
// while they run; a signal delivered then has its frame written there and
// corrupts the heap (oneDNN issue #4845, fixed in 3.11). So the runtime's
// worker threads run with asynchronous signals blocked (signals go to the
// application's threads, as for any library's workers), and the calling
// thread blocks them for the length of a GEMM whose library needs it: a
// signal that arrives meanwhile is delivered right after, never lost.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SIGNALMASK_H
#define KILN_RUNTIME_SIGNALMASK_H

#include <csignal>
#include <pthread.h>

namespace kiln {
namespace runtime {

/// Every signal but the synchronous ones (a fault in the thread itself).
inline sigset_t asynchronousSignals() {
  sigset_t set;
  sigfillset(&set);
  for (int synchronous :
       {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS})
    sigdelset(&set, synchronous);
  return set;
}

/// Blocks asynchronous signals in this thread until the scope ends.
class AsynchronousSignalsBlocked {
public:
  AsynchronousSignalsBlocked() {
    sigset_t set = asynchronousSignals();
    pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~AsynchronousSignalsBlocked() {
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  AsynchronousSignalsBlocked(const AsynchronousSignalsBlocked &) = delete;
  AsynchronousSignalsBlocked &
  operator=(const AsynchronousSignalsBlocked &) = delete;

private:
  sigset_t previous_;
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_SIGNALMASK_H
