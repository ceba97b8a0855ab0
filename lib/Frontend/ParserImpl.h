//===- ParserImpl.h - Recursive-descent parser internals --------*- C++ -*-===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// The Parser class shared by Parser.cpp (declarations, statements, error
// recovery) and ParseExpr.cpp (expressions and types). Private to the
// library.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_FRONTEND_PARSERIMPL_H
#define KILN_LIB_FRONTEND_PARSERIMPL_H

#include "kiln/Frontend/AST.h"
#include "kiln/Frontend/Diagnostics.h"
#include "kiln/Frontend/Lexer.h"

#include <deque>
#include <optional>

namespace kiln {
namespace detail {

/// Where a statement appears; decides which statements are allowed.
enum class BodyKind { Function, Model };

class Parser {
public:
  Parser(const llvm::SourceMgr &sourceMgr, unsigned bufferId,
         Diagnostics &diagnostics);

  std::unique_ptr<ast::Module> parseModule();

  //===--------------------------------------------------------------------===//
  // Tokens
  //===--------------------------------------------------------------------===//

  /// The current token. Inside brackets, newlines are skipped.
  const Token &tok();
  /// The token after the current one (skipping newlines inside brackets).
  const Token &peekNext();
  /// Consumes and returns the current token.
  Token consume();
  /// Consumes the current token if it has kind \p kind.
  bool consumeIf(Token::Kind kind);
  /// Consumes newline tokens (used after a trailing ',' or operator).
  void skipNewlines();

  /// While alive, newlines are insignificant: used for (...) and [...].
  class BracketScope {
  public:
    explicit BracketScope(Parser &parser) : parser(parser) {
      ++parser.bracketDepth;
    }
    ~BracketScope() { --parser.bracketDepth; }

  private:
    Parser &parser;
  };

  /// Counts recursion; returns false (after reporting) past the limit.
  class NestingGuard {
  public:
    NestingGuard(Parser &parser, llvm::SMLoc loc);
    ~NestingGuard() { --parser.nestingDepth; }
    bool ok() const { return withinLimit; }

  private:
    Parser &parser;
    bool withinLimit;
  };

  //===--------------------------------------------------------------------===//
  // Errors
  //===--------------------------------------------------------------------===//

  /// Reports \p message at \p loc and returns null / false for convenience.
  std::nullptr_t error(llvm::SMLoc loc, const llvm::Twine &message);
  /// Reports "expected <what>, found <current token>" where the missing text
  /// belongs; silent if the current token is a lexer error (already reported).
  std::nullptr_t errorExpected(const llvm::Twine &what);
  /// Reports "expected <what>, found <current token>" at the current token:
  /// for a token that cannot start what the parser expects.
  std::nullptr_t errorUnexpected(const llvm::Twine &what);
  /// Consumes a token of \p kind or reports "expected <kind> <context>".
  bool expect(Token::Kind kind, const llvm::Twine &context);
  /// Consumes the closer of \p opener or reports "expected ')' to close '('
  /// at L:C".
  bool expectCloser(Token::Kind closer, const Token &opener);
  /// Where to report something missing before the current token: the end of
  /// the previous token if a line break lies between them, else the current
  /// token.
  llvm::SMLoc getMissingLoc();
  /// "end of line" if the current token starts a new line, else its
  /// description.
  std::string describeCurrent();
  /// True once parsing must stop: fatal error or error limit.
  bool shouldStop() const { return fatal || diagnostics.shouldStop(); }

  //===--------------------------------------------------------------------===//
  // Expressions and types (ParseExpr.cpp)
  //===--------------------------------------------------------------------===//

  ast::ExprPtr parseExpr();
  ast::ExprPtr parseSum();
  ast::ExprPtr parseMultiplicative();
  ast::ExprPtr parseUnary();
  ast::ExprPtr parsePower();
  ast::ExprPtr parsePrimary();
  ast::ExprPtr parseCall(const Token &callee);
  ast::ExprPtr parseParenOrTuple();
  ast::ExprPtr parseList();
  /// Builds `lhs op rhs`, reporting an error if the tree gets too tall.
  ast::ExprPtr makeBinary(const Token &op, ast::ExprPtr lhs, ast::ExprPtr rhs);
  /// Parses an expression and checks it is an integer dim expression;
  /// \p what names it in messages ("a tensor dimension").
  ast::ExprPtr parseDimExpr(llvm::StringRef what);
  bool checkDimExpr(const ast::Expr &expr, llvm::StringRef what);
  std::optional<ast::TypeExpr> parseType(llvm::StringRef context);
  /// Parses a name (identifier), or reports "expected <what>".
  std::optional<ast::LocatedName> parseName(const llvm::Twine &what);

  //===--------------------------------------------------------------------===//
  // Declarations and statements (Parser.cpp)
  //===--------------------------------------------------------------------===//

  std::unique_ptr<ast::FnDecl> parseFn();
  std::unique_ptr<ast::ModelDecl> parseModel();
  std::unique_ptr<ast::TrainDecl> parseTrain();
  /// Parses `{ statements }` into \p body. Returns false only if parsing
  /// must stop (unclosed block at end of file, error limit).
  bool parseBlock(ast::StmtList &body, BodyKind kind, bool inLoop);
  bool expectStatementEnd();
  ast::StmtPtr parseStatement(BodyKind kind, bool inLoop);
  ast::StmtPtr parseDim(BodyKind kind, bool inLoop);
  ast::StmtPtr parseBatch();
  ast::StmtPtr parseInput(BodyKind kind, bool inLoop);
  ast::StmtPtr parseParam(bool inLoop, bool buffer = false);
  ast::StmtPtr parseAssign();
  ast::StmtPtr parseFor(BodyKind kind);
  ast::StmtPtr parseReturn(BodyKind kind, bool inLoop);
  ast::StmtPtr parseOutput(BodyKind kind, bool inLoop);
  void checkFunctionBody(const ast::FnDecl &fn, llvm::SMLoc closeLoc);
  void checkModelBody(const ast::ModelDecl &model, llvm::SMLoc closeLoc);
  /// Skips to the start of the next statement of the current block.
  void synchronizeStatement();
  /// Skips to the next `fn`, `model` or `train`.
  void synchronizeTopLevel();

  /// Range from \p start to the end of the last consumed token.
  llvm::SMRange rangeFrom(llvm::SMLoc start) const {
    return {start, lastTokenEnd};
  }

  const llvm::SourceMgr &sourceMgr;
  unsigned bufferId;
  Diagnostics &diagnostics;
  Lexer lexer;
  /// Lexed but not yet consumed tokens; each token is lexed exactly once, so
  /// lexer errors are reported once however far the parser looks ahead.
  std::deque<Token> lookahead;
  llvm::SMLoc lastTokenEnd;
  unsigned bracketDepth = 0;
  unsigned nestingDepth = 0;
  /// Set by errors after which going on would only produce noise.
  bool fatal = false;
};

} // namespace detail
} // namespace kiln

#endif // KILN_LIB_FRONTEND_PARSERIMPL_H
