//===- CheckpointMetadata.h - kiln train's checkpoint metadata --*- C++ -*-===//
//
// Part of Kiln. The user metadata kiln train keeps in a checkpoint
// (kiln_session_save_checkpoint): where the training data stream stands
// and its batch seed, so that a resumed run sees the batches an
// uninterrupted one would.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_CHECKPOINTMETADATA_H
#define KILN_TOOLS_KILN_CHECKPOINTMETADATA_H

#include "kiln/DataLoader.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::cli {

struct CheckpointMetadata {
  data::DataPosition position;
  /// Absent in checkpoints of older runs.
  std::optional<uint64_t> batchSeed;

  /// As JSON: {"batch_seed":0,"data_position":"6:36"}.
  std::string toJson() const;
  /// Reads the metadata of the checkpoint `path`; fails naming it when the
  /// text holds no data position.
  static llvm::Expected<CheckpointMetadata> parse(const std::string &text,
                                                  const std::string &path);
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_CHECKPOINTMETADATA_H
