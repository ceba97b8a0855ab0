//===- ModelEmitter.h - From the AST to graph IR (internal) -----*- C++ -*-===//
//
// Part of Kiln. The emitter evaluates the AST of a model file: dims and loop
// bounds are computed, `for` loops unroll, user functions are instantiated
// per call, and every tensor expression becomes graph ops appended to
// `func.func @forward`. Shapes are checked here, with the same rules the op
// verifiers use (GraphShapes.h), so that a mistake is reported at the model
// line that made it, with both shapes and where each came from.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_FRONTEND_MODELEMITTER_H
#define KILN_LIB_FRONTEND_MODELEMITTER_H

#include "kiln/Frontend/AST.h"
#include "kiln/Frontend/Diagnostics.h"
#include "kiln/Frontend/Frontend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::frontend {

/// The value of an evaluated expression.
struct EvalValue {
  enum class Kind { Tensor, Int, Float, Bool, Size, List, Tuple, Word };
  Kind kind = Kind::Int;
  mlir::Value tensor;
  int64_t intValue = 0;
  double floatValue = 0.0;
  bool boolValue = false;
  /// An unbound bare word, such as `bf16` or `zeros`.
  llvm::StringRef word;
  std::vector<EvalValue> elements;
  /// Where the value was produced: the expression, or the assignment of the
  /// variable it was read from.
  llvm::SMLoc origin;

  static EvalValue ofTensor(mlir::Value value, llvm::SMLoc origin);
  static EvalValue ofInt(int64_t value, llvm::SMLoc origin);
  static EvalValue ofFloat(double value, llvm::SMLoc origin);

  bool isTensor() const { return kind == Kind::Tensor; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float; }
  double asDouble() const {
    return kind == Kind::Int ? static_cast<double>(intValue) : floatValue;
  }
  mlir::RankedTensorType getTensorType() const {
    return llvm::cast<mlir::RankedTensorType>(tensor.getType());
  }
  /// "f32[32, 64]", "integer 3", "a list of 2 values", ...
  std::string describe() const;
};

/// Names visible in a model or function body.
using Scope = llvm::StringMap<EvalValue>;

/// One user-function instantiation being emitted.
struct CallFrame {
  const ast::FnDecl *fn = nullptr;
  /// `block.0.` for the first call of `block` at model level; nested calls
  /// extend it: `block.0.mlp.0.`.
  std::string paramPrefix;
  /// The location of the call, wrapped around the locations of the ops of
  /// the body (`CallSiteLoc`), so diagnostics name the model line too.
  mlir::Location callSite;
};

/// "f32[32, 64]": a tensor type as the language writes it.
std::string describeTensorType(mlir::RankedTensorType type);

/// Whether `name` is a builtin op of the language (`relu`, `attention`, ...).
bool isBuiltinName(llvm::StringRef name);

/// Why `number` cannot be held by `type` (it overflows to infinity, or a
/// nonzero number rounds to zero), or nullopt when it can.
std::optional<std::string> describeMisfit(double number, mlir::FloatType type);

class ModelEmitter {
public:
  /// `dimOverrides` replace the values of the model's dims of those names.
  ModelEmitter(const llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
               Diagnostics &diagnostics,
               llvm::ArrayRef<DimOverride> dimOverrides = {});

  /// Emits the module for `file`; null after an error (already reported).
  mlir::OwningOpRef<mlir::ModuleOp> emit(const ast::Module &file);

  //===--------------------------------------------------------------------===//
  // Shared by the statement, expression and builtin emitters.
  //===--------------------------------------------------------------------===//

  /// Reports an error at `loc`; always returns failure.
  mlir::LogicalResult error(llvm::SMLoc loc, const llvm::Twine &message);
  /// Attaches a note to the last error.
  void note(llvm::SMLoc loc, const llvm::Twine &message);
  /// Notes where a tensor operand came from ("lhs f32[4, 8] comes from here").
  void noteOrigin(const EvalValue &value, llvm::StringRef role);

  /// The MLIR location of `loc`, inside the current call chain.
  mlir::Location getLoc(llvm::SMLoc loc);
  mlir::OpBuilder &getBuilder() { return builder; }
  mlir::MLIRContext &getContext() { return context; }

  mlir::FailureOr<EvalValue> evaluate(const ast::Expr &expr);
  /// Evaluates `expr` and requires a tensor.
  mlir::FailureOr<EvalValue> evaluateTensor(const ast::Expr &expr,
                                            llvm::StringRef what);
  /// Evaluates `expr` and requires an integer (a dim expression).
  mlir::FailureOr<int64_t> evaluateInt(const ast::Expr &expr,
                                       llvm::StringRef what);
  /// Evaluates a list of integers (`[B, T, D]`), or one integer as a list.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  evaluateIntList(const ast::Expr &expr, llvm::StringRef what);

  /// Turns a number into a splat constant of `like`'s type.
  mlir::FailureOr<EvalValue> materializeScalar(const EvalValue &number,
                                               mlir::RankedTensorType like,
                                               llvm::SMLoc loc);
  /// Broadcasts a tensor to `shape` if it differs.
  mlir::Value broadcastTo(mlir::Value tensor, llvm::ArrayRef<int64_t> shape,
                          mlir::Location loc);

  /// Applies a binary operator to two evaluated operands, with NumPy
  /// broadcasting of tensors and constant folding of numbers.
  mlir::FailureOr<EvalValue> emitBinary(ast::BinaryOp op, llvm::SMLoc opLoc,
                                        EvalValue lhs, EvalValue rhs);

  /// Calls a builtin op or a user function.
  mlir::FailureOr<EvalValue> emitCall(const ast::CallExpr &call);

  /// Counts an emitted op against the size limit of a model.
  mlir::LogicalResult countOp(llvm::SMLoc loc);
  /// A fresh dropout stream id.
  int64_t nextDropoutStream() { return dropoutStreams++; }

private:
  // The module (ModelModule.cpp).
  mlir::LogicalResult emitModel(const ast::ModelDecl &model);
  /// After a model statement failed: unbinds the names it would have
  /// defined and marks them poisoned, so that later uses fail without
  /// reporting again while the remaining statements are checked.
  void poisonDefinitions(const ast::Stmt &stmt);
  mlir::LogicalResult finishForward();

  // Statements (ModelEmitter.cpp).
  mlir::LogicalResult emitStatements(const ast::StmtList &body, bool inModel);
  mlir::LogicalResult emitStatement(const ast::Stmt &stmt, bool inModel);
  mlir::LogicalResult emitDims(const ast::DimStmt &stmt);
  mlir::LogicalResult emitInput(const ast::InputStmt &stmt);
  mlir::LogicalResult emitParam(const ast::ParamStmt &stmt);
  mlir::LogicalResult emitAssign(const ast::AssignStmt &stmt);
  mlir::LogicalResult emitFor(const ast::ForStmt &stmt, bool inModel);
  mlir::LogicalResult emitModelReturn(const ast::ReturnStmt &stmt);
  mlir::LogicalResult emitOutput(const ast::OutputStmt &stmt);

  /// Evaluates a declared type, `f32[B, 3*D]`, in the current scope.
  mlir::FailureOr<mlir::RankedTensorType>
  evaluateType(const ast::TypeExpr &type);
  /// Validates the initializer of a parameter of element `type` and returns
  /// its `graph.init` dictionary.
  mlir::FailureOr<mlir::DictionaryAttr> evaluateInit(const ast::Expr &init,
                                                     mlir::FloatType type);
  /// Adds an argument to @forward.
  mlir::Value addForwardArgument(mlir::Type type, llvm::SMLoc loc,
                                 llvm::StringRef attrName, llvm::StringRef name,
                                 mlir::DictionaryAttr init = {});

  // User functions (FunctionCalls.cpp).
public:
  mlir::FailureOr<EvalValue> callUserFunction(const ast::FnDecl &fn,
                                              const ast::CallExpr &call);

  // The train block (TrainBlock.cpp).
  mlir::FailureOr<mlir::DictionaryAttr>
  emitTrainBlock(const ast::TrainDecl &train);

  /// Looks a name up in the current scope, then among the dims.
  const EvalValue *lookup(llvm::StringRef name) const;
  /// Whether `name` is unbound because the statement defining it failed.
  bool isPoisoned(llvm::StringRef name) const {
    return poisoned.contains(name);
  }
  /// Makes `next` the value the train step gives `buffer` (a value bound by
  /// a `buffer` declaration; each is updated once). `role` names the
  /// argument in errors.
  mlir::LogicalResult updateBuffer(const EvalValue &buffer, mlir::Value next,
                                   llvm::SMLoc loc, llvm::StringRef role);
  /// Errors reported so far.
  unsigned getNumErrors() const { return diagnostics.getNumErrors(); }
  /// " (l = 2, i = 0)": the enclosing loops' variables, innermost last, or
  /// "" outside loops; errors inside a call name the iteration with it.
  std::string describeIteration() const;
  /// Names in scope, for suggestions.
  std::vector<llvm::StringRef> namesInScope() const;

private:
  const llvm::SourceMgr &sourceMgr;
  mlir::MLIRContext &context;
  Diagnostics &diagnostics;
  mlir::OpBuilder builder;
  mlir::StringAttr fileName;

  const ast::Module *file = nullptr;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp forward;
  llvm::SmallVector<mlir::Attribute> argAttrs;

  /// Dims, in declaration order and by name.
  llvm::SmallVector<std::pair<llvm::StringRef, int64_t>> dimList;
  llvm::StringMap<int64_t> dims;
  std::optional<llvm::StringRef> batchDim;
  /// Values given for dims from outside the model, and whether each has
  /// met its dim.
  llvm::ArrayRef<DimOverride> dimOverrides;
  llvm::SmallVector<bool> dimOverrideUsed;

  /// The innermost scope is the current one; a function call pushes one.
  std::vector<Scope> scopes;
  std::vector<CallFrame> frames;
  /// Calls of each function so far, per enclosing prefix:
  /// "" + "block" -> 2 means block.0 and block.1 exist.
  llvm::StringMap<int64_t> callCounts;
  /// Every parameter name, with where it was declared.
  llvm::StringMap<llvm::SMLoc> paramNames;
  llvm::StringMap<llvm::SMLoc> inputNames;
  /// Buffers by their @forward argument: qualified name and declaration.
  struct BufferInfo {
    std::string name;
    llvm::SMLoc loc;
  };
  llvm::DenseMap<mlir::Value, BufferInfo> bufferNames;
  /// Buffers given an update, with where (each is updated once).
  llvm::StringMap<llvm::SMLoc> bufferUpdates;
  /// Names left unbound by a failed statement (poisonDefinitions).
  llvm::StringSet<> poisoned;
  /// The loops being emitted, outermost first: variable and value.
  llvm::SmallVector<std::pair<llvm::StringRef, int64_t>> loops;

  /// Results of @forward: the loss first, then outputs in order.
  struct Result {
    std::string name;
    mlir::Value value;
    bool isLoss;
    llvm::SMLoc loc;
    /// The next value of the buffer `name` (a `graph.update` result).
    bool isUpdate = false;
  };
  std::vector<Result> results;
  bool hasReturn = false;

  int64_t emittedOps = 0;
  int64_t dropoutStreams = 0;
};

} // namespace kiln::frontend

#endif // KILN_LIB_FRONTEND_MODELEMITTER_H
