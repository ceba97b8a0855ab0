//===- Recompute.cpp - Choosing activations to recompute -------------------===//
//
// Part of Kiln. RecomputeProblem (Recompute.h): the graph-level memory
// estimate of a plan, the greedy heuristic and the exact branch and bound
// that choose one, and the rewrite that carries it out. The pass that drives
// them is GraphRecompute.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/Transforms/Recompute.h"
#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace kiln::graph;

/// The arena's alignment (kernel::BufferLiveness rounds sizes up to it).
static constexpr int64_t kAlignment = 64;
/// The most candidates (beyond the cheap ones) whose plans the greedy
/// refines by restarts.
static constexpr unsigned kMaxRefinedCandidates = 96;

static int64_t alignedBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  Type element = tensor.getElementType();
  int64_t width = element.isIntOrFloat()
                      ? (element.getIntOrFloatBitWidth() + 7) / 8
                      : 8;
  int64_t bytes = tensor.getNumElements() * width;
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

static int64_t numElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

/// The rewritten schedule of a plan, as the estimate simulates it: buffers
/// with their first and last program points.
struct RecomputeProblem::Schedule {
  struct Buffer {
    int64_t bytes = 0;
    int64_t start = -1, end = -1;
  };
  std::vector<Buffer> buffers;
  /// Per value: its buffer (-1: persistent); per value, its clone's buffer.
  std::vector<int> bufferOf, cloneBuffer;
  int64_t position = 0;

  void use(int buffer, int64_t at) {
    if (buffer >= 0)
      buffers[buffer].end = std::max(buffers[buffer].end, at);
  }
  int define(int64_t bytes, int64_t at) {
    buffers.push_back({bytes, at, at});
    return buffers.size() - 1;
  }
  int64_t peak() const {
    std::vector<int64_t> delta(position + 2, 0);
    for (const Buffer &buffer : buffers) {
      if (buffer.start < 0)
        continue;
      delta[buffer.start] += buffer.bytes;
      delta[buffer.end + 1] -= buffer.bytes;
    }
    int64_t live = 0, peak = 0;
    for (int64_t d : delta) {
      live += d;
      peak = std::max(peak, live);
    }
    return peak;
  }
};

//===----------------------------------------------------------------------===//
// Building the problem
//===----------------------------------------------------------------------===//

std::optional<RecomputeProblem>
RecomputeProblem::build(func::FuncOp entry) {
  if (!entry || !entry.getBody().hasOneBlock())
    return std::nullopt;
  Block &block = entry.getBody().front();
  auto returnOp = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!returnOp)
    return std::nullopt;

  RecomputeProblem problem;
  problem.entry = entry;
  DenseMap<Value, unsigned> ids;
  auto addValue = [&](Value value, int def) {
    unsigned id = problem.values.size();
    ValueInfo info;
    info.value = value;
    info.def = def;
    info.bytes = alignedBytes(value.getType());
    info.root = id;
    problem.values.push_back(info);
    ids[value] = id;
    return id;
  };
  for (BlockArgument argument : block.getArguments()) {
    unsigned id = addValue(argument, -1);
    problem.values[id].persistent = true;
    problem.persistentBytes += problem.values[id].bytes;
  }
  for (Operation &op : block.without_terminator()) {
    Node node;
    node.op = &op;
    if (auto cost = dyn_cast<CostOpInterface>(&op))
      node.flops = cost.getFlops();
    node.isView = isa<ReshapeOp>(op);
    node.recomputable =
        isPure(&op) && op.getNumRegions() == 0 &&
        llvm::all_of(op.getResultTypes(),
                     [](Type type) { return isa<RankedTensorType>(type); });
    for (Value operand : op.getOperands()) {
      auto it = ids.find(operand);
      if (it == ids.end())
        return std::nullopt; // a value from outside the block
      node.operands.push_back(it->second);
    }
    unsigned index = problem.nodes.size();
    for (Value result : op.getResults()) {
      unsigned id = addValue(result, index);
      if (node.isView) {
        ValueInfo &source = problem.values[node.operands.front()];
        problem.values[id].root = source.root;
        problem.values[id].persistent = source.persistent;
      }
      node.results.push_back(id);
    }
    problem.nodes.push_back(std::move(node));
  }

  // Returned values live in persistent buffers: outputs count once; updates
  // are written over their parameter or state.
  for (auto [index, result] : llvm::enumerate(returnOp.getOperands())) {
    ValueInfo &info = problem.values[ids.lookup(result)];
    if (info.persistent)
      continue;
    info.persistent = true;
    if (entry.getResultAttr(index, GraphDialect::kOutputAttr))
      problem.persistentBytes += info.bytes;
  }

  // The boundary: the op that defines the loss.
  for (unsigned i = 0, e = entry.getNumResults(); i < e; ++i) {
    if (!entry.getResultAttr(i, GraphDialect::kLossAttr))
      continue;
    Value loss = returnOp.getOperand(i);
    if (loss.getDefiningOp())
      problem.boundary = problem.values[ids.lookup(loss)].def;
  }
  if (problem.boundary < 0)
    return std::nullopt;

  // Candidates: forward values, not persistent, used in the backward.
  auto isForward = [&](const ValueInfo &info) {
    return info.def >= 0 && info.def <= problem.boundary;
  };
  for (unsigned i = problem.boundary + 1, e = problem.nodes.size(); i < e; ++i)
    for (unsigned operand : problem.nodes[i].operands)
      problem.values[operand].usedInBackward = true;
  problem.candidateOf.assign(problem.values.size(), -1);
  for (auto [id, info] : llvm::enumerate(problem.values)) {
    if (!isForward(info) || info.persistent || !info.usedInBackward)
      continue;
    problem.candidateOf[id] = problem.candidates.size();
    problem.candidates.push_back(id);
  }
  // Which chains can be rebuilt: forward order, so operands come first.
  for (auto &info : problem.values) {
    if (!isForward(info))
      continue;
    const Node &node = problem.nodes[info.def];
    bool ok = node.recomputable;
    for (unsigned operand : node.operands) {
      const ValueInfo &source = problem.values[operand];
      if (!isForward(source) || source.persistent)
        continue;
      // A candidate may be kept; an intermediate must be rebuilt.
      if (problem.candidateOf[operand] < 0)
        ok &= source.chainRecomputable;
    }
    info.chainRecomputable = ok;
  }
  return problem;
}

Value RecomputeProblem::getCandidate(unsigned index) const {
  return values[candidates[index]].value;
}

bool RecomputeProblem::isRecomputable(unsigned index) const {
  return values[candidates[index]].chainRecomputable;
}

//===----------------------------------------------------------------------===//
// Costs and the estimate
//===----------------------------------------------------------------------===//

bool RecomputeProblem::needsRecompute(unsigned value,
                                      const BitVector &dropped) const {
  const ValueInfo &info = values[value];
  if (info.def < 0 || info.def > boundary || info.persistent)
    return false;
  int candidate = candidateOf[value];
  return candidate < 0 || dropped.test(candidate);
}

int64_t RecomputeProblem::markChain(unsigned value, const BitVector &dropped,
                                    BitVector &marked) const {
  unsigned def = values[value].def;
  if (marked.test(def))
    return 0;
  marked.set(def);
  const Node &node = nodes[def];
  int64_t flops = node.flops;
  for (unsigned operand : node.operands)
    if (needsRecompute(operand, dropped))
      flops += markChain(operand, dropped, marked);
  return flops;
}

BitVector RecomputeProblem::recomputedNodes(const BitVector &dropped) const {
  BitVector marked(nodes.size());
  for (unsigned i = boundary + 1, e = nodes.size(); i < e; ++i)
    for (unsigned operand : nodes[i].operands)
      if (needsRecompute(operand, dropped))
        markChain(operand, dropped, marked);
  return marked;
}

int64_t RecomputeProblem::flopsOf(const BitVector &marked) const {
  int64_t flops = 0;
  for (unsigned node : marked.set_bits())
    flops += nodes[node].flops;
  return flops;
}

int64_t RecomputeProblem::boundaryBytes(const BitVector &dropped) const {
  // Recomputed chains stop at kept candidates, which the backward uses
  // anyway: the buffers live across the boundary are the kept candidates'.
  BitVector roots(values.size());
  int64_t bytes = 0;
  for (auto [index, value] : llvm::enumerate(candidates)) {
    if (dropped.test(index))
      continue;
    unsigned root = values[value].root;
    if (!roots.test(root)) {
      roots.set(root);
      bytes += values[root].bytes;
    }
  }
  return bytes;
}

int64_t RecomputeProblem::estimatePeak(const BitVector &dropped) const {
  Schedule schedule;
  schedule.bufferOf.assign(values.size(), -1);
  schedule.cloneBuffer.assign(values.size(), -1);
  // A view's buffer is its operand's as this node reads it (a clone's, for
  // a recomputed operand).
  auto defineResults = [&](const Node &node, ArrayRef<int> operandBuffers,
                           int64_t at) {
    for (unsigned result : node.results) {
      const ValueInfo &info = values[result];
      if (info.persistent)
        continue;
      schedule.bufferOf[result] = node.isView
                                      ? operandBuffers.front()
                                      : schedule.define(info.bytes, at);
    }
  };
  // The forward, as it is.
  for (int i = 0; i <= boundary; ++i) {
    SmallVector<int, 4> operandBuffers;
    for (unsigned operand : nodes[i].operands) {
      operandBuffers.push_back(schedule.bufferOf[operand]);
      schedule.use(operandBuffers.back(), i);
    }
    defineResults(nodes[i], operandBuffers, i);
  }
  schedule.position = boundary + 1;

  // The backward, with clones placed before their first use.
  std::function<int(unsigned)> resolve = [&](unsigned value) -> int {
    if (!needsRecompute(value, dropped))
      return schedule.bufferOf[value];
    int &clone = schedule.cloneBuffer[value];
    if (clone >= 0)
      return clone;
    const Node &node = nodes[values[value].def];
    SmallVector<int, 4> operandBuffers;
    for (unsigned operand : node.operands)
      operandBuffers.push_back(resolve(operand));
    int64_t at = schedule.position++;
    for (int buffer : operandBuffers)
      schedule.use(buffer, at);
    for (unsigned result : node.results)
      schedule.cloneBuffer[result] =
          node.isView ? operandBuffers.front()
                      : schedule.define(values[result].bytes, at);
    return schedule.cloneBuffer[value];
  };
  for (unsigned i = boundary + 1, e = nodes.size(); i < e; ++i) {
    SmallVector<int, 4> operandBuffers;
    for (unsigned operand : nodes[i].operands)
      operandBuffers.push_back(resolve(operand));
    int64_t at = schedule.position++;
    for (int buffer : operandBuffers)
      schedule.use(buffer, at);
    defineResults(nodes[i], operandBuffers, at);
  }
  return persistentBytes + schedule.peak();
}

RecomputePlan RecomputeProblem::evaluate(const BitVector &dropped) const {
  RecomputePlan plan;
  plan.dropped = dropped;
  plan.recomputeFlops = flopsOf(recomputedNodes(dropped));
  plan.estimatedPeakBytes = estimatePeak(dropped);
  return plan;
}

RecomputePlan RecomputeProblem::keepAll() const {
  return evaluate(BitVector(candidates.size()));
}

BitVector RecomputeProblem::cheapCandidates() const {
  BitVector none(candidates.size()), cheap(candidates.size());
  BitVector base = recomputedNodes(none);
  for (auto [index, value] : llvm::enumerate(candidates)) {
    if (!values[value].chainRecomputable)
      continue;
    BitVector dropped = none;
    dropped.set(index);
    BitVector marked = base;
    int64_t flops = markChain(value, dropped, marked);
    if (flops <= kCheapFlopsPerElement * numElements(values[value].value.getType()))
      cheap.set(index);
  }
  return cheap;
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

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

int64_t RecomputeProblem::apply(const RecomputePlan &plan) {
  const BitVector &dropped = plan.dropped;
  OpBuilder builder(entry.getContext());
  UnitAttr marker = builder.getUnitAttr();
  DenseMap<unsigned, Value> clones;
  int64_t flops = 0;
  std::function<Value(unsigned)> materialize = [&](unsigned value) -> Value {
    if (Value clone = clones.lookup(value))
      return clone;
    const Node &node = nodes[values[value].def];
    IRMapping mapping;
    for (unsigned operand : node.operands)
      if (needsRecompute(operand, dropped))
        mapping.map(values[operand].value, materialize(operand));
    Operation *clone = builder.clone(*node.op, mapping);
    clone->setAttr(GraphDialect::kRecomputedAttr, marker);
    flops += node.flops;
    for (auto [result, cloned] : llvm::zip_equal(node.results, clone->getResults()))
      clones[result] = cloned;
    return clones.lookup(value);
  };
  for (unsigned i = boundary + 1, e = nodes.size(); i < e; ++i) {
    Operation *op = nodes[i].op;
    builder.setInsertionPoint(op);
    for (auto [operand, value] :
         llvm::zip_equal(op->getOpOperands(), nodes[i].operands))
      if (needsRecompute(value, dropped))
        operand.set(materialize(value));
  }
  return flops;
}
