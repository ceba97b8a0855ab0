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
#include <random>

/// Seeded restarts when the fixed orders stay above the lower bound, at
/// most, and the pairs of blocks all of them may compare together: a
/// placement compares each block with those placed before it, so a large
/// entry (thousands of transients) gets fewer restarts, and packing stays
/// well under a second instead of growing with the square of the model.
static constexpr int kPackingRestarts = 256;
static constexpr int64_t kRestartPairBudget = 200'000'000;

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

  // Above the lower bound, seeded restarts: size-descending orders whose
  // sizes are scaled by a random factor in [1/2, 1], so that blocks of
  // similar size trade places (a large block that must not meet a
  // long-lived one of the same size then finds the hole the first orders
  // left). The generator's raw output keeps the result the same on every
  // platform.
  int64_t bound = getLiveLowerBound(blocks);
  std::mt19937_64 random(0x4B494C4E); // "KILN"
  llvm::SmallVector<double> weight(blocks.size());
  int64_t pairs = std::max<int64_t>(1, static_cast<int64_t>(blocks.size()) *
                                           (blocks.size() - 1) / 2);
  int64_t restarts =
      std::min<int64_t>(kPackingRestarts, kRestartPairBudget / pairs);
  for (int64_t restart = 0; restart < restarts && best.arenaBytes > bound;
       ++restart) {
    for (auto [index, block] : llvm::enumerate(blocks))
      weight[index] = static_cast<double>(block.size) *
                      (0.5 + 0.5 * static_cast<double>(random() >> 11) /
                                 static_cast<double>(1ull << 53));
    auto order = identity;
    llvm::sort(order, [&](unsigned a, unsigned b) {
      return std::make_tuple(-weight[a], blocks[a].first, a) <
             std::make_tuple(-weight[b], blocks[b].first, b);
    });
    ArenaPacking packing = packArenaInOrder(blocks, order, /*bestFit=*/true);
    if (packing.arenaBytes < best.arenaBytes) {
      best = std::move(packing);
      best.strategy = "perturbed-size/best-fit";
    }
  }
  return best;
}

int64_t kiln::kernel::getLiveLowerBound(llvm::ArrayRef<PackingBlock> blocks) {
  // Live bytes change only where a block begins or ends: sweep the events.
  llvm::SmallVector<std::pair<int64_t, int64_t>> events;
  for (const PackingBlock &block : blocks)
    if (block.isLive()) {
      events.push_back({block.first, block.size});
      events.push_back({block.last + 1, -block.size});
    }
  // At one point, ends (negative) before begins.
  llvm::sort(events);
  int64_t live = 0, peak = 0;
  for (auto [point, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}
