//===- TrainSessionRanks.cpp - A TrainSession among data-parallel ranks ---===//
//
// Part of Kiln. TrainSession's collectives: joining the ranks, the
// gradient sums (MPI on the cpu devices' host buffers, NCCL on cuda),
// ZeRO-1's reduces and gathers in parts, and gathered checkpoints.
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"
#include "TrainSession.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace kiln;
using namespace kiln::cli;
using namespace llvm;

Error TrainSession::setDataParallel(Communicator &communicator) {
  ranks = &communicator;
  rank = communicator.rank();
  world = communicator.world();
  if (kiln_session_set_data_parallel(session, uint32_t(rank),
                                     uint32_t(world)) != KILN_OK)
    return lastError("cannot make the session a data-parallel rank");
  collectives = Communicator::describeTransport();
  if (device == "cuda") {
    // Rank 0 makes the NCCL group's id; MPI carries it to the others.
    uint8_t id[KILN_NCCL_UNIQUE_ID_BYTES] = {};
    char *nccl = nullptr;
    if (communicator.isLeader() &&
        kiln_nccl_unique_id(id, sizeof id, &nccl) != KILN_OK)
      return lastError("cannot make an NCCL group");
    if (nccl) {
      collectives = std::string(nccl) + ", bootstrapped over " + collectives;
      kiln_string_free(nccl);
    }
    if (Error error = communicator.broadcast(id, sizeof id))
      return error;
    if (kiln_session_join_nccl(session, id, sizeof id,
                               communicator.getTimeout()) != KILN_OK)
      return lastError("cannot join the other ranks through NCCL");
  }
  // The accumulators each step sums, found once in the plan.
  accumulators.clear();
  size_t count = 0;
  kiln_artifact_buffer_count(artifact, &count);
  for (size_t id = 0; id < count; ++id) {
    kiln_buffer_info info;
    if (kiln_artifact_buffer_info(artifact, id, &info) != KILN_OK)
      return lastError("cannot describe a buffer");
    if (!StringRef(info.name).ends_with(".grad_acc"))
      continue;
    if (info.dtype != KILN_F32)
      return createStringError(formatv(
          "the gradient accumulator '{0}' is not f32: data-parallel training "
          "sums f32 accumulators only",
          info.name));
    accumulators.emplace_back(info.name,
                              size_t(info.size_bytes) / sizeof(float));
  }
  return Error::success();
}

const char *TrainSession::reportCollective(void *user, Error error) {
  auto *session = static_cast<TrainSession *>(user);
  if (!error)
    return nullptr;
  session->collectiveError = toString(std::move(error));
  return session->collectiveError.c_str();
}

Error TrainSession::armGradientSums(Communicator &communicator) {
  overlapping = &communicator;
  kiln_collectives collectives;
  collectives.user = this;
  collectives.start = [](void *user, uint32_t bucket, float *const *data,
                         const size_t *counts, size_t count) {
    auto *self = static_cast<TrainSession *>(user);
    return reportCollective(
        user, self->overlapping->startSum(bucket, data, counts, count));
  };
  collectives.progress = [](void *user) {
    auto *self = static_cast<TrainSession *>(user);
    return reportCollective(user, self->overlapping->progress());
  };
  collectives.wait = [](void *user, uint32_t bucket) {
    auto *self = static_cast<TrainSession *>(user);
    return reportCollective(user, self->overlapping->waitSum(bucket));
  };
  // cuda sums over the ranks it joined, with NCCL.
  if (kiln_session_arm_gradient_sums(
          session, sumsOnDevice() ? nullptr : &collectives) != KILN_OK)
    return lastError("cannot sum the gradients during the backward");
  return Error::success();
}

kiln_overlap_stats TrainSession::overlapStats() const {
  kiln_overlap_stats stats = {};
  kiln_session_overlap_stats(session, &stats);
  return stats;
}

Error TrainSession::saveGathered(const std::string &path,
                                 const std::string &metadata,
                                 Communicator &communicator) {
  struct Gathering {
    Communicator &communicator;
    std::string error;
  } gathering{communicator, {}};
  kiln_gather gather;
  gather.user = &gathering;
  gather.gather = [](void *user, const void *part, size_t bytes, void *whole,
                     size_t wholeBytes) -> const char * {
    auto *self = static_cast<Gathering *>(user);
    if (Error error =
            self->communicator.gatherToLeader(part, bytes, whole, wholeBytes)) {
      self->error = toString(std::move(error));
      return self->error.c_str();
    }
    return nullptr;
  };
  if (kiln_session_save_checkpoint_gathered(session, path.c_str(),
                                            metadata.c_str(), &gather,
                                            communicator.isLeader()) != KILN_OK)
    return lastError("cannot save '" + path + "'");
  return Error::success();
}

Error TrainSession::reduceInParts(const std::string &accumulator,
                                  std::vector<int> counts) {
  if (sumsOnDevice()) {
    // The plan's sums on the GPU reduce it in parts (NCCL).
    std::vector<uint64_t> parts(counts.begin(), counts.end());
    if (kiln_session_reduce_in_parts(session, accumulator.c_str(),
                                     parts.data()) != KILN_OK)
      return lastError("cannot reduce '" + accumulator + "' in parts");
    return Error::success();
  }
  // MPI on the host buffer, where the sums go through the communicator.
  Expected<void *> data = bufferData(accumulator);
  if (!data)
    return data.takeError();
  ranks->scatterSums(static_cast<float *>(*data), std::move(counts));
  return Error::success();
}

Error TrainSession::gatherParts(const std::vector<std::string> &names,
                                const std::vector<std::vector<int>> &counts) {
  if (device != "cuda") {
    std::vector<std::pair<float *, std::vector<int>>> buffers;
    for (auto [name, perRank] : llvm::zip_equal(names, counts)) {
      Expected<void *> data = bufferData(name);
      if (!data)
        return data.takeError();
      buffers.emplace_back(static_cast<float *>(*data), perRank);
    }
    return ranks->allGather(buffers);
  }
  std::vector<const char *> pointers;
  std::vector<uint64_t> parts;
  for (auto [name, perRank] : llvm::zip_equal(names, counts)) {
    pointers.push_back(name.c_str());
    parts.insert(parts.end(), perRank.begin(), perRank.end());
  }
  if (kiln_session_parts_over_ranks(session, pointers.data(), pointers.size(),
                                    parts.data(), /*gather=*/1) != KILN_OK)
    return lastError("cannot gather the parameters' parts from their ranks");
  return Error::success();
}
