//===- ParseDecl.cpp - Top-level declarations of the Kiln language --------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// Parses `fn`, `model` and `train` declarations, checks the structure the
// language fixes (one model, a model returns its loss once, a function ends
// with its return), and provides the parseModule entry point.
//
//===----------------------------------------------------------------------===//

#include "ParserImpl.h"

#include "kiln/Frontend/Parser.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace kiln;
using namespace kiln::ast;
using namespace kiln::detail;
using llvm::SMLoc;
using llvm::StringRef;

/// The location of the last consumed token when it is a one-character token.
static SMLoc getLastCharLoc(SMLoc end) {
  return SMLoc::getFromPointer(end.getPointer() - 1);
}

std::unique_ptr<FnDecl> Parser::parseFn() {
  unsigned errorsBefore = diagnostics.getNumErrors();
  auto fn = std::make_unique<FnDecl>();
  SMLoc start = consume().getLoc();
  std::optional<LocatedName> name = parseName("a function name after 'fn'");
  if (!name)
    return nullptr;
  fn->name = *name;

  Token open = tok();
  if (!expect(Token::LParen, "after the function name"))
    return nullptr;
  {
    BracketScope scope(*this);
    while (tok().isNot(Token::RParen)) {
      std::optional<LocatedName> argName = parseName("an argument name");
      if (!argName || !expect(Token::Colon, "after the argument name"))
        return nullptr;
      std::optional<TypeExpr> type = parseType("for the argument");
      if (!type)
        return nullptr;
      fn->args.push_back({*argName, std::move(*type)});
      if (!consumeIf(Token::Comma))
        break;
    }
    if (tok().isNot(Token::RParen))
      return errorExpected("',' or ')' to close '(' at " +
                           diagnostics.formatLineColumn(open.getLoc()));
    consume();
  }

  if (tok().isNot(Token::Arrow))
    return errorExpected("'->' and the result type after the argument list");
  consume();
  if (tok().is(Token::LParen)) {
    fn->hasTupleResult = true;
    BracketScope scope(*this);
    Token resultsOpen = consume();
    do {
      std::optional<TypeExpr> type = parseType("for the result");
      if (!type)
        return nullptr;
      fn->results.push_back(std::move(*type));
    } while (consumeIf(Token::Comma) && tok().isNot(Token::RParen));
    if (tok().isNot(Token::RParen))
      return errorExpected("',' or ')' to close '(' at " +
                           diagnostics.formatLineColumn(resultsOpen.getLoc()));
    consume();
  } else {
    std::optional<TypeExpr> type = parseType("for the result");
    if (!type)
      return nullptr;
    fn->results.push_back(std::move(*type));
  }

  if (!parseBlock(fn->body, BodyKind::Function, /*inLoop=*/false))
    return nullptr;
  fn->range = rangeFrom(start);
  if (diagnostics.getNumErrors() == errorsBefore)
    checkFunctionBody(*fn, getLastCharLoc(lastTokenEnd));
  return fn;
}

void Parser::checkFunctionBody(const FnDecl &fn, SMLoc closeLoc) {
  const StmtList &body = fn.body;
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    if (llvm::isa<ReturnStmt>(*body[i])) {
      error(body[i + 1]->getLoc(),
            "statement after 'return' is unreachable; 'return' must be the "
            "last statement of function '" +
                fn.name.name + "'");
      return;
    }
  }
  if (body.empty() || !llvm::isa<ReturnStmt>(*body.back()))
    error(closeLoc,
          "function '" + fn.name.name + "' must end with a 'return' statement");
}

std::unique_ptr<ModelDecl> Parser::parseModel() {
  unsigned errorsBefore = diagnostics.getNumErrors();
  auto model = std::make_unique<ModelDecl>();
  SMLoc start = consume().getLoc();
  std::optional<LocatedName> name = parseName("a model name after 'model'");
  if (!name)
    return nullptr;
  model->name = *name;
  if (!parseBlock(model->body, BodyKind::Model, /*inLoop=*/false))
    return nullptr;
  model->range = rangeFrom(start);
  if (diagnostics.getNumErrors() == errorsBefore)
    checkModelBody(*model, getLastCharLoc(lastTokenEnd));
  return model;
}

void Parser::checkModelBody(const ModelDecl &model, SMLoc closeLoc) {
  const Stmt *firstReturn = nullptr;
  for (const StmtPtr &stmt : model.body) {
    if (!llvm::isa<ReturnStmt>(*stmt))
      continue;
    if (firstReturn) {
      error(stmt->getLoc(),
            "the model returns its loss only once; it is "
            "already returned at " +
                diagnostics.formatLineColumn(firstReturn->getLoc()));
      return;
    }
    firstReturn = stmt.get();
  }
  if (!firstReturn)
    error(closeLoc, "model '" + model.name.name +
                        "' has no 'return' statement; 'return LOSS' names "
                        "the scalar to minimize");
}

std::unique_ptr<TrainDecl> Parser::parseTrain() {
  auto train = std::make_unique<TrainDecl>();
  SMLoc start = consume().getLoc();
  Token open = tok();
  if (!expect(Token::LBrace, "after 'train'"))
    return nullptr;
  NestingGuard guard(*this, open.getLoc());
  if (!guard.ok())
    return nullptr;
  while (true) {
    if (shouldStop())
      return nullptr;
    while (consumeIf(Token::Newline) || consumeIf(Token::Semicolon)) {
    }
    if (consumeIf(Token::RBrace))
      break;
    if (tok().is(Token::Eof)) {
      error(tok().getLoc(), "expected '}' to close '{' at " +
                                diagnostics.formatLineColumn(open.getLoc()));
      fatal = true;
      return nullptr;
    }
    const char *before = tok().spelling.data();
    bool ok = false;
    if (std::optional<LocatedName> key =
            parseName("a setting name such as 'optimizer' or 'steps'")) {
      if (const TrainEntry *previous = train->find(key->name)) {
        error(key->loc, "duplicate setting '" + key->name + "'");
        diagnostics.note(previous->key.loc, "first set here");
      } else if (expect(Token::Equal, "after the setting name")) {
        if (ExprPtr value = parseExpr()) {
          if (expectStatementEnd()) {
            train->entries.push_back({*key, std::move(value)});
            ok = true;
          }
        }
      }
    }
    if (ok)
      continue;
    if (shouldStop())
      return nullptr;
    synchronizeStatement();
    if (tok().spelling.data() == before)
      consume();
  }
  train->range = rangeFrom(start);
  return train;
}

std::unique_ptr<Module> Parser::parseModule() {
  unsigned errorsBefore = diagnostics.getNumErrors();
  auto module = std::make_unique<Module>();
  module->bufferId = bufferId;
  SMLoc modelLoc, trainLoc;
  while (!shouldStop()) {
    while (consumeIf(Token::Newline) || consumeIf(Token::Semicolon)) {
    }
    const Token &token = tok();
    if (token.is(Token::Eof))
      break;
    const char *before = token.spelling.data();
    bool ok = true;
    switch (token.kind) {
    case Token::KwFn:
      if (std::unique_ptr<FnDecl> fn = parseFn()) {
        if (const FnDecl *previous = module->findFunction(fn->name.name)) {
          error(fn->name.loc,
                "redefinition of function '" + fn->name.name + "'");
          diagnostics.note(previous->name.loc, "first defined here");
        }
        module->functions.push_back(std::move(fn));
      } else {
        ok = false;
      }
      break;
    case Token::KwModel:
      if (modelLoc.isValid()) {
        error(token.getLoc(), "a file holds exactly one model; one is "
                              "already declared at " +
                                  diagnostics.formatLineColumn(modelLoc));
        ok = false;
        break;
      }
      modelLoc = token.getLoc();
      module->model = parseModel();
      ok = module->model != nullptr;
      break;
    case Token::KwTrain:
      if (trainLoc.isValid()) {
        error(token.getLoc(), "a file holds at most one 'train' block; one "
                              "is already declared at " +
                                  diagnostics.formatLineColumn(trainLoc));
        ok = false;
        break;
      }
      trainLoc = token.getLoc();
      module->train = parseTrain();
      ok = module->train != nullptr;
      break;
    default:
      ok = false;
      if (token.is(Token::Identifier) && peekNext().isNot(Token::Equal) &&
          peekNext().isNot(Token::Comma)) {
        static const StringRef topLevel[] = {"fn", "model", "train"};
        std::string hint = didYouMean(token.spelling, topLevel);
        error(token.getLoc(), "expected 'fn', 'model' or 'train' at the top "
                              "level, found " +
                                  token.describe() + hint);
      } else if (token.is(Token::Identifier) || token.is(Token::KwDim) ||
                 token.is(Token::KwParam) || token.is(Token::KwInput) ||
                 token.is(Token::KwOutput) || token.is(Token::KwFor) ||
                 token.is(Token::KwReturn)) {
        error(token.getLoc(), "statements belong inside 'model NAME { ... }' "
                              "or a function body");
      } else {
        errorUnexpected("'fn', 'model' or 'train' at the top level");
      }
      break;
    }
    if (ok && tok().isNot(Token::Eof) && !consumeIf(Token::Newline) &&
        !consumeIf(Token::Semicolon)) {
      errorExpected("a newline after the closing '}'");
      ok = false;
    }
    if (ok)
      continue;
    if (shouldStop())
      break;
    synchronizeTopLevel();
    if (tok().spelling.data() == before)
      consume(); // Guarantee progress.
  }
  if (!modelLoc.isValid() && !shouldStop())
    error(tok().getLoc(), "expected a 'model NAME { ... }' declaration; a "
                          "file holds exactly one model");
  if (diagnostics.getNumErrors() != errorsBefore)
    return nullptr;
  return module;
}

std::unique_ptr<Module> kiln::parseModule(const llvm::SourceMgr &sourceMgr,
                                          unsigned bufferId,
                                          Diagnostics &diagnostics) {
  Parser parser(sourceMgr, bufferId, diagnostics);
  return parser.parseModule();
}
