//===- BuiltinsConv.cpp - Convolution and pooling builtins ----------------===//
//
// Part of Kiln. conv2d, max_pool2d and avg_pool2d over NCHW tensors,
// composed of graph ops: the windows are gathered by slices of the padded
// input (im2col), so a convolution is one GEMM of the gathered windows by
// the reshaped filters and a pooling one reduction; autodiff differentiates
// the parts, and every target runs them with the kernels it already has.
//
//===----------------------------------------------------------------------===//

#include "BuiltinSupport.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using namespace kiln::frontend::builtins;
using llvm::SMLoc;
using llvm::StringRef;

namespace {
/// A square window sliding over the last two dims of [N, C, H, W].
struct Window {
  int64_t kernel, stride, padding;
  int64_t outHeight, outWidth;
};

/// Emits the data movement of convolution and pooling at one call.
class WindowEmitter {
public:
  WindowEmitter(ModelEmitter &emitter, SMLoc loc, Type element)
      : emitter(emitter), loc(loc), element(element) {}

  FailureOr<Value> slice(Value x, ArrayRef<int64_t> offsets,
                         ArrayRef<int64_t> sizes) {
    return emitOp<graph::SliceOp>(
        emitter, loc, tensorType(sizes, element), x,
        emitter.getBuilder().getDenseI64ArrayAttr(offsets));
  }
  FailureOr<Value> reshape(Value x, ArrayRef<int64_t> shape) {
    return emitOp<graph::ReshapeOp>(emitter, loc, tensorType(shape, element),
                                    x);
  }
  FailureOr<Value> transpose(Value x, ArrayRef<int64_t> perm) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
    SmallVector<int64_t> permuted;
    for (int64_t axis : perm)
      permuted.push_back(shape[axis]);
    return emitOp<graph::TransposeOp>(
        emitter, loc, tensorType(permuted, element), x,
        emitter.getBuilder().getDenseI64ArrayAttr(perm));
  }
  FailureOr<Value> concat(ArrayRef<Value> parts, int64_t axis) {
    if (parts.size() == 1)
      return parts.front();
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(parts.front().getType()).getShape());
    shape[axis] = 0;
    for (Value part : parts)
      shape[axis] += cast<RankedTensorType>(part.getType()).getShape()[axis];
    return emitOp<graph::ConcatOp>(
        emitter, loc, tensorType(shape, element), ValueRange(parts),
        emitter.getBuilder().getI64IntegerAttr(axis));
  }
  FailureOr<Value> fill(ArrayRef<int64_t> shape, double value) {
    RankedTensorType type = tensorType(shape, element);
    return emitOp<graph::ConstantOp>(
        emitter, loc,
        DenseElementsAttr::get(
            type, emitter.getBuilder().getFloatAttr(element, value)));
  }

  /// `x` with `before` and `after` elements of `value` around `axis`.
  FailureOr<Value> pad(Value x, int64_t axis, int64_t before, int64_t after,
                       double value) {
    SmallVector<Value> parts;
    SmallVector<int64_t> shape(cast<RankedTensorType>(x.getType()).getShape());
    for (int64_t count : {before, int64_t(-1), after}) {
      if (count == -1) {
        parts.push_back(x);
        continue;
      }
      if (count == 0)
        continue;
      shape[axis] = count;
      FailureOr<Value> filler = fill(shape, value);
      if (failed(filler))
        return failure();
      parts.push_back(*filler);
    }
    return concat(parts, axis);
  }

  /// The windows of x [N, C, H, W] gathered as [N, C, K*K, Ho, Wo]: entry
  /// (n, c, i*K + j, y, x) is the padded input at (y*stride + i,
  /// x*stride + j). Padding holds `padValue`; the input is padded past the
  /// last window where a stride needs whole groups (never read).
  FailureOr<Value> windows(Value x, const Window &w, double padValue) {
    ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
    int64_t n = shape[0], c = shape[1], h = shape[2], wd = shape[3];
    int64_t paddedHeight = w.kernel - 1 + w.outHeight * w.stride;
    int64_t paddedWidth = w.kernel - 1 + w.outWidth * w.stride;
    FailureOr<Value> padded =
        pad(x, 2, w.padding, paddedHeight - h - w.padding, padValue);
    if (failed(padded))
      return failure();
    padded = pad(*padded, 3, w.padding, paddedWidth - wd - w.padding, padValue);
    if (failed(padded))
      return failure();
    SmallVector<Value> parts;
    for (int64_t i = 0; i < w.kernel; ++i)
      for (int64_t j = 0; j < w.kernel; ++j) {
        FailureOr<Value> part =
            slice(*padded, {0, 0, i, j},
                  {n, c, w.outHeight * w.stride, w.outWidth * w.stride});
        if (failed(part))
          return failure();
        if (w.stride > 1) {
          // Every stride-th row and column: the first of each group.
          part = reshape(*part,
                         {n, c, w.outHeight, w.stride, w.outWidth, w.stride});
          if (succeeded(part))
            part = slice(*part, {0, 0, 0, 0, 0, 0},
                         {n, c, w.outHeight, 1, w.outWidth, 1});
          if (failed(part))
            return failure();
        }
        part = reshape(*part, {n, c, 1, w.outHeight, w.outWidth});
        if (failed(part))
          return failure();
        parts.push_back(*part);
      }
    return concat(parts, 2);
  }

private:
  ModelEmitter &emitter;
  SMLoc loc;
  Type element;
};
} // namespace

/// Checks x is [N, C, H, W] and reads the window's stride and padding;
/// `kernel` is the window's size.
static FailureOr<Window> readWindow(ModelEmitter &emitter,
                                    const CallArguments &args, StringRef op,
                                    const EvalValue &x, int64_t kernel,
                                    int64_t defaultStride) {
  ArrayRef<int64_t> shape = x.getTensorType().getShape();
  if (shape.size() != 4) {
    (void)shapeError(emitter, args.getCallLoc(), op,
                     "x must be [N, C, H, W], got " + x.describe(), {{"x", x}});
    return failure();
  }
  FailureOr<int64_t> stride = args.integer("stride", defaultStride);
  FailureOr<int64_t> padding = args.integer("padding", 0);
  if (failed(stride) || failed(padding))
    return failure();
  if (*stride < 1) {
    (void)emitter.error(args.getLoc("stride"), op + " needs stride >= 1, got " +
                                                   std::to_string(*stride));
    return failure();
  }
  if (*padding < 0 || *padding >= kernel) {
    (void)emitter.error(args.getLoc("padding"),
                        llvm::formatv("{0} needs 0 <= padding < the kernel "
                                      "size {1}, got {2}",
                                      op, kernel, *padding));
    return failure();
  }
  Window w{kernel, *stride, *padding, 0, 0};
  int64_t height = shape[2] + 2 * w.padding, width = shape[3] + 2 * w.padding;
  if (height < kernel || width < kernel) {
    (void)shapeError(emitter, args.getCallLoc(), op,
                     llvm::formatv("the {0}x{0} window is larger than the "
                                   "padded {1}x{2} image",
                                   kernel, height, width),
                     {{"x", x}});
    return failure();
  }
  w.outHeight = (height - kernel) / w.stride + 1;
  w.outWidth = (width - kernel) / w.stride + 1;
  return w;
}

/// conv2d(x, w, stride=1, padding=0): x [N, C, H, W], filters w
/// [O, C, K, K]; the result [N, O, Ho, Wo], Ho = (H + 2 padding - K) /
/// stride + 1 (PyTorch's Conv2d without bias: add one as
/// reshape(b, [O, 1, 1])). One GEMM: the windows [N*Ho*Wo, C*K*K] by the
/// filters [C*K*K, O].
Result builtins::emitConv2d(ModelEmitter &emitter, const CallArguments &args) {
  FailureOr<EvalValue> x = args.floatTensor("x"), w = args.floatTensor("w");
  if (failed(x) || failed(w))
    return failure();
  SMLoc loc = args.getCallLoc();
  ArrayRef<int64_t> filters = w->getTensorType().getShape();
  if (elementTypeOf(*x) != elementTypeOf(*w))
    return shapeError(emitter, loc, "conv2d", "x and w differ in element type",
                      {{"x", *x}, {"w", *w}});
  if (filters.size() != 4 || filters[2] != filters[3])
    return shapeError(emitter, loc, "conv2d",
                      "w must be [O, C, K, K] (square filters)", {{"w", *w}});
  FailureOr<Window> window =
      readWindow(emitter, args, "conv2d", *x, filters[2], /*defaultStride=*/1);
  if (failed(window))
    return failure();
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  if (shape[1] != filters[1])
    return shapeError(
        emitter, loc, "conv2d",
        llvm::formatv("x has {0} channels, w takes {1}", shape[1], filters[1]),
        {{"x", *x}, {"w", *w}});
  int64_t n = shape[0], c = shape[1], o = filters[0], k = filters[2];
  int64_t ho = window->outHeight, wo = window->outWidth;
  WindowEmitter e(emitter, loc, elementTypeOf(*x));
  // [N, C, K*K, Ho, Wo] -> [N, Ho, Wo, C, K*K] -> [N*Ho*Wo, C*K*K].
  FailureOr<Value> columns = e.windows(x->tensor, *window, 0.0);
  if (succeeded(columns))
    columns = e.transpose(*columns, {0, 3, 4, 1, 2});
  if (succeeded(columns))
    columns = e.reshape(*columns, {n * ho * wo, c * k * k});
  // [O, C, K, K] -> [O, C*K*K] -> [C*K*K, O].
  FailureOr<Value> matrix = e.reshape(w->tensor, {o, c * k * k});
  if (succeeded(matrix))
    matrix = e.transpose(*matrix, {1, 0});
  if (failed(columns) || failed(matrix))
    return failure();
  FailureOr<Value> product = emitOp<graph::MatmulOp>(
      emitter, loc, tensorType({n * ho * wo, o}, elementTypeOf(*x)), *columns,
      *matrix);
  // [N*Ho*Wo, O] -> [N, Ho, Wo, O] -> [N, O, Ho, Wo].
  if (succeeded(product))
    product = e.reshape(*product, {n, ho, wo, o});
  if (succeeded(product))
    product = e.transpose(*product, {0, 3, 1, 2});
  return tensorResult(product, loc);
}

/// max_pool2d / avg_pool2d(x, kernel, stride=kernel, padding=0): the
/// maximum or mean of each K x K window of x [N, C, H, W]. Max pooling pads
/// with -inf and sends a window's gradient to its first maximum (row-major,
/// as PyTorch); average pooling counts the zero padding (PyTorch's
/// count_include_pad default).
static Result emitPool(ModelEmitter &emitter, const CallArguments &args,
                       graph::ReduceKind kind, StringRef op) {
  FailureOr<EvalValue> x = args.floatTensor("x");
  FailureOr<int64_t> kernel = args.integer("kernel");
  if (failed(x) || failed(kernel))
    return failure();
  if (*kernel < 1)
    return emitter.error(args.getLoc("kernel"), op +
                                                    " needs kernel >= 1, got " +
                                                    std::to_string(*kernel));
  FailureOr<Window> window = readWindow(emitter, args, op, *x, *kernel,
                                        /*defaultStride=*/*kernel);
  if (failed(window))
    return failure();
  SMLoc loc = args.getCallLoc();
  ArrayRef<int64_t> shape = x->getTensorType().getShape();
  WindowEmitter e(emitter, loc, elementTypeOf(*x));
  double padValue = kind == graph::ReduceKind::Max
                        ? -std::numeric_limits<double>::infinity()
                        : 0.0;
  FailureOr<Value> windows = e.windows(x->tensor, *window, padValue);
  if (failed(windows))
    return failure();
  OpBuilder &builder = emitter.getBuilder();
  return tensorResult(
      emitOp<graph::ReduceOp>(
          emitter, loc,
          tensorType({shape[0], shape[1], window->outHeight, window->outWidth},
                     elementTypeOf(*x)),
          graph::ReduceKindAttr::get(&emitter.getContext(), kind), *windows,
          builder.getDenseI64ArrayAttr({2}), UnitAttr()),
      loc);
}

Result builtins::emitMaxPool2d(ModelEmitter &emitter,
                               const CallArguments &args) {
  return emitPool(emitter, args, graph::ReduceKind::Max, "max_pool2d");
}

Result builtins::emitAvgPool2d(ModelEmitter &emitter,
                               const CallArguments &args) {
  return emitPool(emitter, args, graph::ReduceKind::Mean, "avg_pool2d");
}
