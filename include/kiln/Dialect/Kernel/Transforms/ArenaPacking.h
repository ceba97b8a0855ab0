//===- ArenaPacking.h - Offsets for buffers with live ranges ----*- C++ -*-===//
//
// Part of Kiln. The placement problem of the memory planner, apart from the
// IR: blocks of bytes, each live over a range of program points, get
// offsets such that blocks live at a common point never overlap, in an
// arena as small as the heuristics find.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KERNEL_TRANSFORMS_ARENAPACKING_H
#define KILN_DIALECT_KERNEL_TRANSFORMS_ARENAPACKING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace kiln::kernel {

/// A block to place: `size` bytes (a multiple of the alignment), live over
/// the program points [first, last]. A block with first > last is never
/// live and goes at offset 0.
struct PackingBlock {
  int64_t size = 0;
  int64_t first = 0, last = -1;

  bool isLive() const { return first <= last; }
  bool interferesWith(const PackingBlock &other) const {
    return isLive() && other.isLive() && first <= other.last &&
           other.first <= last;
  }
};

/// Offsets, one per block, and the arena they need.
struct ArenaPacking {
  llvm::SmallVector<int64_t> offsets;
  int64_t arenaBytes = 0;
  /// The heuristic that produced it, e.g. "size-desc/first-fit".
  llvm::StringRef strategy;
};

/// Packs `blocks` with each heuristic -- orders: size descending, size x
/// lifetime descending, first use ascending; placement of each block at the
/// lowest offset that clears every interfering block placed before it
/// (first-fit) or in the smallest such gap (best-fit) -- and returns the
/// smallest arena found; while that is above the live lower bound, up to
/// 256 seeded restarts of size-descending best-fit with sizes scaled by a
/// random factor in [1/2, 1]. Deterministic.
ArenaPacking packArena(llvm::ArrayRef<PackingBlock> blocks);
/// The most bytes of blocks live at one point: no packing is smaller.
int64_t getLiveLowerBound(llvm::ArrayRef<PackingBlock> blocks);

/// The arena of one heuristic: `order` is the placement order (a
/// permutation of the block indices); `bestFit` picks the smallest gap that
/// fits instead of the lowest.
ArenaPacking packArenaInOrder(llvm::ArrayRef<PackingBlock> blocks,
                              llvm::ArrayRef<unsigned> order, bool bestFit);

} // namespace kiln::kernel

#endif // KILN_DIALECT_KERNEL_TRANSFORMS_ARENAPACKING_H
