/*===- FakeNccl.c - NCCL for machines without a GPU, over MPI -------------===
 *
 * Part of Kiln's tests. A stand-in for libnccl.so.2, loaded through
 * KILN_LIBNCCL=<this library> in processes that run on the fake driver
 * (FakeLibcuda.c, whose device memory is host memory) and that joined
 * MPI before they call it (mpirun -np N kiln train --device cuda): its
 * collectives really reduce across the processes, over MPI.
 *
 * ncclGetUniqueId makes an id from the process and the time; each
 * ncclCommInitRankConfig checks, over MPI_COMM_WORLD, that every rank was
 * given the same id, that the ranks are MPI's and the world its size, and
 * duplicates MPI_COMM_WORLD for the communicator. A group of one needs no
 * MPI (bench/device/run.sh's dry run): its sums are the values. A
 * non-blocking communicator (config blocking = 0) answers ncclInProgress
 * from init and from ncclGroupEnd, and then from its next
 * ncclCommGetAsyncError, as NCCL's may. ncclAllReduce, ncclReduce (f32
 * sums, in place) and ncclBroadcast (in place) are stream work of the fake
 * driver: when the stream reaches one, it starts an MPI_Iallreduce,
 * MPI_Ireduce or MPI_Ibcast that each poll tests, so a query of an event
 * after it is not ready until every rank took part, and an aborted
 * communicator (ncclCommAbort) lets it end. For fault tests (collectives
 * counted together):
 *
 *   KILN_FAKE_NCCL_ERROR_AT=K   the K-th all-reduce (1: the first) never
 *                               starts and the communicator's asynchronous
 *                               error becomes ncclRemoteError, as when a
 *                               peer's process dies mid-collective
 *   KILN_FAKE_NCCL_HANG_AT=K    the K-th all-reduce never finishes (a peer
 *                               that stopped answering), until aborted
 *   KILN_FAKE_NCCL_TRACE=FILE   one line per call, with this process's rank
 *
 *===----------------------------------------------------------------------===*/

#include <dlfcn.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_API __attribute__((visibility("default")))

typedef int ncclResult_t;
enum {
  ncclSuccess = 0,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};
enum { ncclFloat32 = 7, ncclSum = 0 };
#define ID_BYTES 128
static const char kIdTag[] = "kiln-fake-nccl";

/* The prefix of ncclConfig_t every version has. */
struct Config {
  size_t size;
  unsigned magic, version;
  int blocking;
};

struct Comm {
  MPI_Comm mpi;
  int rank, world, blocking;
  /* The asynchronous error: ncclInProgress until the first query of a
     non-blocking communicator, then ncclSuccess or a failure. */
  ncclResult_t state;
  int aborted;
  /* All-reduces queued, counted from 1, and those not done yet. */
  int queued, inFlight;
};

static int envInt(const char *name) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : 0;
}

static void trace(const char *format, ...) {
  const char *path = getenv("KILN_FAKE_NCCL_TRACE");
  if (!path || !*path)
    return;
  FILE *file = fopen(path, "a");
  if (!file)
    return;
  int rank = -1, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(file, "rank %d: ", rank);
  va_list arguments;
  va_start(arguments, format);
  vfprintf(file, format, arguments);
  va_end(arguments);
  fputc('\n', file);
  fclose(file);
}

static char lastError[256];

FAKE_API ncclResult_t ncclGetVersion(int *version) {
  *version = 22800; /* 2.28.0 */
  return ncclSuccess;
}

FAKE_API const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclInvalidArgument:
    return "invalid argument";
  case ncclInvalidUsage:
    return "invalid usage";
  case ncclRemoteError:
    return "remote process exited or there was a network error";
  case ncclInProgress:
    return "NCCL operation in progress";
  default:
    return "unhandled error";
  }
}

FAKE_API const char *ncclGetLastError(struct Comm *comm) {
  (void)comm;
  return lastError;
}

static ncclResult_t failWith(ncclResult_t result, const char *message) {
  snprintf(lastError, sizeof lastError, "%s", message);
  trace("error: %s", message);
  return result;
}

FAKE_API ncclResult_t ncclGetUniqueId(char *id) {
  memset(id, 0, ID_BYTES);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(id, ID_BYTES, "%s %ld %ld.%09ld", kIdTag, (long)getpid(),
           (long)now.tv_sec, now.tv_nsec);
  trace("ncclGetUniqueId");
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommInitRankConfig(struct Comm **out, int world,
                                             const char *id, int rank,
                                             const struct Config *config) {
  trace("ncclCommInitRankConfig world %d rank %d blocking %d", world, rank,
        config ? config->blocking : -1);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && world == 1 && rank == 0) {
    struct Comm *comm = calloc(1, sizeof *comm);
    comm->mpi = MPI_COMM_NULL;
    comm->world = 1;
    comm->blocking = config && config->blocking != 0;
    comm->state = comm->blocking ? ncclSuccess : ncclInProgress;
    *out = comm;
    return comm->state;
  }
  if (!initialized)
    return failWith(ncclInvalidUsage,
                    "the fake NCCL runs over MPI, which this process has "
                    "not joined");
  if (!config || config->magic != 0xcafebeef || config->size < sizeof *config)
    return failWith(ncclInvalidArgument, "config not initialized");
  if (strncmp(id, kIdTag, sizeof kIdTag - 1) != 0)
    return failWith(ncclInvalidArgument, "not an id of the fake NCCL");
  int mpiRank, mpiWorld;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpiRank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpiWorld);
  if (rank != mpiRank || world != mpiWorld)
    return failWith(ncclInvalidUsage,
                    "the fake NCCL's ranks are MPI_COMM_WORLD's");
  /* Every rank must have been given rank 0's id. */
  char first[ID_BYTES];
  memcpy(first, id, ID_BYTES);
  MPI_Bcast(first, ID_BYTES, MPI_CHAR, 0, MPI_COMM_WORLD);
  int same = memcmp(first, id, ID_BYTES) == 0, allSame = 0;
  MPI_Allreduce(&same, &allSame, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!allSame)
    return failWith(ncclInvalidUsage,
                    "the ranks were given different unique ids");
  struct Comm *comm = calloc(1, sizeof *comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm->mpi);
  comm->rank = rank;
  comm->world = world;
  comm->blocking = config->blocking != 0;
  comm->state = comm->blocking ? ncclSuccess : ncclInProgress;
  *out = comm;
  return comm->state;
}

FAKE_API ncclResult_t ncclCommGetAsyncError(struct Comm *comm,
                                            ncclResult_t *error) {
  if (!comm)
    return ncclInvalidArgument;
  *error = comm->state;
  if (comm->state == ncclInProgress)
    comm->state = ncclSuccess;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommAbort(struct Comm *comm) {
  trace("ncclCommAbort");
  if (!comm)
    return ncclSuccess;
  /* Work still queued on a stream ends at its next poll; the MPI
     communicator is left to MPI_Finalize or MPI_Abort. */
  comm->aborted = 1;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclCommFinalize(struct Comm *comm) {
  trace("ncclCommFinalize");
  if (!comm)
    return ncclInvalidArgument;
  if (comm->inFlight)
    return failWith(ncclInvalidUsage, "finalized with collectives in flight");
  comm->state = ncclInProgress;
  return ncclInProgress;
}

FAKE_API ncclResult_t ncclCommDestroy(struct Comm *comm) {
  trace("ncclCommDestroy");
  if (!comm)
    return ncclSuccess;
  if (comm->mpi != MPI_COMM_NULL)
    MPI_Comm_free(&comm->mpi);
  free(comm);
  return ncclSuccess;
}

/* The communicator the open group queued work for. A non-blocking one
   answers ncclInProgress from ncclGroupEnd, as NCCL's may while it still
   queues the group's work, until its state is queried. */
static struct Comm *groupComm;
static int groupDepth;

FAKE_API ncclResult_t ncclGroupStart(void) {
  ++groupDepth;
  return ncclSuccess;
}

FAKE_API ncclResult_t ncclGroupEnd(void) {
  if (groupDepth == 0)
    return failWith(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  struct Comm *comm = --groupDepth == 0 ? groupComm : 0;
  if (groupDepth == 0)
    groupComm = 0;
  if (comm && !comm->blocking && comm->state == ncclSuccess) {
    comm->state = ncclInProgress;
    return ncclInProgress;
  }
  return ncclSuccess;
}

/* --- All-reduce as stream work of the fake driver ------------------------ */

enum Collective { kAllReduce, kReduce, kBroadcast };

struct Reduction {
  struct Comm *comm;
  float *data;
  size_t count;
  /* Which collective it is, from 1, and its MPI request (heap memory the
     copies of the payload share). */
  int index;
  MPI_Request *request;
  enum Collective kind;
  int root;
};

static void startReduction(const void *payload) {
  const struct Reduction *work = payload;
  struct Comm *comm = work->comm;
  if (comm->aborted)
    return;
  if (work->index == envInt("KILN_FAKE_NCCL_ERROR_AT")) {
    comm->state =
        failWith(ncclRemoteError, "a peer's process exited (injected)");
    return;
  }
  if (work->index == envInt("KILN_FAKE_NCCL_HANG_AT"))
    return;
  if (comm->mpi == MPI_COMM_NULL)
    return; /* a group of one without MPI: nothing to exchange */
  int n = (int)work->count;
  switch (work->kind) {
  case kAllReduce:
    MPI_Iallreduce(MPI_IN_PLACE, work->data, n, MPI_FLOAT, MPI_SUM, comm->mpi,
                   work->request);
    break;
  case kReduce:
    if (comm->rank == work->root)
      MPI_Ireduce(MPI_IN_PLACE, work->data, n, MPI_FLOAT, MPI_SUM, work->root,
                  comm->mpi, work->request);
    else
      MPI_Ireduce(work->data, 0, n, MPI_FLOAT, MPI_SUM, work->root, comm->mpi,
                  work->request);
    break;
  case kBroadcast:
    MPI_Ibcast(work->data, n, MPI_FLOAT, work->root, comm->mpi, work->request);
    break;
  }
}

static int pollReduction(const void *payload) {
  const struct Reduction *work = payload;
  struct Comm *comm = work->comm;
  /* An aborted communicator's work ends (its request is left to MPI). */
  if (comm->aborted || comm->state == ncclRemoteError)
    return 1;
  if (work->index == envInt("KILN_FAKE_NCCL_HANG_AT"))
    return 0; /* until aborted */
  int done = 1; /* a group of one without MPI */
  if (comm->mpi != MPI_COMM_NULL)
    MPI_Test(work->request, &done, MPI_STATUS_IGNORE);
  if (done) {
    free(work->request);
    --comm->inFlight;
  }
  return done;
}

typedef int (*EnqueuePolled)(void *stream, void (*start)(const void *),
                             int (*poll)(const void *), const void *payload,
                             size_t bytes);

/* Queues `kind` on `stream`: f32 values in place (`send` == `receive`). */
static ncclResult_t enqueueCollective(enum Collective kind, const char *name,
                                      const void *send, void *receive,
                                      size_t count, int dataType, int op,
                                      int root, struct Comm *comm,
                                      void *stream) {
  if (!comm || comm->aborted)
    return failWith(ncclInvalidUsage, "no communicator, or an aborted one");
  if (dataType != ncclFloat32 || op != ncclSum || send != receive)
    return failWith(ncclInvalidArgument,
                    "the fake NCCL sums f32 buffers in place only");
  if (root < 0 || root >= comm->world)
    return failWith(ncclInvalidArgument, "the root is not a rank");
  const char *path = getenv("KILN_LIBCUDA");
  void *driver = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : 0;
  EnqueuePolled enqueue =
      driver ? (EnqueuePolled)dlsym(driver, "kiln_fake_cuda_enqueue_polled")
             : 0;
  if (!enqueue)
    return failWith(ncclInvalidUsage,
                    "the fake NCCL runs on the fake driver (KILN_LIBCUDA)");
  if (groupDepth)
    groupComm = comm;
  struct Reduction work = {
      comm, receive, count, ++comm->queued, malloc(sizeof(MPI_Request)),
      kind, root};
  *work.request = MPI_REQUEST_NULL;
  ++comm->inFlight;
  if (kind == kAllReduce)
    trace("%s %zu floats (collective %d)", name, count, work.index);
  else
    trace("%s %zu floats root %d (collective %d)", name, count, root,
          work.index);
  return enqueue(stream, startReduction, pollReduction, &work, sizeof work)
             ? failWith(ncclInternalError, "the fake driver refused the work")
             : ncclSuccess;
}

FAKE_API ncclResult_t ncclAllReduce(const void *send, void *receive,
                                    size_t count, int dataType, int op,
                                    struct Comm *comm, void *stream) {
  return enqueueCollective(kAllReduce, "ncclAllReduce", send, receive, count,
                           dataType, op, 0, comm, stream);
}

FAKE_API ncclResult_t ncclReduce(const void *send, void *receive, size_t count,
                                 int dataType, int op, int root,
                                 struct Comm *comm, void *stream) {
  return enqueueCollective(kReduce, "ncclReduce", send, receive, count,
                           dataType, op, root, comm, stream);
}

FAKE_API ncclResult_t ncclBroadcast(const void *send, void *receive,
                                    size_t count, int dataType, int root,
                                    struct Comm *comm, void *stream) {
  return enqueueCollective(kBroadcast, "ncclBroadcast", send, receive, count,
                           dataType, ncclSum, root, comm, stream);
}
