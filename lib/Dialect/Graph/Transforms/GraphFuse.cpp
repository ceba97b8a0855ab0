//===- GraphFuse.cpp - Fusible ops into graph.fusion regions ---------------===//
//
// Part of Kiln. The --graph-fuse pass; Passes.td states the rules. Groups
// grow from a root (the last unfused fusible op) towards its producers in
// reverse program order, so that every consumer of a producer inside the
// group has been decided when the producer is: the index maps at which the
// group reads a value are then final.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFUSE
#include "kiln/Dialect/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

/// The most producers, and the most FLOPs per element of their formulas,
/// an anchor's group takes: a guard that keeps the formula computed inside
/// the anchor's row loops small (LLVM 22's loop vectorizer spent minutes on
/// one such kernel in the random-graph test; that one was a reduction of a
/// loop-invariant load, see readsAStream). The fusions that pay (bias and
/// residual adds) stay far below.
static constexpr int64_t kMaxAnchoredProducers = 8;
static constexpr int64_t kMaxAnchoredFlopsPerElement = 32;

namespace {
/// How an op belongs to a group.
enum class Membership {
  /// Moved into the region; its values have no other users, or are
  /// yielded when they do.
  Moved,
  /// Cloned into the region; the original stays for its other users.
  Duplicated,
};

/// A group under construction.
struct Group {
  /// The last op: a fusible op, or an anchor reading the group's values.
  Operation *root;
  /// The anchor root, or null.
  FusionAnchorOpInterface anchor;
  /// The iteration space of the fusible members: the root's result, or the
  /// anchor's fused operand.
  ArrayRef<int64_t> shape;
  int64_t count;
  llvm::MapVector<Operation *, Membership> members;
  /// The index maps (from the iteration space) at which the group reads
  /// each value computed inside it.
  llvm::DenseMap<Value, llvm::SetVector<AffineMap>> maps;
  /// Moved values that are also used after the group.
  llvm::SetVector<Value> yielded;
};

class Fuser {
public:
  explicit Fuser(Block &block) : block(block) {
    for (auto [index, op] : llvm::enumerate(block))
      position[&op] = index;
  }

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (grouped.contains(op))
        continue;
      auto anchor = dyn_cast<FusionAnchorOpInterface>(op);
      if (!anchor &&
          (!isFusible(op) || op->getNumResults() != 1 || isa<ConstantOp>(op)))
        continue;
      Group group = grow(op, anchor);
      if (countKernels(group) >= 2 && (!anchor || readsAStream(group)))
        materialize(group);
    }
    // Originals whose every use went into duplicates.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      if (isFusible(&op) && op.use_empty())
        op.erase();
  }

private:
  bool isMovedMember(const Group &group, Operation *op) const {
    auto it = group.members.find(op);
    return it != group.members.end() && it->second == Membership::Moved;
  }

  /// Bytes of the stream through which the group reads `value`: at most
  /// one element per point of the iteration space; a broadcast reads only
  /// its input.
  static int64_t streamBytes(const Group &group, Value value) {
    if (auto broadcast = value.getDefiningOp<BroadcastOp>())
      value = broadcast.getInput();
    auto type = cast<ShapedType>(value.getType());
    int64_t elements = std::min(group.count, type.getNumElements());
    return elements * std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
  }

  Group grow(Operation *root, FusionAnchorOpInterface anchor) {
    Group group;
    group.root = root;
    group.anchor = anchor;
    Value space = anchor ? root->getOperand(anchor.getFusedOperandIndex())
                         : root->getResult(0);
    auto type = cast<RankedTensorType>(space.getType());
    group.shape = type.getShape();
    group.count = type.getNumElements();
    group.members.insert({root, Membership::Moved});
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(type.getRank(), root->getContext());
    group.maps[space].insert(identity);

    // Candidates, latest first.
    std::map<int64_t, Operation *, std::greater<int64_t>> candidates;
    auto addCandidate = [&](Operation *producer) {
      if (producer && producer->getBlock() == &block &&
          !grouped.contains(producer) && isFusible(producer) &&
          !group.members.contains(producer))
        candidates[position.lookup(producer)] = producer;
    };
    auto addProducers = [&](Operation *member) {
      if (member == root && anchor) {
        addCandidate(space.getDefiningOp());
        return;
      }
      auto fusible = cast<FusibleOpInterface>(member);
      for (auto [index, operand] : llvm::enumerate(member->getOperands())) {
        for (OpResult result : member->getResults()) {
          auto read = group.maps.find(result);
          if (read == group.maps.end())
            continue;
          SmallVector<AffineMap> resultMaps(read->second.begin(),
                                            read->second.end());
          for (AffineMap map : resultMaps)
            group.maps[operand].insert(
                fusible.getOperandIndexMap(result.getResultNumber(), index)
                    .compose(map));
        }
        addCandidate(operand.getDefiningOp());
      }
    };
    addProducers(root);
    while (!candidates.empty()) {
      if (anchor &&
          static_cast<int64_t>(group.members.size()) > kMaxAnchoredProducers)
        break;
      Operation *producer = candidates.begin()->second;
      candidates.erase(candidates.begin());
      std::optional<Membership> membership = decide(group, producer, identity);
      if (!membership)
        continue;
      group.members.insert({producer, *membership});
      addProducers(producer);
    }
    return group;
  }

  /// Whether and how `producer` joins `group`.
  std::optional<Membership> decide(Group &group, Operation *producer,
                                   AffineMap identity) {
    auto fusible = cast<FusibleOpInterface>(producer);
    bool expensive = fusible.getFlopsPerElement() >= kExpensiveFlopsPerElement;
    // An anchor that reads each element several times would compute an
    // expensive producer as often.
    if (expensive && group.anchor && group.anchor.getReadsPerElement() > 1)
      return std::nullopt;
    // A kernel walking columns computes only cheap producers that read
    // their operands at the index they write.
    if (group.anchor && group.anchor.walksColumns() &&
        (fusible.getFlopsPerElement() >= kExpensiveFlopsPerElement ||
         !llvm::all_of(llvm::seq<unsigned>(0, producer->getNumOperands()),
                       [&](unsigned index) {
                         return fusible.getOperandIndexMap(0, index)
                             .isIdentity();
                       })))
      return std::nullopt;
    if (group.anchor) {
      int64_t flops = fusible.getFlopsPerElement();
      for (auto &entry : group.members)
        if (auto member = dyn_cast<FusibleOpInterface>(entry.first))
          flops += member.getFlopsPerElement();
      if (flops > kMaxAnchoredFlopsPerElement)
        return std::nullopt;
    }
    llvm::SetVector<AffineMap> maps;
    bool usedOutside = false, usedBeforeRoot = false;
    for (OpResult result : producer->getResults()) {
      auto read = group.maps.find(result);
      if (read != group.maps.end())
        maps.insert(read->second.begin(), read->second.end());
      for (OpOperand &use : result.getUses()) {
        Operation *user = use.getOwner();
        // The anchor reads only its fused operand from the region.
        if (group.anchor && user == group.root &&
            use.getOperandNumber() != group.anchor.getFusedOperandIndex())
          return std::nullopt;
        if (isMovedMember(group, user))
          continue;
        // A user inside an earlier region runs where that region is.
        user = block.findAncestorOpInBlock(*user);
        usedOutside = true;
        if (position.lookup(user) < position.lookup(group.root))
          usedBeforeRoot = true;
      }
    }
    if (!usedOutside) {
      // Never recompute an expensive producer per element.
      if (expensive &&
          (maps.size() > 1 || cast<ShapedType>(producer->getResult(0).getType())
                                      .getNumElements() != group.count))
        return std::nullopt;
      return Membership::Moved;
    }
    // Also used after the group, read at the identity: yield it.
    if (producer->getNumResults() == 1 && !usedBeforeRoot &&
        maps.size() == 1 && maps.front() == identity &&
        cast<RankedTensorType>(producer->getResult(0).getType()).getShape() ==
            group.shape) {
      group.yielded.insert(producer->getResult(0));
      return Membership::Moved;
    }
    if (expensive)
      return std::nullopt;
    // Arithmetic is duplicated only where its other users are data
    // movement that other regions will duplicate too, or anchors that
    // compute it in their own kernels (the logits cast up for both the
    // cross-entropy and its gradient): the original then dies. Never where
    // the value is needed anyway (a residual stream).
    auto computesItToo = [](OpOperand &use) {
      auto anchor = dyn_cast<FusionAnchorOpInterface>(use.getOwner());
      return anchor &&
             use.getOperandNumber() == anchor.getFusedOperandIndex();
    };
    if (fusible.getFlopsPerElement() > 0)
      for (OpResult result : producer->getResults())
        for (OpOperand &use : result.getUses()) {
          Operation *user = use.getOwner();
          if (!isMovedMember(group, user) && !computesItToo(use) &&
              (!isFusible(user) ||
               cast<FusibleOpInterface>(user).getFlopsPerElement() > 0))
            return std::nullopt;
        }
    // Duplicate a cheap op when the group reads no more bytes for it.
    int64_t replaced = 0, added = 0;
    for (OpResult result : producer->getResults())
      if (group.maps.count(result))
        replaced += streamBytes(group, result);
    for (Value operand : producer->getOperands())
      added += streamBytes(group, operand);
    if (4 * added > 5 * replaced)
      return std::nullopt;
    return Membership::Duplicated;
  }

  /// Whether the group reads from outside some value as large as its
  /// iteration space (a new element per point). An anchor fed only through
  /// broadcasts would reread a few elements in its loops: nothing to save,
  /// and LLVM's loop vectorizer hangs on a reduction of a loop-invariant
  /// load.
  static bool readsAStream(const Group &group) {
    for (auto &entry : group.members) {
      Operation *op = entry.first;
      if (op == group.root)
        continue;
      for (Value operand : op->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if ((!producer || !group.members.contains(producer)) &&
            cast<ShapedType>(operand.getType()).getNumElements() == group.count)
          return true;
      }
    }
    return false;
  }

  /// The members that would be kernels of their own: reshapes are views,
  /// splat constants are folded into their users.
  static int64_t countKernels(const Group &group) {
    return llvm::count_if(group.members, [](auto &entry) {
      return !isa<ReshapeOp, ConstantOp>(entry.first);
    });
  }

  void materialize(Group &group) {
    Operation *root = group.root;
    SmallVector<Operation *> members;
    for (auto &[op, membership] : group.members)
      members.push_back(op);
    llvm::sort(members, [&](Operation *a, Operation *b) {
      return position.lookup(a) < position.lookup(b);
    });

    SmallVector<Value> yielded(root->getResults());
    for (Value value : group.yielded)
      yielded.push_back(value);
    SmallVector<Type> types;
    SmallVector<Location> locations = {root->getLoc()};
    for (Value value : yielded)
      types.push_back(value.getType());
    for (Operation *op : members)
      if (op != root)
        locations.push_back(op->getLoc());

    OpBuilder builder(root);
    auto fusion = FusionOp::create(
        builder, FusedLoc::get(root->getContext(), locations), types);
    Block *body = new Block();
    fusion.getBody().push_back(body);

    // Duplicates are clones; moved ops read clones where their producer was
    // duplicated.
    IRMapping clones;
    OpBuilder inside = OpBuilder::atBlockEnd(body);
    for (Operation *op : members) {
      grouped.insert(op);
      if (group.members.lookup(op) == Membership::Duplicated) {
        inside.clone(*op, clones);
        grouped.erase(op); // The original is free for other groups.
        continue;
      }
      op->moveBefore(body, body->end());
      for (OpOperand &operand : op->getOpOperands())
        operand.set(clones.lookupOrDefault(operand.get()));
    }
    YieldOp::create(inside, fusion.getLoc(), yielded);
    position[fusion] = position.lookup(root);
    for (auto [value, result] : llvm::zip_equal(yielded, fusion.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !fusion->isProperAncestor(use.getOwner());
      });
  }

  Block &block;
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseSet<Operation *> grouped;
};

struct GraphFusePass : kiln::graph::impl::GraphFuseBase<GraphFusePass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      Fuser(function.getBody().front()).run();
    }
  }
};
} // namespace
