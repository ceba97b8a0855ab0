//===- Parser.cpp - Declarations and statements of the Kiln language ------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// File grammar (statements end at a newline or ';'; inside brackets, and
// after a ',' or a binary operator, a line break continues the statement):
//
//   file   := (fn | model | train)*                 exactly one model
//   fn     := 'fn' NAME '(' (NAME ':' type),* ')' '->' (type | '(' type,+ ')')
//             block
//   model  := 'model' NAME block
//   train  := 'train' '{' (NAME '=' expr)* '}'
//   block  := '{' stmt* '}'
//   stmt   := 'dim' NAME '=' expr (',' NAME '=' expr)*          model only
//           | 'batch' '=' NAME                                  model only
//           | 'input' NAME ':' type                             model only
//           | 'output' NAME '=' expr                            model only
//           | 'param' NAME ':' type '=' expr
//           | NAME (',' NAME)* '=' expr
//           | 'for' NAME 'in' expr '..' expr block
//           | 'return' expr (',' expr)*
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/Parser.h"
#include "ParserImpl.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/SourceMgr.h"

using namespace kiln;
using namespace kiln::ast;
using namespace kiln::detail;
using llvm::SMLoc;
using llvm::SMRange;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Tokens and errors
//===----------------------------------------------------------------------===//

Parser::Parser(const llvm::SourceMgr &sourceMgr, unsigned bufferId,
               Diagnostics &diagnostics)
    : sourceMgr(sourceMgr), bufferId(bufferId), diagnostics(diagnostics),
      lexer(sourceMgr, bufferId, diagnostics) {
  lastTokenEnd = SMLoc::getFromPointer(
      sourceMgr.getMemoryBuffer(bufferId)->getBufferStart());
}

const Token &Parser::tok() {
  if (lookahead.empty())
    lookahead.push_back(lexer.lex());
  while (bracketDepth > 0 && lookahead.front().is(Token::Newline)) {
    lookahead.pop_front();
    if (lookahead.empty())
      lookahead.push_back(lexer.lex());
  }
  return lookahead.front();
}

const Token &Parser::peekNext() {
  tok();
  size_t index = 1;
  while (true) {
    while (lookahead.size() <= index)
      lookahead.push_back(lexer.lex());
    if (bracketDepth == 0 || lookahead[index].isNot(Token::Newline))
      return lookahead[index];
    ++index;
  }
}

Token Parser::consume() {
  Token token = tok();
  if (token.isNot(Token::Eof)) {
    lookahead.pop_front();
    // Ranges and "missing here" locations end at the last significant token.
    if (token.isNot(Token::Newline))
      lastTokenEnd = token.getEndLoc();
  }
  return token;
}

bool Parser::consumeIf(Token::Kind kind) {
  if (tok().isNot(kind))
    return false;
  consume();
  return true;
}

void Parser::skipNewlines() {
  while (tok().is(Token::Newline))
    consume();
}

Parser::NestingGuard::NestingGuard(Parser &parser, SMLoc loc) : parser(parser) {
  withinLimit = ++parser.nestingDepth <= kMaxNestingDepth;
  if (!withinLimit && !parser.fatal) {
    parser.fatal = true;
    parser.error(loc, "nesting is too deep (more than " +
                          llvm::Twine(kMaxNestingDepth) +
                          " levels of brackets, blocks or operators)");
  }
}

std::nullptr_t Parser::error(SMLoc loc, const llvm::Twine &message) {
  diagnostics.error(loc, message);
  return nullptr;
}

SMLoc Parser::getMissingLoc() {
  const char *previous = lastTokenEnd.getPointer();
  const char *next = tok().getLoc().getPointer();
  if (previous < next && StringRef(previous, next - previous).contains('\n'))
    return lastTokenEnd;
  return tok().getLoc();
}

std::string Parser::describeCurrent() {
  if (tok().is(Token::Newline) || getMissingLoc() != tok().getLoc())
    return "end of line";
  return tok().describe();
}

std::nullptr_t Parser::errorExpected(const llvm::Twine &what) {
  if (tok().is(Token::Error))
    return nullptr; // The lexer has reported it.
  return error(getMissingLoc(),
               "expected " + what + ", found " + describeCurrent());
}

std::nullptr_t Parser::errorUnexpected(const llvm::Twine &what) {
  if (tok().is(Token::Error))
    return nullptr; // The lexer has reported it.
  return error(tok().getLoc(),
               "expected " + what + ", found " + tok().describe());
}

bool Parser::expect(Token::Kind kind, const llvm::Twine &context) {
  if (consumeIf(kind))
    return true;
  errorExpected(getTokenKindName(kind) + " " + context);
  return false;
}

bool Parser::expectCloser(Token::Kind closer, const Token &opener) {
  if (consumeIf(closer))
    return true;
  errorExpected(getTokenKindName(closer) + " to close " +
                getTokenKindName(opener.kind) + " at " +
                diagnostics.formatLineColumn(opener.getLoc()));
  return false;
}

//===----------------------------------------------------------------------===//
// Error recovery
//===----------------------------------------------------------------------===//

/// Keywords that can only start a statement or declaration.
static bool startsStatement(Token::Kind kind) {
  switch (kind) {
  case Token::KwFn:
  case Token::KwModel:
  case Token::KwTrain:
  case Token::KwParam:
  case Token::KwInput:
  case Token::KwOutput:
  case Token::KwDim:
  case Token::KwFor:
  case Token::KwReturn:
    return true;
  default:
    return false;
  }
}

void Parser::synchronizeStatement() {
  bracketDepth = 0;
  unsigned parens = 0, braces = 0;
  bool consumedAny = false;
  while (true) {
    const Token &token = tok();
    switch (token.kind) {
    case Token::Eof:
      return;
    case Token::LParen:
    case Token::LBracket:
      ++parens;
      break;
    case Token::RParen:
    case Token::RBracket:
      if (parens > 0)
        --parens;
      break;
    case Token::LBrace:
      ++braces;
      break;
    case Token::RBrace:
      if (braces == 0)
        return; // Closes the enclosing block: leave it to the block.
      if (--braces == 0) {
        consume(); // The skipped statement owned this block.
        return;
      }
      break;
    case Token::Newline:
    case Token::Semicolon:
      if (braces == 0) {
        consume();
        return;
      }
      break;
    default:
      // A statement keyword cannot be part of an expression: an unclosed
      // bracket ended before it. Stop there, unless it is the keyword of the
      // failed statement itself.
      if (braces == 0 && startsStatement(token.kind) &&
          (consumedAny || getMissingLoc() != token.getLoc()))
        return;
      break;
    }
    consume();
    consumedAny = true;
  }
}

void Parser::synchronizeTopLevel() {
  bracketDepth = 0;
  unsigned braces = 0;
  while (true) {
    const Token &token = tok();
    if (token.is(Token::Eof))
      return;
    if (braces == 0 && (token.is(Token::KwFn) || token.is(Token::KwModel) ||
                        token.is(Token::KwTrain)))
      return;
    if (token.is(Token::LBrace))
      ++braces;
    if (token.is(Token::RBrace) && braces > 0 && --braces == 0) {
      consume();
      return;
    }
    consume();
  }
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Parser::expectStatementEnd() {
  if (tok().is(Token::RBrace) || tok().is(Token::Eof))
    return true;
  if (consumeIf(Token::Newline) || consumeIf(Token::Semicolon))
    return true;
  errorExpected("a newline or ';' after the statement");
  return false;
}

bool Parser::parseBlock(StmtList &body, BodyKind kind, bool inLoop) {
  Token open = tok();
  if (!expect(Token::LBrace, "to open the body"))
    return false;
  NestingGuard guard(*this, open.getLoc());
  if (!guard.ok())
    return false;
  while (true) {
    if (shouldStop())
      return false;
    while (consumeIf(Token::Newline) || consumeIf(Token::Semicolon)) {
    }
    if (consumeIf(Token::RBrace))
      return true;
    if (tok().is(Token::Eof)) {
      error(tok().getLoc(), "expected '}' to close '{' at " +
                                diagnostics.formatLineColumn(open.getLoc()));
      fatal = true;
      return false;
    }
    const char *before = tok().spelling.data();
    StmtPtr stmt = parseStatement(kind, inLoop);
    if (stmt && expectStatementEnd()) {
      body.push_back(std::move(stmt));
      continue;
    }
    if (shouldStop())
      return false;
    synchronizeStatement();
    if (tok().spelling.data() == before)
      consume(); // Guarantee progress.
  }
}

/// Reports a statement keyword used where it is not allowed, and consumes the
/// keyword so that recovery skips the rest of the statement.
static std::nullptr_t reportMisplaced(Parser &parser,
                                      const llvm::Twine &message) {
  SMLoc loc = parser.consume().getLoc();
  return parser.error(loc, message);
}

/// Rejects a model-only statement elsewhere and any declaration in a loop.
static std::nullptr_t reportMisplaced(Parser &parser, StringRef keyword,
                                      BodyKind kind, bool inLoop) {
  if (kind != BodyKind::Model)
    return reportMisplaced(parser, "'" + keyword +
                                       "' is only allowed in the model body");
  return reportMisplaced(parser, "'" + keyword +
                                     "' is not allowed inside a 'for' loop");
}

StmtPtr Parser::parseStatement(BodyKind kind, bool inLoop) {
  switch (tok().kind) {
  case Token::KwDim:
    return parseDim(kind, inLoop);
  case Token::KwInput:
    return parseInput(kind, inLoop);
  case Token::KwParam:
    return parseParam(inLoop);
  case Token::KwOutput:
    return parseOutput(kind, inLoop);
  case Token::KwFor:
    return parseFor(kind);
  case Token::KwReturn:
    return parseReturn(kind, inLoop);
  case Token::Identifier:
    // `buffer NAME : ...`: a contextual keyword, so `buffer` stays usable as
    // a name elsewhere.
    if (tok().spelling == "buffer" && peekNext().is(Token::Identifier))
      return parseParam(inLoop, /*buffer=*/true);
    if (kind == BodyKind::Model && tok().spelling == "batch" &&
        peekNext().is(Token::Equal)) {
      if (inLoop)
        return reportMisplaced(*this, "batch", kind, inLoop);
      return parseBatch();
    }
    return parseAssign();
  case Token::KwFn:
  case Token::KwModel:
  case Token::KwTrain: {
    StringRef keyword = tok().spelling;
    return reportMisplaced(*this, "'" + keyword +
                                      "' declarations are only allowed at "
                                      "the top level");
  }
  default:
    return errorUnexpected("a statement");
  }
}

StmtPtr Parser::parseDim(BodyKind kind, bool inLoop) {
  if (kind != BodyKind::Model || inLoop)
    return reportMisplaced(*this, "dim", kind, inLoop);
  SMLoc start = consume().getLoc();
  std::vector<DimBinding> bindings;
  do {
    skipNewlines();
    std::optional<LocatedName> name = parseName("a dim name");
    if (!name || !expect(Token::Equal, "after the dim name"))
      return nullptr;
    ExprPtr value = parseDimExpr("a dim value");
    if (!value)
      return nullptr;
    bindings.push_back({*name, std::move(value)});
  } while (consumeIf(Token::Comma));
  return std::make_unique<DimStmt>(rangeFrom(start), std::move(bindings));
}

StmtPtr Parser::parseBatch() {
  SMLoc start = consume().getLoc();
  consume(); // '='
  std::optional<LocatedName> dim = parseName("the name of the batch dim");
  if (!dim)
    return nullptr;
  return std::make_unique<BatchStmt>(rangeFrom(start), *dim);
}

StmtPtr Parser::parseInput(BodyKind kind, bool inLoop) {
  if (kind != BodyKind::Model || inLoop) {
    if (kind == BodyKind::Function)
      return reportMisplaced(*this, "'input' is only allowed in the model "
                                    "body; a function receives its inputs "
                                    "as arguments");
    return reportMisplaced(*this, "input", kind, inLoop);
  }
  SMLoc start = consume().getLoc();
  std::optional<LocatedName> name = parseName("an input name");
  if (!name || !expect(Token::Colon, "after the input name"))
    return nullptr;
  std::optional<TypeExpr> type = parseType("for the input");
  if (!type)
    return nullptr;
  return std::make_unique<InputStmt>(rangeFrom(start), *name, std::move(*type));
}

StmtPtr Parser::parseParam(bool inLoop, bool buffer) {
  StringRef keyword = buffer ? "buffer" : "param";
  StringRef what = buffer ? "buffer" : "parameter";
  if (inLoop)
    return reportMisplaced(*this,
                           "'" + keyword.str() +
                               "' is not allowed inside a 'for' loop; "
                               "declare it in a function called from the loop "
                               "(its " +
                               what.str() + "s are numbered per call)");
  SMLoc start = consume().getLoc();
  std::optional<LocatedName> name =
      parseName(buffer ? "a buffer name" : "a parameter name");
  if (!name || !expect(Token::Colon, buffer ? "after the buffer name"
                                            : "after the parameter name"))
    return nullptr;
  std::optional<TypeExpr> type =
      parseType(buffer ? "for the buffer" : "for the parameter");
  if (!type)
    return nullptr;
  if (tok().isNot(Token::Equal))
    return errorExpected("'=' and an initializer such as 'zeros' or "
                         "'normal(0.02)' after the " +
                         what.str() + " type");
  consume();
  ExprPtr init = parseExpr();
  if (!init)
    return nullptr;
  return std::make_unique<ParamStmt>(rangeFrom(start), *name, std::move(*type),
                                     std::move(init), buffer);
}

StmtPtr Parser::parseAssign() {
  SMLoc start = tok().getLoc();
  llvm::SmallVector<LocatedName, 1> targets;
  while (true) {
    std::optional<LocatedName> target = parseName("a name to assign to");
    if (!target)
      return nullptr;
    targets.push_back(*target);
    if (!consumeIf(Token::Comma))
      break;
    skipNewlines();
  }
  if (tok().isNot(Token::Equal)) {
    // `parm w : ...` is a misspelt keyword more often than a bad assignment.
    static const StringRef keywords[] = {"param", "input", "output",
                                         "dim",   "for",   "return"};
    std::string hint;
    if (targets.size() == 1 && tok().is(Token::Identifier))
      hint = didYouMean(targets.front().name, keywords);
    if (!hint.empty()) {
      error(targets.front().loc,
            "unknown statement '" + targets.front().name + "'" + hint);
      return nullptr;
    }
    return errorExpected(targets.size() == 1 ? "'=' after the name"
                                             : "'=' after the names");
  }
  consume();
  ExprPtr value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<AssignStmt>(rangeFrom(start), std::move(targets),
                                      std::move(value));
}

StmtPtr Parser::parseFor(BodyKind kind) {
  SMLoc start = consume().getLoc();
  std::optional<LocatedName> var = parseName("a loop variable name");
  if (!var || !expect(Token::KwIn, "after the loop variable"))
    return nullptr;
  ExprPtr begin = parseDimExpr("a loop bound");
  if (!begin)
    return nullptr;
  if (tok().isNot(Token::DotDot))
    return errorExpected("'..' between the loop bounds (as in 'for l in "
                         "0..L')");
  consume();
  ExprPtr end = parseDimExpr("a loop bound");
  if (!end)
    return nullptr;
  StmtList body;
  if (!parseBlock(body, kind, /*inLoop=*/true))
    return nullptr;
  return std::make_unique<ForStmt>(rangeFrom(start), *var, std::move(begin),
                                   std::move(end), std::move(body));
}

StmtPtr Parser::parseReturn(BodyKind kind, bool inLoop) {
  if (inLoop)
    return reportMisplaced(*this, "'return' is not allowed inside a 'for' "
                                  "loop");
  SMLoc start = consume().getLoc();
  ExprList values;
  do {
    skipNewlines();
    if (kind == BodyKind::Model && !values.empty())
      return error(tok().getLoc(),
                   "the model returns exactly one value, the loss; expose "
                   "other values with 'output NAME = expr'");
    ExprPtr value = parseExpr();
    if (!value)
      return nullptr;
    values.push_back(std::move(value));
  } while (consumeIf(Token::Comma));
  return std::make_unique<ReturnStmt>(rangeFrom(start), std::move(values));
}

StmtPtr Parser::parseOutput(BodyKind kind, bool inLoop) {
  if (kind != BodyKind::Model || inLoop)
    return reportMisplaced(*this, "output", kind, inLoop);
  SMLoc start = consume().getLoc();
  std::optional<LocatedName> name = parseName("an output name");
  if (!name || !expect(Token::Equal, "after the output name"))
    return nullptr;
  ExprPtr value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<OutputStmt>(rangeFrom(start), *name,
                                      std::move(value));
}
