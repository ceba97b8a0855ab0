//===- Recompute.cpp - Choosing activations to recompute -------------------===//
//
// Part of Kiln. RecomputeProblem (Recompute.h): the candidates, the costs
// and the graph-level memory estimate of a plan, and the rewrite that carries
// it out. The searches are in RecomputeSearch.cpp, the pass that drives them
// in GraphRecompute.cpp.
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
