/*===- runtime.h - The C API of libkiln_runtime ----------------*- C -*-===//
 *
 * Part of Kiln. Loads a compiled artifact (`kiln compile ... -o OUT.kiln.d`:
 * plan.kpl, kernels.so, model.h), allocates its buffers and runs its entry
 * points (`train_step`, `eval_step`, `predict`) from any C or C++ program.
 *
 * Conventions:
 *  - Every call returns a kiln_status: KILN_OK (0) or an error code. On error
 *    the message (which names the call and what it was doing) is available
 *    from kiln_last_error() on the calling thread and, for calls on a
 *    session, from kiln_session_last_error() as well. No exception crosses
 *    this API.
 *  - Names are the model's: parameters `block.0.w_qkv`, optimizer state
 *    `<param>.adam_m`, inputs `tokens`, outputs `loss`.
 *  - A session keeps its artifact alive: closing the artifact while sessions
 *    use it is allowed. A session is used by one thread at a time.
 *  - Strings the runtime returns through `char **` are freed with
 *    kiln_string_free(); `const char *` results live as long as their handle.
 *
 * A training loop:
 *
 *   kiln_artifact *artifact;  kiln_session *session;
 *   kiln_artifact_open("mlp.kiln.d", &artifact);
 *   kiln_session_create(artifact, "cpu", 0, &session);
 *   kiln_session_initialize(session, 42);
 *   for (...) {
 *     kiln_session_bind_input(session, "x", x, KILN_F32, x_shape, 2);
 *     kiln_session_bind_input(session, "y", y, KILN_I32, y_shape, 1);
 *     kiln_session_run(session, "train_step");
 *     kiln_session_read_output(session, "loss", KILN_F32, &loss, sizeof loss);
 *   }
 *   kiln_session_save_checkpoint(session, "ckpt.safetensors", "{\"epoch\":3}");
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(KILN_RUNTIME_BUILDING)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The plan schema version (Plan.schema_version) this runtime executes. */
#define KILN_PLAN_SCHEMA_VERSION 3

/** The result of every call: KILN_OK or one of the error codes. */
typedef int32_t kiln_status;

enum {
  KILN_OK = 0,
  /** A null pointer, an unknown name, a wrong shape, dtype or size. */
  KILN_ERROR_INVALID_ARGUMENT = 1,
  /** A file could not be read or written. */
  KILN_ERROR_IO = 2,
  /** plan.kpl or a checkpoint is malformed or inconsistent. */
  KILN_ERROR_INVALID_FORMAT = 3,
  /** plan.kpl has a schema version this runtime does not know. */
  KILN_ERROR_VERSION = 4,
  /** kernels.so cannot be loaded or lacks a kernel the plan calls. */
  KILN_ERROR_KERNELS = 5,
  /** A device or feature this build does not support (e.g. "cuda"). */
  KILN_ERROR_UNSUPPORTED = 6,
  /** Check-numerics mode found a NaN or an infinity. */
  KILN_ERROR_NUMERICS = 7,
  /** Out of memory, or an unexpected internal failure. */
  KILN_ERROR_INTERNAL = 8,
  /** No GPU driver or device ("cuda"), or a driver call failed. */
  KILN_ERROR_DEVICE = 9,
};

/** Element types; the values are those of the plan schema's DType. */
typedef enum kiln_dtype {
  KILN_F32 = 0,
  KILN_F64 = 1,
  KILN_F16 = 2,
  KILN_BF16 = 3,
  KILN_I32 = 4,
  KILN_I64 = 5,
  KILN_I1 = 6,
  KILN_U8 = 7,
} kiln_dtype;

/** Buffer kinds; the values are those of the plan schema's BufferKind. */
typedef enum kiln_buffer_kind {
  KILN_BUFFER_PARAM = 0,
  KILN_BUFFER_OPTIMIZER_STATE = 1,
  KILN_BUFFER_GRADIENT = 2,
  KILN_BUFFER_INPUT = 3,
  KILN_BUFFER_OUTPUT = 4,
  KILN_BUFFER_TRANSIENT = 5,
  KILN_BUFFER_CONSTANT = 6,
  /** Dropout's Philox key and step, i32[4], filled before each run. */
  KILN_BUFFER_RNG_STATE = 7,
  /** Bad-input reports of kernels, i64[2], zeroed before each run. */
  KILN_BUFFER_STATUS = 8,
} kiln_buffer_kind;

/** A loaded artifact: the plan and its kernels. */
typedef struct kiln_artifact kiln_artifact;
/** The buffers of one artifact on one device, and a thread pool. */
typedef struct kiln_session kiln_session;

/** One buffer of the plan, as kiln_artifact_buffer_info describes it. The
 * pointers live as long as the artifact. */
typedef struct kiln_buffer_info {
  const char *name;
  kiln_buffer_kind kind;
  kiln_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  int64_t size_bytes;
  /** The byte offset in the arena for transients, -1 otherwise. */
  int64_t arena_offset;
} kiln_buffer_info;

/** Time spent in one op of one entry since profiling was enabled (or the
 * profile was reset). The pointers live as long as the session. */
typedef struct kiln_op_profile {
  const char *entry;
  /** The op's index in its entry. */
  int32_t index;
  /** "kernel", "gemm", "copy" or "zero". */
  const char *call;
  /** The graph op(s) it implements, e.g. "fusion(graph.add, graph.gelu)". */
  const char *name;
  /** Where it came from in the model file ("" and 0 when unknown). */
  const char *file;
  uint32_t line;
  uint32_t column;
  uint64_t calls;
  double total_ms;
} kiln_op_profile;

/** The GEMM library a cpu session runs (chosen by $KILN_GEMM, else the
 * first built in of "onednn", "openblas", "reference"). The pointers live
 * as long as the session. */
typedef struct kiln_gemm_info {
  /** The name $KILN_GEMM takes: "onednn", "openblas" or "reference". */
  const char *library;
  /** As a person reads it: "oneDNN 2.6.3". */
  const char *version;
  /** The instruction set its kernels run here: "avx512_core_amx". */
  const char *isa;
  /** The libraries that compute the plan's other GEMM types, e.g.
   * "f64: OpenBLAS 0.3.21 (Prescott)"; "" when the one above does all. */
  const char *others;
  /** Non-empty when a library in use runs generic kernels on a CPU that has
   * better ones. */
  const char *warning;
} kiln_gemm_info;

/** Load flags of kiln_session_load_checkpoint. */
enum {
  /** Restore everything the checkpoint holds: parameters, optimizer state,
   * step and seed (resume). */
  KILN_LOAD_ALL = 0,
  /** Restore parameters only (--init-from): optimizer state, step and seed
   * are left as they are. */
  KILN_LOAD_PARAMS_ONLY = 1,
};

/* --- Errors and strings -------------------------------------------------- */

/** The message of the last failed call on this thread ("" if none). */
KILN_API const char *kiln_last_error(void);
/** The message of the last failed call on `session` ("" if none). */
KILN_API const char *kiln_session_last_error(const kiln_session *session);
/** Frees a string the runtime returned through a `char **`. */
KILN_API kiln_status kiln_string_free(char *string);

/* --- Artifacts ----------------------------------------------------------- */

/** Opens the artifact directory `directory`: reads and verifies plan.kpl
 * (file identifier, schema version, structure), dlopens the kernels file and
 * resolves every kernel the plan calls. */
KILN_API kiln_status kiln_artifact_open(const char *directory,
                                        kiln_artifact **artifact);
/** Releases the caller's reference; sessions keep theirs. Null is allowed. */
KILN_API kiln_status kiln_artifact_close(kiln_artifact *artifact);
/** The model's name and the plan's target ("cpu" or "cuda"). */
KILN_API kiln_status kiln_artifact_model(const kiln_artifact *artifact,
                                         const char **model,
                                         const char **target);
/** The number of buffers of the plan. */
KILN_API kiln_status kiln_artifact_buffer_count(const kiln_artifact *artifact,
                                                size_t *count);
/** Describes buffer `index` (the plan's buffer id). */
KILN_API kiln_status kiln_artifact_buffer_info(const kiln_artifact *artifact,
                                               size_t index,
                                               kiln_buffer_info *info);
/** Finds a buffer by name and returns its index. */
KILN_API kiln_status kiln_artifact_find_buffer(const kiln_artifact *artifact,
                                               const char *name, size_t *index);
/** The number of entry points and the name of entry `index`. */
KILN_API kiln_status kiln_artifact_entry_count(const kiln_artifact *artifact,
                                               size_t *count);
KILN_API kiln_status kiln_artifact_entry_name(const kiln_artifact *artifact,
                                              size_t index, const char **name);
/** Renders the plan as text for `kiln inspect`: buffers with their kinds,
 * shapes and offsets, and each entry's ops with their calls and model
 * locations. Free `*text` with kiln_string_free(). */
KILN_API kiln_status kiln_artifact_print_plan(const kiln_artifact *artifact,
                                              char **text);

/* --- Sessions ------------------------------------------------------------ */

/** Whether sessions can run on `device` here: KILN_OK for "cpu" and
 * "cuda-emulator"; for "cuda", KILN_ERROR_DEVICE when the NVIDIA driver
 * (libcuda.so.1, loaded at run time; KILN_LIBCUDA names another file) or a
 * GPU is missing, kiln_last_error() saying which. Nothing is compiled or
 * allocated: a tool asks before it compiles. */
KILN_API kiln_status kiln_device_check(const char *device);

/** Creates a session on `device` ("cpu"; "cuda-emulator": a cuda
 * artifact's kernels run on the host; "cuda": on the GPU, buffers in its
 * memory, GEMMs through cuBLASLt, libcublasLt.so.13 loaded at run time):
 * allocates the arena and the persistent buffers (zeroed; constants
 * copied) and a pool of `num_threads` threads (0: $KILN_NUM_THREADS, or the
 * hardware's thread count). Call kiln_session_initialize or load a
 * checkpoint before training. */
KILN_API kiln_status kiln_session_create(kiln_artifact *artifact,
                                         const char *device,
                                         int32_t num_threads,
                                         kiln_session **session);

/** What kiln_session_create_with_options is given. Fill it with
 * kiln_session_options_init first: fields added later get defaults there,
 * and `struct_size` tells the runtime which fields the caller knows. */
typedef struct kiln_session_options {
  /** sizeof(kiln_session_options) as the caller compiled it. */
  uint32_t struct_size;
  /** "cpu" (the default), "cuda" or "cuda-emulator". */
  const char *device;
  /** The GPU's ordinal for "cuda" (0: the first); 0 on the other devices. */
  int32_t device_index;
  /** Host threads, as kiln_session_create's `num_threads` (0: default). */
  int32_t num_threads;
  /** This process's rank among `world_size` data-parallel processes: 0 and
   * 1 until the data-parallel runtime exists; other values are refused. */
  int32_t rank;
  int32_t world_size;
  /** Non-zero: the same bytes from run to run of the process on the same
   * GPU and libraries. On "cuda" each GEMM then runs cuBLASLt's heuristic's
   * first algorithm; by default (0) the fastest of its candidates, timed
   * when the session is created. The cpu devices are deterministic
   * either way (their results depend on neither threads nor timing). */
  int32_t deterministic;
} kiln_session_options;

/** Sets every field of `options` to its default. */
KILN_API void kiln_session_options_init(kiln_session_options *options);

/** kiln_session_create with `options`: the device and its index, the
 * threads, and the data-parallel rank and world size (refused unless rank 0
 * of 1, until data-parallel training exists). */
KILN_API kiln_status kiln_session_create_with_options(
    kiln_artifact *artifact, const kiln_session_options *options,
    kiln_session **session);
/** Frees the session and stops its threads. Null is allowed. */
KILN_API kiln_status kiln_session_destroy(kiln_session *session);
/** The number of threads of the session's pool. */
KILN_API kiln_status kiln_session_num_threads(const kiln_session *session,
                                              int32_t *num_threads);
/** The GEMM library of the session, its version and ISA. */
KILN_API kiln_status kiln_session_gemm_info(const kiln_session *session,
                                            kiln_gemm_info *info);
/** Initializes every parameter from its initializer with `seed`, exactly as
 * the reference interpreter does; zeroes optimizer state and persistent
 * gradients; sets the step counter to 0. */
KILN_API kiln_status kiln_session_initialize(kiln_session *session,
                                             uint64_t seed);

/** Copies one batch into input `name`. `dtype` and `shape` must equal the
 * plan's (the message names the input and both types). The caller's memory
 * may be reused as soon as the call returns. */
KILN_API kiln_status kiln_session_bind_input(kiln_session *session,
                                             const char *name, const void *data,
                                             kiln_dtype dtype,
                                             const int64_t *shape,
                                             int32_t rank);
/** Runs entry point `entry` (e.g. "train_step"). Every input of the entry
 * must have been bound at least once. A successful "train_step" or
 * "apply_step" advances the step counter by one. Dropout sees the seed and
 * the step counter. Bad input data that a kernel detects (an embedding id
 * or a target class out of range) fails the run with
 * KILN_ERROR_INVALID_ARGUMENT naming the op's model location.
 *
 * On device "cuda" the call returns once the run is queued on the GPU
 * (unless check-numerics or profiling is on): the next batch may be bound
 * meanwhile, and its upload overlaps the run. The run's failure, a kernel's
 * status included, is then reported by the next call that waits for it:
 * kiln_session_synchronize, any call that reads or writes the session's
 * buffers, or the next run. On the cpu devices a run is complete when the
 * call returns. */
KILN_API kiln_status kiln_session_run(kiln_session *session, const char *entry);
/** Waits for the runs in flight on the device and reports their failure
 * (KILN_OK at once on the cpu devices). */
KILN_API kiln_status kiln_session_synchronize(kiln_session *session);
/** What op `index` (kiln_session_profile_op's numbering) is on the
 * session's device: a kernel's launch (on cuda its grid, block and shared
 * bytes), a GEMM's library and problem and, on cuda, the cuBLASLt
 * algorithm chosen for it ("algorithm 2 of 8 (timed: ...)"). The string
 * lives as long as the session. */
KILN_API kiln_status kiln_session_op_detail(kiln_session *session, size_t index,
                                            const char **detail);
/** Copies output `name` (after a run) into `data`; `dtype` must be the
 * output's and `size_bytes` its size. */
KILN_API kiln_status kiln_session_read_output(kiln_session *session,
                                              const char *name,
                                              kiln_dtype dtype, void *data,
                                              size_t size_bytes);

/** Copies any persistent buffer (not a transient) into `data`, whose size
 * `size_bytes` must equal the buffer's. */
KILN_API kiln_status kiln_session_get_buffer(kiln_session *session,
                                             const char *name, void *data,
                                             size_t size_bytes);
/** Overwrites a persistent, non-constant buffer with `size_bytes` (its exact
 * size) from `data`. Setting an input counts as binding it. */
KILN_API kiln_status kiln_session_set_buffer(kiln_session *session,
                                             const char *name, const void *data,
                                             size_t size_bytes);
/** The session's own storage of a persistent buffer, for zero-copy reads and
 * writes; valid until the session is destroyed. */
KILN_API kiln_status kiln_session_buffer_data(kiln_session *session,
                                              const char *name, void **data);

/** The step counter (0 after initialize; saved in checkpoints). */
KILN_API kiln_status kiln_session_get_step(const kiln_session *session,
                                           uint64_t *step);
KILN_API kiln_status kiln_session_set_step(kiln_session *session,
                                           uint64_t step);
/** Makes the session rank `rank` of `world` data-parallel ranks, each
 * running "accumulate_step" on its slice of every batch: its k-th
 * micro-batch of a step draws dropout as micro-batch k * world + rank, so
 * that the ranks' masks together are those of one process running the
 * whole batch (rank 0 of 1 by default). */
KILN_API kiln_status kiln_session_set_data_parallel(kiln_session *session,
                                                    uint32_t rank,
                                                    uint32_t world);
/** Data parallelism on the cpu devices: the caller's collectives (kiln
 * train's are MPI's) run the plan's gradient sums (its CollectiveStart and
 * CollectiveWait ops, placed by the compiler during the backward). Each
 * function returns null on success, else a message the runtime reports
 * (KILN_ERROR_DEVICE). */
typedef struct kiln_collectives {
  void *user;
  /** Starts summing `count` f32 buffers over the ranks, in place: buffer i
   * at `data[i]`, `counts[i]` values. `bucket` numbers it in the run (0,
   * 1, ...); every rank starts the same buckets in the same order. The
   * buffers lie in one block, in order, each at the first multiple of 64
   * bytes after the previous one's end, the gaps zero: the block may be
   * summed whole. */
  const char *(*start)(void *user, uint32_t bucket, float *const *data,
                       const size_t *counts, size_t count);
  /** Lets the started sums progress; called between the entry's ops. */
  const char *(*progress)(void *user);
  /** Returns once bucket `bucket`'s sums are done. */
  const char *(*wait)(void *user, uint32_t bucket);
} kiln_collectives;

/** What the last armed run did (kiln_session_overlap_stats). */
typedef struct kiln_overlap_stats {
  /** Buckets and their bytes. */
  uint32_t buckets;
  uint64_t bytes;
  /** The entry's ops (not counting its collective ops), and the op after
   * which the first bucket started (-1: before the first op). */
  uint32_t ops;
  int32_t first_start_op;
  /** Time in start and progress, and blocked in wait at the run's end. */
  uint64_t issue_ns, blocked_ns;
} kiln_overlap_stats;

/** Arms the session's next run of "accumulate_step" (a step's last
 * micro-batch) to run its plan's gradient sums: each bucket started at its
 * CollectiveStart op (where the backward has finished its accumulators)
 * and waited for at its CollectiveWait. A run that is not armed (an
 * earlier micro-batch) skips them. The buckets and their places are the
 * compiler's (kiln compile for a world over 1, --kernel-insert-collectives),
 * the same on every rank.
 * - The cpu devices and the GPU emulator: through `collectives`, the
 *   started ones progressed between the ops. `collectives` is copied; its
 *   `user` must live until that run returns.
 * - "cuda": pass null. NCCL sums over the ranks joined with
 *   kiln_session_join_nccl, on its own stream: a bucket starts once the
 *   compute stream has run the ops before its start op, the ops after a
 *   wait op wait for it, and the run returns once the sums are done (watched
 *   like kiln_session_sum_over_ranks).
 * KILN_ERROR_INVALID_ARGUMENT for a plan without sums, or for collectives
 * missing (cpu) or given (cuda). */
KILN_API kiln_status kiln_session_arm_gradient_sums(
    kiln_session *session, const kiln_collectives *collectives);
/** ZeRO-1 on cuda: the plan's gradient sums reduce the f32 accumulator
 * `name` in parts instead of summing it whole: `parts[r]` values for rank r
 * of kiln_session_set_data_parallel's world, in rank order (they must add
 * up to the buffer), rank r's run of the sum landing on rank r (an
 * ncclReduce per run, in the bucket's NCCL group; the rest of the buffer is
 * left undefined). KILN_ERROR_UNSUPPORTED on the cpu devices, whose
 * caller's collectives decide how they sum. */
KILN_API kiln_status kiln_session_reduce_in_parts(kiln_session *session,
                                                  const char *name,
                                                  const uint64_t *parts);
/** The last armed run's buckets and times; zeros before one ran. */
KILN_API kiln_status kiln_session_overlap_stats(const kiln_session *session,
                                                kiln_overlap_stats *stats);

/** Data parallelism on the cuda device, through NCCL (loaded at run time:
 * KILN_LIBNCCL, else libnccl.so.2). Rank 0 makes a group's unique id with
 * kiln_nccl_unique_id and hands it to the other ranks (over MPI, say); each
 * rank, made rank r of N with kiln_session_set_data_parallel, joins with
 * kiln_session_join_nccl on its own GPU (its session's device_index); a
 * group of one (rank 0 of 1, the default) is allowed.
 * KILN_ERROR_UNSUPPORTED on the cpu devices, whose buffers the caller sums
 * through kiln_session_buffer_data. */
#define KILN_NCCL_UNIQUE_ID_BYTES 128
/** Writes a new group's id (`size`: KILN_NCCL_UNIQUE_ID_BYTES) and, when
 * `description` is not null, which NCCL made it ("NCCL 2.28.9
 * (libnccl.so.2)"; free with kiln_string_free). KILN_ERROR_DEVICE when NCCL
 * does not load. */
KILN_API kiln_status kiln_nccl_unique_id(void *id, size_t size,
                                         char **description);
/** Joins the group `id` names, waiting for every rank; that and every
 * later collective fail with KILN_ERROR_DEVICE, the communicator aborted,
 * when NCCL reports an error or when it does not finish within
 * `timeout_seconds` (0: waits forever). */
KILN_API kiln_status kiln_session_join_nccl(kiln_session *session,
                                            const void *id, size_t size,
                                            double timeout_seconds);
/** Sums the f32 buffers `names` over the joined ranks, in place on the GPU,
 * after the runs before it (e.g. accumulate_step's gradient accumulators,
 * before apply_step); returns once the sums are done. */
KILN_API kiln_status kiln_session_sum_over_ranks(kiln_session *session,
                                                 const char *const *names,
                                                 size_t count);
/** ZeRO-1 on the GPU: each f32 buffer of `names` is tiled by the ranks'
 * runs, `parts[i * world + r]` values of buffer i for rank r, in rank order.
 * With `gather` 0, rank r's run of every buffer becomes the sum of every
 * rank's values there (an ncclReduce to rank r; the rest of the buffer is
 * left undefined); with `gather` 1, every rank's run r becomes rank r's (an
 * ncclBroadcast from r). Runs after the runs before it; returns once done.
 * Faults as kiln_session_sum_over_ranks. */
KILN_API kiln_status kiln_session_parts_over_ranks(kiln_session *session,
                                                   const char *const *names,
                                                   size_t count,
                                                   const uint64_t *parts,
                                                   int32_t gather);
/** The seed the parameters were initialized with (or loaded from a
 * checkpoint). */
KILN_API kiln_status kiln_session_get_seed(const kiln_session *session,
                                           uint64_t *seed);

/** Saves parameters and optimizer state to a .safetensors file, atomically:
 * an interrupted save leaves an existing file at `path` untouched. A state
 * holding a NaN or an infinity is not saved (KILN_ERROR_NUMERICS, naming the
 * tensor), so that a diverged step never replaces a good checkpoint. The
 * metadata holds the step, the seed, the model and `user_metadata` (an
 * opaque string such as the data loader's position; may be null). */
KILN_API kiln_status kiln_session_save_checkpoint(kiln_session *session,
                                                  const char *path,
                                                  const char *user_metadata);
/** How a checkpoint's sharded state (ZeRO-1: each rank holds a part of
 * every optimizer state, the plan's Buffer.shard_offset) comes together.
 * Every rank calls `gather` once per sharded buffer, in the plan's order,
 * with its part (`bytes` at `part`); the writing rank receives every
 * rank's part in rank order into `whole` (`whole_bytes`; null on the
 * others). The parts, in rank order, are the tensor's row-major elements.
 * Returns null on success, else a message. */
typedef struct kiln_gather {
  void *user;
  const char *(*gather)(void *user, const void *part, size_t bytes, void *whole,
                        size_t whole_bytes);
} kiln_gather;
/** kiln_session_save_checkpoint for a session whose plan holds sharded
 * state: every rank calls it; the one with `writes` set writes the whole
 * checkpoint (the same file a one-process run writes), the others only
 * send their parts. A sharded session refuses the plain save. */
KILN_API kiln_status kiln_session_save_checkpoint_gathered(
    kiln_session *session, const char *path, const char *user_metadata,
    const kiln_gather *gather, int32_t writes);
/** Loads a checkpoint written by kiln_session_save_checkpoint (or any
 * .safetensors with the same tensors): every parameter (and, unless
 * KILN_LOAD_PARAMS_ONLY, every optimizer state) must be present with the
 * plan's dtype and shape (sharded state: the whole tensor's, of which
 * the session takes its part). On failure the session is left unchanged. If
 * `user_metadata` is not null it receives the saved string (free it with
 * kiln_string_free). */
KILN_API kiln_status kiln_session_load_checkpoint(kiln_session *session,
                                                  const char *path,
                                                  int32_t flags,
                                                  char **user_metadata);

/* --- Debugging and profiling --------------------------------------------- */

/** Check-numerics mode: after each op, scan its floating-point buffers and
 * fail with KILN_ERROR_NUMERICS naming the op, its model location and the
 * buffer when a NaN or an infinity appears. */
KILN_API kiln_status kiln_session_set_check_numerics(kiln_session *session,
                                                     int32_t enabled);
/** Per-op timing; enabling it also clears the collected profile. */
KILN_API kiln_status kiln_session_set_profiling(kiln_session *session,
                                                int32_t enabled);
/** The number of profile records: one per op of every entry, in plan order
 * (entries in Plan.entries order); ops not run since profiling was enabled
 * have calls == 0. */
KILN_API kiln_status kiln_session_profile_count(const kiln_session *session,
                                                size_t *count);
KILN_API kiln_status kiln_session_profile_op(const kiln_session *session,
                                             size_t index,
                                             kiln_op_profile *profile);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
