//===- ArenaPacking.cpp - Offsets for buffers with live ranges ------------===//
//
// Part of Kiln. Greedy placement in several orders, keeping the best: each
// block goes into a gap between the blocks already placed that interfere
// with it (are live at a common point). No single order wins everywhere:
// size-descending leaves the fewest holes when a few large buffers
// dominate, first-use order when lifetimes are short and nested.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Transforms/ArenaPacking.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace kiln::kernel;

ArenaPacking kiln::kernel::packArenaInOrder(llvm::ArrayRef<PackingBlock> blocks,
                                            llvm::ArrayRef<unsigned> order,
                                            bool bestFit) {
  ArenaPacking packing;
  packing.offsets.assign(blocks.size(), 0);
  llvm::SmallVector<unsigned> placed;
  llvm::SmallVector<std::pair<int64_t, int64_t>> taken;
  for (unsigned index : order) {
    const PackingBlock &block = blocks[index];
    if (!block.isLive())
      continue;
    // The byte ranges of the interfering blocks, by offset.
    taken.clear();
    for (unsigned other : placed)
      if (blocks[other].interferesWith(block))
        taken.push_back({packing.offsets[other],
                         packing.offsets[other] + blocks[other].size});
    llvm::sort(taken);
    int64_t cursor = 0;
    int64_t chosen = -1;
    int64_t chosenGap = std::numeric_limits<int64_t>::max();
    for (auto [begin, end] : taken) {
      int64_t gap = begin - cursor;
      if (gap >= block.size && gap < chosenGap) {
        chosen = cursor;
        chosenGap = gap;
        if (!bestFit)
          break;
      }
      cursor = std::max(cursor, end);
    }
    int64_t offset = chosen >= 0 ? chosen : cursor;
    packing.offsets[index] = offset;
    packing.arenaBytes = std::max(packing.arenaBytes, offset + block.size);
    placed.push_back(index);
  }
  return packing;
}

ArenaPacking kiln::kernel::packArena(llvm::ArrayRef<PackingBlock> blocks) {
  auto lifetime = [&](unsigned i) {
    return blocks[i].last - blocks[i].first + 1;
  };
  llvm::SmallVector<unsigned> identity(blocks.size());
  std::iota(identity.begin(), identity.end(), 0u);

  // Each order breaks ties by first use, then by index, so that the result
  // does not depend on the sort's stability.
  auto bySize = identity;
  llvm::sort(bySize, [&](unsigned a, unsigned b) {
    return std::make_tuple(-blocks[a].size, -lifetime(a), blocks[a].first, a) <
           std::make_tuple(-blocks[b].size, -lifetime(b), blocks[b].first, b);
  });
  auto byArea = identity;
  llvm::sort(byArea, [&](unsigned a, unsigned b) {
    return std::make_tuple(-blocks[a].size * lifetime(a), blocks[a].first, a) <
           std::make_tuple(-blocks[b].size * lifetime(b), blocks[b].first, b);
  });
  auto byFirstUse = identity;
  llvm::sort(byFirstUse, [&](unsigned a, unsigned b) {
    return std::make_tuple(blocks[a].first, -blocks[a].size, a) <
           std::make_tuple(blocks[b].first, -blocks[b].size, b);
  });

  struct Strategy {
    llvm::StringRef name;
    llvm::ArrayRef<unsigned> order;
    bool bestFit;
  };
  Strategy strategies[] = {
      {"size-desc/first-fit", bySize, false},
      {"size-desc/best-fit", bySize, true},
      {"area-desc/first-fit", byArea, false},
      {"area-desc/best-fit", byArea, true},
      {"first-use/first-fit", byFirstUse, false},
      {"first-use/best-fit", byFirstUse, true},
  };
  ArenaPacking best;
  bool found = false;
  for (const Strategy &strategy : strategies) {
    ArenaPacking packing =
        packArenaInOrder(blocks, strategy.order, strategy.bestFit);
    if (!found || packing.arenaBytes < best.arenaBytes) {
      best = std::move(packing);
      best.strategy = strategy.name;
      found = true;
    }
  }
  return best;
}
