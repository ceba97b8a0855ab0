//===- DataParallelOptions.h - kiln train's data-parallel options -*- C++
//-*-===//
//
// Part of Kiln. The options of `mpirun -np N kiln train ...` that say how
// the ranks work together: the collective timeout, how the gradients are
// summed (during the backward in buckets, or after it) and ZeRO-1. Each is
// refused where it would have no effect (one rank, options that exclude
// each other).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_DATAPARALLELOPTIONS_H
#define KILN_TOOLS_KILN_DATAPARALLELOPTIONS_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace kiln::cli {

struct DataParallelOptions {
  /// --collective-timeout (0: wait forever).
  double timeoutSeconds = 600;
  /// The plan sums (or, under --zero 1, reduces in parts) the gradients
  /// during the last micro-batch's backward, in buckets of `bucketBytes`
  /// (without --no-overlap), else after it.
  bool overlap = true;
  uint64_t bucketBytes = 1 << 20;
  /// --zero 1: shard the optimizer state over the ranks.
  bool zero = false;

  /// Reads and checks the options for a run of `parallel` ranks (more than
  /// one).
  static llvm::Expected<DataParallelOptions> read(bool parallel);
};

} // namespace kiln::cli

#endif // KILN_TOOLS_KILN_DATAPARALLELOPTIONS_H
