//===- Lexer.h - Tokens of the Kiln model language --------------*- C++ -*-===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// The lexer turns a SourceMgr buffer into tokens. It never reads past the end
// of the buffer (embedded NUL bytes are ordinary invalid characters), reports
// every malformed token once, as a located error, and then returns an Error
// token so that the parser can recover without repeating the message.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_LEXER_H
#define KILN_FRONTEND_LEXER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace kiln {

class Diagnostics;

/// A token of the model language. Its spelling points into the source buffer.
struct Token {
  enum Kind {
    // Markers.
    Eof,
    Error,   ///< A malformed token; its error has already been reported.
    Newline, ///< One or more line ends (comments and blank lines collapse).

    // Names and literals.
    Identifier,
    Integer, ///< `42`; value in intValue.
    Float,   ///< `3e-4`, `0.02`; value in floatValue.
    Size,    ///< `40GiB`, `512MiB`, `2KB`: byte count in intValue.

    // Keywords.
    KwFn,
    KwModel,
    KwTrain,
    KwParam,
    KwInput,
    KwOutput,
    KwDim,
    KwFor,
    KwIn,
    KwReturn,
    KwTrue,
    KwFalse,

    // Punctuation.
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Semicolon,
    Equal,
    Plus,
    Minus,
    Star,
    Slash,
    At,
    StarStar,     ///< `**`
    Arrow,        ///< `->`
    DotDot,       ///< `..`
    Less,         ///< `<`
    LessEqual,    ///< `<=`
    Greater,      ///< `>`
    GreaterEqual, ///< `>=`
    EqualEqual,   ///< `==`
    NotEqual,     ///< `!=`
  };

  Kind kind = Eof;
  /// The exact source text of the token (empty for Eof).
  llvm::StringRef spelling;
  /// Integer value for Integer, byte count for Size.
  int64_t intValue = 0;
  /// Value of a Float literal.
  double floatValue = 0.0;

  bool is(Kind k) const { return kind == k; }
  bool isNot(Kind k) const { return kind != k; }
  bool isKeyword() const { return kind >= KwFn && kind <= KwFalse; }

  llvm::SMLoc getLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
  llvm::SMLoc getEndLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data() + spelling.size());
  }
  llvm::SMRange getRange() const { return {getLoc(), getEndLoc()}; }

  /// A short description for messages: "'('", "identifier 'x'",
  /// "newline", "end of file". Long spellings are abbreviated.
  std::string describe() const;
};

/// Returns how a token of kind \p kind is written ("'('", "'fn'") or, for
/// kinds without fixed spelling, what it is ("identifier", "number").
llvm::StringRef getTokenKindName(Token::Kind kind);

/// The memory-size suffixes accepted on integer literals (`40GiB`).
llvm::ArrayRef<llvm::StringRef> getSizeSuffixes();

/// Splits a buffer of a SourceMgr into tokens.
class Lexer {
public:
  Lexer(const llvm::SourceMgr &sourceMgr, unsigned bufferId,
        Diagnostics &diagnostics);

  /// Returns the next token; Eof forever once the buffer is exhausted.
  Token lex();

  /// The location just past the last byte of the buffer.
  llvm::SMLoc getEofLoc() const {
    return llvm::SMLoc::getFromPointer(bufferEnd);
  }

private:
  Token makeToken(Token::Kind kind, const char *start);
  Token lexError(const char *start, const llvm::Twine &message);
  Token lexIdentifier(const char *start);
  Token lexNumber(const char *start);
  Token lexInvalidCharacters(const char *start);
  /// Skips spaces, tabs, carriage returns and comments (not newlines).
  void skipHorizontalSpaceAndComments();

  const char *bufferStart;
  const char *bufferEnd;
  const char *current;
  Diagnostics &diagnostics;
};

} // namespace kiln

#endif // KILN_FRONTEND_LEXER_H
