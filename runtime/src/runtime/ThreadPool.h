//===- ThreadPool.h - The session's worker threads --------------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A fixed pool created once per session. parallelFor(count, task) runs
// task(0) ... task(count - 1) on the workers and on the calling thread, which
// claim indices from a shared counter, and returns when all have finished.
// Which thread runs which index is not deterministic; callers make the
// results independent of it (a kernel's chunks only partition its parallel
// dim).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_THREADPOOL_H
#define KILN_RUNTIME_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace kiln {
namespace runtime {

class ThreadPool {
public:
  /// A pool of `numThreads` threads in all: the caller and numThreads - 1
  /// workers. `numThreads` < 1 counts as 1. Throws std::system_error if the
  /// system refuses a thread (after joining the ones it started).
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The number of threads, the caller included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs task(i) for every i in [0, count); returns when all are done.
  /// Not reentrant: one parallelFor at a time, from one thread.
  template <typename Task> void parallelFor(int64_t count, Task &&task) {
    if (count <= 0)
      return;
    if (count == 1 || workers_.empty()) {
      for (int64_t i = 0; i < count; ++i)
        task(i);
      return;
    }
    auto trampoline = [](void *context, int64_t index) {
      (*static_cast<std::remove_reference_t<Task> *>(context))(index);
    };
    run(count, trampoline, static_cast<void *>(&task));
  }

  /// The default size: $KILN_NUM_THREADS when set (and not empty), else the
  /// hardware's thread count. A value that is not a whole number in
  /// [1, `limit`] is an error: nullopt, with `error` naming the variable.
  static std::optional<int> defaultSize(int limit, std::string &error);
  /// The largest pool a session accepts.
  static constexpr int kMaxSize = 4096;

private:
  using Trampoline = void (*)(void *context, int64_t index);
  void run(int64_t count, Trampoline trampoline, void *context);
  /// Claims and runs indices of the current job until none are left.
  void drain();
  void workerLoop();
  /// Stops and joins the workers.
  void stop();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  /// Bumped (under mutex_) for each job, so workers see a new one.
  std::atomic<uint64_t> generation_{0};
  bool stopping_ = false;

  // The current job. Workers join it under mutex_ while it is open; the
  // caller closes it once it has claimed its last index and then waits only
  // for the workers that joined, never for one that is still asleep.
  Trampoline trampoline_ = nullptr;
  void *context_ = nullptr;
  int64_t count_ = 0;
  bool open_ = false;
  std::atomic<int64_t> next_{0};
  /// Workers that joined the current job and have not finished it.
  std::atomic<int> activeWorkers_{0};
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_THREADPOOL_H
