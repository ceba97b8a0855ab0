//===- AST.cpp - Abstract syntax tree of the Kiln model language ----------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/AST.h"
#include "kiln/Frontend/Diagnostics.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace kiln;
using namespace kiln::ast;
using llvm::StringRef;

StringRef ast::getBinaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::MatMul:
    return "@";
  case BinaryOp::Pow:
    return "**";
  case BinaryOp::Maximum:
    return "maximum";
  case BinaryOp::Minimum:
    return "minimum";
  case BinaryOp::Less:
    return "<";
  case BinaryOp::LessEqual:
    return "<=";
  case BinaryOp::Greater:
    return ">";
  case BinaryOp::GreaterEqual:
    return ">=";
  case BinaryOp::Equal:
    return "==";
  case BinaryOp::NotEqual:
    return "!=";
  }
  return "?";
}

StringRef ast::getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  case ElementType::I1:
    return "i1";
  }
  return "?";
}

std::optional<ElementType> ast::parseElementTypeName(StringRef name) {
  return llvm::StringSwitch<std::optional<ElementType>>(name)
      .Case("f32", ElementType::F32)
      .Case("f64", ElementType::F64)
      .Case("f16", ElementType::F16)
      .Case("bf16", ElementType::BF16)
      .Case("i32", ElementType::I32)
      .Case("i64", ElementType::I64)
      .Case("i1", ElementType::I1)
      .Case("bool", ElementType::I1)
      .Default(std::nullopt);
}

llvm::ArrayRef<StringRef> ast::getElementTypeNames() {
  static const StringRef names[] = {"f32", "f64", "f16", "bf16",
                                    "i32", "i64", "i1",  "bool"};
  return names;
}

const KeywordArg *CallExpr::findKeyword(StringRef name) const {
  for (const KeywordArg &keyword : keywords)
    if (keyword.name == name)
      return &keyword;
  return nullptr;
}

const TrainEntry *TrainDecl::find(StringRef key) const {
  for (const TrainEntry &entry : entries)
    if (entry.key.name == key)
      return &entry;
  return nullptr;
}

const FnDecl *Module::findFunction(StringRef name) const {
  for (const auto &function : functions)
    if (function->name.name == name)
      return function.get();
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static void printElements(const ExprList &elements, llvm::raw_ostream &os) {
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i != 0)
      os << ' ';
    printExpr(*elements[i], os);
  }
}

void ast::printExpr(const Expr &expr, llvm::raw_ostream &os) {
  // Recursion is bounded: the parser limits expression height.
  switch (expr.getKind()) {
  case Expr::Kind::Integer:
    os << llvm::cast<IntegerExpr>(expr).getValue();
    return;
  case Expr::Kind::Float:
  case Expr::Kind::Size:
    os << expr.getSpelling();
    return;
  case Expr::Kind::Bool:
    os << (llvm::cast<BoolExpr>(expr).getValue() ? "true" : "false");
    return;
  case Expr::Kind::Name:
    os << llvm::cast<NameExpr>(expr).getName();
    return;
  case Expr::Kind::Unary:
    os << "(neg ";
    printExpr(llvm::cast<UnaryExpr>(expr).getOperand(), os);
    os << ')';
    return;
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    os << '(' << getBinaryOpSpelling(binary.getOp()) << ' ';
    printExpr(binary.getLhs(), os);
    os << ' ';
    printExpr(binary.getRhs(), os);
    os << ')';
    return;
  }
  case Expr::Kind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    os << "(call " << call.getCallee();
    for (const ExprPtr &arg : call.getArgs()) {
      os << ' ';
      printExpr(*arg, os);
    }
    for (const KeywordArg &keyword : call.getKeywords()) {
      os << ' ' << keyword.name << '=';
      printExpr(*keyword.value, os);
    }
    os << ')';
    return;
  }
  case Expr::Kind::List:
    os << '[';
    printElements(llvm::cast<ListExpr>(expr).getElements(), os);
    os << ']';
    return;
  case Expr::Kind::Tuple:
    os << "(tuple ";
    printElements(llvm::cast<TupleExpr>(expr).getElements(), os);
    os << ')';
    return;
  }
}

std::string ast::printExpr(const Expr &expr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printExpr(expr, os);
  return text;
}

void ast::printType(const TypeExpr &type, llvm::raw_ostream &os) {
  os << getElementTypeName(type.elementType) << '[';
  for (size_t i = 0; i < type.dims.size(); ++i) {
    if (i != 0)
      os << ", ";
    printExpr(*type.dims[i], os);
  }
  os << ']';
}

namespace {
/// Prints statements with indentation and locations.
class ModulePrinter {
public:
  ModulePrinter(const llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os)
      : sourceMgr(sourceMgr), os(os) {}

  void printHeader(unsigned indent, StringRef what, llvm::SMLoc loc) {
    os.indent(indent) << what << " @" << formatLineColumn(sourceMgr, loc);
  }

  void printBody(const StmtList &body, unsigned indent) {
    for (const StmtPtr &stmt : body)
      printStmt(*stmt, indent);
  }

  void printStmt(const Stmt &stmt, unsigned indent);

private:
  const llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
};
} // namespace

void ModulePrinter::printStmt(const Stmt &stmt, unsigned indent) {
  switch (stmt.getKind()) {
  case Stmt::Kind::Dim: {
    printHeader(indent, "dim", stmt.getLoc());
    StringRef separator = " ";
    for (const DimBinding &binding : llvm::cast<DimStmt>(stmt).getBindings()) {
      os << separator << binding.name.name << " = ";
      printExpr(*binding.value, os);
      separator = ", ";
    }
    break;
  }
  case Stmt::Kind::Batch:
    printHeader(indent, "batch", stmt.getLoc());
    os << ' ' << llvm::cast<BatchStmt>(stmt).getDim().name;
    break;
  case Stmt::Kind::Input: {
    const auto &input = llvm::cast<InputStmt>(stmt);
    printHeader(indent, "input", stmt.getLoc());
    os << ' ' << input.getName().name << " : ";
    printType(input.getType(), os);
    break;
  }
  case Stmt::Kind::Param: {
    const auto &param = llvm::cast<ParamStmt>(stmt);
    printHeader(indent, param.isBuffer() ? "buffer" : "param", stmt.getLoc());
    os << ' ' << param.getName().name << " : ";
    printType(param.getType(), os);
    os << " = ";
    printExpr(param.getInit(), os);
    break;
  }
  case Stmt::Kind::Assign: {
    const auto &assign = llvm::cast<AssignStmt>(stmt);
    printHeader(indent, "assign", stmt.getLoc());
    StringRef separator = " ";
    for (const LocatedName &target : assign.getTargets()) {
      os << separator << target.name;
      separator = ", ";
    }
    os << " = ";
    printExpr(assign.getValue(), os);
    break;
  }
  case Stmt::Kind::For: {
    const auto &loop = llvm::cast<ForStmt>(stmt);
    printHeader(indent, "for", stmt.getLoc());
    os << ' ' << loop.getVar().name << " in ";
    printExpr(loop.getBegin(), os);
    os << "..";
    printExpr(loop.getEnd(), os);
    os << '\n';
    printBody(loop.getBody(), indent + 2);
    return;
  }
  case Stmt::Kind::Return: {
    printHeader(indent, "return", stmt.getLoc());
    StringRef separator = " ";
    for (const ExprPtr &value : llvm::cast<ReturnStmt>(stmt).getValues()) {
      os << separator;
      printExpr(*value, os);
      separator = ", ";
    }
    break;
  }
  case Stmt::Kind::Output: {
    const auto &output = llvm::cast<OutputStmt>(stmt);
    printHeader(indent, "output", stmt.getLoc());
    os << ' ' << output.getName().name << " = ";
    printExpr(output.getValue(), os);
    break;
  }
  }
  os << '\n';
}

void ast::printModule(const Module &module, const llvm::SourceMgr &sourceMgr,
                      llvm::raw_ostream &os) {
  ModulePrinter printer(sourceMgr, os);
  for (const auto &function : module.functions) {
    printer.printHeader(0, "fn", function->range.Start);
    os << ' ' << function->name.name << '(';
    StringRef separator = "";
    for (const FnArg &arg : function->args) {
      os << separator << arg.name.name << ": ";
      printType(arg.type, os);
      separator = ", ";
    }
    os << ") -> ";
    if (function->hasTupleResult)
      os << '(';
    separator = "";
    for (const TypeExpr &result : function->results) {
      os << separator;
      printType(result, os);
      separator = ", ";
    }
    if (function->hasTupleResult)
      os << ')';
    os << '\n';
    printer.printBody(function->body, 2);
  }
  if (module.model) {
    printer.printHeader(0, "model", module.model->range.Start);
    os << ' ' << module.model->name.name << '\n';
    printer.printBody(module.model->body, 2);
  }
  if (module.train) {
    printer.printHeader(0, "train", module.train->range.Start);
    os << '\n';
    for (const TrainEntry &entry : module.train->entries) {
      printer.printHeader(2, entry.key.name, entry.key.loc);
      os << " = ";
      printExpr(*entry.value, os);
      os << '\n';
    }
  }
}
