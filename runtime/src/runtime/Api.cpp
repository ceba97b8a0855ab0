//===- Api.cpp - The C API of libkiln_runtime -----------------------------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Each kiln_* function runs its body through `guarded`, which turns a failed
// Result (and any exception, e.g. std::bad_alloc) into the call's status and
// records "<function>: <message>" as the thread's, and the session's, last
// error. Nothing thrown inside the runtime crosses the C boundary.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"
#include "PlanPrinter.h"
#include "Session.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

using namespace kiln;
using namespace kiln::runtime;

struct kiln_artifact {
  std::shared_ptr<const Artifact> artifact;
};

struct kiln_session {
  std::unique_ptr<Session> session;
};

namespace {

thread_local std::string threadLastError;

/// Runs `body`, a callable returning a Result, as the C function `function`.
template <typename Body>
kiln_status guarded(const char *function, kiln_session *session, Body &&body) {
  Result result = Result::ok();
  try {
    result = body();
  } catch (const std::bad_alloc &) {
    result = Result::error(KILN_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception &error) {
    result = Result::error(KILN_ERROR_INTERNAL,
                           std::string("internal error: ") + error.what());
  } catch (...) {
    result = Result::error(KILN_ERROR_INTERNAL, "internal error");
  }
  if (result.isOk())
    return KILN_OK;
  try {
    threadLastError = std::string(function) + ": " + result.message();
    if (session && session->session)
      session->session->lastError = threadLastError;
  } catch (...) {
    // Out of memory while recording the message: the status still tells.
  }
  return result.code();
}

Result requireNonNull(const void *pointer, const char *what) {
  if (!pointer)
    return invalidArgument(std::string(what) + " is null");
  return Result::ok();
}

/// Copies `text` into a malloc'ed C string for the caller.
Result exportString(const std::string &text, char **out) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (!copy)
    return Result::error(KILN_ERROR_INTERNAL, "out of memory");
  std::memcpy(copy, text.c_str(), text.size() + 1);
  *out = copy;
  return Result::ok();
}

} // namespace

#define KILN_REQUIRE(pointer)                                                  \
  KILN_RETURN_IF_ERROR(requireNonNull((pointer), #pointer))

extern "C" {

const char *kiln_last_error(void) { return threadLastError.c_str(); }

const char *kiln_session_last_error(const kiln_session *session) {
  if (!session || !session->session)
    return "";
  return session->session->lastError.c_str();
}

kiln_status kiln_string_free(char *string) {
  std::free(string);
  return KILN_OK;
}

kiln_status kiln_artifact_open(const char *directory,
                               kiln_artifact **artifact) {
  return guarded("kiln_artifact_open", nullptr, [&] {
    KILN_REQUIRE(directory);
    KILN_REQUIRE(artifact);
    *artifact = nullptr;
    auto handle = std::make_unique<kiln_artifact>();
    KILN_RETURN_IF_ERROR(Artifact::open(directory, handle->artifact));
    *artifact = handle.release();
    return Result::ok();
  });
}

kiln_status kiln_artifact_close(kiln_artifact *artifact) {
  delete artifact;
  return KILN_OK;
}

kiln_status kiln_artifact_model(const kiln_artifact *artifact,
                                const char **model, const char **target) {
  return guarded("kiln_artifact_model", nullptr, [&] {
    KILN_REQUIRE(artifact);
    if (model)
      *model = artifact->artifact->getModelName();
    if (target)
      *target = artifact->artifact->getTarget();
    return Result::ok();
  });
}

kiln_status kiln_artifact_buffer_count(const kiln_artifact *artifact,
                                       size_t *count) {
  return guarded("kiln_artifact_buffer_count", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(count);
    *count = artifact->artifact->getBuffers().size();
    return Result::ok();
  });
}

kiln_status kiln_artifact_buffer_info(const kiln_artifact *artifact,
                                      size_t index, kiln_buffer_info *info) {
  return guarded("kiln_artifact_buffer_info", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(info);
    const std::vector<BufferInfo> &buffers = artifact->artifact->getBuffers();
    if (index >= buffers.size())
      return invalidArgument("buffer index " + std::to_string(index) +
                             " is out of range (the plan has " +
                             std::to_string(buffers.size()) + " buffers)");
    const BufferInfo &buffer = buffers[index];
    info->name = buffer.name.c_str();
    info->kind = static_cast<kiln_buffer_kind>(buffer.kind);
    info->dtype = static_cast<kiln_dtype>(buffer.dtype);
    info->rank = static_cast<int32_t>(buffer.shape.size());
    info->shape = buffer.shape.data();
    info->size_bytes = buffer.sizeBytes;
    info->arena_offset =
        buffer.kind == plan::BufferKind::Transient ? buffer.arenaOffset : -1;
    return Result::ok();
  });
}

kiln_status kiln_artifact_find_buffer(const kiln_artifact *artifact,
                                      const char *name, size_t *index) {
  return guarded("kiln_artifact_find_buffer", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(name);
    KILN_REQUIRE(index);
    int64_t found = artifact->artifact->findBuffer(name);
    if (found < 0)
      return invalidArgument("the plan has no buffer '" + std::string(name) +
                             "'");
    *index = static_cast<size_t>(found);
    return Result::ok();
  });
}

kiln_status kiln_artifact_entry_count(const kiln_artifact *artifact,
                                      size_t *count) {
  return guarded("kiln_artifact_entry_count", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(count);
    const auto *entries = artifact->artifact->getPlan().entries();
    *count = entries ? entries->size() : 0;
    return Result::ok();
  });
}

kiln_status kiln_artifact_entry_name(const kiln_artifact *artifact,
                                     size_t index, const char **name) {
  return guarded("kiln_artifact_entry_name", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(name);
    const auto *entries = artifact->artifact->getPlan().entries();
    size_t count = entries ? entries->size() : 0;
    if (index >= count)
      return invalidArgument("entry index " + std::to_string(index) +
                             " is out of range (the plan has " +
                             std::to_string(count) + " entries)");
    *name = entries->Get(static_cast<uint32_t>(index))->name()->c_str();
    return Result::ok();
  });
}

kiln_status kiln_artifact_print_plan(const kiln_artifact *artifact,
                                     char **text) {
  return guarded("kiln_artifact_print_plan", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(text);
    return exportString(printPlan(*artifact->artifact), text);
  });
}

kiln_status kiln_device_check(const char *device) {
  return guarded("kiln_device_check", nullptr, [&] {
    KILN_REQUIRE(device);
    return Session::checkDevice(device);
  });
}

kiln_status kiln_session_create(kiln_artifact *artifact, const char *device,
                                int32_t num_threads, kiln_session **session) {
  return guarded("kiln_session_create", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(device);
    KILN_REQUIRE(session);
    *session = nullptr;
    auto handle = std::make_unique<kiln_session>();
    Session::Options options;
    options.device = device;
    options.numThreads = num_threads;
    KILN_RETURN_IF_ERROR(
        Session::create(artifact->artifact, options, handle->session));
    *session = handle.release();
    return Result::ok();
  });
}

void kiln_session_options_init(kiln_session_options *options) {
  if (!options)
    return;
  *options = kiln_session_options();
  options->struct_size = sizeof(kiln_session_options);
  options->device = "cpu";
  options->world_size = 1;
}

kiln_status
kiln_session_create_with_options(kiln_artifact *artifact,
                                 const kiln_session_options *options,
                                 kiln_session **session) {
  return guarded("kiln_session_create_with_options", nullptr, [&] {
    KILN_REQUIRE(artifact);
    KILN_REQUIRE(options);
    KILN_REQUIRE(session);
    *session = nullptr;
    // A caller compiled against a smaller struct has defaults for the rest.
    kiln_session_options given;
    kiln_session_options_init(&given);
    if (options->struct_size < offsetof(kiln_session_options, device_index) ||
        options->struct_size > sizeof(kiln_session_options))
      return invalidArgument(
          "options.struct_size is " + std::to_string(options->struct_size) +
          "; call kiln_session_options_init first (this runtime's is " +
          std::to_string(sizeof(kiln_session_options)) + ")");
    std::memcpy(&given, options, options->struct_size);
    KILN_REQUIRE(given.device);
    if (given.world_size != 1 || given.rank != 0)
      return Result::error(
          KILN_ERROR_UNSUPPORTED,
          "rank " + std::to_string(given.rank) + " of world size " +
              std::to_string(given.world_size) +
              ": this runtime runs one process (rank 0 of 1); data-parallel "
              "training is not built yet");
    std::string device = given.device;
    if (given.device_index < 0 || (given.device_index != 0 && device != "cuda"))
      return invalidArgument(
          "device index " + std::to_string(given.device_index) +
          " for device '" + device + "' (only \"cuda\" has more than index 0)");
    auto handle = std::make_unique<kiln_session>();
    Session::Options created;
    created.device = device;
    created.numThreads = given.num_threads;
    created.deviceIndex = given.device_index;
    created.deterministic = given.deterministic != 0;
    KILN_RETURN_IF_ERROR(
        Session::create(artifact->artifact, created, handle->session));
    *session = handle.release();
    return Result::ok();
  });
}

kiln_status kiln_session_destroy(kiln_session *session) {
  delete session;
  return KILN_OK;
}

kiln_status kiln_session_num_threads(const kiln_session *session,
                                     int32_t *num_threads) {
  return guarded("kiln_session_num_threads", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(num_threads);
    *num_threads = session->session->getNumThreads();
    return Result::ok();
  });
}

kiln_status kiln_session_gemm_info(const kiln_session *session,
                                   kiln_gemm_info *info) {
  return guarded("kiln_session_gemm_info", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(info);
    const GemmInfo &gemm = session->session->getGemmInfo();
    info->library = gemm.library.c_str();
    info->version = gemm.version.c_str();
    info->isa = gemm.isa.c_str();
    info->others = gemm.others.c_str();
    info->warning = gemm.warning.c_str();
    return Result::ok();
  });
}

kiln_status kiln_session_initialize(kiln_session *session, uint64_t seed) {
  return guarded("kiln_session_initialize", session, [&] {
    KILN_REQUIRE(session);
    return session->session->initialize(seed);
  });
}

kiln_status kiln_session_bind_input(kiln_session *session, const char *name,
                                    const void *data, kiln_dtype dtype,
                                    const int64_t *shape, int32_t rank) {
  return guarded("kiln_session_bind_input", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(name);
    return session->session->bindInput(name, data, dtype, shape, rank);
  });
}

kiln_status kiln_session_run(kiln_session *session, const char *entry) {
  return guarded("kiln_session_run", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(entry);
    return session->session->run(entry);
  });
}

kiln_status kiln_session_synchronize(kiln_session *session) {
  return guarded("kiln_session_synchronize", session, [&] {
    KILN_REQUIRE(session);
    return session->session->synchronize();
  });
}

kiln_status kiln_session_op_detail(kiln_session *session, size_t index,
                                   const char **detail) {
  return guarded("kiln_session_op_detail", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(detail);
    return session->session->getOpDetail(index, *detail);
  });
}

kiln_status kiln_session_read_output(kiln_session *session, const char *name,
                                     kiln_dtype dtype, void *data,
                                     size_t size_bytes) {
  return guarded("kiln_session_read_output", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(name);
    return session->session->readOutput(name, dtype, data, size_bytes);
  });
}

kiln_status kiln_session_get_buffer(kiln_session *session, const char *name,
                                    void *data, size_t size_bytes) {
  return guarded("kiln_session_get_buffer", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(name);
    return session->session->getBuffer(name, data, size_bytes);
  });
}

kiln_status kiln_session_set_buffer(kiln_session *session, const char *name,
                                    const void *data, size_t size_bytes) {
  return guarded("kiln_session_set_buffer", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(name);
    return session->session->setBuffer(name, data, size_bytes);
  });
}

kiln_status kiln_session_buffer_data(kiln_session *session, const char *name,
                                     void **data) {
  return guarded("kiln_session_buffer_data", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(name);
    KILN_REQUIRE(data);
    return session->session->bufferData(name, *data);
  });
}

kiln_status kiln_session_get_step(const kiln_session *session, uint64_t *step) {
  return guarded("kiln_session_get_step", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(step);
    *step = session->session->getStep();
    return Result::ok();
  });
}

kiln_status kiln_session_set_step(kiln_session *session, uint64_t step) {
  return guarded("kiln_session_set_step", session, [&] {
    KILN_REQUIRE(session);
    session->session->setStep(step);
    return Result::ok();
  });
}

kiln_status kiln_session_set_data_parallel(kiln_session *session, uint32_t rank,
                                           uint32_t world) {
  return guarded("kiln_session_set_data_parallel", session, [&] {
    KILN_REQUIRE(session);
    if (world < 1 || rank >= world)
      return invalidArgument("rank " + std::to_string(rank) + " of " +
                             std::to_string(world) +
                             ": the rank must be below the world size");
    session->session->setDataParallel(rank, world);
    return Result::ok();
  });
}

kiln_status kiln_nccl_unique_id(void *id, size_t size, char **description) {
  return guarded("kiln_nccl_unique_id", nullptr, [&] {
    KILN_REQUIRE(id);
    if (size != KILN_NCCL_UNIQUE_ID_BYTES)
      return invalidArgument("an NCCL unique id has " +
                             std::to_string(KILN_NCCL_UNIQUE_ID_BYTES) +
                             " bytes, not " + std::to_string(size));
    std::string made;
    KILN_RETURN_IF_ERROR(Session::makeNcclUniqueId(id, made));
    return description ? exportString(made, description) : Result::ok();
  });
}

kiln_status kiln_session_join_nccl(kiln_session *session, const void *id,
                                   size_t size, double timeout_seconds) {
  return guarded("kiln_session_join_nccl", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(id);
    if (size != KILN_NCCL_UNIQUE_ID_BYTES)
      return invalidArgument("an NCCL unique id has " +
                             std::to_string(KILN_NCCL_UNIQUE_ID_BYTES) +
                             " bytes, not " + std::to_string(size));
    if (!(timeout_seconds >= 0))
      return invalidArgument("the timeout must not be negative (0: none)");
    return session->session->joinRanks(id, timeout_seconds);
  });
}

kiln_status kiln_session_sum_over_ranks(kiln_session *session,
                                        const char *const *names,
                                        size_t count) {
  return guarded("kiln_session_sum_over_ranks", session, [&] {
    KILN_REQUIRE(session);
    if (count)
      KILN_REQUIRE(names);
    std::vector<std::string> list;
    for (size_t i = 0; i < count; ++i) {
      KILN_REQUIRE(names[i]);
      list.emplace_back(names[i]);
    }
    return session->session->collectOverRanks(list, RankCollective::Kind::Sum);
  });
}

kiln_status kiln_session_parts_over_ranks(kiln_session *session,
                                          const char *const *names,
                                          size_t count, const uint64_t *parts,
                                          int32_t gather) {
  return guarded("kiln_session_parts_over_ranks", session, [&] {
    KILN_REQUIRE(session);
    if (count) {
      KILN_REQUIRE(names);
      KILN_REQUIRE(parts);
    }
    std::vector<std::string> list;
    for (size_t i = 0; i < count; ++i) {
      KILN_REQUIRE(names[i]);
      list.emplace_back(names[i]);
    }
    return session->session->collectOverRanks(
        list,
        gather ? RankCollective::Kind::GatherParts
               : RankCollective::Kind::ReduceParts,
        parts);
  });
}

kiln_status kiln_session_reduce_in_parts(kiln_session *session,
                                         const char *name,
                                         const uint64_t *parts) {
  return guarded("kiln_session_reduce_in_parts", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(name);
    KILN_REQUIRE(parts);
    return session->session->reduceInParts(name, parts);
  });
}

kiln_status
kiln_session_arm_gradient_sums(kiln_session *session,
                               const kiln_collectives *collectives) {
  return guarded("kiln_session_arm_gradient_sums", session, [&] {
    KILN_REQUIRE(session);
    return session->session->armGradientSums(collectives);
  });
}

kiln_status kiln_session_overlap_stats(const kiln_session *session,
                                       kiln_overlap_stats *stats) {
  return guarded("kiln_session_overlap_stats", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(stats);
    *stats = session->session->getOverlapStats();
    return Result::ok();
  });
}

kiln_status kiln_session_get_seed(const kiln_session *session, uint64_t *seed) {
  return guarded("kiln_session_get_seed", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(seed);
    *seed = session->session->getSeed();
    return Result::ok();
  });
}

kiln_status kiln_session_save_checkpoint(kiln_session *session,
                                         const char *path,
                                         const char *user_metadata) {
  return guarded("kiln_session_save_checkpoint", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(path);
    return session->session->saveCheckpoint(path,
                                            user_metadata ? user_metadata : "");
  });
}

kiln_status kiln_session_save_checkpoint_gathered(kiln_session *session,
                                                  const char *path,
                                                  const char *user_metadata,
                                                  const kiln_gather *gather,
                                                  int32_t writes) {
  return guarded("kiln_session_save_checkpoint_gathered", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(path);
    KILN_REQUIRE(gather);
    if (!gather->gather)
      return invalidArgument("gather->gather is null");
    return session->session->saveCheckpoint(
        path, user_metadata ? user_metadata : "", gather, writes != 0);
  });
}

kiln_status kiln_session_load_checkpoint(kiln_session *session,
                                         const char *path, int32_t flags,
                                         char **user_metadata) {
  return guarded("kiln_session_load_checkpoint", session, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(path);
    std::string user;
    KILN_RETURN_IF_ERROR(session->session->loadCheckpoint(
        path, flags, user_metadata ? &user : nullptr));
    if (user_metadata)
      return exportString(user, user_metadata);
    return Result::ok();
  });
}

kiln_status kiln_session_set_check_numerics(kiln_session *session,
                                            int32_t enabled) {
  return guarded("kiln_session_set_check_numerics", session, [&] {
    KILN_REQUIRE(session);
    session->session->setCheckNumerics(enabled != 0);
    return Result::ok();
  });
}

kiln_status kiln_session_set_profiling(kiln_session *session, int32_t enabled) {
  return guarded("kiln_session_set_profiling", session, [&] {
    KILN_REQUIRE(session);
    session->session->setProfiling(enabled != 0);
    return Result::ok();
  });
}

kiln_status kiln_session_profile_count(const kiln_session *session,
                                       size_t *count) {
  return guarded("kiln_session_profile_count", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(count);
    *count = session->session->getProfileCount();
    return Result::ok();
  });
}

kiln_status kiln_session_profile_op(const kiln_session *session, size_t index,
                                    kiln_op_profile *profile) {
  return guarded("kiln_session_profile_op", nullptr, [&] {
    KILN_REQUIRE(session);
    KILN_REQUIRE(profile);
    return session->session->getProfile(index, *profile);
  });
}

} // extern "C"
