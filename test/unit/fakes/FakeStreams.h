/*===- FakeStreams.h - The fake driver's streams, events and graphs -------===
 *
 * Part of Kiln's tests: shared by FakeLibcuda.c and FakeStreams.c.
 *
 * Work on a stream the runtime created is deferred, as on a GPU: it is
 * queued and runs only when something waits for it (cuStreamSynchronize,
 * cuCtxSynchronize, cuEventSynchronize, a stream waiting on an event of
 * another, a synchronous copy from or into pageable memory). A runtime
 * that reads results without waiting therefore reads stale bytes here too.
 * Work on the legacy default stream (null) runs at once, after the
 * blocking streams' queued work. KILN_FAKE_CUDA_EAGER=N makes a stream
 * created while N - 1 others live run its work as soon as it is queued,
 * ahead of the lazy others (another legal schedule). While a stream captures,
 *its work is recorded with every parameter frozen, and a graph launch replays
 *the recording.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_TEST_FAKES_FAKESTREAMS_H
#define KILN_TEST_FAKES_FAKESTREAMS_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;

enum {
  kCudaErrorInvalidValue = 1,
  kCudaErrorNotReady = 600,
  kCudaErrorIllegalState = 401,
  kCudaErrorInvalidHandle = 400,
  kCudaErrorCaptureUnsupported = 900,
  kCudaErrorCaptureInvalidated = 901,
};

typedef void (*HostKernel)(void **buffers, int64_t begin, int64_t end);

enum FakeWorkKind {
  kWorkLaunch,
  kWorkCopy,
  kWorkSet,
  kWorkRecord,
  kWorkWait,
  kWorkHost,
  kWorkGraph,
};

struct FakeStream;
struct FakeEvent;
struct FakeGraphExec;

/* One piece of queued or captured work. It owns `buffers` and `payload`. */
struct FakeWork {
  enum FakeWorkKind kind;
  struct FakeWork *next;
  /* Its place in its stream's queue (1 for the first work queued). */
  uint64_t position;
  /* kWorkLaunch: blocks [0, grid) of `kernel` on `buffers`. */
  HostKernel kernel;
  unsigned grid;
  void **buffers;
  int bufferCount;
  /* kWorkCopy (source to destination) and kWorkSet (value). */
  void *destination;
  const void *source;
  size_t bytes;
  unsigned char value;
  /* kWorkRecord: the event; kWorkWait: the stream and the position in it
     the event stood for when the wait was issued. */
  struct FakeEvent *event;
  struct FakeStream *waitStream;
  uint64_t waitPosition;
  /* kWorkHost: run(payload), the payload copied when enqueued; then, when
     `poll` is set, poll(payload) until it returns nonzero. */
  void (*run)(const void *payload);
  int (*poll)(const void *payload);
  int started;
  void *payload;
  size_t payloadBytes;
  /* kWorkGraph: every node of the executable graph, in capture order. */
  struct FakeGraphExec *graph;
};

/* Polled host work: see kiln_fake_cuda_enqueue_polled (FakeStreams.c). */
CUresult kiln_fake_cuda_enqueue_polled(void *stream,
                                       void (*start)(const void *payload),
                                       int (*poll)(const void *payload),
                                       const void *payload, size_t bytes);

/* A new piece of work of `kind`, zeroed. */
struct FakeWork *fakeNewWork(enum FakeWorkKind kind);
/* Queues `work` on `stream` (null: runs it now), or records it when the
   stream captures; it owns `work` from then on. */
CUresult fakeSubmit(void *stream, struct FakeWork *work);
/* Whether some stream captures in global mode, where the synchronous
   calls are refused; they invalidate that capture. */
int fakeRefuseDuringCapture(void);
/* Runs the queued work of every blocking stream (the legacy stream's
   implicit wait), or of every stream. */
void fakeDrainBlocking(void);
void fakeDrainAll(void);
/* Whether `pointer` lies in memory from cuMemHostAlloc. */
int fakeIsPinned(const void *pointer);

/* The entry points FakeStreams.c defines, for cuGetProcAddress. */
struct FakeEntry {
  const char *symbol;
  void *function;
};
extern const struct FakeEntry kFakeStreamEntries[];
extern const size_t kFakeStreamEntryCount;

/* The error `function` is told to return (KILN_FAKE_CUDA_FAIL), else 0. */
CUresult fakeInjected(const char *function);

/* The call log (KILN_FAKE_CUDA_TRACE=FILE): one line per entry point
   called, its name and what it was given. */
void fakeTrace(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif /* KILN_TEST_FAKES_FAKESTREAMS_H */
