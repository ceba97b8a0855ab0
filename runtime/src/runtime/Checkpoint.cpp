//===- Checkpoint.cpp - Saving and loading a session as .safetensors ------===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// A checkpoint holds every parameter and optimizer-state buffer under its
// plan name, in plan order, and the metadata
//
//   "format": "kiln-checkpoint", "model": the plan's model name,
//   "step": the step counter, "seed": the initialization seed (decimal),
//   "user": the caller's opaque string (the data loader's position, ...)
//
// It is written through writeSafetensors, i.e. to a temporary file that is
// fsync'ed and renamed over the old one. Loading checks every tensor before
// it writes any, so a failed load leaves the session untouched.
//
//===----------------------------------------------------------------------===//

#include "Session.h"

#include "kiln/Safetensors.h"

#include <cstring>

using namespace kiln;
using namespace kiln::runtime;

namespace {

/// The safetensors dtype with the layout of `dtype` (i1 is stored as BOOL).
safetensors::DType toSafetensors(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::F32:
    return safetensors::DType::F32;
  case plan::DType::F64:
    return safetensors::DType::F64;
  case plan::DType::F16:
    return safetensors::DType::F16;
  case plan::DType::BF16:
    return safetensors::DType::BF16;
  case plan::DType::I32:
    return safetensors::DType::I32;
  case plan::DType::I64:
    return safetensors::DType::I64;
  case plan::DType::I1:
    return safetensors::DType::Bool;
  case plan::DType::U8:
    return safetensors::DType::U8;
  }
  return safetensors::DType::U8;
}

/// Whether `buffer` is saved in checkpoints: parameters and optimizer
/// state, less the weight copies (derived from the parameters).
bool isCheckpointed(const BufferInfo &buffer) {
  return (buffer.kind == plan::BufferKind::Param ||
          buffer.kind == plan::BufferKind::OptimizerState) &&
         !isWeightCopy(buffer);
}

/// Parses a decimal uint64 metadata value.
bool parseUnsigned(const std::string &text, uint64_t &value) {
  if (text.empty() || text.size() > 20)
    return false;
  value = 0;
  for (char digit : text) {
    if (digit < '0' || digit > '9')
      return false;
    uint64_t next = value * 10 + static_cast<uint64_t>(digit - '0');
    if (next / 10 != value)
      return false;
    value = next;
  }
  return true;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace

bool kiln::runtime::isGradientAccumulator(const BufferInfo &buffer) {
  const std::string suffix = ".grad_acc";
  return buffer.name.size() > suffix.size() &&
         buffer.name.compare(buffer.name.size() - suffix.size(), suffix.size(),
                             suffix) == 0;
}

Result Session::saveCheckpoint(const std::string &path,
                               const std::string &userMetadata,
                               const kiln_gather *gather, bool writes) {
  // The device's bytes, where it has newer ones.
  KILN_RETURN_IF_ERROR(syncAllToHost());
  // A diverged state would overwrite the last good checkpoint.
  KILN_RETURN_IF_ERROR(checkFiniteState(
      "not saved to '" + path + "' (a checkpoint already there is kept)"));
  safetensors::TensorFile file;
  // The sharded states' whole tensors, gathered from the ranks.
  std::vector<std::vector<uint8_t>> wholes;
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (!isCheckpointed(buffer))
      continue;
    const void *data = pointers_[id];
    std::vector<int64_t> shape = buffer.shape;
    size_t bytes = static_cast<size_t>(buffer.sizeBytes);
    if (buffer.shardOffset >= 0) {
      if (!gather)
        return Result::error(
            KILN_ERROR_UNSUPPORTED,
            "'" + buffer.name +
                "' is this rank's part of a sharded state (ZeRO): save with "
                "kiln_session_save_checkpoint_gathered on every rank");
      int64_t elementBytes = buffer.sizeBytes / buffer.numElements;
      int64_t wholeElements = 1;
      for (int64_t dim : buffer.wholeShape)
        wholeElements *= dim;
      std::vector<uint8_t> whole(
          writes ? static_cast<size_t>(wholeElements * elementBytes) : 0);
      if (const char *failed =
              gather->gather(gather->user, data, bytes,
                             writes ? whole.data() : nullptr, whole.size()))
        return Result::error(KILN_ERROR_DEVICE,
                             "cannot gather '" + buffer.name +
                                 "' for a checkpoint: " + failed);
      wholes.push_back(std::move(whole));
      data = wholes.back().data();
      bytes = wholes.back().size();
      shape = buffer.wholeShape;
    }
    if (!writes)
      continue;
    KILN_RETURN_IF_ERROR(Result::fromStatus(
        file.add(buffer.name, toSafetensors(buffer.dtype), shape, data, bytes),
        KILN_ERROR_INTERNAL));
  }
  if (!writes)
    return Result::ok();
  file.metadata["format"] = "kiln-checkpoint";
  file.metadata["model"] = artifact_->getModelName();
  file.metadata["step"] = std::to_string(step_);
  file.metadata["seed"] = std::to_string(seed_);
  file.metadata["user"] = userMetadata;
  Status written = safetensors::writeSafetensors(path, file);
  return Result::fromStatus(written, KILN_ERROR_IO);
}

Result Session::loadCheckpoint(const std::string &path, int32_t flags,
                               std::string *userMetadata) {
  if (flags != KILN_LOAD_ALL && flags != KILN_LOAD_PARAMS_ONLY)
    return invalidArgument("unknown load flags " + std::to_string(flags));
  bool paramsOnly = flags == KILN_LOAD_PARAMS_ONLY;
  safetensors::TensorFile file;
  Status read = safetensors::readSafetensors(path, file);
  if (!read.isOk())
    return Result::error(KILN_ERROR_IO, read.message());

  // Check everything first: a failed load changes nothing.
  const std::vector<BufferInfo> &buffers = artifact_->getBuffers();
  std::vector<std::pair<size_t, const safetensors::Tensor *>> restores;
  // Gradient accumulators the file lacks (a run without accumulation
  // wrote it): zero, as every checkpoint's are, written between steps.
  std::vector<size_t> zeroed;
  std::string missing;
  size_t missingCount = 0;
  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferInfo &buffer = buffers[id];
    if (!isCheckpointed(buffer) ||
        (paramsOnly && buffer.kind != plan::BufferKind::Param))
      continue;
    const safetensors::Tensor *tensor = file.find(buffer.name);
    if (!tensor && isGradientAccumulator(buffer)) {
      zeroed.push_back(id);
      continue;
    }
    if (!tensor) {
      if (missingCount++ < 8)
        missing += (missing.empty() ? "'" : ", '") + buffer.name + "'";
      continue;
    }
    // Sharded state: the file holds the whole tensor, of which this
    // session keeps its part.
    bool sharded = buffer.shardOffset >= 0;
    const std::vector<int64_t> &shape =
        sharded ? buffer.wholeShape : buffer.shape;
    if (tensor->dtype != toSafetensors(buffer.dtype) || tensor->shape != shape)
      return invalidFormat(path + ": tensor '" + buffer.name + "' is " +
                           safetensors::dtypeName(tensor->dtype) +
                           formatShape(tensor->shape) + " but the model's " +
                           bufferKindName(buffer.kind) + " is " +
                           safetensors::dtypeName(toSafetensors(buffer.dtype)) +
                           formatShape(shape));
    restores.emplace_back(id, tensor);
  }
  if (missingCount)
    return invalidFormat(path + ": missing " + std::to_string(missingCount) +
                         " tensor(s) of model '" + artifact_->getModelName() +
                         "': " + missing + (missingCount > 8 ? ", ..." : "") +
                         (paramsOnly ? ""
                                     : " (to load weights without optimizer "
                                       "state, load parameters only)"));
  uint64_t step = step_, seed = seed_;
  if (!paramsOnly) {
    for (auto [key, target] :
         {std::make_pair("step", &step), std::make_pair("seed", &seed)}) {
      auto it = file.metadata.find(key);
      if (it != file.metadata.end() && !parseUnsigned(it->second, *target))
        return invalidFormat(path + ": metadata '" + key + "' is '" +
                             it->second + "', not an unsigned integer");
    }
  }

  // The runs in flight write the state too: they finish first.
  KILN_RETURN_IF_ERROR(device_->finish());
  for (auto [id, tensor] : restores) {
    const BufferInfo &buffer = buffers[id];
    size_t skip = 0;
    if (buffer.shardOffset >= 0)
      skip = static_cast<size_t>(buffer.shardOffset * buffer.sizeBytes /
                                 buffer.numElements);
    std::memcpy(pointers_[id], tensor->data.data() + skip,
                static_cast<size_t>(buffer.sizeBytes));
    KILN_RETURN_IF_ERROR(hostWrote(id));
  }
  for (size_t id : zeroed) {
    std::memset(pointers_[id], 0, static_cast<size_t>(buffers[id].sizeBytes));
    KILN_RETURN_IF_ERROR(hostWrote(id));
  }
  step_ = step;
  seed_ = seed;
  if (userMetadata) {
    auto it = file.metadata.find("user");
    *userMetadata = it == file.metadata.end() ? "" : it->second;
  }
  return Result::ok();
}
