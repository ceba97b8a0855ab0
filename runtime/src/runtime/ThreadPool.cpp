//===- ThreadPool.cpp - The session's worker threads ----------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A step is a long sequence of short kernels, so a job must be cheap: after
// a job, a worker spins briefly on the job generation before it sleeps on
// the condition variable; a worker joins a job only while it is open, and
// the caller, having claimed the last index, closes it and waits only for
// the workers that joined (by spinning with yields: they are finishing their
// last index). A worker that wakes late never delays the caller.
//
//===----------------------------------------------------------------------===//

#include "ThreadPool.h"
#include "SignalMask.h"

#include <cerrno>

#include <cstdlib>
#include <string>

using namespace kiln::runtime;

/// Polls of the generation before a worker goes to sleep (a few microseconds).
static constexpr int kSpinPolls = 2000;

static inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

ThreadPool::ThreadPool(int numThreads) {
  // Workers inherit the creating thread's mask: asynchronous signals stay
  // with the application's threads (SignalMask.h).
  AsynchronousSignalsBlocked blocked;
  try {
    for (int i = 1; i < numThreads; ++i)
      workers_.emplace_back([this] { workerLoop(); });
  } catch (...) {
    // The system refused a thread: stop the ones started, then report.
    stop();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
  workers_.clear();
}

std::optional<int> ThreadPool::defaultSize(int limit, std::string &error) {
  if (const char *value = std::getenv("KILN_NUM_THREADS"); value && *value) {
    char *end = nullptr;
    errno = 0;
    long parsed = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || errno == ERANGE || parsed < 1 ||
        parsed > limit) {
      error = "KILN_NUM_THREADS='" + std::string(value) +
              "' is not a thread count in [1, " + std::to_string(limit) +
              "] (unset it to use every core)";
      return std::nullopt;
    }
    return static_cast<int>(parsed);
  }
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware ? static_cast<int>(hardware) : 1;
}

void ThreadPool::run(int64_t count, Trampoline trampoline, void *context) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    trampoline_ = trampoline;
    context_ = context;
    count_ = count;
    next_.store(0);
    open_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  drain();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
  }
  // The workers that joined are running their last indices.
  while (activeWorkers_.load(std::memory_order_acquire) != 0)
    std::this_thread::yield();
}

void ThreadPool::drain() {
  for (;;) {
    int64_t index = next_.fetch_add(1, std::memory_order_relaxed);
    if (index >= count_)
      return;
    trampoline_(context_, index);
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little: the next kernel usually follows within microseconds.
    for (int poll = 0; poll < kSpinPolls; ++poll) {
      if (generation_.load(std::memory_order_acquire) != seen)
        break;
      cpuRelax();
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stopping_)
        return;
      // A job closed already (the caller did all of it) needs no help.
      if (!open_)
        continue;
      activeWorkers_.fetch_add(1, std::memory_order_relaxed);
    }
    drain();
    activeWorkers_.fetch_sub(1, std::memory_order_release);
  }
}
