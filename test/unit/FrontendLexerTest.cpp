//===- FrontendLexerTest.cpp - Tests of the DSL lexer and diagnostics -----===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestUtil.h"

#include "gtest/gtest.h"

using namespace kiln;
using namespace kiln::test;

namespace {

std::vector<Token::Kind> kindsOf(const LexResult &result) {
  std::vector<Token::Kind> kinds;
  for (const Token &token : result.tokens)
    kinds.push_back(token.kind);
  return kinds;
}

/// Lexes a single literal and returns its token (asserting no errors).
Token lexOne(llvm::StringRef source) {
  LexResult result = lexAll(source);
  EXPECT_TRUE(result.records.empty()) << result.output;
  EXPECT_EQ(result.tokens.size(), 2u) << source.str();
  return result.tokens.front();
}

/// "line:col: message" of the first lexer error.
std::string lexError(llvm::StringRef source) {
  LexResult result = lexAll(source);
  if (result.records.empty())
    return "no error";
  const auto &record = result.records.front();
  return std::to_string(record.line) + ":" + std::to_string(record.column) +
         ": " + record.message;
}

TEST(FrontendLexer, FunctionHeader) {
  LexResult result = lexAll("fn f(a: f32[B, 3*D]) -> f32[] { return a ** 2 }");
  using K = Token;
  std::vector<Token::Kind> expected = {
      K::KwFn,       K::Identifier, K::LParen,     K::Identifier, K::Colon,
      K::Identifier, K::LBracket,   K::Identifier, K::Comma,      K::Integer,
      K::Star,       K::Identifier, K::RBracket,   K::RParen,     K::Arrow,
      K::Identifier, K::LBracket,   K::RBracket,   K::LBrace,     K::KwReturn,
      K::Identifier, K::StarStar,   K::Integer,    K::RBrace,     K::Eof};
  EXPECT_EQ(kindsOf(result), expected);
  EXPECT_TRUE(result.records.empty());
}

TEST(FrontendLexer, KeywordsAndIdentifiers) {
  LexResult result =
      lexAll("model train param input output dim for in return true false "
             "batch batch_seed input_x _x fn2");
  std::vector<Token::Kind> expected = {
      Token::KwModel,    Token::KwTrain,    Token::KwParam,
      Token::KwInput,    Token::KwOutput,   Token::KwDim,
      Token::KwFor,      Token::KwIn,       Token::KwReturn,
      Token::KwTrue,     Token::KwFalse,    Token::Identifier,
      Token::Identifier, Token::Identifier, Token::Identifier,
      Token::Identifier, Token::Eof};
  EXPECT_EQ(kindsOf(result), expected);
}

TEST(FrontendLexer, Punctuation) {
  LexResult result = lexAll("( ) [ ] { } , : ; = + - * / @ ** -> ..");
  std::vector<Token::Kind> expected = {
      Token::LParen,    Token::RParen, Token::LBracket, Token::RBracket,
      Token::LBrace,    Token::RBrace, Token::Comma,    Token::Colon,
      Token::Semicolon, Token::Equal,  Token::Plus,     Token::Minus,
      Token::Star,      Token::Slash,  Token::At,       Token::StarStar,
      Token::Arrow,     Token::DotDot, Token::Eof};
  EXPECT_EQ(kindsOf(result), expected);
}

TEST(FrontendLexer, ComparisonOperators) {
  // The longest match: `<=` is one token, `< =` two; `==` is not `= =`.
  LexResult result = lexAll("< <= > >= == != < = x==y");
  std::vector<Token::Kind> expected = {
      Token::Less,       Token::LessEqual,  Token::Greater,
      Token::GreaterEqual, Token::EqualEqual, Token::NotEqual,
      Token::Less,       Token::Equal,      Token::Identifier,
      Token::EqualEqual, Token::Identifier, Token::Eof};
  EXPECT_EQ(kindsOf(result), expected);
}

TEST(FrontendLexer, NewlinesAndCommentsCollapse) {
  LexResult result = lexAll("a # comment\n\n   # another\r\n\t b\n");
  std::vector<Token::Kind> expected = {Token::Identifier, Token::Newline,
                                       Token::Identifier, Token::Newline,
                                       Token::Eof};
  EXPECT_EQ(kindsOf(result), expected);
  EXPECT_EQ(result.tokens[2].spelling, "b");
}

TEST(FrontendLexer, IntegerAndFloatLiterals) {
  EXPECT_EQ(lexOne("0").intValue, 0);
  EXPECT_EQ(lexOne("2000").intValue, 2000);
  EXPECT_EQ(lexOne("9223372036854775807").intValue, INT64_MAX);
  Token f = lexOne("3e-4");
  EXPECT_EQ(f.kind, Token::Float);
  EXPECT_DOUBLE_EQ(f.floatValue, 3e-4);
  EXPECT_DOUBLE_EQ(lexOne("0.02").floatValue, 0.02);
  EXPECT_DOUBLE_EQ(lexOne("1.0e-5").floatValue, 1.0e-5);
  EXPECT_DOUBLE_EQ(lexOne("2E+3").floatValue, 2000.0);
  EXPECT_EQ(lexOne("1e3").kind, Token::Float);
}

TEST(FrontendLexer, RangeIsNotAFloat) {
  LexResult result = lexAll("0..L");
  std::vector<Token::Kind> expected = {Token::Integer, Token::DotDot,
                                       Token::Identifier, Token::Eof};
  EXPECT_EQ(kindsOf(result), expected);
}

TEST(FrontendLexer, SizeLiterals) {
  Token size = lexOne("40GiB");
  EXPECT_EQ(size.kind, Token::Size);
  EXPECT_EQ(size.intValue, int64_t(40) << 30);
  EXPECT_EQ(lexOne("512MiB").intValue, int64_t(512) << 20);
  EXPECT_EQ(lexOne("2KB").intValue, 2000);
  EXPECT_EQ(lexOne("3TB").intValue, int64_t(3000000000000));
  EXPECT_EQ(lexOne("64B").intValue, 64);
  EXPECT_EQ(lexOne("8388607TiB").intValue, int64_t(8388607) << 40);
}

TEST(FrontendLexer, NumberErrors) {
  EXPECT_EQ(lexError("x = 99999999999999999999"),
            "1:5: integer literal is too large (the maximum is "
            "9223372036854775807)");
  EXPECT_EQ(lexError("1e999"), "1:1: floating-point literal is too large for "
                               "f64");
  EXPECT_EQ(lexError("1e-999"), "1:1: floating-point literal is too small for "
                                "f64 (it would round to zero)");
  EXPECT_EQ(lexError("8388608TiB"), "1:1: memory size is too large (the "
                                    "maximum is 9223372036854775807 bytes)");
  EXPECT_EQ(lexError("1.5GiB"), "1:1: a memory size must be a whole number of "
                                "units (for example 1536MiB rather than "
                                "1.5GiB)");
  EXPECT_EQ(lexError("40Gib"),
            "1:3: invalid suffix 'Gib' on number literal; did you mean 'GiB'?");
  EXPECT_EQ(lexError("[2D]"), "1:3: invalid suffix 'D' on number literal; to "
                              "multiply, write '2*D'");
  EXPECT_EQ(lexError("1e"), "1:2: expected digits in the exponent of number "
                            "literal '1e'");
  EXPECT_EQ(lexError(std::string(1000, '7')),
            "1:1: number literal is too long (more than 400 characters)");
}

TEST(FrontendLexer, CharacterErrors) {
  EXPECT_EQ(lexError("a $ b"), "1:3: unexpected character '$'");
  EXPECT_EQ(lexError("a . b"),
            "1:3: unexpected character '.'; a range is written 'begin..end' "
            "and a decimal number needs a digit before and after the '.'");
  EXPECT_EQ(lexError(llvm::StringRef("ab\0c", 4)),
            "1:3: unexpected NUL byte (is this a binary file?)");
  EXPECT_EQ(lexError("x\x01"), "1:2: unexpected control character 0x01");
  EXPECT_EQ(lexError("\n  \xFF\xFE"), "2:3: invalid UTF-8 byte 0xFF");
  EXPECT_EQ(lexError("gr\xC3\xB6\xC3\x9F"
                     "e"),
            "1:3: unexpected non-ASCII character U+00F6; names and operators "
            "are ASCII");
}

TEST(FrontendLexer, InvalidRunIsOneError) {
  LexResult result = lexAll("a \xFF\xFF\x01\x02\xC3 b");
  EXPECT_EQ(result.records.size(), 1u);
  std::vector<Token::Kind> expected = {Token::Identifier, Token::Error,
                                       Token::Identifier, Token::Eof};
  EXPECT_EQ(kindsOf(result), expected);
}

TEST(FrontendLexer, CommentsMayHoldAnyBytes) {
  LexResult result =
      lexAll(llvm::StringRef("a # \xFF\0\x01 caf\xC3\xA9\nb", 15));
  EXPECT_TRUE(result.records.empty()) << result.output;
  EXPECT_EQ(result.tokens.size(), 4u);
}

TEST(FrontendLexer, DescribeAbbreviatesLongSpellings) {
  LexResult result = lexAll(std::string(100, 'a'));
  std::string description = result.tokens.front().describe();
  EXPECT_EQ(description, "identifier '" + std::string(29, 'a') + "...'");
  EXPECT_EQ(lexAll("(").tokens.front().describe(), "'('");
  EXPECT_EQ(lexAll("").tokens.front().describe(), "end of file");
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST(FrontendDiagnostics, PrintsLocationSourceLineAndCaret) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("model m {\n  y = f(a, b)\n}\n",
                                           "model.kiln"),
      llvm::SMLoc());
  std::string output;
  llvm::raw_string_ostream os(output);
  Diagnostics diagnostics(sourceMgr, os);
  const char *start = sourceMgr.getMemoryBuffer(1)->getBufferStart();
  llvm::SMLoc loc = llvm::SMLoc::getFromPointer(start + 16); // 'f'
  diagnostics.error(loc, "unknown function 'f'",
                    {loc, llvm::SMLoc::getFromPointer(start + 23)});
  diagnostics.note(llvm::SMLoc::getFromPointer(start), "in this model");
  EXPECT_EQ(output, "model.kiln:2:7: error: unknown function 'f'\n"
                    "  y = f(a, b)\n"
                    "      ^~~~~~~\n"
                    "model.kiln:1:1: note: in this model\n"
                    "model m {\n"
                    "^\n");
  EXPECT_EQ(diagnostics.getNumErrors(), 1u);
  EXPECT_EQ(diagnostics.getLineColumn(loc).line, 2u);
  EXPECT_EQ(diagnostics.getLineColumn(loc).column, 7u);
  EXPECT_EQ(diagnostics.formatLineColumn(loc), "2:7");
}

TEST(FrontendDiagnostics, SanitizesUnprintableBytes) {
  llvm::SourceMgr sourceMgr;
  llvm::StringRef text("x\t\0\xFF caf\xC3\xA9 = \x01!", 15);
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "bin.kiln"), llvm::SMLoc());
  std::string output;
  llvm::raw_string_ostream os(output);
  Diagnostics diagnostics(sourceMgr, os);
  const char *start = sourceMgr.getMemoryBuffer(1)->getBufferStart();
  diagnostics.error(llvm::SMLoc::getFromPointer(start + 14), "here");
  // The tab becomes a space, NUL and 0xFF become '?', the valid 'é' stays,
  // and the caret still sits under the '!'.
  EXPECT_EQ(output, "bin.kiln:1:15: error: here\n"
                    "x ?? caf\xC3\xA9 = ?!\n" +
                        std::string(13, ' ') + "^\n");
}

TEST(FrontendDiagnostics, WindowsVeryLongLines) {
  std::string line(20000, 'a');
  line[15000] = '!';
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(line, "long.kiln"), llvm::SMLoc());
  std::string output;
  llvm::raw_string_ostream os(output);
  Diagnostics diagnostics(sourceMgr, os);
  const char *start = sourceMgr.getMemoryBuffer(1)->getBufferStart();
  diagnostics.error(llvm::SMLoc::getFromPointer(start + 15000), "bang");
  llvm::SmallVector<llvm::StringRef, 3> lines;
  llvm::StringRef(output).split(lines, '\n', -1, false);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "long.kiln:1:15001: error: bang");
  EXPECT_LT(lines[1].size(), 200u);
  EXPECT_TRUE(lines[1].starts_with("...") && lines[1].ends_with("..."));
  size_t caret = lines[2].find('^');
  ASSERT_NE(caret, llvm::StringRef::npos);
  EXPECT_EQ(lines[1][caret], '!');
}

TEST(FrontendDiagnostics, StopsAfterTheErrorLimit) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("abc", "x.kiln"), llvm::SMLoc());
  std::string output;
  llvm::raw_string_ostream os(output);
  Diagnostics diagnostics(sourceMgr, os, /*errorLimit=*/2);
  llvm::SMLoc loc = llvm::SMLoc::getFromPointer(
      sourceMgr.getMemoryBuffer(1)->getBufferStart());
  for (int i = 0; i < 5; ++i)
    diagnostics.error(loc, "boom");
  EXPECT_EQ(diagnostics.getNumErrors(), 2u);
  EXPECT_TRUE(diagnostics.shouldStop());
  EXPECT_NE(output.find("too many errors emitted (limit is 2), stopping now"),
            std::string::npos);
  EXPECT_EQ(diagnostics.getRecords().size(), 2u);
}

TEST(FrontendDiagnostics, SuggestsTheClosestName) {
  llvm::StringRef builtins[] = {"layer_norm", "softmax", "attention",
                                "cross_entropy"};
  EXPECT_EQ(suggestClosest("layer_nrom", builtins), "layer_norm");
  EXPECT_EQ(suggestClosest("softmx", builtins), "softmax");
  EXPECT_EQ(suggestClosest("attention", builtins), "attention");
  EXPECT_EQ(suggestClosest("relu", builtins), "");
  EXPECT_EQ(suggestClosest("", builtins), "");
  EXPECT_EQ(suggestClosest("atention", builtins), "attention");
  EXPECT_EQ(suggestClosest("layer_nomr", builtins), "layer_norm");
  llvm::StringRef suffixes[] = {"B", "KB", "GiB"};
  EXPECT_EQ(suggestClosest("D", suffixes), "");
  EXPECT_EQ(suggestClosest("Gib", suffixes), "GiB");
  EXPECT_EQ(didYouMean("crossentropy", builtins),
            "; did you mean 'cross_entropy'?");
  EXPECT_EQ(didYouMean("softmax", builtins), "");
}

} // namespace
