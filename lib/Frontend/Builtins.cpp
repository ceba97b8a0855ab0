//===- Builtins.cpp - The DSL's op library ---------------------------------===//
//
// Part of Kiln. Each builtin call binds its arguments by name, checks shapes
// with the dialect's shape rules (GraphShapes.h) so that errors point at the
// model line with both shapes, and emits graph ops.
//
//===----------------------------------------------------------------------===//

#include "CallArguments.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Dialect/Graph/IR/GraphShapes.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

namespace {
using Handler = FailureOr<EvalValue> (*)(ModelEmitter &, const CallArguments &);

/// A builtin: its signature and the function that emits it.
struct Builtin {
  SmallVector<BuiltinParam, 4> params;
  Handler handler;
  bool variadicFirst = false;
};
} // namespace

using Result = FailureOr<EvalValue>;

/// Reports a shape-rule failure at the call, with a note for each operand.
static Result shapeError(ModelEmitter &emitter, SMLoc loc, StringRef callee,
                         const std::string &message,
                         ArrayRef<std::pair<StringRef, EvalValue>> operands) {
  // The shape rules often name the op already ("matmul contracting dims
  // differ"); say it once.
  if (StringRef(message).starts_with((callee + " ").str()))
    (void)emitter.error(loc, message);
  else
    (void)emitter.error(loc, callee + ": " + message);
  for (const auto &[role, value] : operands)
    emitter.noteOrigin(value, role);
  return failure();
}

static Type elementTypeOf(const EvalValue &value) {
  return value.getTensorType().getElementType();
}

static RankedTensorType tensorType(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

/// Normalizes a user axis (negative counts from the back) for `rank`.
static FailureOr<int64_t> userAxis(ModelEmitter &emitter,
                                   const CallArguments &args, StringRef name,
                                   int64_t fallback, int64_t rank) {
  FailureOr<int64_t> axis = args.integer(name, fallback);
  if (failed(axis))
    return failure();
  std::string message;
  FailureOr<int64_t> normalized = graph::normalizeAxis(*axis, rank, message);
  if (failed(normalized))
    return emitter.error(args.getLoc(name), message);
  return normalized;
}

/// Emits an op, after counting it against the model's size limit.
template <typename OpTy, typename... Args>
static FailureOr<Value> emitOp(ModelEmitter &emitter, SMLoc loc,
                               Args &&...args) {
  if (failed(emitter.countOp(loc)))
    return failure();
  return OpTy::create(emitter.getBuilder(), emitter.getLoc(loc),
                      std::forward<Args>(args)...)
      ->getResult(0);
}

static Result tensorResult(FailureOr<Value> value, SMLoc loc) {
  if (failed(value))
    return failure();
  return EvalValue::ofTensor(*value, loc);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpTy>
static Result emitUnary(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  return tensorResult(emitOp<OpTy>(emitter, args.getCallLoc(), x->tensor),
                      args.getCallLoc());
}

static Result emitPow(ModelEmitter &emitter, const CallArguments &args) {
  return emitter.emitBinary(ast::BinaryOp::Pow, args.getCallLoc(),
                            args.get("x"), args.get("y"));
}

//===----------------------------------------------------------------------===//
// Linear algebra and shapes
//===----------------------------------------------------------------------===//

static Result emitMatmul(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> a = args.floatTensor("a"), b = args.floatTensor("b");
  if (failed(a) || failed(b))
    return failure();
  FailureOr<bool> ta = args.boolean("transpose_a", false);
  FailureOr<bool> tb = args.boolean("transpose_b", false);
  if (failed(ta) || failed(tb))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (elementTypeOf(*a) != elementTypeOf(*b))
    return shapeError(emitter, loc, "matmul",
                      "operands differ in element type",
                      {{"a", *a}, {"b", *b}});
  std::string message;
  auto shape = graph::inferMatmulShape(a->getTensorType().getShape(),
                                       b->getTensorType().getShape(), *ta, *tb,
                                       message);
  if (failed(shape))
    return shapeError(emitter, loc, "matmul", message, {{"a", *a}, {"b", *b}});
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(
      emitOp<graph::MatmulOp>(emitter, loc,
                              tensorType(*shape, elementTypeOf(*a)), a->tensor,
                              b->tensor,
                              *ta ? builder.getUnitAttr() : UnitAttr(),
                              *tb ? builder.getUnitAttr() : UnitAttr()),
      loc);
}

static Result emitTranspose(ModelEmitter &emitter, const CallArguments &args) {
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
  auto shape = graph::inferTransposeShape(x->getTensorType().getShape(), perm,
                                          message);
  if (failed(shape))
    return shapeError(emitter, args.getLoc("perm"), "transpose", message,
                      {{"x", *x}});
  return tensorResult(
      emitOp<graph::TransposeOp>(emitter, args.getCallLoc(),
                                 tensorType(*shape, elementTypeOf(*x)),
                                 x->tensor,
                                 emitter.getBuilder().getDenseI64ArrayAttr(perm)),
      args.getCallLoc());
}

/// Reshapes `x` to `target` (one dim may be -1).
static Result reshapeTo(ModelEmitter &emitter, SMLoc loc, const EvalValue &x,
                        ArrayRef<int64_t> target, StringRef callee) {
  std::string message;
  auto shape = graph::inferReshapeShape(x.getTensorType().getShape(), target,
                                        message);
  if (failed(shape))
    return shapeError(emitter, loc, callee, message, {{"x", x}});
  if (*shape == x.getTensorType().getShape())
    return EvalValue::ofTensor(x.tensor, loc);
  return tensorResult(emitOp<graph::ReshapeOp>(
                          emitter, loc, tensorType(*shape, elementTypeOf(x)),
                          x.tensor),
                      loc);
}

static Result emitReshape(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  FailureOr<SmallVector<int64_t>> shape = args.integerList("shape");
  if (failed(x) || failed(shape))
    return failure();
  return reshapeTo(emitter, args.getCallLoc(), *x, *shape, "reshape");
}

static Result emitBroadcast(ModelEmitter &emitter, const CallArguments &args) {
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
static Result emitReduce(ModelEmitter &emitter, const CallArguments &args) {
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

static Result emitSlice(ModelEmitter &emitter, const CallArguments &args) {
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
  return tensorResult(
      emitOp<graph::SliceOp>(emitter, args.getCallLoc(),
                             tensorType(sizes, elementTypeOf(*x)), x->tensor,
                             emitter.getBuilder().getDenseI64ArrayAttr(offsets)),
      args.getCallLoc());
}

static Result emitConcat(ModelEmitter &emitter, const CallArguments &args) {
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

static Result emitSplit(ModelEmitter &emitter, const CallArguments &args) {
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
static Result emitHeads(ModelEmitter &emitter, const CallArguments &args) {
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
  return tensorResult(
      emitOp<graph::TransposeOp>(emitter, loc,
                                 tensorType(result, elementTypeOf(*x)),
                                 reshaped->tensor,
                                 emitter.getBuilder().getDenseI64ArrayAttr(perm)),
      loc);
}

/// `merge_heads(x)`: `[..., H, T, Dh]` -> `[..., T, H*Dh]`.
static Result emitMergeHeads(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  SMLoc loc = args.getCallLoc();
  if (shape.size() < 3)
    return emitter.error(loc, "merge_heads needs a tensor [..., H, T, Dh], "
                              "got " + x->describe());
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

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

static Result emitEmbed(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> table = args.floatTensor("table"),
                       ids = args.tensor("ids");
  if (failed(table) || failed(ids))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!elementTypeOf(*ids).isInteger(32) && !elementTypeOf(*ids).isInteger(64))
    return shapeError(emitter, args.getLoc("ids"), "embed",
                      "ids must be i32 or i64, got " + ids->describe(),
                      {{"ids", *ids}});
  std::string message;
  auto shape = graph::inferEmbeddingShape(table->getTensorType().getShape(),
                                          ids->getTensorType().getShape(),
                                          message);
  if (failed(shape))
    return shapeError(emitter, loc, "embed", message,
                      {{"table", *table}, {"ids", *ids}});
  return tensorResult(emitOp<graph::EmbeddingOp>(
                          emitter, loc,
                          tensorType(*shape, elementTypeOf(*table)),
                          table->tensor, ids->tensor),
                      loc);
}

static Result emitLayerNorm(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x"), g = args.floatTensor("gamma"),
                       b = args.floatTensor("beta");
  FailureOr<double> eps = args.number("eps", 1e-5);
  if (failed(x) || failed(g) || failed(b) || failed(eps))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*eps > 0.0))
    return emitter.error(args.getLoc("eps"), "layer_norm needs eps > 0");
  if (elementTypeOf(*x) != elementTypeOf(*g) ||
      elementTypeOf(*x) != elementTypeOf(*b))
    return shapeError(emitter, loc, "layer_norm",
                      "x, gamma and beta differ in element type",
                      {{"x", *x}, {"gamma", *g}, {"beta", *b}});
  std::string message;
  auto shape = graph::inferLayerNormShape(x->getTensorType().getShape(),
                                          g->getTensorType().getShape(),
                                          b->getTensorType().getShape(),
                                          message);
  if (failed(shape))
    return shapeError(emitter, loc, "layer_norm", message,
                      {{"x", *x}, {"gamma", *g}, {"beta", *b}});
  return tensorResult(emitOp<graph::LayerNormOp>(emitter, loc, x->tensor,
                                                 g->tensor, b->tensor, *eps),
                      loc);
}

static Result emitSoftmax(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  if (failed(x))
    return failure();
  FailureOr<int64_t> axis =
      userAxis(emitter, args, "axis", -1, x->getTensorType().getRank());
  if (failed(axis))
    return failure();
  return tensorResult(emitOp<graph::SoftmaxOp>(emitter, args.getCallLoc(),
                                               x->tensor, *axis),
                      args.getCallLoc());
}

static Result emitAttention(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> q = args.floatTensor("q"), k = args.floatTensor("k"),
                       v = args.floatTensor("v");
  FailureOr<bool> causal = args.boolean("causal", false);
  if (failed(q) || failed(k) || failed(v) || failed(causal))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (elementTypeOf(*q) != elementTypeOf(*k) ||
      elementTypeOf(*q) != elementTypeOf(*v))
    return shapeError(emitter, loc, "attention",
                      "q, k and v differ in element type",
                      {{"q", *q}, {"k", *k}, {"v", *v}});
  std::string message;
  auto shape = graph::inferAttentionShape(
      q->getTensorType().getShape(), k->getTensorType().getShape(),
      v->getTensorType().getShape(), *causal, message);
  if (failed(shape))
    return shapeError(emitter, loc, "attention", message,
                      {{"q", *q}, {"k", *k}, {"v", *v}});
  OpBuilder &builder = emitter.getBuilder();
  FloatAttr scale;
  if (args.has("scale")) {
    FailureOr<double> value = args.number("scale");
    if (failed(value))
      return failure();
    scale = builder.getF64FloatAttr(*value);
  }
  return tensorResult(
      emitOp<graph::AttentionOp>(emitter, loc,
                                 tensorType(*shape, elementTypeOf(*q)),
                                 q->tensor, k->tensor, v->tensor,
                                 *causal ? builder.getUnitAttr() : UnitAttr(),
                                 scale),
      loc);
}

static Result emitCrossEntropy(ModelEmitter &emitter,
                               const CallArguments &args) {
  FailureOr<EvalValue> logits = args.floatTensor("logits"),
                       targets = args.tensor("targets");
  FailureOr<double> smoothing = args.number("label_smoothing", 0.0);
  if (failed(logits) || failed(targets) || failed(smoothing))
    return failure();
  SMLoc loc = args.getCallLoc();
  if (!(*smoothing >= 0.0 && *smoothing < 1.0))
    return emitter.error(args.getLoc("label_smoothing"),
                         "label_smoothing must be in [0, 1)");
  Type targetType = elementTypeOf(*targets);
  if (!targetType.isInteger(32) && !targetType.isInteger(64))
    return shapeError(emitter, args.getLoc("targets"), "cross_entropy",
                      "targets must be class indices (i32 or i64), got " +
                          targets->describe(),
                      {{"targets", *targets}});
  std::string message;
  auto shape = graph::inferCrossEntropyShape(
      logits->getTensorType().getShape(), targets->getTensorType().getShape(),
      message);
  if (failed(shape))
    return shapeError(emitter, loc, "cross_entropy", message,
                      {{"logits", *logits}, {"targets", *targets}});
  return tensorResult(
      emitOp<graph::CrossEntropyOp>(
          emitter, loc, tensorType({}, elementTypeOf(*logits)),
          logits->tensor, targets->tensor,
          emitter.getBuilder().getF64FloatAttr(*smoothing)),
      loc);
}

static Result emitDropout(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  FailureOr<double> rate = args.number("rate", 0.1);
  if (failed(x) || failed(rate))
    return failure();
  if (!(*rate >= 0.0 && *rate < 1.0))
    return emitter.error(args.getLoc("rate"), "dropout rate must be in [0, 1)");
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(
      emitOp<graph::DropoutOp>(
          emitter, args.getCallLoc(), x->getTensorType(), x->tensor,
          builder.getF64FloatAttr(*rate),
          builder.getI64IntegerAttr(emitter.nextDropoutStream())),
      args.getCallLoc());
}

static Result emitCast(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.tensor("x");
  FailureOr<StringRef> name = args.word("type");
  if (failed(x) || failed(name))
    return failure();
  std::optional<ast::ElementType> element = ast::parseElementTypeName(*name);
  if (!element)
    return emitter.error(args.getLoc("type"),
                         "unknown element type '" + *name + "'" +
                             didYouMean(*name, ast::getElementTypeNames()));
  OpBuilder &builder = emitter.getBuilder();
  Type type;
  switch (*element) {
  case ast::ElementType::F32: type = builder.getF32Type(); break;
  case ast::ElementType::F64: type = builder.getF64Type(); break;
  case ast::ElementType::F16: type = builder.getF16Type(); break;
  case ast::ElementType::BF16: type = builder.getBF16Type(); break;
  case ast::ElementType::I32: type = builder.getI32Type(); break;
  case ast::ElementType::I64: type = builder.getI64Type(); break;
  case ast::ElementType::I1: type = builder.getI1Type(); break;
  }
  if (type == elementTypeOf(*x))
    return *x;
  return tensorResult(
      emitOp<graph::CastOp>(emitter, args.getCallLoc(),
                            tensorType(x->getTensorType().getShape(), type),
                            x->tensor),
      args.getCallLoc());
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

static const llvm::StringMap<Builtin> &getBuiltins() {
  static const llvm::StringMap<Builtin> builtins = [] {
    llvm::StringMap<Builtin> table;
    BuiltinParam x{"x"};
    auto opt = [](StringRef name) { return BuiltinParam{name, false}; };
    table["exp"] = {{x}, emitUnary<graph::ExpOp>};
    table["log"] = {{x}, emitUnary<graph::LogOp>};
    table["tanh"] = {{x}, emitUnary<graph::TanhOp>};
    table["sqrt"] = {{x}, emitUnary<graph::SqrtOp>};
    table["rsqrt"] = {{x}, emitUnary<graph::RsqrtOp>};
    table["relu"] = {{x}, emitUnary<graph::ReluOp>};
    table["gelu"] = {{x}, emitUnary<graph::GeluOp>};
    table["neg"] = {{x}, emitUnary<graph::NegOp>};
    table["pow"] = {{x, {"y"}}, emitPow};
    table["matmul"] = {{{"a"}, {"b"}, opt("transpose_a"), opt("transpose_b")},
                       emitMatmul};
    table["transpose"] = {{x, opt("perm")}, emitTranspose};
    table["reshape"] = {{x, {"shape"}}, emitReshape};
    table["broadcast"] = {{x, {"shape"}}, emitBroadcast};
    table["sum"] = {{x, opt("axis"), opt("keepdims")},
                    emitReduce<graph::ReduceKind::Sum>};
    table["max"] = {{x, opt("axis"), opt("keepdims")},
                    emitReduce<graph::ReduceKind::Max>};
    table["mean"] = {{x, opt("axis"), opt("keepdims")},
                     emitReduce<graph::ReduceKind::Mean>};
    table["slice"] = {{x, opt("axis"), opt("start"), opt("end")}, emitSlice};
    table["concat"] = {{{"xs"}, opt("axis")}, emitConcat,
                       /*variadicFirst=*/true};
    table["split"] = {{x, {"parts"}, opt("axis")}, emitSplit};
    table["heads"] = {{x, {"heads"}}, emitHeads};
    table["merge_heads"] = {{x}, emitMergeHeads};
    table["embed"] = {{{"table"}, {"ids"}}, emitEmbed};
    table["layer_norm"] = {{x, {"gamma"}, {"beta"}, opt("eps")},
                           emitLayerNorm};
    table["softmax"] = {{x, opt("axis")}, emitSoftmax};
    table["attention"] = {{{"q"}, {"k"}, {"v"}, opt("causal"), opt("scale")},
                          emitAttention};
    table["cross_entropy"] = {{{"logits"}, {"targets"},
                               opt("label_smoothing")},
                              emitCrossEntropy};
    table["dropout"] = {{x, opt("rate")}, emitDropout};
    table["cast"] = {{x, {"type"}}, emitCast};
    return table;
  }();
  return builtins;
}

bool kiln::frontend::isBuiltinName(StringRef name) { return getBuiltins().count(name); }

FailureOr<EvalValue> ModelEmitter::emitCall(const ast::CallExpr &call) {
  StringRef callee = call.getCallee();
  if (const ast::FnDecl *fn = file->findFunction(callee))
    return callUserFunction(*fn, call);
  auto it = getBuiltins().find(callee);
  if (it == getBuiltins().end()) {
    std::vector<StringRef> names;
    for (const auto &entry : getBuiltins())
      names.push_back(entry.getKey());
    for (const auto &fn : file->functions)
      names.push_back(fn->name.name);
    return error(call.getLoc(), "unknown function '" + callee + "'" +
                                    didYouMean(callee, names));
  }
  const Builtin &builtin = it->second;
  FailureOr<CallArguments> args =
      CallArguments::bind(*this, call, builtin.params, builtin.variadicFirst);
  if (failed(args))
    return failure();
  return builtin.handler(*this, *args);
}
