//===- BuiltinsShape.cpp - Linear algebra and shape builtins --------------===//
//
// Part of Kiln. matmul, transpose, reshape, broadcast, reductions, slicing,
// concat/split and the attention-head reshapes.
//
//===----------------------------------------------------------------------===//

#include "BuiltinSupport.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using namespace kiln::frontend::builtins;
using llvm::SMLoc;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Linear algebra and shapes
//===----------------------------------------------------------------------===//

Result builtins::emitMatmul(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> a = args.floatTensor("a"), b = args.floatTensor("b");
  if (failed(a) || failed(b))
    return failure();
  FailureOr<bool> ta = args.boolean("transpose_a", false);
  FailureOr<bool> tb = args.boolean("transpose_b", false);
  if (failed(ta) || failed(tb))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (elementTypeOf(*a) != elementTypeOf(*b))
    return shapeError(emitter, loc, "matmul", "operands differ in element type",
                      {{"a", *a}, {"b", *b}});
  std::string message;
  auto shape =
      graph::inferMatmulShape(a->getTensorType().getShape(),
                              b->getTensorType().getShape(), *ta, *tb, message);
  if (failed(shape))
    return shapeError(emitter, loc, "matmul", message, {{"a", *a}, {"b", *b}});
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(emitOp<graph::MatmulOp>(
                          emitter, loc, tensorType(*shape, elementTypeOf(*a)),
                          a->tensor, b->tensor,
                          *ta ? builder.getUnitAttr() : UnitAttr(),
                          *tb ? builder.getUnitAttr() : UnitAttr()),
                      loc);
}

Result builtins::emitTranspose(ModelEmitter &emitter,
                               const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  if (failed(x))
    return failure();
  int64_t rank = x->getTensorType().getRank();
  SmallVector<int64_t> perm;
  if (args.has("perm")) {
    FailureOr<SmallVector<int64_t>> given = args.integerList("perm");
    if (failed(given))
      return failure();
    perm = *given;
  } else {
    if (rank < 2)
      return emitter.error(args.getCallLoc(),
                           "transpose of " + x->describe() +
                               " needs perm=[...]: it has fewer than two dims");
    perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
  }
  std::string message;
  auto shape =
      graph::inferTransposeShape(x->getTensorType().getShape(), perm, message);
  if (failed(shape))
    return shapeError(emitter, args.getLoc("perm"), "transpose", message,
                      {{"x", *x}});
  return tensorResult(emitOp<graph::TransposeOp>(
                          emitter, args.getCallLoc(),
                          tensorType(*shape, elementTypeOf(*x)), x->tensor,
                          emitter.getBuilder().getDenseI64ArrayAttr(perm)),
                      args.getCallLoc());
}

/// Reshapes `x` to `target` (one dim may be -1).
static Result reshapeTo(ModelEmitter &emitter, SMLoc loc, const EvalValue &x,
                        ArrayRef<int64_t> target, StringRef callee) {
  std::string message;
  auto shape =
      graph::inferReshapeShape(x.getTensorType().getShape(), target, message);
  if (failed(shape))
    return shapeError(emitter, loc, callee, message, {{"x", x}});
  if (*shape == x.getTensorType().getShape())
    return EvalValue::ofTensor(x.tensor, loc);
  return tensorResult(
      emitOp<graph::ReshapeOp>(emitter, loc,
                               tensorType(*shape, elementTypeOf(x)), x.tensor),
      loc);
}

Result builtins::emitReshape(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  FailureOr<SmallVector<int64_t>> shape = args.integerList("shape");
  if (failed(x) || failed(shape))
    return failure();
  return reshapeTo(emitter, args.getCallLoc(), *x, *shape, "reshape");
}

Result builtins::emitBroadcast(ModelEmitter &emitter,
                               const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  FailureOr<SmallVector<int64_t>> shape = args.integerList("shape");
  if (failed(x) || failed(shape))
    return failure();
  std::string message;
  if (failed(graph::checkBroadcastTo(x->getTensorType().getShape(), *shape,
                                     message)))
    return shapeError(emitter, args.getCallLoc(), "broadcast", message,
                      {{"x", *x}});
  if (failed(emitter.countOp(args.getCallLoc())))
    return failure();
  return EvalValue::ofTensor(
      emitter.broadcastTo(x->tensor, *shape, emitter.getLoc(args.getCallLoc())),
      args.getCallLoc());
}

template <graph::ReduceKind kind>
Result builtins::emitReduce(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  int64_t rank = x->getTensorType().getRank();
  SmallVector<int64_t> axes;
  if (args.has("axis")) {
    FailureOr<SmallVector<int64_t>> given = args.integerList("axis");
    if (failed(given))
      return failure();
    std::string message;
    auto normalized = graph::normalizeAxes(*given, rank, message);
    if (failed(normalized))
      return emitter.error(args.getLoc("axis"), message);
    axes = *normalized;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  FailureOr<bool> keepdims = args.boolean("keepdims", false);
  if (failed(keepdims))
    return failure();
  std::string message;
  auto shape = graph::inferReduceShape(x->getTensorType().getShape(), axes,
                                       *keepdims, message);
  if (failed(shape))
    return shapeError(emitter, args.getCallLoc(), "reduce", message,
                      {{"x", *x}});
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(
      emitOp<graph::ReduceOp>(
          emitter, args.getCallLoc(), tensorType(*shape, elementTypeOf(*x)),
          graph::ReduceKindAttr::get(&emitter.getContext(), kind), x->tensor,
          builder.getDenseI64ArrayAttr(axes),
          *keepdims ? builder.getUnitAttr() : UnitAttr()),
      args.getCallLoc());
}

Result builtins::emitSlice(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> inputShape = x->getTensorType().getShape();
  FailureOr<int64_t> axis =
      userAxis(emitter, args, "axis", -1, inputShape.size());
  if (failed(axis))
    return failure();
  FailureOr<int64_t> start = args.integer("start", 0);
  FailureOr<int64_t> end = args.integer("end", inputShape[*axis]);
  if (failed(start) || failed(end))
    return failure();
  if (*start < 0 || *end > inputShape[*axis] || *start >= *end)
    return emitter.error(args.getCallLoc(),
                         llvm::formatv("slice [{0}, {1}) is empty or outside "
                                       "dim {2} of {3} (size {4})",
                                       *start, *end, *axis, x->describe(),
                                       inputShape[*axis]));
  SmallVector<int64_t> offsets(inputShape.size(), 0);
  SmallVector<int64_t> sizes(inputShape);
  offsets[*axis] = *start;
  sizes[*axis] = *end - *start;
  return tensorResult(emitOp<graph::SliceOp>(
                          emitter, args.getCallLoc(),
                          tensorType(sizes, elementTypeOf(*x)), x->tensor,
                          emitter.getBuilder().getDenseI64ArrayAttr(offsets)),
                      args.getCallLoc());
}

Result builtins::emitConcat(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<SmallVector<EvalValue>> inputs = args.tensorList("xs");
  if (failed(inputs))
    return failure();
  const EvalValue &first = inputs->front();
  FailureOr<int64_t> axis =
      userAxis(emitter, args, "axis", -1, first.getTensorType().getRank());
  if (failed(axis))
    return failure();
  SmallVector<SmallVector<int64_t>> shapes;
  SmallVector<Value> values;
  for (const EvalValue &input : *inputs) {
    if (elementTypeOf(input) != elementTypeOf(first))
      return shapeError(emitter, args.getCallLoc(), "concat",
                        "inputs differ in element type",
                        {{"the first input", first}, {"this input", input}});
    shapes.push_back(llvm::to_vector(input.getTensorType().getShape()));
    values.push_back(input.tensor);
  }
  std::string message;
  auto shape = graph::inferConcatShape(shapes, *axis, message);
  if (failed(shape)) {
    SmallVector<std::pair<StringRef, EvalValue>> notes;
    for (const EvalValue &input : *inputs)
      notes.push_back({"an input", input});
    return shapeError(emitter, args.getCallLoc(), "concat", message, notes);
  }
  return tensorResult(
      emitOp<graph::ConcatOp>(emitter, args.getCallLoc(),
                              tensorType(*shape, elementTypeOf(first)), values,
                              emitter.getBuilder().getI64IntegerAttr(*axis)),
      args.getCallLoc());
}

Result builtins::emitSplit(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> inputShape = x->getTensorType().getShape();
  FailureOr<int64_t> axis =
      userAxis(emitter, args, "axis", -1, inputShape.size());
  if (failed(axis))
    return failure();
  std::string message;
  FailureOr<SmallVector<SmallVector<int64_t>>> shapes = failure();
  const EvalValue &parts = args.get("parts");
  if (parts.kind == EvalValue::Kind::Int) {
    if (parts.intValue < 1 || parts.intValue > 4096)
      return emitter.error(args.getLoc("parts"),
                           "split needs between 1 and 4096 parts");
    shapes = graph::inferEqualSplitShapes(inputShape, parts.intValue, *axis,
                                          message);
  } else {
    FailureOr<SmallVector<int64_t>> sizes = args.integerList("parts");
    if (failed(sizes))
      return failure();
    shapes = graph::inferSplitShapes(inputShape, *sizes, *axis, message);
  }
  if (failed(shapes))
    return shapeError(emitter, args.getCallLoc(), "split", message,
                      {{"x", *x}});
  SmallVector<Type> resultTypes;
  for (const SmallVector<int64_t> &shape : *shapes)
    resultTypes.push_back(tensorType(shape, elementTypeOf(*x)));
  if (failed(emitter.countOp(args.getCallLoc())))
    return failure();
  auto split = graph::SplitOp::create(
      emitter.getBuilder(), emitter.getLoc(args.getCallLoc()), resultTypes,
      x->tensor, emitter.getBuilder().getI64IntegerAttr(*axis));
  EvalValue tuple;
  tuple.kind = EvalValue::Kind::Tuple;
  tuple.origin = args.getCallLoc();
  for (Value result : split.getResults())
    tuple.elements.push_back(EvalValue::ofTensor(result, args.getCallLoc()));
  return tuple;
}

/// `heads(x, H)`: `[..., T, D]` -> `[..., H, T, D/H]`.
Result builtins::emitHeads(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  FailureOr<int64_t> heads = args.integer("heads");
  if (failed(x) || failed(heads))
    return failure();
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  SMLoc loc = args.getCallLoc();
  if (shape.size() < 2)
    return emitter.error(loc, "heads needs a tensor [..., T, D], got " +
                                  x->describe());
  int64_t width = shape.back();
  if (*heads <= 0 || width % *heads != 0)
    return emitter.error(args.getLoc("heads"),
                         llvm::formatv("heads: the last dim {0} of {1} does "
                                       "not split into {2} heads",
                                       width, x->describe(), *heads));
  SmallVector<int64_t> split(shape.drop_back());
  split.push_back(*heads);
  split.push_back(width / *heads);
  FailureOr<EvalValue> reshaped = reshapeTo(emitter, loc, *x, split, "heads");
  if (failed(reshaped))
    return failure();
  int64_t rank = split.size();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 3], perm[rank - 2]);
  SmallVector<int64_t> result(split);
  std::swap(result[rank - 3], result[rank - 2]);
  return tensorResult(emitOp<graph::TransposeOp>(
                          emitter, loc, tensorType(result, elementTypeOf(*x)),
                          reshaped->tensor,
                          emitter.getBuilder().getDenseI64ArrayAttr(perm)),
                      loc);
}

/// `merge_heads(x)`: `[..., H, T, Dh]` -> `[..., T, H*Dh]`.
Result builtins::emitMergeHeads(ModelEmitter &emitter,
                                const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  SMLoc loc = args.getCallLoc();
  if (shape.size() < 3)
    return emitter.error(loc, "merge_heads needs a tensor [..., H, T, Dh], "
                              "got " +
                                  x->describe());
  int64_t rank = shape.size();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 3], perm[rank - 2]);
  SmallVector<int64_t> swapped(shape);
  std::swap(swapped[rank - 3], swapped[rank - 2]);
  FailureOr<Value> transposed = emitOp<graph::TransposeOp>(
      emitter, loc, tensorType(swapped, elementTypeOf(*x)), x->tensor,
      emitter.getBuilder().getDenseI64ArrayAttr(perm));
  if (failed(transposed))
    return failure();
  SmallVector<int64_t> merged(ArrayRef<int64_t>(swapped).drop_back(2));
  merged.push_back(swapped[rank - 2] * swapped[rank - 1]);
  return reshapeTo(emitter, loc, EvalValue::ofTensor(*transposed, loc), merged,
                   "merge_heads");
}

Result builtins::emitSum(ModelEmitter &emitter, const CallArguments &args) {
  return emitReduce<graph::ReduceKind::Sum>(emitter, args);
}
Result builtins::emitMax(ModelEmitter &emitter, const CallArguments &args) {
  return emitReduce<graph::ReduceKind::Max>(emitter, args);
}
Result builtins::emitMean(ModelEmitter &emitter, const CallArguments &args) {
  return emitReduce<graph::ReduceKind::Mean>(emitter, args);
}
