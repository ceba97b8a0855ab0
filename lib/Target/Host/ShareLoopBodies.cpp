//===- ShareLoopBodies.cpp - One function for equal loop bodies -----------===//
//
// Part of Kiln. See ShareLoopBodies.h for what and why. A body is reduced
// to a key: its ops in order, with their attributes, result types and
// operands (a value defined in the body by its number, one read from
// outside by the order of its first use), where a scalar constant counts
// by its type alone and a memref read from outside that is only loaded
// from and stored to counts without its leading dim: neither changes the
// code but for a value. Bodies with equal keys share one function.
//
//===----------------------------------------------------------------------===//

#include "ShareLoopBodies.h"

#include "kiln/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "llvm/ADT/DenseMap.h"

#include <map>

namespace kiln {
#define GEN_PASS_DEF_SHARELOOPBODIES
#include "kiln/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

/// Bodies smaller than this stay where they are: a call would cost more
/// than the code it saves.
static constexpr int64_t kMinSharedOps = 8;

/// Whether `constant` is a scalar (an integer, index or float).
static bool isScalar(arith::ConstantOp constant) {
  return isa<IntegerAttr, FloatAttr>(constant.getValue());
}

namespace {
/// An outermost parallel loop and what its body's key leaves out.
struct LoopBody {
  scf::ParallelOp loop;
  /// The values the body reads from outside, in the order of first use,
  /// but for scalar constants.
  SmallVector<Value> externals;
  /// For each external, its leading dim where the key leaves it out.
  SmallVector<std::optional<int64_t>> leadingDims;
  /// The body's scalar constants, in pre-order.
  SmallVector<arith::ConstantOp> constants;
  /// The scalar constants it reads from outside, in the order of first use.
  SmallVector<arith::ConstantOp> outerConstants;
  SmallVector<uintptr_t> key;
  int64_t ops = 0;
  bool hasLoop = false;
};

/// Builds a LoopBody's key.
class KeyBuilder {
public:
  explicit KeyBuilder(LoopBody &body) : body(body) {}

  /// False if the body cannot be keyed (an op with successors).
  bool build() {
    if (!addRegion(body.loop.getRegion()))
      return false;
    for (Value external : body.externals) {
      std::optional<int64_t> leadingDim = getRelaxedLeadingDim(external);
      body.leadingDims.push_back(leadingDim);
      Type type = external.getType();
      if (leadingDim) {
        auto memref = cast<MemRefType>(type);
        SmallVector<int64_t> shape(memref.getShape());
        shape[0] = ShapedType::kDynamic;
        type = memref.cloneWith(shape, memref.getElementType());
      }
      add(type.getAsOpaquePointer());
    }
    return true;
  }

private:
  void add(const void *pointer) {
    body.key.push_back(reinterpret_cast<uintptr_t>(pointer));
  }
  void add(uintptr_t value) { body.key.push_back(value); }

  void define(Value value) {
    defined.try_emplace(value, defined.size());
    add(value.getType().getAsOpaquePointer());
  }

  void use(Value value) {
    if (auto it = defined.find(value); it != defined.end()) {
      add(uintptr_t{0});
      add(static_cast<uintptr_t>(it->second));
      return;
    }
    // A constant from outside counts as one inside: by its type alone.
    if (auto constant = value.getDefiningOp<arith::ConstantOp>();
        constant && isScalar(constant)) {
      auto [it, inserted] =
          outerConstantIndex.try_emplace(value, body.outerConstants.size());
      if (inserted) {
        body.outerConstants.push_back(constant);
        add(uintptr_t{3});
        add(value.getType().getAsOpaquePointer());
      }
      add(uintptr_t{4});
      add(static_cast<uintptr_t>(it->second));
      return;
    }
    auto [it, inserted] =
        externalIndex.try_emplace(value, body.externals.size());
    if (inserted)
      body.externals.push_back(value);
    add(uintptr_t{1});
    add(static_cast<uintptr_t>(it->second));
  }

  bool addRegion(Region &region) {
    add(static_cast<uintptr_t>(region.getBlocks().size()));
    for (Block &block : region) {
      add(static_cast<uintptr_t>(block.getNumArguments()));
      for (BlockArgument argument : block.getArguments())
        define(argument);
      for (Operation &op : block)
        if (!addOp(op))
          return false;
    }
    return true;
  }

  bool addOp(Operation &op) {
    if (op.getNumSuccessors() != 0)
      return false;
    ++body.ops;
    body.hasLoop |= isa<LoopLikeOpInterface>(op);
    add(op.getName().getAsOpaquePointer());
    auto constant = dyn_cast<arith::ConstantOp>(op);
    if (constant && isScalar(constant)) {
      add(uintptr_t{2});
      body.constants.push_back(constant);
    } else {
      add(op.getAttrDictionary().getAsOpaquePointer());
    }
    add(static_cast<uintptr_t>(op.getNumOperands()));
    for (Value operand : op.getOperands())
      use(operand);
    add(static_cast<uintptr_t>(op.getNumResults()));
    for (Value result : op.getResults())
      define(result);
    add(static_cast<uintptr_t>(op.getNumRegions()));
    for (Region &region : op.getRegions())
      if (!addRegion(region))
        return false;
    return true;
  }

  /// The leading dim of `external` if the body only loads from and stores
  /// to it and its layout is the identity: the code does not depend on it.
  std::optional<int64_t> getRelaxedLeadingDim(Value external) {
    auto type = dyn_cast<MemRefType>(external.getType());
    if (!type || type.getRank() == 0 || !type.hasStaticShape() ||
        !type.getLayout().isIdentity())
      return std::nullopt;
    Region &region = body.loop.getRegion();
    for (Operation *user : external.getUsers()) {
      if (!region.isAncestor(user->getParentRegion()))
        continue;
      if (!isa<memref::LoadOp, memref::StoreOp, vector::LoadOp, vector::StoreOp,
               vector::MaskedLoadOp, vector::MaskedStoreOp>(user))
        return std::nullopt;
    }
    return type.getShape()[0];
  }

  LoopBody &body;
  llvm::DenseMap<Value, unsigned> defined;
  llvm::DenseMap<Value, unsigned> externalIndex;
  llvm::DenseMap<Value, unsigned> outerConstantIndex;
};
} // namespace

/// The scalar constants of `op`'s regions in pre-order (as KeyBuilder
/// collects them).
static SmallVector<arith::ConstantOp> collectScalarConstants(Operation *op) {
  SmallVector<arith::ConstantOp> constants;
  op->walk<WalkOrder::PreOrder>([&](arith::ConstantOp constant) {
    if (isScalar(constant))
      constants.push_back(constant);
  });
  return constants;
}

/// Replaces the bodies of `group` (equal keys) by calls of one new private
/// function named `name`.
static void shareGroup(ModuleOp module, ArrayRef<LoopBody *> group,
                       StringRef name) {
  LoopBody &first = *group.front();
  Location loc = first.loop.getLoc();

  // The parameters: the induction variables, the externals (a relaxed
  // memref with the largest leading dim of the group), then the constants
  // whose values differ.
  SmallVector<Type> parameterTypes(first.loop.getRegion().getArgumentTypes());
  for (auto [index, external] : llvm::enumerate(first.externals)) {
    Type type = external.getType();
    if (first.leadingDims[index]) {
      int64_t largest = 0;
      for (LoopBody *body : group)
        largest = std::max(largest, *body->leadingDims[index]);
      auto memref = cast<MemRefType>(type);
      SmallVector<int64_t> shape(memref.getShape());
      shape[0] = largest;
      type = memref.cloneWith(shape, memref.getElementType());
    }
    parameterTypes.push_back(type);
  }
  // Constants are numbered those inside first, then those from outside.
  auto constantOf = [](LoopBody &body, unsigned index) {
    unsigned inside = body.constants.size();
    return index < inside ? body.constants[index]
                          : body.outerConstants[index - inside];
  };
  unsigned numConstants = first.constants.size() + first.outerConstants.size();
  SmallVector<unsigned> varying;
  for (unsigned index = 0; index < numConstants; ++index) {
    Attribute value = constantOf(first, index).getValue();
    if (llvm::any_of(group, [&](LoopBody *body) {
          return constantOf(*body, index).getValue() != value;
        })) {
      varying.push_back(index);
      parameterTypes.push_back(constantOf(first, index).getType());
    }
  }

  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto shared = func::FuncOp::create(
      builder, loc, name, builder.getFunctionType(parameterTypes, {}));
  shared.setPrivate();
  // Kept a call: inlined back, every copy would be code again.
  shared->setAttr("passthrough",
                  builder.getArrayAttr({builder.getStringAttr("noinline")}));
  Block *entry = shared.addEntryBlock();
  IRMapping mapping;
  Block &firstBlock = first.loop.getRegion().front();
  unsigned numIvs = firstBlock.getNumArguments();
  for (unsigned i = 0; i < numIvs; ++i)
    mapping.map(firstBlock.getArgument(i), entry->getArgument(i));
  for (auto [index, external] : llvm::enumerate(first.externals))
    mapping.map(external, entry->getArgument(numIvs + index));
  // The parameter of each constant that differs, by constant number.
  llvm::DenseMap<unsigned, BlockArgument> parameterOf;
  for (auto [position, index] : llvm::enumerate(varying))
    parameterOf[index] =
        entry->getArgument(numIvs + first.externals.size() + position);
  builder.setInsertionPointToStart(entry);
  unsigned numInside = first.constants.size();
  for (auto [position, outer] : llvm::enumerate(first.outerConstants)) {
    unsigned index = numInside + position;
    auto parameter = parameterOf.find(index);
    Value value = parameter != parameterOf.end()
                      ? Value(parameter->second)
                      : builder.clone(*outer)->getResult(0);
    mapping.map(outer.getResult(), value);
  }
  for (Operation &op : firstBlock.without_terminator())
    builder.clone(op, mapping);
  func::ReturnOp::create(builder, loc);
  // The constants inside, cloned in the same order: those that differ
  // become their parameters.
  SmallVector<arith::ConstantOp> cloned = collectScalarConstants(shared);
  cloned.erase(cloned.begin(), cloned.begin() + (cloned.size() - numInside));
  for (unsigned index : varying) {
    if (index >= numInside)
      continue;
    cloned[index].replaceAllUsesWith(parameterOf[index]);
    cloned[index].erase();
  }

  for (LoopBody *body : group) {
    scf::ParallelOp loop = body->loop;
    OpBuilder before(loop);
    Location loopLoc = loop.getLoc();
    SmallVector<Value> arguments(loop.getRegion().getArguments());
    for (auto [index, external] : llvm::enumerate(body->externals)) {
      Type type = parameterTypes[numIvs + index];
      if (external.getType() == type) {
        arguments.push_back(external);
        continue;
      }
      auto memref = cast<MemRefType>(type);
      arguments.push_back(memref::ReinterpretCastOp::create(
          before, loopLoc, memref, external, /*offset=*/0, memref.getShape(),
          computeStrides(memref.getShape())));
    }
    for (unsigned index : varying)
      arguments.push_back(arith::ConstantOp::create(
          before, loopLoc, constantOf(*body, index).getValue()));
    Block &block = loop.getRegion().front();
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    OpBuilder inside = OpBuilder::atBlockBegin(&block);
    func::CallOp::create(inside, loopLoc, shared, arguments);
  }
}

SmallVector<std::string> kiln::shareLoopBodies(ModuleOp module) {
  // Every outermost parallel loop without results, keyed.
  std::vector<LoopBody> bodies;
  for (auto function : module.getOps<func::FuncOp>())
    function.walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      if (loop->getParentOfType<LoopLikeOpInterface>() ||
          loop.getNumResults() != 0)
        return WalkResult::skip();
      LoopBody body;
      body.loop = loop;
      if (KeyBuilder(body).build() && body.hasLoop && body.ops >= kMinSharedOps)
        bodies.push_back(std::move(body));
      return WalkResult::skip();
    });

  // Groups of equal keys, in the order of their first body.
  std::map<SmallVector<uintptr_t>, unsigned> groupOf;
  std::vector<SmallVector<LoopBody *>> groups;
  for (LoopBody &body : bodies) {
    auto [it, inserted] = groupOf.try_emplace(body.key, groups.size());
    if (inserted)
      groups.emplace_back();
    groups[it->second].push_back(&body);
  }

  SymbolTable symbols(module);
  SmallVector<std::string> shared;
  unsigned suffix = 0;
  for (ArrayRef<LoopBody *> group : groups) {
    if (group.size() < 2)
      continue;
    std::string name;
    do
      name = "kiln_shared_body_" + std::to_string(suffix++);
    while (symbols.lookup(name));
    shareGroup(module, group, name);
    shared.push_back(name);
  }
  return shared;
}

namespace {
struct ShareLoopBodiesPass
    : kiln::impl::ShareLoopBodiesBase<ShareLoopBodiesPass> {
  void runOnOperation() override { kiln::shareLoopBodies(getOperation()); }
};
} // namespace
