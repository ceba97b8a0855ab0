//===- BufferLiveness.cpp - Live ranges of an entry's transients ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Kernel/Analysis/BufferLiveness.h"
#include "kiln/Dialect/Kernel/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln::kernel;

/// The output holding the loss.
static constexpr llvm::StringLiteral kLossName = "loss";

llvm::StringRef kiln::kernel::stringifyTransientKind(TransientKind kind) {
  switch (kind) {
  case TransientKind::Activation:
    return "activation";
  case TransientKind::Gradient:
    return "gradient";
  case TransientKind::Workspace:
    return "workspace";
  }
  llvm_unreachable("unknown transient kind");
}

int64_t &LiveBytes::operator[](TransientKind kind) {
  switch (kind) {
  case TransientKind::Activation:
    return activation;
  case TransientKind::Gradient:
    return gradient;
  case TransientKind::Workspace:
    return workspace;
  }
  llvm_unreachable("unknown transient kind");
}

BufferLiveness::BufferLiveness(EntryOp entry) : entry(entry) {
  BufferAccessAnalysis access;
  *this = BufferLiveness(entry, access);
}

BufferLiveness::BufferLiveness(EntryOp entry, BufferAccessAnalysis &access)
    : entry(entry) {
  buildSchedule(access);
  findInPlaceReuses(access);
  buildSlots();
  classifyTransients();
  computeLiveBytes();
}

std::optional<unsigned> BufferLiveness::lookupTransient(Value buffer) const {
  auto it = transientIndex.find(getRootBuffer(buffer));
  if (it == transientIndex.end())
    return std::nullopt;
  return it->second;
}

std::optional<int64_t> BufferLiveness::lookupPoint(Operation *op) const {
  auto it = points.find(op);
  if (it == points.end())
    return std::nullopt;
  return it->second;
}

/// Whether two scheduled ops come from the same graph op: the same
/// `kernel.origin` and the same location.
static bool haveSameOrigin(Operation *a, Operation *b) {
  Attribute origin = a->getAttr(KernelDialect::kOriginAttr);
  return origin && origin == b->getAttr(KernelDialect::kOriginAttr) &&
         a->getLoc() == b->getLoc();
}

void BufferLiveness::buildSchedule(BufferAccessAnalysis &access) {
  Block &body = entry.getBody().front();
  for (auto alloc : body.getOps<AllocOp>()) {
    Transient transient;
    transient.alloc = alloc;
    transient.sizeInBytes =
        llvm::alignTo(alloc.getSizeInBytes(), kArenaAlignment);
    transient.slot = transients.size();
    transientIndex[alloc.getResult()] = transients.size();
    transients.push_back(transient);
  }
  // Per transient: its defining op, and whether every op touching it has
  // the same origin (for the workspace rule).
  SmallVector<Operation *> definingOps(transients.size(), nullptr);
  sameOrigin.assign(transients.size(), true);
  for (Operation &op : body) {
    if (!isScheduledOp(&op))
      continue;
    int64_t point = schedule.size();
    schedule.push_back(&op);
    points[&op] = point;
    SmallVector<BufferAccess> operandAccess = access.getOperandAccess(&op);
    llvm::SmallDenseMap<Value, BufferAccess> rootAccess;
    for (auto [operand, operandAcc] :
         llvm::zip_equal(op.getOperands(), operandAccess)) {
      if (operandAcc == BufferAccess::None)
        continue;
      Value root = getRootBuffer(operand);
      BufferAccess &acc = rootAccess[root];
      acc = acc | operandAcc;
    }
    bool readWrite = false;
    for (auto [root, acc] : rootAccess) {
      readWrite |= acc == BufferAccess::ReadWrite;
      auto it = transientIndex.find(root);
      if (it == transientIndex.end())
        continue;
      Transient &transient = transients[it->second];
      if (!transient.isUsed()) {
        transient.firstUse = point;
        transient.firstAccess = acc;
        definingOps[it->second] = &op;
      } else if (!haveSameOrigin(definingOps[it->second], &op)) {
        sameOrigin[it->second] = false;
      }
      transient.lastUse = point;
    }
    readWritesSameBuffer.push_back(readWrite);
    // The boundary: the last write of the loss output so far.
    for (auto [root, acc] : rootAccess) {
      auto argument = dyn_cast<BlockArgument>(root);
      if (!argument || argument.getOwner() != &body || !writes(acc))
        continue;
      unsigned index = argument.getArgNumber();
      BufferKind kind = entry.getBufferKind(index);
      if (kind == BufferKind::Param || kind == BufferKind::OptimizerState ||
          kind == BufferKind::Gradient)
        updatesPersistentState = true;
      if (kind == BufferKind::Output && entry.getBufferName(index) == kLossName)
        lastLossWrite = point;
    }
  }
  for (auto [index, op] : llvm::enumerate(definingOps))
    if (op && !op->getAttr(KernelDialect::kOriginAttr))
      sameOrigin[index] = false;
}

void BufferLiveness::findInPlaceReuses(BufferAccessAnalysis &access) {
  llvm::DenseSet<unsigned> reusedInputs;
  for (auto [point, op] : llvm::enumerate(schedule)) {
    SmallVector<ElementwisePair> pairs = access.getElementwiseOperandPairs(op);
    if (pairs.empty())
      continue;
    // A root passed twice may be read at other indices through the other
    // operand: no reuse for it.
    llvm::SmallDenseMap<Value, unsigned> rootCount;
    for (Value operand : op->getOperands())
      ++rootCount[getRootBuffer(operand)];
    for (ElementwisePair pair : pairs) {
      Value inputRoot = getRootBuffer(op->getOperand(pair.input));
      Value outputRoot = getRootBuffer(op->getOperand(pair.output));
      std::optional<unsigned> input = lookupTransient(inputRoot);
      std::optional<unsigned> output = lookupTransient(outputRoot);
      if (!input || !output || *input == *output ||
          rootCount[inputRoot] != 1 || rootCount[outputRoot] != 1 ||
          reusedInputs.contains(*input))
        continue;
      const Transient &in = transients[*input];
      const Transient &out = transients[*output];
      if (in.lastUse != static_cast<int64_t>(point) ||
          out.firstUse != static_cast<int64_t>(point) ||
          in.sizeInBytes != out.sizeInBytes)
        continue;
      reusedInputs.insert(*input);
      reuses.push_back({op, pair.input, pair.output, *input, *output});
    }
  }
}

void BufferLiveness::buildSlots() {
  // Reuses come in program order, so an input's slot is final when its
  // output joins it.
  SmallVector<unsigned> slotOf(transients.size());
  for (unsigned i = 0, e = transients.size(); i < e; ++i)
    slotOf[i] = i;
  for (const InPlaceReuse &reuse : reuses)
    slotOf[reuse.output] = slotOf[reuse.input];
  llvm::DenseMap<unsigned, unsigned> slotIndex;
  for (unsigned i = 0, e = transients.size(); i < e; ++i) {
    auto [it, inserted] = slotIndex.try_emplace(slotOf[i], slots.size());
    if (inserted)
      slots.emplace_back();
    TransientSlot &slot = slots[it->second];
    Transient &transient = transients[i];
    transient.slot = it->second;
    slot.members.push_back(i);
    slot.sizeInBytes = std::max(slot.sizeInBytes, transient.sizeInBytes);
    if (!transient.isUsed())
      continue;
    slot.firstUse = slot.isUsed()
                        ? std::min(slot.firstUse, transient.firstUse)
                        : transient.firstUse;
    slot.lastUse = std::max(slot.lastUse, transient.lastUse);
  }
  for (TransientSlot &slot : slots)
    llvm::stable_sort(slot.members, [&](unsigned a, unsigned b) {
      return transients[a].firstUse < transients[b].firstUse;
    });
}

void BufferLiveness::classifyTransients() {
  if (updatesPersistentState)
    boundary = lastLossWrite;
  for (auto [index, transient] : llvm::enumerate(transients)) {
    bool crossesBoundary = boundary && transient.firstUse <= *boundary &&
                           *boundary < transient.lastUse;
    bool oneGraphOp =
        transient.firstUse == transient.lastUse || sameOrigin[index];
    if (transient.isUsed() && oneGraphOp && !crossesBoundary)
      transient.kind = TransientKind::Workspace;
    else if (!boundary || transient.firstUse <= *boundary)
      transient.kind = TransientKind::Activation;
    else
      transient.kind = TransientKind::Gradient;
  }
}

void BufferLiveness::computeLiveBytes() {
  // Differences per kind: +size where a member's share of its slot starts,
  // -size after it ends. A member's share ends where the next member of its
  // slot begins, so a slot counts once at the op that hands its bytes on.
  SmallVector<LiveBytes> delta(schedule.size() + 1);
  for (const TransientSlot &slot : slots) {
    if (!slot.isUsed())
      continue;
    for (auto [position, index] : llvm::enumerate(slot.members)) {
      const Transient &transient = transients[index];
      if (!transient.isUsed())
        continue;
      int64_t end = position + 1 < slot.members.size()
                        ? transients[slot.members[position + 1]].firstUse - 1
                        : transient.lastUse;
      end = std::max(end, transient.firstUse - 1);
      if (end < transient.firstUse)
        continue;
      delta[transient.firstUse][transient.kind] += slot.sizeInBytes;
      delta[end + 1][transient.kind] -= slot.sizeInBytes;
    }
  }
  LiveBytes running;
  liveBytes.clear();
  for (int64_t point = 0, e = schedule.size(); point < e; ++point) {
    for (TransientKind kind : {TransientKind::Activation,
                               TransientKind::Gradient,
                               TransientKind::Workspace})
      running[kind] += delta[point][kind];
    liveBytes.push_back(running);
    if (running.total() > lowerBound) {
      lowerBound = running.total();
      peakPoint = point;
    }
  }
}

bool BufferLiveness::writesInPlace(int64_t point) const {
  if (readWritesSameBuffer[point])
    return true;
  return llvm::any_of(reuses, [&](const InPlaceReuse &reuse) {
    return reuse.op == schedule[point];
  });
}

int64_t BufferLiveness::getSavedActivationBytes() const {
  if (!boundary)
    return 0;
  int64_t bytes = 0;
  for (const Transient &transient : transients)
    if (transient.kind == TransientKind::Activation && transient.isUsed() &&
        transient.firstUse <= *boundary && *boundary < transient.lastUse)
      bytes += transient.sizeInBytes;
  return bytes;
}

int64_t BufferLiveness::getTotalTransientBytes() const {
  int64_t bytes = 0;
  for (const Transient &transient : transients)
    bytes += transient.sizeInBytes;
  return bytes;
}
