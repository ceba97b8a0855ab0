/*===- FakeStreams.c - The fake driver's streams, events and graphs -------===
 *
 * Part of Kiln's tests: see FakeStreams.h for the model. Error codes are
 * the driver API's (cuda.h).
 *
 *===----------------------------------------------------------------------===*/

#include "FakeStreams.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- The call log ---------------------------------------------------------
 */

void fakeTrace(const char *format, ...) {
  static FILE *log;
  static int opened;
  if (!opened) {
    opened = 1;
    const char *path = getenv("KILN_FAKE_CUDA_TRACE");
    if (path && *path)
      log = fopen(path, "a");
  }
  if (!log)
    return;
  va_list arguments;
  va_start(arguments, format);
  vfprintf(log, format, arguments);
  va_end(arguments);
  fputc('\n', log);
  fflush(log);
}

/* --- Pinned host memory ----------------------------------------------------
 */

struct Pinned {
  char *memory;
  size_t bytes;
  struct Pinned *next;
};
static struct Pinned *pinned;

int fakeIsPinned(const void *pointer) {
  for (struct Pinned *block = pinned; block; block = block->next)
    if ((const char *)pointer >= block->memory &&
        (const char *)pointer < block->memory + block->bytes)
      return 1;
  return 0;
}

static CUresult fakeMemHostAlloc(void **pointer, size_t bytes, unsigned flags) {
  fakeTrace("cuMemHostAlloc %zu %u", bytes, flags);
  if (fakeRefuseDuringCapture())
    return kCudaErrorCaptureUnsupported;
  CUresult error = fakeInjected("cuMemHostAlloc");
  if (error)
    return error;
  struct Pinned *block = calloc(1, sizeof *block);
  block->bytes = bytes ? bytes : 1;
  block->memory = aligned_alloc(64, (block->bytes + 63) / 64 * 64);
  if (!block->memory) {
    free(block);
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  }
  block->next = pinned;
  pinned = block;
  *pointer = block->memory;
  return 0;
}

static CUresult fakeMemFreeHost(void *pointer) {
  fakeTrace("cuMemFreeHost");
  fakeDrainAll();
  for (struct Pinned **link = &pinned; *link; link = &(*link)->next)
    if ((*link)->memory == pointer) {
      struct Pinned *block = *link;
      *link = block->next;
      free(block->memory);
      free(block);
      return 0;
    }
  return kCudaErrorInvalidValue;
}

/* --- Streams ----------------------------------------------------------------
 */

struct FakeStream {
  unsigned flags; /* CU_STREAM_NON_BLOCKING = 1 */
  struct FakeWork *head, *tail;
  /* Positions: how much work was queued, and how much of it ran. */
  uint64_t submitted, executed;
  int capturing, globalCapture, captureInvalid;
  /* Runs its work as soon as it is queued (KILN_FAKE_CUDA_EAGER). */
  int eager;
  struct FakeWork *captureHead, *captureTail;
  struct FakeStream *nextStream;
};
static struct FakeStream *streams;

struct FakeEvent {
  unsigned flags; /* CU_EVENT_DISABLE_TIMING = 2 */
  /* The last record: its stream (null: none yet) and position. */
  struct FakeStream *stream;
  uint64_t position;
  int done;
  double milliseconds;
};

/* A captured graph and an executable one: their nodes in order. */
struct FakeGraph {
  struct FakeWork *nodes;
};
struct FakeGraphExec {
  struct FakeWork *nodes;
};

struct FakeWork *fakeNewWork(enum FakeWorkKind kind) {
  struct FakeWork *work = calloc(1, sizeof *work);
  work->kind = kind;
  return work;
}

static void freeWork(struct FakeWork *work) {
  free(work->buffers);
  free(work->payload);
  free(work);
}

static void freeWorkList(struct FakeWork *work) {
  while (work) {
    struct FakeWork *next = work->next;
    freeWork(work);
    work = next;
  }
}

static struct FakeWork *cloneWork(const struct FakeWork *work) {
  struct FakeWork *copy = malloc(sizeof *copy);
  *copy = *work;
  copy->next = 0;
  if (work->buffers) {
    copy->buffers = malloc(sizeof(void *) * (size_t)work->bufferCount);
    memcpy(copy->buffers, work->buffers,
           sizeof(void *) * (size_t)work->bufferCount);
  }
  if (work->payload) {
    copy->payload = malloc(work->payloadBytes);
    memcpy(copy->payload, work->payload, work->payloadBytes);
  }
  return copy;
}

static struct FakeWork *cloneList(const struct FakeWork *work) {
  struct FakeWork *head = 0, **tail = &head;
  for (; work; work = work->next) {
    *tail = cloneWork(work);
    tail = &(*tail)->next;
  }
  return head;
}

static double nowMilliseconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

static int drainTo(struct FakeStream *stream, uint64_t position, int block);
static void drain(struct FakeStream *stream, uint64_t position) {
  drainTo(stream, position, 1);
}

/* Runs `work`; returns whether it is done, which only polled host work may
   not be when `block` is 0 (it stays queued, started). */
static int runWork(struct FakeWork *work, int block) {
  switch (work->kind) {
  case kWorkLaunch:
    work->kernel(work->buffers, 0, work->grid);
    return 1;
  case kWorkCopy:
    memmove(work->destination, work->source, work->bytes);
    return 1;
  case kWorkSet:
    memset(work->destination, work->value, work->bytes);
    return 1;
  case kWorkRecord:
    /* Only the event's latest record completes it. */
    if (work->event->position == work->position) {
      work->event->done = 1;
      work->event->milliseconds = nowMilliseconds();
    }
    return 1;
  case kWorkWait:
    return drainTo(work->waitStream, work->waitPosition, block);
  case kWorkHost:
    if (!work->started)
      work->run(work->payload);
    work->started = 1;
    while (work->poll && !work->poll(work->payload)) {
      if (!block)
        return 0;
      struct timespec pause = {0, 100000};
      nanosleep(&pause, 0);
    }
    return 1;
  case kWorkGraph:
    for (struct FakeWork *node = work->graph->nodes; node; node = node->next) {
      node->started = 0;
      runWork(node, 1);
    }
    return 1;
  }
  return 1;
}

/* Runs `stream`'s queued work up to `position`; without `block`, stops at
   polled host work that is not done yet (returns 0). */
static int drainTo(struct FakeStream *stream, uint64_t position, int block) {
  while (stream->head && stream->executed < position) {
    struct FakeWork *work = stream->head;
    if (!runWork(work, block))
      return 0;
    stream->head = work->next;
    if (!stream->head)
      stream->tail = 0;
    ++stream->executed;
    freeWork(work);
  }
  return 1;
}

void fakeDrainBlocking(void) {
  for (struct FakeStream *stream = streams; stream; stream = stream->nextStream)
    if (!(stream->flags & 1))
      drain(stream, stream->submitted);
}

void fakeDrainAll(void) {
  for (struct FakeStream *stream = streams; stream; stream = stream->nextStream)
    drain(stream, stream->submitted);
}

int fakeRefuseDuringCapture(void) {
  int refused = 0;
  for (struct FakeStream *stream = streams; stream; stream = stream->nextStream)
    if (stream->capturing && stream->globalCapture) {
      stream->captureInvalid = 1;
      refused = 1;
    }
  return refused;
}

/* What a capture cannot record invalidates it. */
static CUresult refuseInCapture(struct FakeStream *stream) {
  if (!stream || !stream->capturing)
    return 0;
  stream->captureInvalid = 1;
  return kCudaErrorCaptureUnsupported;
}

CUresult fakeSubmit(void *handle, struct FakeWork *work) {
  struct FakeStream *stream = handle;
  if (!stream) {
    /* The legacy stream waits for the blocking streams, then runs it. */
    fakeDrainBlocking();
    runWork(work, 1);
    freeWork(work);
    return 0;
  }
  if (stream->capturing) {
    if (stream->captureTail)
      stream->captureTail->next = work;
    else
      stream->captureHead = work;
    stream->captureTail = work;
    return 0;
  }
  work->position = ++stream->submitted;
  if (stream->tail)
    stream->tail->next = work;
  else
    stream->head = work;
  stream->tail = work;
  if (stream->eager)
    drain(stream, stream->submitted);
  return 0;
}

static CUresult fakeStreamCreate(struct FakeStream **stream, unsigned flags) {
  fakeTrace("cuStreamCreate %u", flags);
  CUresult error = fakeInjected("cuStreamCreate");
  if (error)
    return error;
  struct FakeStream *made = calloc(1, sizeof *made);
  made->flags = flags;
  /* KILN_FAKE_CUDA_EAGER=N: a stream created while N - 1 others live runs
     ahead, the others stay lazy: a schedule that shows a missing wait of
     the lazy ones' work on the eager one's. */
  int live = 0;
  for (struct FakeStream *stream = streams; stream; stream = stream->nextStream)
    ++live;
  const char *eager = getenv("KILN_FAKE_CUDA_EAGER");
  made->eager = eager && atoi(eager) == live + 1;
  made->nextStream = streams;
  streams = made;
  *stream = made;
  return 0;
}

static CUresult fakeStreamDestroy(struct FakeStream *stream) {
  fakeTrace("cuStreamDestroy");
  if (!stream)
    return kCudaErrorInvalidHandle;
  /* Queued work still runs; a capture in progress is dropped. */
  drain(stream, stream->submitted);
  freeWorkList(stream->captureHead);
  for (struct FakeStream **link = &streams; *link; link = &(*link)->nextStream)
    if (*link == stream) {
      *link = stream->nextStream;
      break;
    }
  free(stream);
  return 0;
}

static CUresult fakeStreamSynchronize(struct FakeStream *stream) {
  fakeTrace("cuStreamSynchronize");
  if (refuseInCapture(stream))
    return kCudaErrorCaptureUnsupported;
  if (stream)
    drain(stream, stream->submitted);
  else
    fakeDrainBlocking();
  return fakeInjected("cuStreamSynchronize");
}

/* --- Asynchronous copies -------------------------------------------------- */

static CUresult submitCopy(struct FakeStream *stream, void *destination,
                           const void *source, size_t bytes) {
  struct FakeWork *work = fakeNewWork(kWorkCopy);
  work->destination = destination;
  work->source = source;
  work->bytes = bytes;
  return fakeSubmit(stream, work);
}

/* A copy to or from host memory `host` (the source or the destination):
   from or into pageable memory the driver waits for the stream and copies
   before it returns; with pinned memory the copy is queued. A capture
   records copies of pinned memory only. */
static CUresult hostCopy(const char *call, struct FakeStream *stream,
                         const void *host, void *destination,
                         const void *source, size_t bytes) {
  int pinned = fakeIsPinned(host);
  fakeTrace("%s %zu%s", call, bytes, pinned ? " pinned" : "");
  CUresult error = fakeInjected(call);
  if (error)
    return error;
  if (pinned)
    return submitCopy(stream, destination, source, bytes);
  if (refuseInCapture(stream))
    return kCudaErrorCaptureUnsupported;
  if (stream)
    drain(stream, stream->submitted);
  else
    fakeDrainBlocking();
  memcpy(destination, source, bytes);
  return 0;
}

static CUresult fakeMemcpyHtoDAsync(unsigned long long destination,
                                    const void *source, size_t bytes,
                                    struct FakeStream *stream) {
  return hostCopy("cuMemcpyHtoDAsync", stream, source,
                  (void *)(uintptr_t)destination, source, bytes);
}

static CUresult fakeMemcpyDtoHAsync(void *destination,
                                    unsigned long long source, size_t bytes,
                                    struct FakeStream *stream) {
  return hostCopy("cuMemcpyDtoHAsync", stream, destination, destination,
                  (const void *)(uintptr_t)source, bytes);
}

static CUresult fakeMemcpyDtoDAsync(unsigned long long destination,
                                    unsigned long long source, size_t bytes,
                                    struct FakeStream *stream) {
  fakeTrace("cuMemcpyDtoDAsync %zu", bytes);
  CUresult error = fakeInjected("cuMemcpyDtoDAsync");
  if (error)
    return error;
  return submitCopy(stream, (void *)(uintptr_t)destination,
                    (const void *)(uintptr_t)source, bytes);
}

static CUresult fakeMemsetD8Async(unsigned long long destination,
                                  unsigned char value, size_t bytes,
                                  struct FakeStream *stream) {
  fakeTrace("cuMemsetD8Async %zu", bytes);
  CUresult error = fakeInjected("cuMemsetD8Async");
  if (error)
    return error;
  struct FakeWork *work = fakeNewWork(kWorkSet);
  work->destination = (void *)(uintptr_t)destination;
  work->value = value;
  work->bytes = bytes;
  return fakeSubmit(stream, work);
}

/* The fake cuBLASLt's way onto a stream: `run(payload)` as stream work,
   the payload's `bytes` copied now (frozen, when the stream captures). */
__attribute__((visibility("default"))) CUresult
kiln_fake_cuda_enqueue(void *stream, void (*run)(const void *payload),
                       const void *payload, size_t bytes) {
  return kiln_fake_cuda_enqueue_polled(stream, run, 0, payload, bytes);
}

/* The fake NCCL's: work that a GPU would run for a while, as for a
   collective waiting on other ranks. `start(payload)` runs once when the
   stream reaches it, then `poll(payload)` until it returns nonzero; a
   synchronous wait polls until then, cuEventQuery once per call. */
__attribute__((visibility("default"))) CUresult
kiln_fake_cuda_enqueue_polled(void *stream, void (*start)(const void *payload),
                              int (*poll)(const void *payload),
                              const void *payload, size_t bytes) {
  struct FakeWork *work = fakeNewWork(kWorkHost);
  work->run = start;
  work->poll = poll;
  work->payload = malloc(bytes ? bytes : 1);
  memcpy(work->payload, payload, bytes);
  work->payloadBytes = bytes;
  return fakeSubmit(stream, work);
}

/* --- Events ------------------------------------------------------------------
 */

static CUresult fakeEventCreate(struct FakeEvent **event, unsigned flags) {
  fakeTrace("cuEventCreate %u", flags);
  CUresult error = fakeInjected("cuEventCreate");
  if (error)
    return error;
  *event = calloc(1, sizeof **event);
  (*event)->flags = flags;
  return 0;
}

static CUresult fakeEventDestroy(struct FakeEvent *event) {
  fakeTrace("cuEventDestroy");
  if (!event)
    return kCudaErrorInvalidHandle;
  /* Queued records of it must not outlive it. */
  fakeDrainAll();
  free(event);
  return 0;
}

static CUresult fakeEventRecord(struct FakeEvent *event,
                                struct FakeStream *stream) {
  fakeTrace("cuEventRecord");
  if (!event)
    return kCudaErrorInvalidHandle;
  /* The fake does not model event nodes in a graph. */
  if (refuseInCapture(stream))
    return kCudaErrorCaptureUnsupported;
  CUresult error = fakeInjected("cuEventRecord");
  if (error)
    return error;
  if (!stream) {
    fakeDrainBlocking();
    event->stream = 0;
    event->done = 1;
    event->milliseconds = nowMilliseconds();
    return 0;
  }
  struct FakeWork *work = fakeNewWork(kWorkRecord);
  work->event = event;
  event->stream = stream;
  event->position = stream->submitted + 1;
  event->done = 0;
  return fakeSubmit(stream, work);
}

static CUresult fakeEventSynchronize(struct FakeEvent *event) {
  fakeTrace("cuEventSynchronize");
  if (!event)
    return kCudaErrorInvalidHandle;
  if (event->stream && !event->done)
    drain(event->stream, event->position);
  return fakeInjected("cuEventSynchronize");
}

/* A GPU runs on while the host asks: the query runs the work before the
   event, except polled work that is not done yet. */
static CUresult fakeEventQuery(struct FakeEvent *event) {
  fakeTrace("cuEventQuery");
  if (!event)
    return kCudaErrorInvalidHandle;
  if (event->stream && !event->done)
    drainTo(event->stream, event->position, 0);
  if (event->stream && !event->done)
    return kCudaErrorNotReady;
  return fakeInjected("cuEventQuery");
}

static CUresult fakeEventElapsedTime(float *milliseconds,
                                     struct FakeEvent *start,
                                     struct FakeEvent *end) {
  fakeTrace("cuEventElapsedTime");
  if (!start || !end || (start->flags & 2) || (end->flags & 2))
    return kCudaErrorInvalidHandle;
  if (!start->done || !end->done)
    return kCudaErrorNotReady;
  *milliseconds = (float)(end->milliseconds - start->milliseconds);
  return 0;
}

static CUresult fakeStreamWaitEvent(struct FakeStream *stream,
                                    struct FakeEvent *event, unsigned flags) {
  fakeTrace("cuStreamWaitEvent");
  (void)flags;
  if (!event)
    return kCudaErrorInvalidHandle;
  if (refuseInCapture(stream))
    return kCudaErrorCaptureUnsupported;
  if (!event->stream || event->done)
    return 0;
  if (!stream) {
    drain(event->stream, event->position);
    return 0;
  }
  struct FakeWork *work = fakeNewWork(kWorkWait);
  work->waitStream = event->stream;
  work->waitPosition = event->position;
  return fakeSubmit(stream, work);
}

/* --- Graphs ------------------------------------------------------------------
 */

static CUresult fakeStreamBeginCapture(struct FakeStream *stream, int mode) {
  fakeTrace("cuStreamBeginCapture %d", mode);
  if (!stream)
    return kCudaErrorCaptureUnsupported; /* the legacy stream cannot */
  if (stream->capturing)
    return kCudaErrorIllegalState;
  CUresult error = fakeInjected("cuStreamBeginCapture");
  if (error)
    return error;
  stream->capturing = 1;
  stream->globalCapture = mode == 0; /* CU_STREAM_CAPTURE_MODE_GLOBAL */
  stream->captureInvalid = 0;
  stream->captureHead = stream->captureTail = 0;
  return 0;
}

static CUresult fakeStreamEndCapture(struct FakeStream *stream,
                                     struct FakeGraph **graph) {
  fakeTrace("cuStreamEndCapture");
  if (!stream || !stream->capturing)
    return kCudaErrorIllegalState;
  stream->capturing = 0;
  struct FakeWork *nodes = stream->captureHead;
  stream->captureHead = stream->captureTail = 0;
  if (stream->captureInvalid) {
    freeWorkList(nodes);
    *graph = 0;
    return kCudaErrorCaptureInvalidated;
  }
  CUresult error = fakeInjected("cuStreamEndCapture");
  if (error) {
    freeWorkList(nodes);
    return error;
  }
  *graph = calloc(1, sizeof **graph);
  (*graph)->nodes = nodes;
  return 0;
}

static CUresult fakeGraphInstantiate(struct FakeGraphExec **exec,
                                     struct FakeGraph *graph,
                                     unsigned long long flags) {
  fakeTrace("cuGraphInstantiateWithFlags %llu", flags);
  if (!graph)
    return kCudaErrorInvalidValue;
  CUresult error = fakeInjected("cuGraphInstantiateWithFlags");
  if (error)
    return error;
  *exec = calloc(1, sizeof **exec);
  (*exec)->nodes = cloneList(graph->nodes);
  return 0;
}

static CUresult fakeGraphLaunch(struct FakeGraphExec *exec,
                                struct FakeStream *stream) {
  int nodes = 0;
  for (struct FakeWork *node = exec ? exec->nodes : 0; node; node = node->next)
    ++nodes;
  fakeTrace("cuGraphLaunch %d nodes", nodes);
  if (!exec)
    return kCudaErrorInvalidHandle;
  if (refuseInCapture(stream))
    return kCudaErrorCaptureUnsupported;
  CUresult error = fakeInjected("cuGraphLaunch");
  if (error)
    return error;
  struct FakeWork *work = fakeNewWork(kWorkGraph);
  work->graph = exec;
  return fakeSubmit(stream, work);
}

static CUresult fakeGraphExecDestroy(struct FakeGraphExec *exec) {
  fakeTrace("cuGraphExecDestroy");
  if (!exec)
    return kCudaErrorInvalidHandle;
  /* Queued launches of it run first. */
  fakeDrainAll();
  freeWorkList(exec->nodes);
  free(exec);
  return 0;
}

static CUresult fakeGraphDestroy(struct FakeGraph *graph) {
  fakeTrace("cuGraphDestroy");
  if (!graph)
    return kCudaErrorInvalidHandle;
  freeWorkList(graph->nodes);
  free(graph);
  return 0;
}

const struct FakeEntry kFakeStreamEntries[] = {
    {"cuMemHostAlloc", (void *)fakeMemHostAlloc},
    {"cuMemFreeHost", (void *)fakeMemFreeHost},
    {"cuStreamCreate", (void *)fakeStreamCreate},
    {"cuStreamDestroy", (void *)fakeStreamDestroy},
    {"cuStreamSynchronize", (void *)fakeStreamSynchronize},
    {"cuStreamWaitEvent", (void *)fakeStreamWaitEvent},
    {"cuMemcpyHtoDAsync", (void *)fakeMemcpyHtoDAsync},
    {"cuMemcpyDtoHAsync", (void *)fakeMemcpyDtoHAsync},
    {"cuMemcpyDtoDAsync", (void *)fakeMemcpyDtoDAsync},
    {"cuMemsetD8Async", (void *)fakeMemsetD8Async},
    {"cuEventCreate", (void *)fakeEventCreate},
    {"cuEventDestroy", (void *)fakeEventDestroy},
    {"cuEventRecord", (void *)fakeEventRecord},
    {"cuEventSynchronize", (void *)fakeEventSynchronize},
    {"cuEventQuery", (void *)fakeEventQuery},
    {"cuEventElapsedTime", (void *)fakeEventElapsedTime},
    {"cuStreamBeginCapture", (void *)fakeStreamBeginCapture},
    {"cuStreamEndCapture", (void *)fakeStreamEndCapture},
    {"cuGraphInstantiateWithFlags", (void *)fakeGraphInstantiate},
    {"cuGraphLaunch", (void *)fakeGraphLaunch},
    {"cuGraphExecDestroy", (void *)fakeGraphExecDestroy},
    {"cuGraphDestroy", (void *)fakeGraphDestroy},
};
const size_t kFakeStreamEntryCount =
    sizeof kFakeStreamEntries / sizeof kFakeStreamEntries[0];
