//===- FrontendTestUtil.h - Helpers for the front-end unit tests -*- C++
//-*-===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_FRONTENDTESTUTIL_H
#define KILN_TEST_UNIT_FRONTENDTESTUTIL_H

#include "kiln/Frontend/AST.h"
#include "kiln/Frontend/Diagnostics.h"
#include "kiln/Frontend/Lexer.h"
#include "kiln/Frontend/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::test {

/// A parse of an in-memory source, with everything the checks need.
struct ParseResult {
  std::unique_ptr<llvm::SourceMgr> sourceMgr;
  std::unique_ptr<ast::Module> module;
  /// Everything printed by the diagnostics.
  std::string output;
  std::vector<Diagnostics::Record> records;

  bool ok() const { return module != nullptr; }
  unsigned numErrors() const {
    unsigned count = 0;
    for (const auto &record : records)
      count += record.severity == Diagnostics::Severity::Error;
    return count;
  }
  /// "line:col: message" of the first error, or "" if none.
  std::string firstError() const {
    for (const auto &record : records)
      if (record.severity == Diagnostics::Severity::Error)
        return std::to_string(record.line) + ":" +
               std::to_string(record.column) + ": " + record.message;
    return "";
  }
};

inline ParseResult parse(llvm::StringRef source,
                         llvm::StringRef name = "test.kiln") {
  ParseResult result;
  result.sourceMgr = std::make_unique<llvm::SourceMgr>();
  unsigned bufferId = result.sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, name), llvm::SMLoc());
  llvm::raw_string_ostream os(result.output);
  Diagnostics diagnostics(*result.sourceMgr, os);
  result.module = parseModule(*result.sourceMgr, bufferId, diagnostics);
  result.records = diagnostics.getRecords();
  return result;
}

/// Wraps a statement list into a model that returns `y`.
inline std::string inModel(llvm::StringRef statements) {
  return ("model m {\n" + statements + "\n  return y\n}\n").str();
}

/// Parses `y = <expr>` in a model and prints the expression, or returns
/// "error: <first error>".
inline std::string printParsedExpr(llvm::StringRef expr) {
  ParseResult result = parse(inModel(("  y = " + expr).str()));
  if (!result.ok())
    return "error: " + result.firstError();
  const auto &assign =
      llvm::cast<ast::AssignStmt>(*result.module->model->body.front());
  return ast::printExpr(assign.getValue());
}

/// Lexes the whole source.
struct LexResult {
  std::unique_ptr<llvm::SourceMgr> sourceMgr;
  std::vector<Token> tokens;
  std::string output;
  std::vector<Diagnostics::Record> records;
};

inline LexResult lexAll(llvm::StringRef source) {
  LexResult result;
  result.sourceMgr = std::make_unique<llvm::SourceMgr>();
  unsigned bufferId = result.sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "lex.kiln"), llvm::SMLoc());
  llvm::raw_string_ostream os(result.output);
  Diagnostics diagnostics(*result.sourceMgr, os, /*errorLimit=*/0);
  Lexer lexer(*result.sourceMgr, bufferId, diagnostics);
  while (true) {
    Token token = lexer.lex();
    result.tokens.push_back(token);
    if (token.is(Token::Eof))
      break;
  }
  result.records = diagnostics.getRecords();
  return result;
}

} // namespace kiln::test

#endif // KILN_TEST_UNIT_FRONTENDTESTUTIL_H
