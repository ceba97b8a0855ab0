//===- FrontendRobustnessTest.cpp - Hostile inputs to the DSL parser ------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// Whatever bytes a file holds, the parser must answer with located errors (or
// a module): never a crash, an assertion, a stack overflow or a hang.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestUtil.h"

#include "gtest/gtest.h"

#include <chrono>
#include <random>

using namespace kiln;
using namespace kiln::test;

namespace {

/// Checks that parsing failed with at least one located error, within the
/// error limit.
void expectLocatedFailure(const ParseResult &result) {
  EXPECT_FALSE(result.ok());
  ASSERT_GE(result.numErrors(), 1u);
  EXPECT_LE(result.numErrors(), 10u);
  for (const auto &record : result.records) {
    EXPECT_GT(record.line, 0u) << record.message;
    EXPECT_GT(record.column, 0u) << record.message;
  }
}

std::string repeat(llvm::StringRef text, size_t count) {
  std::string result;
  result.reserve(text.size() * count);
  for (size_t i = 0; i < count; ++i)
    result += text;
  return result;
}

constexpr size_t kDeep = 100000;

TEST(FrontendRobustness, DeepParentheses) {
  ParseResult result = parse("model m {\n  y = " + repeat("(", kDeep) + "x" +
                             repeat(")", kDeep) + "\n  return y\n}\n");
  expectLocatedFailure(result);
  EXPECT_EQ(result.numErrors(), 1u);
  // The model's block is the first level, the 256th '(' the 257th.
  EXPECT_EQ(result.firstError(),
            "2:262: nesting is too deep (more than 256 levels of brackets, "
            "blocks or operators)");
}

TEST(FrontendRobustness, DeepUnclosedBrackets) {
  expectLocatedFailure(parse("model m {\n  y = " + repeat("[", kDeep)));
  expectLocatedFailure(parse("model m {\n  y = " + repeat("f(", kDeep)));
  expectLocatedFailure(
      parse("model m {\n  input x : f32[" + repeat("(", kDeep) + "\n}\n"));
}

TEST(FrontendRobustness, DeepBlocks) {
  ParseResult result =
      parse("model m {\n" + repeat("for l in 0..1 {\n", kDeep) +
            repeat("}\n", kDeep) + "}\n");
  expectLocatedFailure(result);
  EXPECT_EQ(result.numErrors(), 1u);
  EXPECT_EQ(result.records.front().line, 257u);
}

TEST(FrontendRobustness, DeepOperators) {
  expectLocatedFailure(parse(inModel("  y = " + repeat("-", kDeep) + "x")));
  expectLocatedFailure(parse(inModel("  y = x" + repeat(" ** x", kDeep))));
}

TEST(FrontendRobustness, LongOperatorChains) {
  ParseResult result = parse(inModel("  y = a" + repeat(" + a", kDeep)));
  expectLocatedFailure(result);
  EXPECT_NE(result.firstError().find("expression is too long or too deeply "
                                     "nested (more than 512 levels)"),
            std::string::npos);
  // A chain below the limit is fine.
  EXPECT_TRUE(parse(inModel("  y = a" + repeat(" * a", 500))).ok());
}

TEST(FrontendRobustness, EmptyAndBlankFiles) {
  expectLocatedFailure(parse(""));
  expectLocatedFailure(parse("\n\n\n"));
  expectLocatedFailure(parse("   \t  "));
  expectLocatedFailure(parse(llvm::StringRef("\0", 1)));
}

TEST(FrontendRobustness, HugeNumbers) {
  expectLocatedFailure(parse(inModel("  y = " + std::string(100000, '9'))));
  expectLocatedFailure(parse(inModel("  y = 1e99999999999999999999")));
  expectLocatedFailure(
      parse(inModel("  y = 0." + std::string(5000, '0') + "1")));
  expectLocatedFailure(parse("model m {\n  dim B = 9223372036854775808\n}\n"));
  expectLocatedFailure(parse(inModel("  y = 99999999999999999999GiB")));
}

TEST(FrontendRobustness, InvalidUtf8AndNulBytes) {
  expectLocatedFailure(parse(inModel("  y = \xC3\x28 + \xF0\x28\x8C\x28")));
  expectLocatedFailure(parse(inModel("  y = caf\xC3\xA9")));
  expectLocatedFailure(parse(inModel(llvm::StringRef("  y = a\0b", 9))));
  expectLocatedFailure(parse("model \xFF\xFE\xFD { }"));
  // A lone UTF-8 lead byte at the very end of the buffer.
  expectLocatedFailure(parse("model m { return \xE2"));
}

TEST(FrontendRobustness, RandomBinaryData) {
  std::mt19937 random(1234);
  for (int round = 0; round < 20; ++round) {
    std::string bytes(64 * 1024, '\0');
    for (char &byte : bytes)
      byte = static_cast<char>(random());
    expectLocatedFailure(parse(bytes));
  }
}

/// Random text built from the language's own tokens finds the corners that
/// random bytes never reach.
TEST(FrontendRobustness, RandomTokenSoup) {
  static const char *pieces[] = {
      "fn ", "model ",  "train ", "param ", "input ", "output ", "dim ", "for ",
      "in ", "return ", "true ",  "batch ", "x ",     "f32",     "[",    "]",
      "(",   ")",       "{",      "}",      ",",      ":",       ";",    "=",
      "+",   "-",       "*",      "/",      "@",      "**",      "->",   "..",
      "1",   "2.5",     "40GiB",  "\n",     "# c\n",  " "};
  std::mt19937 random(99);
  for (int round = 0; round < 2000; ++round) {
    std::string source;
    size_t length = random() % 200;
    for (size_t i = 0; i < length; ++i)
      source += pieces[random() % std::size(pieces)];
    ParseResult result = parse(source);
    if (!result.ok())
      expectLocatedFailure(result);
  }
}

/// Every prefix and many mutations of a real model must parse or fail with
/// located errors.
TEST(FrontendRobustness, TruncatedAndMutatedModels) {
  std::string path = std::string(KILN_SOURCE_DIR) + "/examples/gpt.kiln";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer)) << path;
  std::string text = (*buffer)->getBuffer().str();
  ASSERT_TRUE(parse(text).ok());
  for (size_t length = 0; length < text.size(); ++length) {
    ParseResult result = parse(llvm::StringRef(text).take_front(length));
    if (!result.ok())
      expectLocatedFailure(result);
  }
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::string mutated = text;
    size_t position = random() % mutated.size();
    switch (random() % 3) {
    case 0:
      mutated.erase(position, 1 + random() % 8);
      break;
    case 1:
      mutated[position] = static_cast<char>(random());
      break;
    default:
      mutated.insert(position, 1, "(){}[],:=\n#.*"[random() % 14]);
      break;
    }
    ParseResult result = parse(mutated);
    if (!result.ok())
      expectLocatedFailure(result);
  }
}

TEST(FrontendRobustness, TenMegabyteFiles) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  // One enormous identifier.
  expectLocatedFailure(parse(std::string(10 << 20, 'a')));
  // One enormous comment before a valid model.
  EXPECT_TRUE(
      parse("#" + std::string(10 << 20, 'c') + "\n" + inModel("  y = 1")).ok());
  // Two megabytes of valid statements (an AST of 130k statements).
  std::string body = repeat("  y = a + b * c\n", (2 << 20) / 16);
  ParseResult big = parse(inModel(body));
  EXPECT_TRUE(big.ok()) << big.firstError();
  // Ten megabytes of errors stop at the error limit.
  expectLocatedFailure(parse(inModel(repeat("  y = )\n", (10 << 20) / 8))));
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 30.0);
}

} // namespace
