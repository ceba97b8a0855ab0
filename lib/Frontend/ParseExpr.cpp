//===- ParseExpr.cpp - Expressions and types of the Kiln language ---------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// Expression grammar, lowest precedence first:
//
//   expr           := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
//   sum            := multiplicative (('+' | '-') multiplicative)*
//   multiplicative := unary (('*' | '/' | '@') unary)*
//   unary          := '-' unary | power
//   power          := primary ('**' unary)?          (right associative)
//   primary        := INTEGER | FLOAT | SIZE | 'true' | 'false'
//                   | NAME | NAME '(' args ')' | '(' expr ')'
//                   | '(' expr ',' ... ')' | '[' expr, ... ']'
//   args           := (expr ',')* (NAME '=' expr ',')*   (trailing ',' ok)
//
//===----------------------------------------------------------------------===//

#include "ParserImpl.h"

#include "kiln/Frontend/Parser.h"

#include "llvm/Support/Casting.h"

using namespace kiln;
using namespace kiln::ast;
using namespace kiln::detail;
using llvm::SMLoc;
using llvm::SMRange;
using llvm::StringRef;

static unsigned maxHeight(const ExprList &elements) {
  unsigned height = 0;
  for (const ExprPtr &element : elements)
    height = std::max(height, element->getHeight());
  return height;
}

ExprPtr Parser::makeBinary(const Token &op, ExprPtr lhs, ExprPtr rhs) {
  BinaryOp kind;
  switch (op.kind) {
  case Token::Plus:
    kind = BinaryOp::Add;
    break;
  case Token::Minus:
    kind = BinaryOp::Sub;
    break;
  case Token::Star:
    kind = BinaryOp::Mul;
    break;
  case Token::Slash:
    kind = BinaryOp::Div;
    break;
  case Token::At:
    kind = BinaryOp::MatMul;
    break;
  case Token::Less:
    kind = BinaryOp::Less;
    break;
  case Token::LessEqual:
    kind = BinaryOp::LessEqual;
    break;
  case Token::Greater:
    kind = BinaryOp::Greater;
    break;
  case Token::GreaterEqual:
    kind = BinaryOp::GreaterEqual;
    break;
  case Token::EqualEqual:
    kind = BinaryOp::Equal;
    break;
  case Token::NotEqual:
    kind = BinaryOp::NotEqual;
    break;
  default:
    kind = BinaryOp::Pow;
    break;
  }
  auto binary = std::make_unique<BinaryExpr>(kind, op.getLoc(), std::move(lhs),
                                             std::move(rhs));
  if (binary->getHeight() > kMaxExpressionHeight) {
    fatal = true;
    return error(op.getLoc(), "expression is too long or too deeply nested "
                              "(more than " +
                                  llvm::Twine(kMaxExpressionHeight) +
                                  " levels); split it into several "
                                  "statements");
  }
  return binary;
}

static bool isComparisonToken(const Token &token) {
  return token.is(Token::Less) || token.is(Token::LessEqual) ||
         token.is(Token::Greater) || token.is(Token::GreaterEqual) ||
         token.is(Token::EqualEqual) || token.is(Token::NotEqual);
}

ExprPtr Parser::parseExpr() {
  ExprPtr lhs = parseSum();
  if (!lhs || !isComparisonToken(tok()))
    return lhs;
  Token op = consume();
  skipNewlines();
  ExprPtr rhs = parseSum();
  if (!rhs)
    return nullptr;
  // Comparisons do not chain: `a < b < c` would compare a mask with c.
  if (isComparisonToken(tok()))
    return error(tok().getLoc(),
                 "comparisons do not chain; combine masks with '*' "
                 "(a < b < c is (a < b) * (b < c))");
  return makeBinary(op, std::move(lhs), std::move(rhs));
}

ExprPtr Parser::parseSum() {
  ExprPtr lhs = parseMultiplicative();
  while (lhs && (tok().is(Token::Plus) || tok().is(Token::Minus))) {
    Token op = consume();
    skipNewlines(); // An operator at the end of a line continues it.
    ExprPtr rhs = parseMultiplicative();
    if (!rhs)
      return nullptr;
    lhs = makeBinary(op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseMultiplicative() {
  ExprPtr lhs = parseUnary();
  while (lhs && (tok().is(Token::Star) || tok().is(Token::Slash) ||
                 tok().is(Token::At))) {
    Token op = consume();
    skipNewlines();
    ExprPtr rhs = parseUnary();
    if (!rhs)
      return nullptr;
    lhs = makeBinary(op, std::move(lhs), std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (tok().isNot(Token::Minus))
    return parsePower();
  Token minus = consume();
  NestingGuard guard(*this, minus.getLoc());
  if (!guard.ok())
    return nullptr;
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  return std::make_unique<UnaryExpr>(minus.getLoc(), std::move(operand));
}

ExprPtr Parser::parsePower() {
  ExprPtr base = parsePrimary();
  if (!base || tok().isNot(Token::StarStar))
    return base;
  Token op = consume();
  skipNewlines();
  NestingGuard guard(*this, op.getLoc());
  if (!guard.ok())
    return nullptr;
  // The exponent is a unary expression: `2 ** -1`, and `a ** b ** c` is
  // `a ** (b ** c)`.
  ExprPtr exponent = parseUnary();
  if (!exponent)
    return nullptr;
  return makeBinary(op, std::move(base), std::move(exponent));
}

ExprPtr Parser::parsePrimary() {
  const Token &token = tok();
  switch (token.kind) {
  case Token::Integer: {
    Token literal = consume();
    return std::make_unique<IntegerExpr>(literal.intValue, literal.getRange());
  }
  case Token::Float: {
    Token literal = consume();
    return std::make_unique<FloatExpr>(literal.floatValue, literal.getRange());
  }
  case Token::Size: {
    Token literal = consume();
    return std::make_unique<SizeExpr>(literal.intValue, literal.getRange());
  }
  case Token::KwTrue:
  case Token::KwFalse: {
    Token literal = consume();
    return std::make_unique<BoolExpr>(literal.is(Token::KwTrue),
                                      literal.getRange());
  }
  case Token::Identifier: {
    Token name = consume();
    if (tok().is(Token::LParen))
      return parseCall(name);
    return std::make_unique<NameExpr>(name.spelling, name.getRange());
  }
  case Token::LParen:
    return parseParenOrTuple();
  case Token::LBracket:
    return parseList();
  default:
    return errorExpected("an expression");
  }
}

ExprPtr Parser::parseCall(const Token &callee) {
  NestingGuard guard(*this, tok().getLoc());
  if (!guard.ok())
    return nullptr;
  BracketScope scope(*this);
  Token open = consume();
  ExprList args;
  llvm::SmallVector<KeywordArg, 2> keywords;
  while (tok().isNot(Token::RParen)) {
    if (tok().is(Token::Identifier) && peekNext().is(Token::Equal)) {
      Token name = consume();
      consume(); // '='
      for (const KeywordArg &previous : keywords) {
        if (previous.name == name.spelling) {
          error(name.getLoc(), "duplicate keyword argument '" + name.spelling +
                                   "' in call to '" + callee.spelling + "'");
          diagnostics.note(previous.nameLoc, "first given here");
          return nullptr;
        }
      }
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      keywords.push_back({name.spelling, name.getLoc(), std::move(value)});
    } else {
      SMLoc argLoc = tok().getLoc();
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      if (!keywords.empty())
        return error(argLoc, "positional argument after keyword argument '" +
                                 keywords.back().name + "' in call to '" +
                                 callee.spelling + "'");
      args.push_back(std::move(value));
    }
    if (!consumeIf(Token::Comma))
      break;
  }
  if (tok().isNot(Token::RParen))
    return errorExpected("',' or ')' to close '(' at " +
                         diagnostics.formatLineColumn(open.getLoc()));
  consume();
  unsigned height = maxHeight(args);
  for (const KeywordArg &keyword : keywords)
    height = std::max(height, keyword.value->getHeight());
  return std::make_unique<CallExpr>(callee.spelling, rangeFrom(callee.getLoc()),
                                    std::move(args), std::move(keywords),
                                    height + 1);
}

ExprPtr Parser::parseParenOrTuple() {
  NestingGuard guard(*this, tok().getLoc());
  if (!guard.ok())
    return nullptr;
  BracketScope scope(*this);
  Token open = consume();
  ExprPtr first = parseExpr();
  if (!first)
    return nullptr;
  if (tok().is(Token::RParen)) {
    consume();
    // Parentheses only group: the inner expression is the result. Its range
    // stays the inner one, so diagnostics point at the expression itself.
    return first;
  }
  if (tok().isNot(Token::Comma))
    return errorExpected("')' to close '(' at " +
                         diagnostics.formatLineColumn(open.getLoc()));
  ExprList elements;
  elements.push_back(std::move(first));
  while (consumeIf(Token::Comma) && tok().isNot(Token::RParen)) {
    ExprPtr element = parseExpr();
    if (!element)
      return nullptr;
    elements.push_back(std::move(element));
  }
  if (tok().isNot(Token::RParen))
    return errorExpected("',' or ')' to close '(' at " +
                         diagnostics.formatLineColumn(open.getLoc()));
  consume();
  unsigned height = maxHeight(elements) + 1;
  return std::make_unique<TupleExpr>(rangeFrom(open.getLoc()),
                                     std::move(elements), height);
}

ExprPtr Parser::parseList() {
  NestingGuard guard(*this, tok().getLoc());
  if (!guard.ok())
    return nullptr;
  BracketScope scope(*this);
  Token open = consume();
  ExprList elements;
  while (tok().isNot(Token::RBracket)) {
    ExprPtr element = parseExpr();
    if (!element)
      return nullptr;
    elements.push_back(std::move(element));
    if (!consumeIf(Token::Comma))
      break;
  }
  if (tok().isNot(Token::RBracket))
    return errorExpected("',' or ']' to close '[' at " +
                         diagnostics.formatLineColumn(open.getLoc()));
  consume();
  unsigned height = maxHeight(elements) + 1;
  return std::make_unique<ListExpr>(rangeFrom(open.getLoc()),
                                    std::move(elements), height);
}

//===----------------------------------------------------------------------===//
// Dim expressions and types
//===----------------------------------------------------------------------===//

bool Parser::checkDimExpr(const Expr &expr, StringRef what) {
  auto reject = [&](const Expr &culprit, const llvm::Twine &found) {
    error(culprit.getLoc(), what +
                                " must be an integer expression of dims, "
                                "integer literals, + - * / and "
                                "parentheses; found " +
                                found);
    return false;
  };
  switch (expr.getKind()) {
  case Expr::Kind::Integer:
  case Expr::Kind::Name:
    return true;
  case Expr::Kind::Unary:
    return checkDimExpr(llvm::cast<UnaryExpr>(expr).getOperand(), what);
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    if (binary.getOp() == BinaryOp::MatMul || binary.getOp() == BinaryOp::Pow ||
        isComparison(binary.getOp()))
      return reject(expr,
                    "operator '" + getBinaryOpSpelling(binary.getOp()) + "'");
    return checkDimExpr(binary.getLhs(), what) &&
           checkDimExpr(binary.getRhs(), what);
  }
  case Expr::Kind::Float:
    return reject(expr,
                  "the floating-point number '" + expr.getSpelling() + "'");
  case Expr::Kind::Size:
    return reject(expr, "the memory size '" + expr.getSpelling() + "'");
  case Expr::Kind::Bool:
    return reject(expr, "'" + expr.getSpelling() + "'");
  case Expr::Kind::Call:
    return reject(expr,
                  "a call to '" + llvm::cast<CallExpr>(expr).getCallee() + "'");
  case Expr::Kind::List:
    return reject(expr, "a list");
  case Expr::Kind::Tuple:
    return reject(expr, "a tuple");
  }
  return false;
}

ExprPtr Parser::parseDimExpr(StringRef what) {
  ExprPtr expr = parseExpr();
  if (!expr || !checkDimExpr(*expr, what))
    return nullptr;
  return expr;
}

std::optional<TypeExpr> Parser::parseType(StringRef context) {
  if (tok().isNot(Token::Identifier)) {
    errorExpected(("a tensor type such as 'f32[B, D]' " + context).str());
    return std::nullopt;
  }
  Token name = consume();
  std::optional<ElementType> elementType = parseElementTypeName(name.spelling);
  if (!elementType) {
    std::string hint = didYouMean(name.spelling, getElementTypeNames());
    if (hint.empty())
      hint = " (element types are f32, f64, f16, bf16, i32, i64, i1 and bool)";
    error(name.getLoc(), "unknown element type '" + name.spelling + "'" + hint);
    return std::nullopt;
  }
  if (tok().isNot(Token::LBracket)) {
    errorExpected(("'[' and the shape after '" + name.spelling +
                   "' (a scalar is written '" + name.spelling + "[]')")
                      .str());
    return std::nullopt;
  }
  NestingGuard guard(*this, tok().getLoc());
  if (!guard.ok())
    return std::nullopt;
  BracketScope scope(*this);
  Token open = consume();
  TypeExpr type;
  type.elementType = *elementType;
  type.loc = name.getLoc();
  while (tok().isNot(Token::RBracket)) {
    ExprPtr dim = parseDimExpr("a tensor dimension");
    if (!dim)
      return std::nullopt;
    type.dims.push_back(std::move(dim));
    if (!consumeIf(Token::Comma))
      break;
  }
  if (tok().isNot(Token::RBracket)) {
    errorExpected("',' or ']' to close '[' at " +
                  diagnostics.formatLineColumn(open.getLoc()));
    return std::nullopt;
  }
  consume();
  type.range = rangeFrom(name.getLoc());
  return type;
}

std::optional<LocatedName> Parser::parseName(const llvm::Twine &what) {
  if (tok().isNot(Token::Identifier)) {
    if (tok().isKeyword() && tok().isNot(Token::KwTrue) &&
        tok().isNot(Token::KwFalse))
      error(tok().getLoc(), "expected " + what + ", found keyword '" +
                                tok().spelling +
                                "' (keywords cannot be used as names)");
    else
      errorExpected(what);
    return std::nullopt;
  }
  Token name = consume();
  return LocatedName{name.spelling, name.getLoc()};
}
