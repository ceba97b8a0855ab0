//===- Interpreter.cpp - Reference interpreter of the graph dialect -------===//
//
// Part of Kiln. Walks a function's ops in program order and dispatches each
// to its evaluator (OpEvaluators.h).
//
//===----------------------------------------------------------------------===//

#include "kiln/Interpreter/Interpreter.h"
#include "OpEvaluators.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::interp;
using namespace kiln::interp::eval;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

char InterpreterError::ID = 0;

/// The first file:line:col inside `location` (which may be fused, named or
/// a call site), or the location as MLIR prints it.
static std::string formatLocation(Location location) {
  std::string text;
  location->walk([&](Location inner) {
    if (auto fileLoc = llvm::dyn_cast<FileLineColLoc>(inner)) {
      text = (fileLoc.getFilename().getValue() + ":" +
              llvm::Twine(fileLoc.getLine()) + ":" +
              llvm::Twine(fileLoc.getColumn()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (text.empty()) {
    llvm::raw_string_ostream os(text);
    location.print(os);
  }
  return text;
}

void InterpreterError::log(llvm::raw_ostream &os) const {
  os << formatLocation(location) << ": " << message;
}

std::error_code InterpreterError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

llvm::Error kiln::interp::makeOpError(Operation *op,
                                      const llvm::Twine &message) {
  return llvm::make_error<InterpreterError>(
      op->getLoc(),
      ("'" + op->getName().getStringRef() + "' " + message).str());
}

//===----------------------------------------------------------------------===//
// Helpers shared by the evaluators
//===----------------------------------------------------------------------===//

llvm::Expected<Tensor> eval::makeTensor(Operation *op, Type type) {
  auto tensorType = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return makeOpError(op, "needs ranked tensor types");
  llvm::Expected<Tensor> tensor = Tensor::zeros(tensorType);
  if (!tensor)
    return makeOpError(op, llvm::toString(tensor.takeError()));
  return tensor;
}

llvm::Expected<Tensor> eval::makeResult(Operation *op, unsigned resultIndex) {
  return makeTensor(op, op->getResult(resultIndex).getType());
}

llvm::Error eval::requireFloat(Operation *op, const Tensor &tensor,
                               llvm::StringRef what) {
  if (isFloat(tensor.getElementType()))
    return llvm::Error::success();
  return makeOpError(op, what + " must be a float tensor, got " +
                             tensor.getTypeString());
}

llvm::Error eval::requireIntegers(Operation *op, const Tensor &tensor,
                                  llvm::StringRef what) {
  if (!isFloat(tensor.getElementType()))
    return llvm::Error::success();
  return makeOpError(op,
                     what + " must be integers, got " + tensor.getTypeString());
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

namespace {
/// The values of one function invocation.
class Evaluation {
public:
  explicit Evaluation(const RunOptions &options) : options(options) {}

  void bind(Value value, Tensor tensor) { values[value] = std::move(tensor); }

  /// Evaluates `op` and binds its results.
  llvm::Error evaluate(Operation *op);

  /// An error at `op` unless every operand has been computed: verified IR
  /// guarantees it, unverified IR may use a value before its definition.
  llvm::Error checkOperandsBound(Operation *op) const {
    for (Value operand : op->getOperands())
      if (!values.count(operand))
        return makeOpError(op, "uses a value that is not computed before it");
    return llvm::Error::success();
  }

  /// The tensor bound to `value` (see checkOperandsBound).
  const Tensor &lookup(Value value) const {
    auto it = values.find(value);
    assert(it != values.end() && "operand evaluated before its definition");
    return it->second;
  }

private:
  /// The tensors of every operand of `op`.
  llvm::SmallVector<const Tensor *> operandTensors(Operation *op) const {
    llvm::SmallVector<const Tensor *> operands;
    for (Value operand : op->getOperands())
      operands.push_back(&lookup(operand));
    return operands;
  }

  /// Binds every result of `op`, or forwards the error.
  llvm::Error bindResults(Operation *op,
                          llvm::Expected<llvm::SmallVector<Tensor>> results) {
    if (!results)
      return results.takeError();
    for (auto [value, tensor] : llvm::zip_equal(op->getResults(), *results))
      bind(value, std::move(tensor));
    return llvm::Error::success();
  }

  /// Binds the single result of `op`, or forwards the error.
  llvm::Error bindResult(Operation *op, llvm::Expected<Tensor> result) {
    if (!result)
      return result.takeError();
    bind(op->getResult(0), std::move(*result));
    return llvm::Error::success();
  }

  const RunOptions &options;
  llvm::DenseMap<Value, Tensor> values;
};
} // namespace

llvm::Error Evaluation::evaluate(Operation *op) {
  if (llvm::Error err = checkOperandsBound(op))
    return err;
  auto in = [&](unsigned i) -> const Tensor & {
    return lookup(op->getOperand(i));
  };
  return llvm::TypeSwitch<Operation *, llvm::Error>(op)
      .Case([&](graph::ConstantOp c) {
        return bindResult(op, evaluateConstant(c));
      })
      .Case<graph::NegOp, graph::ExpOp, graph::LogOp, graph::TanhOp,
            graph::AbsOp, graph::SinOp, graph::CosOp, graph::ErfOp,
            graph::SigmoidOp, graph::SiluOp, graph::SqrtOp, graph::RsqrtOp,
            graph::ReluOp, graph::GeluOp>(
          [&](auto) { return bindResult(op, evaluateUnary(op, in(0))); })
      .Case<graph::AddOp, graph::SubOp, graph::MulOp, graph::DivOp,
            graph::PowOp, graph::MaximumOp, graph::MinimumOp, graph::CompareOp>(
          [&](auto) {
            return bindResult(op, evaluateBinary(op, in(0), in(1)));
          })
      // @forward as written is the model in inference (eval_step's view).
      .Case([&](graph::IfTrainingOp) { return bindResult(op, Tensor(in(1))); })
      .Case([&](graph::SelectOp) {
        return bindResult(op, evaluateSelect(op, in(0), in(1), in(2)));
      })
      .Case([&](graph::MatmulOp m) {
        return bindResult(op, evaluateMatmul(m, in(0), in(1)));
      })
      .Case([&](graph::BroadcastOp b) {
        return bindResult(op, evaluateBroadcast(b, in(0)));
      })
      .Case([&](graph::ReduceOp r) {
        return bindResult(op, evaluateReduce(r, in(0)));
      })
      .Case([&](graph::ReshapeOp r) {
        return bindResult(op, evaluateReshape(r, in(0)));
      })
      .Case([&](graph::TransposeOp t) {
        return bindResult(op, evaluateTranspose(t, in(0)));
      })
      .Case([&](graph::SliceOp s) {
        return bindResult(op, evaluateSlice(s, in(0)));
      })
      .Case([&](graph::ConcatOp c) {
        llvm::SmallVector<const Tensor *> inputs;
        for (Value operand : c.getInputs())
          inputs.push_back(&lookup(operand));
        return bindResult(op, evaluateConcat(c, inputs));
      })
      .Case([&](graph::SplitOp s) {
        return bindResults(op, evaluateSplit(s, in(0)));
      })
      .Case([&](graph::EmbeddingOp e) {
        return bindResult(op, evaluateEmbedding(e, in(0), in(1)));
      })
      .Case([&](graph::ArgmaxOp a) {
        return bindResult(op, evaluateArgmax(a, in(0)));
      })
      .Case([&](graph::OneHotOp h) {
        return bindResult(op, evaluateOneHot(h, in(0)));
      })
      .Case([&](graph::LayerNormOp l) {
        return bindResult(op, evaluateLayerNorm(l, in(0), in(1), in(2)));
      })
      .Case([&](graph::SoftmaxOp s) {
        return bindResult(op, evaluateSoftmax(s, in(0)));
      })
      .Case([&](graph::AttentionOp a) {
        return bindResult(op,
                          evaluateAttention(a, in(0), in(1), in(2),
                                            a.getMask() ? &in(3) : nullptr));
      })
      .Case([&](graph::CrossEntropyOp c) {
        return bindResult(op, evaluateCrossEntropy(c, in(0), in(1)));
      })
      .Case([&](graph::DropoutOp d) {
        return bindResult(op, evaluateDropout(d, in(0), options));
      })
      .Case([&](graph::CastOp c) {
        return bindResult(op, evaluateCast(c, in(0)));
      })
      .Case<graph::PadOp, graph::ReluGradOp, graph::GeluGradOp,
            graph::SoftmaxGradOp, graph::LayerNormGradOp,
            graph::ReduceMaxGradOp, graph::AttentionGradOp,
            graph::CrossEntropyGradOp, graph::EmbeddingGradOp>([&](auto) {
        return bindResults(op, evaluateGradOp(op, operandTensors(op)));
      })
      .Case<graph::LrScheduleOp, graph::GlobalNormOp, graph::ClipScaleOp,
            graph::LossScaleUpdateOp, graph::SgdUpdateOp,
            graph::MomentumUpdateOp, graph::AdamWUpdateOp>([&](auto) {
        return bindResults(op, evaluateOptimizerOp(op, operandTensors(op)));
      })
      .Case([&](graph::FusionOp fusion) -> llvm::Error {
        // The region's ops one by one: fusion changes kernels, not values.
        for (Operation &inner : fusion.getBody().front().without_terminator())
          if (llvm::Error err = evaluate(&inner))
            return err;
        for (auto [result, value] : llvm::zip_equal(
                 fusion.getResults(), fusion.getYield().getValues()))
          bind(result, lookup(value));
        return llvm::Error::success();
      })
      .Default([&](Operation *) {
        return makeOpError(op, "is not supported by the interpreter");
      });
}

llvm::Expected<llvm::SmallVector<Tensor>>
kiln::interp::runFunction(func::FuncOp function,
                          llvm::ArrayRef<Tensor> arguments,
                          const RunOptions &options) {
  Operation *fnOp = function;
  if (function.isExternal())
    return makeOpError(fnOp, "@" + function.getSymName() + " has no body");
  if (!function.getBody().hasOneBlock())
    return makeOpError(fnOp, "@" + function.getSymName() +
                                 " must have a single block");
  Block &body = function.getBody().front();
  if (arguments.size() != body.getNumArguments())
    return makeOpError(fnOp, "@" + function.getSymName() + " takes " +
                                 llvm::Twine(body.getNumArguments()) +
                                 " arguments, " +
                                 llvm::Twine(arguments.size()) + " given");

  Evaluation evaluation(options);
  for (auto [index, argument, tensor] :
       llvm::enumerate(body.getArguments(), arguments)) {
    auto type = llvm::dyn_cast<RankedTensorType>(argument.getType());
    if (!type || !tensor.hasType(type)) {
      std::string expected;
      llvm::raw_string_ostream os(expected);
      os << argument.getType();
      return llvm::make_error<InterpreterError>(
          argument.getLoc(), "argument " + std::to_string(index) + " of @" +
                                 function.getSymName().str() + " must be " +
                                 expected + ", got " + tensor.getTypeString());
    }
    Tensor value = tensor;
    value.roundToElementType();
    evaluation.bind(argument, std::move(value));
  }

  for (Operation &op : body) {
    if (auto ret = llvm::dyn_cast<func::ReturnOp>(op)) {
      if (llvm::Error err = evaluation.checkOperandsBound(ret))
        return std::move(err);
      llvm::SmallVector<Tensor> results;
      for (Value operand : ret.getOperands())
        results.push_back(evaluation.lookup(operand));
      return results;
    }
    if (llvm::Error err = evaluation.evaluate(&op))
      return std::move(err);
  }
  return makeOpError(fnOp, "@" + function.getSymName() +
                               " does not end in func.return");
}
