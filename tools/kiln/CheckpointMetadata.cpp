//===- CheckpointMetadata.cpp - kiln train's checkpoint metadata ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "CheckpointMetadata.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace kiln;
using namespace kiln::cli;
using namespace llvm;

std::string CheckpointMetadata::toJson() const {
  json::Object object{{"data_position", position.toString()}};
  if (batchSeed)
    object["batch_seed"] = int64_t(*batchSeed);
  return formatv("{0}", json::Value(std::move(object))).str();
}

Expected<CheckpointMetadata>
CheckpointMetadata::parse(const std::string &text, const std::string &path) {
  Expected<json::Value> parsed = json::parse(text);
  const json::Object *object = parsed ? parsed->getAsObject() : nullptr;
  std::optional<StringRef> position =
      object ? object->getString("data_position") : std::nullopt;
  if (!parsed)
    consumeError(parsed.takeError());
  if (!position)
    return createStringError("'" + path +
                             "' holds no data position: was it saved by kiln "
                             "train?");
  CheckpointMetadata metadata;
  if (Status status =
          data::DataPosition::parse(position->str(), metadata.position);
      !status)
    return createStringError(status.message());
  if (std::optional<int64_t> saved = object->getInteger("batch_seed"))
    metadata.batchSeed = static_cast<uint64_t>(*saved);
  return metadata;
}
