//===- Lexer.cpp - Tokens of the Kiln model language ----------------------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/Lexer.h"
#include "kiln/ByteSize.h"
#include "kiln/Frontend/Diagnostics.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <optional>

using namespace kiln;
using llvm::StringRef;

/// Number literals longer than this are rejected rather than converted.
static constexpr size_t kMaxNumberLength = 400;
/// Spellings longer than this are abbreviated in messages.
static constexpr size_t kMaxDescribedSpelling = 32;

llvm::ArrayRef<StringRef> kiln::getSizeSuffixes() {
  static const std::vector<StringRef> names = [] {
    std::vector<StringRef> result;
    for (const ByteSizeUnit &unit : getByteSizeUnits())
      result.emplace_back(unit.name.data(), unit.name.size());
    return result;
  }();
  return names;
}

StringRef kiln::getTokenKindName(Token::Kind kind) {
  switch (kind) {
  case Token::Eof:
    return "end of file";
  case Token::Error:
    return "invalid token";
  case Token::Newline:
    return "newline";
  case Token::Identifier:
    return "identifier";
  case Token::Integer:
  case Token::Float:
    return "number";
  case Token::Size:
    return "memory size";
  case Token::KwFn:
    return "'fn'";
  case Token::KwModel:
    return "'model'";
  case Token::KwTrain:
    return "'train'";
  case Token::KwParam:
    return "'param'";
  case Token::KwInput:
    return "'input'";
  case Token::KwOutput:
    return "'output'";
  case Token::KwDim:
    return "'dim'";
  case Token::KwFor:
    return "'for'";
  case Token::KwIn:
    return "'in'";
  case Token::KwReturn:
    return "'return'";
  case Token::KwTrue:
    return "'true'";
  case Token::KwFalse:
    return "'false'";
  case Token::LParen:
    return "'('";
  case Token::RParen:
    return "')'";
  case Token::LBracket:
    return "'['";
  case Token::RBracket:
    return "']'";
  case Token::LBrace:
    return "'{'";
  case Token::RBrace:
    return "'}'";
  case Token::Comma:
    return "','";
  case Token::Colon:
    return "':'";
  case Token::Semicolon:
    return "';'";
  case Token::Equal:
    return "'='";
  case Token::Plus:
    return "'+'";
  case Token::Minus:
    return "'-'";
  case Token::Star:
    return "'*'";
  case Token::Slash:
    return "'/'";
  case Token::At:
    return "'@'";
  case Token::StarStar:
    return "'**'";
  case Token::Arrow:
    return "'->'";
  case Token::DotDot:
    return "'..'";
  case Token::Less:
    return "'<'";
  case Token::LessEqual:
    return "'<='";
  case Token::Greater:
    return "'>'";
  case Token::GreaterEqual:
    return "'>='";
  case Token::EqualEqual:
    return "'=='";
  case Token::NotEqual:
    return "'!='";
  }
  return "token";
}

std::string Token::describe() const {
  StringRef shown = spelling;
  std::string abbreviated;
  if (shown.size() > kMaxDescribedSpelling) {
    abbreviated = (shown.take_front(kMaxDescribedSpelling - 3) + "...").str();
    shown = abbreviated;
  }
  switch (kind) {
  case Identifier:
    return ("identifier '" + shown + "'").str();
  case Integer:
  case Float:
  case Size:
    return ("number '" + shown + "'").str();
  default:
    return getTokenKindName(kind).str();
  }
}

static bool isIdentifierStart(char c) { return llvm::isAlpha(c) || c == '_'; }
static bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

/// True for bytes that cannot start any token and are not whitespace.
static bool isInvalidByte(unsigned char c) {
  return c >= 0x7f || (c < 0x20 && c != '\t' && c != '\n' && c != '\r');
}

Lexer::Lexer(const llvm::SourceMgr &sourceMgr, unsigned bufferId,
             Diagnostics &diagnostics)
    : diagnostics(diagnostics) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  bufferStart = buffer->getBufferStart();
  bufferEnd = buffer->getBufferEnd();
  current = bufferStart;
}

Token Lexer::makeToken(Token::Kind kind, const char *start) {
  Token token;
  token.kind = kind;
  token.spelling = StringRef(start, current - start);
  return token;
}

Token Lexer::lexError(const char *start, const llvm::Twine &message) {
  diagnostics.error(llvm::SMLoc::getFromPointer(start), message);
  return makeToken(Token::Error, start);
}

void Lexer::skipHorizontalSpaceAndComments() {
  while (current != bufferEnd) {
    char c = *current;
    if (c == ' ' || c == '\t' || c == '\r') {
      ++current;
    } else if (c == '#') {
      // A comment may hold any bytes; it ends at the line end.
      while (current != bufferEnd && *current != '\n')
        ++current;
    } else {
      return;
    }
  }
}

Token Lexer::lex() {
  skipHorizontalSpaceAndComments();
  if (current == bufferEnd)
    return makeToken(Token::Eof, current);

  const char *start = current;
  char c = *current++;
  switch (c) {
  case '\n': {
    // Collapse blank lines and comment lines into one Newline token.
    const char *afterNewline = current;
    while (true) {
      skipHorizontalSpaceAndComments();
      if (current == bufferEnd || *current != '\n')
        break;
      ++current;
    }
    Token token;
    token.kind = Token::Newline;
    token.spelling = StringRef(start, afterNewline - start);
    return token;
  }
  case '(':
    return makeToken(Token::LParen, start);
  case ')':
    return makeToken(Token::RParen, start);
  case '[':
    return makeToken(Token::LBracket, start);
  case ']':
    return makeToken(Token::RBracket, start);
  case '{':
    return makeToken(Token::LBrace, start);
  case '}':
    return makeToken(Token::RBrace, start);
  case ',':
    return makeToken(Token::Comma, start);
  case ':':
    return makeToken(Token::Colon, start);
  case ';':
    return makeToken(Token::Semicolon, start);
  case '=':
    if (current != bufferEnd && *current == '=') {
      ++current;
      return makeToken(Token::EqualEqual, start);
    }
    return makeToken(Token::Equal, start);
  case '<':
    if (current != bufferEnd && *current == '=') {
      ++current;
      return makeToken(Token::LessEqual, start);
    }
    return makeToken(Token::Less, start);
  case '>':
    if (current != bufferEnd && *current == '=') {
      ++current;
      return makeToken(Token::GreaterEqual, start);
    }
    return makeToken(Token::Greater, start);
  case '!':
    if (current != bufferEnd && *current == '=') {
      ++current;
      return makeToken(Token::NotEqual, start);
    }
    return lexError(start, "unexpected character '!'; 'not equal' is "
                           "written '!='");
  case '+':
    return makeToken(Token::Plus, start);
  case '/':
    return makeToken(Token::Slash, start);
  case '@':
    return makeToken(Token::At, start);
  case '-':
    if (current != bufferEnd && *current == '>') {
      ++current;
      return makeToken(Token::Arrow, start);
    }
    return makeToken(Token::Minus, start);
  case '*':
    if (current != bufferEnd && *current == '*') {
      ++current;
      return makeToken(Token::StarStar, start);
    }
    return makeToken(Token::Star, start);
  case '.':
    if (current != bufferEnd && *current == '.') {
      ++current;
      return makeToken(Token::DotDot, start);
    }
    return lexError(start, "unexpected character '.'; a range is written "
                           "'begin..end' and a decimal number needs a digit "
                           "before and after the '.'");
  default:
    break;
  }
  if (isIdentifierStart(c))
    return lexIdentifier(start);
  if (llvm::isDigit(c))
    return lexNumber(start);
  if (isInvalidByte(c))
    return lexInvalidCharacters(start);
  return lexError(start, "unexpected character '" + StringRef(start, 1) + "'");
}

Token Lexer::lexIdentifier(const char *start) {
  while (current != bufferEnd && isIdentifierChar(*current))
    ++current;
  StringRef name(start, current - start);
  Token::Kind kind = llvm::StringSwitch<Token::Kind>(name)
                         .Case("fn", Token::KwFn)
                         .Case("model", Token::KwModel)
                         .Case("train", Token::KwTrain)
                         .Case("param", Token::KwParam)
                         .Case("input", Token::KwInput)
                         .Case("output", Token::KwOutput)
                         .Case("dim", Token::KwDim)
                         .Case("for", Token::KwFor)
                         .Case("in", Token::KwIn)
                         .Case("return", Token::KwReturn)
                         .Case("true", Token::KwTrue)
                         .Case("false", Token::KwFalse)
                         .Default(Token::Identifier);
  return makeToken(kind, start);
}

/// Parses a string of decimal digits; nullopt if it exceeds int64_t.
static std::optional<int64_t> parseDecimal(StringRef digits) {
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  int64_t value = 0;
  for (char digit : digits) {
    int64_t d = digit - '0';
    if (value > (max - d) / 10)
      return std::nullopt;
    value = value * 10 + d;
  }
  return value;
}

Token Lexer::lexNumber(const char *start) {
  auto skipDigits = [&] {
    while (current != bufferEnd && llvm::isDigit(*current))
      ++current;
  };
  skipDigits();
  bool isFloat = false;
  // A '.' belongs to the number only if a digit follows: `0..L` is a range.
  if (bufferEnd - current >= 2 && current[0] == '.' &&
      llvm::isDigit(current[1])) {
    isFloat = true;
    ++current;
    skipDigits();
  }
  if (current != bufferEnd && (*current == 'e' || *current == 'E')) {
    const char *exponent = current + 1;
    if (exponent != bufferEnd && (*exponent == '+' || *exponent == '-'))
      ++exponent;
    if (exponent != bufferEnd && llvm::isDigit(*exponent)) {
      isFloat = true;
      current = exponent;
      skipDigits();
    }
  }
  StringRef number(start, current - start);
  const char *suffixStart = current;
  while (current != bufferEnd && isIdentifierChar(*current))
    ++current;
  StringRef suffix(suffixStart, current - suffixStart);

  if (number.size() + suffix.size() > kMaxNumberLength)
    return lexError(start, "number literal is too long (more than " +
                               llvm::Twine(kMaxNumberLength) + " characters)");

  if (!suffix.empty()) {
    std::optional<int64_t> unitBytes =
        lookupByteSizeUnit(std::string_view(suffix.data(), suffix.size()));
    if (!unitBytes) {
      if (suffix.front() == 'e' || suffix.front() == 'E')
        return lexError(suffixStart,
                        "expected digits in the exponent of number literal '" +
                            number + suffix + "'");
      std::string hint = didYouMean(suffix, getSizeSuffixes());
      if (hint.empty() && !isFloat && isIdentifierStart(suffix.front()))
        hint = ("; to multiply, write '" + number + "*" + suffix + "'").str();
      return lexError(suffixStart, "invalid suffix '" + suffix +
                                       "' on number literal" + hint);
    }
    if (isFloat)
      return lexError(start, "a memory size must be a whole number of units "
                             "(for example 1536MiB rather than 1.5GiB)");
    std::optional<int64_t> count = parseDecimal(number);
    int64_t bytes = 0;
    if (!count || llvm::MulOverflow(*count, *unitBytes, bytes))
      return lexError(start, "memory size is too large (the maximum is "
                             "9223372036854775807 bytes)");
    Token token = makeToken(Token::Size, start);
    token.intValue = bytes;
    return token;
  }

  if (!isFloat) {
    std::optional<int64_t> value = parseDecimal(number);
    if (!value)
      return lexError(start, "integer literal is too large (the maximum is "
                             "9223372036854775807)");
    Token token = makeToken(Token::Integer, start);
    token.intValue = *value;
    return token;
  }

  llvm::APFloat value(llvm::APFloat::IEEEdouble());
  llvm::Expected<llvm::APFloat::opStatus> status =
      value.convertFromString(number, llvm::APFloat::rmNearestTiesToEven);
  if (!status) {
    llvm::consumeError(status.takeError());
    return lexError(start, "invalid floating-point literal");
  }
  if (*status & llvm::APFloat::opOverflow)
    return lexError(start, "floating-point literal is too large for f64");
  if ((*status & llvm::APFloat::opUnderflow) && value.isZero())
    return lexError(start,
                    "floating-point literal is too small for f64 (it would "
                    "round to zero)");
  Token token = makeToken(Token::Float, start);
  token.floatValue = value.convertToDouble();
  return token;
}

Token Lexer::lexInvalidCharacters(const char *start) {
  // Report the first offending character and skip the whole run, so that a
  // binary blob yields one error rather than one per byte.
  unsigned char first = *start;
  std::string message;
  llvm::raw_string_ostream os(message);
  if (first == 0) {
    os << "unexpected NUL byte (is this a binary file?)";
  } else if (first < 0x80) {
    os << "unexpected control character "
       << llvm::format("0x%02X", unsigned(first));
  } else {
    unsigned length = llvm::getNumBytesForUTF8(first);
    const auto *begin = reinterpret_cast<const llvm::UTF8 *>(start);
    const auto *end = reinterpret_cast<const llvm::UTF8 *>(bufferEnd);
    llvm::UTF32 codePoint = 0;
    const llvm::UTF8 *cursor = begin;
    if (length <= size_t(end - begin) &&
        llvm::convertUTF8Sequence(&cursor, end, &codePoint,
                                  llvm::strictConversion) == llvm::conversionOK)
      os << "unexpected non-ASCII character "
         << llvm::format("U+%04X", unsigned(codePoint))
         << "; names and operators are ASCII";
    else
      os << "invalid UTF-8 byte " << llvm::format("0x%02X", unsigned(first));
  }
  while (current != bufferEnd && isInvalidByte(*current))
    ++current;
  return lexError(start, message);
}
