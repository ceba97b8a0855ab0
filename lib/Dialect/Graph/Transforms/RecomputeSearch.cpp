//===- RecomputeSearch.cpp - Searching for a recomputation plan -----------===//
//
// Part of Kiln. The searches of RecomputeProblem (Recompute.h): the greedy
// heuristic with its refinement, and the exact branch and bound. They see a
// plan only through its recompute FLOPs, its estimated peak and the bytes it
// keeps across the boundary (Recompute.cpp).
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/Recompute.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace kiln::graph;

/// The most candidates (beyond the cheap ones) whose plans the greedy
/// refines by restarts.
static constexpr unsigned kMaxRefinedCandidates = 96;

static int64_t numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

//===----------------------------------------------------------------------===//
// The greedy heuristic
//===----------------------------------------------------------------------===//

int64_t RecomputeProblem::addFollowers(BitVector &dropped,
                                       BitVector &marked) const {
  int64_t flops = 0;
  for (unsigned d = 0, e = candidates.size(); d < e; ++d) {
    if (dropped.test(d) || !values[candidates[d]].chainRecomputable)
      continue;
    BitVector withD = dropped;
    withD.set(d);
    BitVector dMarked = marked;
    int64_t extra = markChain(candidates[d], withD, dMarked);
    if (extra <= kCheapFlopsPerElement *
                     numElements(values[candidates[d]].value.getType())) {
      dropped.set(d);
      flops += markChain(candidates[d], dropped, marked);
    }
  }
  return flops;
}

SmallVector<RecomputePlan>
RecomputeProblem::greedyTrajectory(int64_t target, bool byPeak) const {
  return greedyFrom(cheapCandidates(), BitVector(candidates.size()), target,
                    byPeak);
}

SmallVector<RecomputePlan>
RecomputeProblem::greedyFrom(BitVector dropped, const BitVector &forbidden,
                             int64_t target, bool byPeak) const {
  SmallVector<RecomputePlan> trajectory;
  trajectory.push_back(evaluate(dropped));
  unsigned count = candidates.size();
  while (trajectory.back().estimatedPeakBytes > target) {
    BitVector marked = recomputedNodes(dropped);
    int64_t bytes = boundaryBytes(dropped);
    int64_t peak = trajectory.back().estimatedPeakBytes;
    // The candidate that frees the most bytes per recomputed FLOP, with the
    // candidates its recomputation makes cheap (the other heads of one
    // projection, the views of one buffer).
    double bestScore = -1.0;
    BitVector best;
    for (unsigned c = 0; c < count; ++c) {
      if (dropped.test(c) || forbidden.test(c) ||
          !values[candidates[c]].chainRecomputable)
        continue;
      BitVector group = dropped;
      group.set(c);
      BitVector groupMarked = marked;
      int64_t flops = markChain(candidates[c], group, groupMarked);
      flops += addFollowers(group, groupMarked);
      int64_t freed = byPeak ? peak - estimatePeak(group)
                             : bytes - boundaryBytes(group);
      if (freed <= 0)
        continue;
      // Freeing more than the target asks for is worth nothing more: near
      // the end, the cheapest drop that suffices wins.
      int64_t useful = std::min(freed, std::max<int64_t>(peak - target, 1));
      double score = double(useful) / double(std::max<int64_t>(flops, 1));
      if (score > bestScore) {
        bestScore = score;
        best = group;
      }
    }
    if (bestScore < 0)
      break;
    dropped = best;
    trajectory.push_back(evaluate(dropped));
  }
  return trajectory;
}

RecomputePlan RecomputeProblem::refine(RecomputePlan plan,
                                       int64_t target) const {
  BitVector cheap = cheapCandidates();
  auto keepAgain = [&](RecomputePlan &plan) {
    for (int c = candidates.size() - 1; c >= 0; --c) {
      if (!plan.dropped.test(c) || cheap.test(c))
        continue;
      BitVector kept = plan.dropped;
      kept.reset(c);
      RecomputePlan trial = evaluate(kept);
      if (trial.estimatedPeakBytes <= target &&
          trial.recomputeFlops <= plan.recomputeFlops)
        plan = std::move(trial);
    }
  };
  keepAgain(plan);
  // Swaps: keep a recomputed candidate again, with the others that share
  // its costly recomputation (the heads of one projection), and recompute
  // another candidate, with the ones it makes cheap, instead.
  auto chainOf = [&](unsigned c, const BitVector &dropped) {
    BitVector marked(nodes.size());
    markChain(candidates[c], dropped, marked);
    for (unsigned node : marked.set_bits())
      if (nodes[node].flops == 0)
        marked.reset(node);
    return marked;
  };
  // Each restart is a greedy run: on large graphs (the greedy's own choice
  // repeats per layer there) keep the search fast instead.
  if (candidates.size() - cheap.count() > kMaxRefinedCandidates)
    return plan;
  for (int round = 0; round < 8; ++round) {
    bool improved = false;
    for (unsigned c = 0, e = candidates.size(); c < e && !improved; ++c) {
      if (!plan.dropped.test(c) || cheap.test(c))
        continue;
      BitVector chain = chainOf(c, plan.dropped);
      BitVector group(e);
      for (unsigned d = 0; d < e; ++d) {
        if (cheap.test(d) || !values[candidates[d]].chainRecomputable)
          continue;
        BitVector withD = plan.dropped;
        withD.set(d);
        if (chainOf(d, withD).anyCommon(chain))
          group.set(d);
      }
      group.set(c);
      BitVector kept = plan.dropped;
      kept.reset(group);
      for (bool byPeak : {false, true}) {
        SmallVector<RecomputePlan> trajectory =
            greedyFrom(kept, group, target, byPeak);
        if (trajectory.back().estimatedPeakBytes > target ||
            trajectory.back().recomputeFlops >= plan.recomputeFlops)
          continue;
        plan = trajectory.back();
        keepAgain(plan);
        improved = true;
        break;
      }
    }
    if (!improved)
      break;
  }
  return plan;
}

std::optional<RecomputePlan>
RecomputeProblem::solveGreedy(int64_t target) const {
  RecomputePlan none = keepAll();
  if (none.estimatedPeakBytes <= target)
    return none;
  std::optional<RecomputePlan> best;
  for (bool byPeak : {false, true}) {
    SmallVector<RecomputePlan> trajectory = greedyTrajectory(target, byPeak);
    if (trajectory.back().estimatedPeakBytes > target)
      continue;
    RecomputePlan plan = refine(trajectory.back(), target);
    if (!best || plan.recomputeFlops < best->recomputeFlops)
      best = std::move(plan);
  }
  return best;
}

RecomputePlan RecomputeProblem::leastMemory() const {
  RecomputePlan best = keepAll();
  for (bool byPeak : {false, true})
    for (RecomputePlan &plan : greedyTrajectory(
             /*target=*/0, byPeak))
      if (plan.estimatedPeakBytes < best.estimatedPeakBytes ||
          (plan.estimatedPeakBytes == best.estimatedPeakBytes &&
           plan.recomputeFlops < best.recomputeFlops))
        best = std::move(plan);
  return best;
}

//===----------------------------------------------------------------------===//
// The exact search
//===----------------------------------------------------------------------===//

std::optional<RecomputePlan>
RecomputeProblem::solveExact(int64_t target, unsigned maxCandidates) const {
  RecomputePlan none = keepAll();
  if (none.estimatedPeakBytes <= target)
    return none;
  BitVector start = cheapCandidates();
  SmallVector<unsigned> open;
  for (unsigned c = 0, e = candidates.size(); c < e; ++c)
    if (!start.test(c) && values[candidates[c]].chainRecomputable)
      open.push_back(c);
  if (open.size() > maxCandidates)
    return std::nullopt;
  // Largest first: the bound on saved bytes then prunes early.
  llvm::stable_sort(open, [&](unsigned a, unsigned b) {
    return values[candidates[a]].bytes > values[candidates[b]].bytes;
  });

  std::optional<RecomputePlan> best;
  int64_t bestFlops = std::numeric_limits<int64_t>::max();
  // Recompute FLOPs only grow as more is dropped, and the bytes saved across
  // the boundary only shrink: a feasible node ends its branch, and a node
  // whose boundary bytes stay over the target with every open candidate
  // dropped has no feasible completion.
  std::function<void(unsigned, BitVector &)> search = [&](unsigned depth,
                                                          BitVector &dropped) {
    int64_t flops = flopsOf(recomputedNodes(dropped));
    if (flops >= bestFlops)
      return;
    int64_t peak = estimatePeak(dropped);
    if (peak <= target) {
      bestFlops = flops;
      best = RecomputePlan{dropped, flops, peak};
      return;
    }
    if (depth == open.size())
      return;
    BitVector all = dropped;
    for (unsigned i = depth; i < open.size(); ++i)
      all.set(open[i]);
    if (persistentBytes + boundaryBytes(all) > target)
      return;
    dropped.set(open[depth]);
    search(depth + 1, dropped);
    dropped.reset(open[depth]);
    search(depth + 1, dropped);
  };
  search(0, start);
  return best;
}

