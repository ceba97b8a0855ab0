//===- AST.h - Abstract syntax tree of the Kiln model language --*- C++ -*-===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// The AST is what the parser produces and IR generation walks. It is a plain
// tree of owned nodes: expressions (Expr), statements (Stmt) and the three
// top-level declarations (FnDecl, ModelDecl, TrainDecl) held by a Module.
//
// Every node records where it came from: getLoc() is the location a diagnostic
// should point at (the operator of a binary expression, the callee of a call,
// the keyword of a statement), getRange() the full source extent. Names are
// StringRefs into the source buffer, so the llvm::SourceMgr that owns the
// buffer must outlive the AST.
//
// Node classes support LLVM-style RTTI: llvm::isa / dyn_cast / cast and
// llvm::TypeSwitch work on Expr and Stmt.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_AST_H
#define KILN_FRONTEND_AST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
class SourceMgr;
} // namespace llvm

namespace kiln {
namespace ast {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Base class of all expressions.
class Expr {
public:
  enum class Kind {
    Integer,
    Float,
    Bool,
    Size,
    Name,
    Unary,
    Binary,
    Call,
    List,
    Tuple
  };

  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  /// The location diagnostics should point at.
  llvm::SMLoc getLoc() const { return loc; }
  /// The full source extent of the expression.
  llvm::SMRange getRange() const { return range; }
  /// Height of the expression tree (a leaf is 1). The parser bounds it, so
  /// recursive walks over an AST are safe.
  unsigned getHeight() const { return height; }
  /// The source text of the expression.
  llvm::StringRef getSpelling() const {
    return llvm::StringRef(range.Start.getPointer(),
                           range.End.getPointer() - range.Start.getPointer());
  }

protected:
  Expr(Kind kind, llvm::SMLoc loc, llvm::SMRange range, unsigned height = 1)
      : kind(kind), loc(loc), range(range), height(height) {}

private:
  Kind kind;
  llvm::SMLoc loc;
  llvm::SMRange range;
  unsigned height;
};

using ExprPtr = std::unique_ptr<Expr>;
using ExprList = llvm::SmallVector<ExprPtr, 4>;

/// An integer literal: `64`. Always non-negative; `-1` is a UnaryExpr.
class IntegerExpr : public Expr {
public:
  IntegerExpr(int64_t value, llvm::SMRange range)
      : Expr(Kind::Integer, range.Start, range), value(value) {}
  int64_t getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Integer; }

private:
  int64_t value;
};

/// A floating-point literal: `3e-4`, `0.02`.
class FloatExpr : public Expr {
public:
  FloatExpr(double value, llvm::SMRange range)
      : Expr(Kind::Float, range.Start, range), value(value) {}
  double getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Float; }

private:
  double value;
};

/// `true` or `false`.
class BoolExpr : public Expr {
public:
  BoolExpr(bool value, llvm::SMRange range)
      : Expr(Kind::Bool, range.Start, range), value(value) {}
  bool getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Bool; }

private:
  bool value;
};

/// A memory size: `40GiB` (binary units), `2KB` (decimal units), `512B`.
class SizeExpr : public Expr {
public:
  SizeExpr(int64_t bytes, llvm::SMRange range)
      : Expr(Kind::Size, range.Start, range), bytes(bytes) {}
  int64_t getBytes() const { return bytes; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Size; }

private:
  int64_t bytes;
};

/// A reference to a variable, dim, function argument, parameter, loop variable
/// or a bare-word constant such as `zeros` or `bf16`.
class NameExpr : public Expr {
public:
  NameExpr(llvm::StringRef name, llvm::SMRange range)
      : Expr(Kind::Name, range.Start, range), name(name) {}
  llvm::StringRef getName() const { return name; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }

private:
  llvm::StringRef name;
};

/// `-x`. The only unary operator is negation.
class UnaryExpr : public Expr {
public:
  UnaryExpr(llvm::SMLoc opLoc, ExprPtr operand)
      : Expr(Kind::Unary, opLoc, {opLoc, operand->getRange().End},
             operand->getHeight() + 1),
        operand(std::move(operand)) {}
  const Expr &getOperand() const { return *operand; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Unary; }

private:
  ExprPtr operand;
};

/// The infix operators.
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  MatMul,
  Pow,
  Maximum,
  Minimum,
  // Comparisons, the lowest precedence: a 1/0 mask of the operands' type.
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  Equal,
  NotEqual,
};

/// Whether `op` is one of `<`, `<=`, `>`, `>=`, `==`, `!=`.
inline bool isComparison(BinaryOp op) { return op >= BinaryOp::Less; }

/// Returns the operator as written: "+", "-", "*", "/", "@", "**"; the
/// elementwise builtins that share the operators' broadcasting
/// (`maximum(a, b)`, `minimum(a, b)`) by their names.
llvm::StringRef getBinaryOpSpelling(BinaryOp op);

/// `lhs op rhs`; getLoc() is the operator.
class BinaryExpr : public Expr {
public:
  BinaryExpr(BinaryOp op, llvm::SMLoc opLoc, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::Binary, opLoc, {lhs->getRange().Start, rhs->getRange().End},
             std::max(lhs->getHeight(), rhs->getHeight()) + 1),
        op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  BinaryOp getOp() const { return op; }
  const Expr &getLhs() const { return *lhs; }
  const Expr &getRhs() const { return *rhs; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }

private:
  BinaryOp op;
  ExprPtr lhs, rhs;
};

/// `name = value` inside a call's argument list.
struct KeywordArg {
  llvm::StringRef name;
  llvm::SMLoc nameLoc;
  ExprPtr value;
};

/// `callee(arg, ..., key=value, ...)`: a builtin, a user function or an
/// initializer/optimizer/schedule constructor. Positional arguments always
/// precede keyword arguments; keywords are unique.
class CallExpr : public Expr {
public:
  CallExpr(llvm::StringRef callee, llvm::SMRange range, ExprList args,
           llvm::SmallVector<KeywordArg, 2> keywords, unsigned height)
      : Expr(Kind::Call, range.Start, range, height), callee(callee),
        args(std::move(args)), keywords(std::move(keywords)) {}
  llvm::StringRef getCallee() const { return callee; }
  llvm::SMLoc getCalleeLoc() const { return getLoc(); }
  const ExprList &getArgs() const { return args; }
  const llvm::SmallVector<KeywordArg, 2> &getKeywords() const {
    return keywords;
  }
  /// Returns the keyword argument called \p name, or null.
  const KeywordArg *findKeyword(llvm::StringRef name) const;
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }

private:
  llvm::StringRef callee;
  ExprList args;
  llvm::SmallVector<KeywordArg, 2> keywords;
};

/// `[a, b, c]`: shapes, axes and permutations.
class ListExpr : public Expr {
public:
  ListExpr(llvm::SMRange range, ExprList elements, unsigned height)
      : Expr(Kind::List, range.Start, range, height),
        elements(std::move(elements)) {}
  const ExprList &getElements() const { return elements; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::List; }

private:
  ExprList elements;
};

/// `(a, b)`: a parenthesised, comma-separated group such as `betas=(0.9,
/// 0.95)`. A single parenthesised expression without a comma is not a tuple.
class TupleExpr : public Expr {
public:
  TupleExpr(llvm::SMRange range, ExprList elements, unsigned height)
      : Expr(Kind::Tuple, range.Start, range, height),
        elements(std::move(elements)) {}
  const ExprList &getElements() const { return elements; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Tuple; }

private:
  ExprList elements;
};

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// Element types of tensors.
enum class ElementType { F32, F64, F16, BF16, I32, I64, I1 };

/// Returns the canonical spelling: "f32", ..., "i1".
llvm::StringRef getElementTypeName(ElementType type);
/// Parses "f32", ..., "i1" and the alias "bool" (= i1).
std::optional<ElementType> parseElementTypeName(llvm::StringRef name);
/// All accepted spellings, for "did you mean" suggestions.
llvm::ArrayRef<llvm::StringRef> getElementTypeNames();

/// `f32[B, T, 3*D]`; `f32[]` is a scalar. Kept in SmallVectors rather than
/// std::vectors: SmallVector moves its elements when it grows, whereas
/// std::vector would try to copy this move-only type. Each dim is an integer
/// expression over integer literals, names, + - * / and parentheses (the parser
/// has checked that; IR generation evaluates it).
struct TypeExpr {
  ElementType elementType = ElementType::F32;
  /// Location of the element type name.
  llvm::SMLoc loc;
  /// From the element type to the closing ']'.
  llvm::SMRange range;
  ExprList dims;

  bool isScalar() const { return dims.empty(); }
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

/// Base class of statements in function and model bodies.
class Stmt {
public:
  enum class Kind { Dim, Batch, Input, Param, Assign, For, Return, Output };

  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  /// The statement's keyword, or its first target for assignments.
  llvm::SMLoc getLoc() const { return range.Start; }
  llvm::SMRange getRange() const { return range; }

protected:
  Stmt(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}

private:
  Kind kind;
  llvm::SMRange range;
};

using StmtPtr = std::unique_ptr<Stmt>;
/// The statements of a `{ ... }` body, in source order.
using StmtList = std::vector<StmtPtr>;

/// A name with the location where it is written.
struct LocatedName {
  llvm::StringRef name;
  llvm::SMLoc loc;
};

/// One `NAME = expr` of a dim statement.
struct DimBinding {
  LocatedName name;
  ExprPtr value;
};

/// `dim B = 32, T = 64` (model body only).
class DimStmt : public Stmt {
public:
  DimStmt(llvm::SMRange range, std::vector<DimBinding> bindings)
      : Stmt(Kind::Dim, range), bindings(std::move(bindings)) {}
  const std::vector<DimBinding> &getBindings() const { return bindings; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Dim; }

private:
  std::vector<DimBinding> bindings;
};

/// `batch = B` (model body only): names the batch dim.
class BatchStmt : public Stmt {
public:
  BatchStmt(llvm::SMRange range, LocatedName dim)
      : Stmt(Kind::Batch, range), dim(dim) {}
  const LocatedName &getDim() const { return dim; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Batch; }

private:
  LocatedName dim;
};

/// `input tokens : i32[B, T]` (model body only).
class InputStmt : public Stmt {
public:
  InputStmt(llvm::SMRange range, LocatedName name, TypeExpr type)
      : Stmt(Kind::Input, range), name(name), type(std::move(type)) {}
  const LocatedName &getName() const { return name; }
  const TypeExpr &getType() const { return type; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Input; }

private:
  LocatedName name;
  TypeExpr type;
};

/// `param w : f32[D, D] = normal(0.02)`. The initializer is an expression:
/// a bare name (`zeros`, `ones`) or a call (`normal(0.02)`,
/// `uniform(-0.1, 0.1)`, `constant(0.5)`); IR generation validates it.
class ParamStmt : public Stmt {
public:
  ParamStmt(llvm::SMRange range, LocatedName name, TypeExpr type, ExprPtr init,
            bool buffer = false)
      : Stmt(Kind::Param, range), name(name), type(std::move(type)),
        init(std::move(init)), buffer(buffer) {}
  const LocatedName &getName() const { return name; }
  const TypeExpr &getType() const { return type; }
  const Expr &getInit() const { return *init; }
  /// `buffer NAME : TYPE = INIT`: non-trainable state (batch_norm's running
  /// statistics) rather than a parameter.
  bool isBuffer() const { return buffer; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Param; }

private:
  LocatedName name;
  TypeExpr type;
  ExprPtr init;
  bool buffer;
};

/// `x = expr` or `q, k, v = expr` (the value then is a tuple-valued call).
class AssignStmt : public Stmt {
public:
  AssignStmt(llvm::SMRange range, llvm::SmallVector<LocatedName, 1> targets,
             ExprPtr value)
      : Stmt(Kind::Assign, range), targets(std::move(targets)),
        value(std::move(value)) {}
  const llvm::SmallVector<LocatedName, 1> &getTargets() const {
    return targets;
  }
  const Expr &getValue() const { return *value; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }

private:
  llvm::SmallVector<LocatedName, 1> targets;
  ExprPtr value;
};

/// `for l in begin..end { body }`: unrolled; `l` takes begin, ..., end - 1.
class ForStmt : public Stmt {
public:
  ForStmt(llvm::SMRange range, LocatedName var, ExprPtr begin, ExprPtr end,
          StmtList body)
      : Stmt(Kind::For, range), var(var), begin(std::move(begin)),
        end(std::move(end)), body(std::move(body)) {}
  const LocatedName &getVar() const { return var; }
  const Expr &getBegin() const { return *begin; }
  const Expr &getEnd() const { return *end; }
  const StmtList &getBody() const { return body; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::For; }

private:
  LocatedName var;
  ExprPtr begin, end;
  StmtList body;
};

/// `return expr` or `return a, b` (functions); in the model, exactly one
/// value: the loss.
class ReturnStmt : public Stmt {
public:
  ReturnStmt(llvm::SMRange range, ExprList values)
      : Stmt(Kind::Return, range), values(std::move(values)) {}
  const ExprList &getValues() const { return values; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Return; }

private:
  ExprList values;
};

/// `output logits = expr` (model body only).
class OutputStmt : public Stmt {
public:
  OutputStmt(llvm::SMRange range, LocatedName name, ExprPtr value)
      : Stmt(Kind::Output, range), name(name), value(std::move(value)) {}
  const LocatedName &getName() const { return name; }
  const Expr &getValue() const { return *value; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Output; }

private:
  LocatedName name;
  ExprPtr value;
};

//===----------------------------------------------------------------------===//
// Top-level declarations
//===----------------------------------------------------------------------===//

/// `name: TYPE` in a function's parameter list.
struct FnArg {
  LocatedName name;
  TypeExpr type;
};

/// `fn name(args) -> result { body }`. The body ends with a return statement.
struct FnDecl {
  LocatedName name;
  /// From `fn` to the closing '}'.
  llvm::SMRange range;
  llvm::SmallVector<FnArg, 4> args;
  /// One entry for `-> T`, several for `-> (T1, T2)`.
  llvm::SmallVector<TypeExpr, 1> results;
  /// True if the results were written as a parenthesised list.
  bool hasTupleResult = false;
  StmtList body;
};

/// `model name { body }`.
struct ModelDecl {
  LocatedName name;
  llvm::SMRange range;
  StmtList body;
};

/// One `key = value` line of the train block.
struct TrainEntry {
  LocatedName key;
  ExprPtr value;
};

/// `train { key = value ... }`. Keys are unique; IR generation validates
/// them and their values.
struct TrainDecl {
  llvm::SMRange range;
  std::vector<TrainEntry> entries;

  /// Returns the entry for \p key, or null.
  const TrainEntry *find(llvm::StringRef key) const;
};

/// A parsed `.kiln` file: functions in source order, the model, and the
/// optional train block.
struct Module {
  unsigned bufferId = 0;
  std::vector<std::unique_ptr<FnDecl>> functions;
  std::unique_ptr<ModelDecl> model;
  std::unique_ptr<TrainDecl> train;

  /// Returns the function called \p name, or null.
  const FnDecl *findFunction(llvm::StringRef name) const;
};

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

/// Prints \p expr as a fully parenthesised S-expression:
/// `(+ x (@ h w))`, `(call layer_norm x g b eps=1e-05)`, `[B T]`.
void printExpr(const Expr &expr, llvm::raw_ostream &os);
std::string printExpr(const Expr &expr);

/// Prints a type as `f32[B, (* 3 D)]`.
void printType(const TypeExpr &type, llvm::raw_ostream &os);

/// Prints the whole module, one statement per line with its line:col, for
/// tests and `--dump-ast`.
void printModule(const Module &module, const llvm::SourceMgr &sourceMgr,
                 llvm::raw_ostream &os);

} // namespace ast
} // namespace kiln

#endif // KILN_FRONTEND_AST_H
