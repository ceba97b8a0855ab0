//===- FrontendParserTest.cpp - Tests of the DSL parser -------------------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestUtil.h"

#include "llvm/Support/Casting.h"

#include "gtest/gtest.h"

using namespace kiln;
using namespace kiln::ast;
using namespace kiln::test;

namespace {

std::string dump(const ParseResult &result) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printModule(*result.module, *result.sourceMgr, os);
  return text;
}

/// Parses an example model from the source tree.
ParseResult parseExample(llvm::StringRef name) {
  std::string path = std::string(KILN_SOURCE_DIR) + "/examples/" + name.str();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer)) << "cannot read " << path;
  if (!buffer)
    return {};
  return parse((*buffer)->getBuffer(), name);
}

//===----------------------------------------------------------------------===//
// Whole files
//===----------------------------------------------------------------------===//

TEST(FrontendParser, MlpExampleParses) {
  ParseResult result = parseExample("mlp.kiln");
  ASSERT_TRUE(result.ok()) << result.output;
  EXPECT_EQ(result.module->model->name.name, "mlp");
  ASSERT_TRUE(result.module->train);
  const TrainEntry *steps = result.module->train->find("steps");
  ASSERT_TRUE(steps);
  EXPECT_EQ(llvm::cast<IntegerExpr>(*steps->value).getValue(), 2000);
}

TEST(FrontendParser, GptExampleParses) {
  ParseResult result = parseExample("gpt.kiln");
  ASSERT_TRUE(result.ok()) << result.output;
  const Module &module = *result.module;
  ASSERT_TRUE(module.findFunction("block"));
  EXPECT_EQ(module.model->name.name, "gpt");
  bool hasLoop = false;
  for (const StmtPtr &stmt : module.model->body)
    hasLoop |= llvm::isa<ForStmt>(*stmt);
  EXPECT_TRUE(hasLoop);
  const TrainEntry *optimizer = module.train->find("optimizer");
  ASSERT_TRUE(optimizer);
  EXPECT_EQ(printExpr(*optimizer->value),
            "(call adamw lr=2e-3 betas=(tuple 0.9 0.95) weight_decay=0.1 "
            "clip=1.0)");
}

TEST(FrontendParser, DumpShowsStructureAndLocations) {
  ParseResult result =
      parse("# A tiny model.\n"
            "fn affine(x: f32[B, D], w: f32[D, D]) -> (f32[B, D], f32[]) {\n"
            "  param s : f32[] = constant(0.5)\n"
            "  return x @ w * s, s\n"
            "}\n"
            "model tiny {\n"
            "  dim B = 4, D = 2 * 4\n"
            "  batch = B\n"
            "  input x : f32[B, D]; input y : i32[B]\n"
            "  param w : f32[D, D] = normal(0.02)\n"
            "  for l in 0..2 { x = relu(x) }\n"
            "  h, s = affine(x, w)\n"
            "  output h = h\n"
            "  return cross_entropy(h, y)\n"
            "}\n"
            "train {\n"
            "  memory = 40GiB\n"
            "  precision = bf16\n"
            "}\n");
  ASSERT_TRUE(result.ok()) << result.output;
  EXPECT_EQ(dump(result),
            "fn @2:1 affine(x: f32[B, D], w: f32[D, D]) -> (f32[B, D], "
            "f32[])\n"
            "  param @3:3 s : f32[] = (call constant 0.5)\n"
            "  return @4:3 (* (@ x w) s), s\n"
            "model @6:1 tiny\n"
            "  dim @7:3 B = 4, D = (* 2 4)\n"
            "  batch @8:3 B\n"
            "  input @9:3 x : f32[B, D]\n"
            "  input @9:24 y : i32[B]\n"
            "  param @10:3 w : f32[D, D] = (call normal 0.02)\n"
            "  for @11:3 l in 0..2\n"
            "    assign @11:19 x = (call relu x)\n"
            "  assign @12:3 h, s = (call affine x w)\n"
            "  output @13:3 h = h\n"
            "  return @14:3 (call cross_entropy h y)\n"
            "train @16:1\n"
            "  memory @17:3 = 40GiB\n"
            "  precision @18:3 = bf16\n");
  const TrainEntry *memory = result.module->train->find("memory");
  EXPECT_EQ(llvm::cast<SizeExpr>(*memory->value).getBytes(), int64_t(40) << 30);
}

TEST(FrontendParser, NodesCarryLocations) {
  ParseResult result = parse(inModel("  y = a + b @ c"));
  ASSERT_TRUE(result.ok()) << result.output;
  const auto &assign = llvm::cast<AssignStmt>(*result.module->model->body[0]);
  const auto &sum = llvm::cast<BinaryExpr>(assign.getValue());
  LineColumn opLoc = getLineColumn(*result.sourceMgr, sum.getLoc());
  EXPECT_EQ(opLoc.line, 2u);
  EXPECT_EQ(opLoc.column, 9u);
  EXPECT_EQ(sum.getSpelling(), "a + b @ c");
  EXPECT_EQ(sum.getRhs().getSpelling(), "b @ c");
  EXPECT_EQ(getLineColumn(*result.sourceMgr, sum.getRhs().getLoc()).column,
            13u);
  EXPECT_EQ(assign.getTargets()[0].name, "y");
}

TEST(FrontendParser, TypesAndDims) {
  ParseResult result =
      parse("fn f(a: f32[B, H, T, D/H], b: bool[], c: bf16[(B + 1) * 2]) -> "
            "i64[-1 + T] {\n  return a\n}\n" +
            inModel("  y = 1"));
  ASSERT_TRUE(result.ok()) << result.output;
  const FnDecl &fn = *result.module->functions.front();
  ASSERT_EQ(fn.args.size(), 3u);
  EXPECT_EQ(fn.args[0].type.dims.size(), 4u);
  EXPECT_EQ(printExpr(*fn.args[0].type.dims[3]), "(/ D H)");
  EXPECT_TRUE(fn.args[1].type.isScalar());
  EXPECT_EQ(fn.args[1].type.elementType, ElementType::I1);
  EXPECT_EQ(fn.args[2].type.elementType, ElementType::BF16);
  EXPECT_EQ(printExpr(*fn.args[2].type.dims[0]), "(* (+ B 1) 2)");
  EXPECT_FALSE(fn.hasTupleResult);
  EXPECT_EQ(fn.results[0].elementType, ElementType::I64);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

TEST(FrontendParser, Precedence) {
  EXPECT_EQ(printParsedExpr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(printParsedExpr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(printParsedExpr("a / b * c"), "(* (/ a b) c)");
  EXPECT_EQ(printParsedExpr("a @ b + c"), "(+ (@ a b) c)");
  EXPECT_EQ(printParsedExpr("x @ w * 2"), "(* (@ x w) 2)");
  EXPECT_EQ(printParsedExpr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(printParsedExpr("-x ** 2"), "(neg (** x 2))");
  EXPECT_EQ(printParsedExpr("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(printParsedExpr("2 ** -1"), "(** 2 (neg 1))");
  EXPECT_EQ(printParsedExpr("- - x"), "(neg (neg x))");
  EXPECT_EQ(printParsedExpr("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(printParsedExpr("f(x) ** 2"), "(** (call f x) 2)");
}

TEST(FrontendParser, Literals) {
  EXPECT_EQ(printParsedExpr("true"), "true");
  EXPECT_EQ(printParsedExpr("false"), "false");
  EXPECT_EQ(printParsedExpr("3e-4"), "3e-4");
  EXPECT_EQ(printParsedExpr("512MiB"), "512MiB");
  EXPECT_EQ(printParsedExpr("42"), "42");
}

TEST(FrontendParser, CallsListsAndTuples) {
  EXPECT_EQ(printParsedExpr("layer_norm(x, g, b, eps=1e-5)"),
            "(call layer_norm x g b eps=1e-5)");
  EXPECT_EQ(printParsedExpr("f()"), "(call f)");
  EXPECT_EQ(printParsedExpr("f(a, b,)"), "(call f a b)");
  EXPECT_EQ(printParsedExpr("reshape(x, [B, T, H, D/H])"),
            "(call reshape x [B T H (/ D H)])");
  EXPECT_EQ(printParsedExpr("transpose(x, perm=[0, 2, 1, 3])"),
            "(call transpose x perm=[0 2 1 3])");
  EXPECT_EQ(printParsedExpr("sum(x, axis=[-1], keepdims=false)"),
            "(call sum x axis=[(neg 1)] keepdims=false)");
  EXPECT_EQ(printParsedExpr("broadcast(s, [])"), "(call broadcast s [])");
  EXPECT_EQ(printParsedExpr("adamw(lr=3e-4, betas=(0.9, 0.95))"),
            "(call adamw lr=3e-4 betas=(tuple 0.9 0.95))");
  EXPECT_EQ(printParsedExpr("(1,)"), "(tuple 1)");
  EXPECT_EQ(printParsedExpr("cast(x, bf16)"), "(call cast x bf16)");
}

TEST(FrontendParser, ExpressionsSpanLines) {
  EXPECT_EQ(printParsedExpr("attention(q,\n    k,\n    v,  # values\n"
                            "    causal=true)"),
            "(call attention q k v causal=true)");
  EXPECT_EQ(printParsedExpr("(a\n + b)"), "(+ a b)");
  EXPECT_EQ(printParsedExpr("a +\n  b *\n  c"), "(+ a (* b c))");
  EXPECT_EQ(printParsedExpr("[\n  B,\n  T\n]"), "[B T]");
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

TEST(FrontendParser, MultiLineDimsAndTupleAssignment) {
  ParseResult result = parse("model m {\n"
                             "  dim B = 32,\n"
                             "      T = 64, V = 256\n"
                             "  q,\n  k, v = split(x, 3, axis=-1)\n"
                             "  return q\n"
                             "}");
  ASSERT_TRUE(result.ok()) << result.output;
  const auto &dims = llvm::cast<DimStmt>(*result.module->model->body[0]);
  ASSERT_EQ(dims.getBindings().size(), 3u);
  EXPECT_EQ(dims.getBindings()[2].name.name, "V");
  const auto &assign = llvm::cast<AssignStmt>(*result.module->model->body[1]);
  EXPECT_EQ(assign.getTargets().size(), 3u);
}

TEST(FrontendParser, NestedLoopsAndSemicolons) {
  ParseResult result = parse("model m {\n"
                             "  for i in 0..L {\n"
                             "    for j in i..2*L { x = f(x, i); x = g(x) }\n"
                             "  }\n"
                             "  return x\n"
                             "}\n");
  ASSERT_TRUE(result.ok()) << result.output;
  const auto &outer = llvm::cast<ForStmt>(*result.module->model->body[0]);
  EXPECT_EQ(outer.getVar().name, "i");
  const auto &inner = llvm::cast<ForStmt>(*outer.getBody()[0]);
  EXPECT_EQ(printExpr(inner.getBegin()), "i");
  EXPECT_EQ(printExpr(inner.getEnd()), "(* 2 L)");
  EXPECT_EQ(inner.getBody().size(), 2u);
}

TEST(FrontendParser, FunctionReturnsSeveralValues) {
  ParseResult result =
      parse("fn two(x: f32[B]) -> (f32[B], f32[B],) {\n  return x, -x\n}\n" +
            inModel("  y = 1"));
  ASSERT_TRUE(result.ok()) << result.output;
  const FnDecl &fn = *result.module->functions[0];
  EXPECT_TRUE(fn.hasTupleResult);
  EXPECT_EQ(fn.results.size(), 2u);
  const auto &ret = llvm::cast<ReturnStmt>(*fn.body.back());
  EXPECT_EQ(ret.getValues().size(), 2u);
}

TEST(FrontendParser, BatchIsAnOrdinaryNameOutsideTheModel) {
  ParseResult result = parse(
      "fn f(batch: f32[B]) -> f32[B] {\n  batch = batch * 2\n  return batch\n"
      "}\n" +
      inModel("  y = 1") + "train { batch = 3 }\n");
  ASSERT_TRUE(result.ok()) << result.output;
  EXPECT_TRUE(llvm::isa<AssignStmt>(*result.module->functions[0]->body[0]));
}

TEST(FrontendParser, WindowsLineEndings) {
  ParseResult result = parse("model m {\r\n  y = 1\r\n  return y\r\n}\r\n");
  EXPECT_TRUE(result.ok()) << result.output;
}

//===----------------------------------------------------------------------===//
// Errors: each message with its exact location
//===----------------------------------------------------------------------===//

struct ErrorCase {
  const char *source;
  const char *expected;
};

class FrontendParserError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(FrontendParserError, ReportsLocatedError) {
  ParseResult result = parse(GetParam().source);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.firstError(), GetParam().expected) << result.output;
  // Every error comes with the source line and a caret.
  EXPECT_NE(result.output.find("test.kiln:"), std::string::npos);
  EXPECT_NE(result.output.find('^'), std::string::npos);
}

const ErrorCase kErrorCases[] = {
    {"model m {\n  y = f(a, b\n  return y\n}\n",
     "2:13: expected ',' or ')' to close '(' at 2:8, found end of line"},
    {"model m {\n  y = (a + b\n}\n",
     "2:13: expected ')' to close '(' at 2:7, found end of line"},
    {"model m {\n  y = [1, 2\n  return y\n}\n",
     "2:12: expected ',' or ']' to close '[' at 2:7, found end of line"},
    {"model m {\n  y = a +\n}\n",
     "2:10: expected an expression, found end of line"},
    {"model m {\n  y = ]\n}\n", "2:7: expected an expression, found ']'"},
    {"model m {\n  return 1\n}\n)\n",
     "4:1: expected 'fn', 'model' or 'train' at the top level, found ')'"},
    {"model m {\n  y = a b\n}\n",
     "2:9: expected a newline or ';' after the statement, found identifier "
     "'b'"},
    {"model m {\n  y =\n  return y\n}\n",
     "2:6: expected an expression, found end of line"},
    {"model m {\n  input x : f23[B]\n}\n",
     "2:13: unknown element type 'f23'; did you mean 'f32'?"},
    {"model m {\n  input x : tensor[B]\n}\n",
     "2:13: unknown element type 'tensor' (element types are f32, f64, f16, "
     "bf16, i32, i64, i1 and bool)"},
    {"model m {\n  input x : f32\n}\n",
     "2:16: expected '[' and the shape after 'f32' (a scalar is written "
     "'f32[]'), found end of line"},
    {"model m {\n  input x : f32[B, 1.5]\n}\n",
     "2:20: a tensor dimension must be an integer expression of dims, integer "
     "literals, + - * / and parentheses; found the floating-point number "
     "'1.5'"},
    {"model m {\n  input x : f32[size(B)]\n}\n",
     "2:17: a tensor dimension must be an integer expression of dims, integer "
     "literals, + - * / and parentheses; found a call to 'size'"},
    {"model m {\n  dim N = 2 ** 8\n}\n",
     "2:13: a dim value must be an integer expression of dims, integer "
     "literals, + - * / and parentheses; found operator '**'"},
    {"model m {\n  for l in 0..L/2.0 { }\n}\n",
     "2:17: a loop bound must be an integer expression of dims, integer "
     "literals, + - * / and parentheses; found the floating-point number "
     "'2.0'"},
    {"model m {\n  for l in 0, L { }\n}\n",
     "2:13: expected '..' between the loop bounds (as in 'for l in 0..L'), "
     "found ','"},
    {"model m {\n  for l 0..L { }\n}\n",
     "2:9: expected 'in' after the loop variable, found number '0'"},
    {"fn f(x: f32[B]) -> f32[B] {\n  dim B = 2\n  return x\n}\n",
     "2:3: 'dim' is only allowed in the model body"},
    {"fn f(x: f32[B]) -> f32[B] {\n  input y : f32[B]\n  return x\n}\n",
     "2:3: 'input' is only allowed in the model body; a function receives its "
     "inputs as arguments"},
    {"fn f(x: f32[B]) -> f32[B] {\n  output y = x\n  return x\n}\n",
     "2:3: 'output' is only allowed in the model body"},
    {"model m {\n  for l in 0..2 {\n    param w : f32[D] = zeros\n  }\n}\n",
     "3:5: 'param' is not allowed inside a 'for' loop; declare it in a "
     "function called from the loop (its parameters are numbered per call)"},
    {"model m {\n  for l in 0..2 { return x }\n}\n",
     "2:19: 'return' is not allowed inside a 'for' loop"},
    {"model m {\n  for l in 0..2 { output o = x }\n}\n",
     "2:19: 'output' is not allowed inside a 'for' loop"},
    {"model m {\n  for l in 0..2 { batch = B }\n}\n",
     "2:19: 'batch' is not allowed inside a 'for' loop"},
    {"model m {\n  fn f() -> f32[] { return 1 }\n}\n",
     "2:3: 'fn' declarations are only allowed at the top level"},
    {"model m {\n  return a, b\n}\n",
     "2:13: the model returns exactly one value, the loss; expose other "
     "values with 'output NAME = expr'"},
    {"model m {\n  y = 1\n}\n",
     "3:1: model 'm' has no 'return' statement; 'return LOSS' names the "
     "scalar to minimize"},
    {"model m {\n  return a\n  return b\n}\n",
     "3:3: the model returns its loss only once; it is already returned at "
     "2:3"},
    {"fn f(x: f32[B]) -> f32[B] {\n  y = x\n}\nmodel m { return 1 }\n",
     "3:1: function 'f' must end with a 'return' statement"},
    {"fn f(x: f32[B]) -> f32[B] {\n  return x\n  y = x\n}\n",
     "3:3: statement after 'return' is unreachable; 'return' must be the last "
     "statement of function 'f'"},
    {"fn f(x: f32[B]) {\n  return x\n}\n",
     "1:17: expected '->' and the result type after the argument list, found "
     "'{'"},
    {"fn f(x f32[B]) -> f32[B] {\n  return x\n}\n",
     "1:8: expected ':' after the argument name, found identifier 'f32'"},
    {"fn (x: f32[B]) -> f32[B] {\n  return x\n}\n",
     "1:4: expected a function name after 'fn', found '('"},
    {"model m {\n  y = f(axis=1, x)\n  return y\n}\n",
     "2:17: positional argument after keyword argument 'axis' in call to "
     "'f'"},
    {"model m {\n  y = f(x, axis=1, axis=2)\n  return y\n}\n",
     "2:20: duplicate keyword argument 'axis' in call to 'f'"},
    {"model m {\n  input output : f32[B]\n}\n",
     "2:9: expected an input name, found keyword 'output' (keywords cannot be "
     "used as names)"},
    {"model m {\n  parm w : f32[D] = zeros\n}\n",
     "2:3: unknown statement 'parm'; did you mean 'param'?"},
    {"model m {\n  param w : f32[D]\n  return w\n}\n",
     "2:19: expected '=' and an initializer such as 'zeros' or "
     "'normal(0.02)' after the parameter type, found end of line"},
    {"model m {\n  ) = 3\n}\n", "2:3: expected a statement, found ')'"},
    {"model m {\n  y = 1\n", "3:1: expected '}' to close '{' at 1:9"},
    {"model a { return 1 }\nmodel b { return 2 }\n",
     "2:1: a file holds exactly one model; one is already declared at 1:1"},
    {"model a { return 1 }\ntrain { steps = 1 }\ntrain { steps = 2 }\n",
     "3:1: a file holds at most one 'train' block; one is already declared "
     "at 2:1"},
    {"model a { return 1 }\ntrain {\n  steps = 1\n  steps = 2\n}\n",
     "4:3: duplicate setting 'steps'"},
    {"model a { return 1 }\ntrain {\n  steps 100\n}\n",
     "3:9: expected '=' after the setting name, found number '100'"},
    {"modle m {\n  return 1\n}\n",
     "1:1: expected 'fn', 'model' or 'train' at the top level, found "
     "identifier 'modle'; did you mean 'model'?"},
    {"x = 3\nmodel m { return x }\n",
     "1:1: statements belong inside 'model NAME { ... }' or a function body"},
    {"model m { return 1 } x\n",
     "1:22: expected a newline after the closing '}', found identifier 'x'"},
    {"", "1:1: expected a 'model NAME { ... }' declaration; a file holds "
         "exactly one model"},
    {"# only a comment\n\n",
     "3:1: expected a 'model NAME { ... }' declaration; a file holds exactly "
     "one model"},
    {"fn f(x: f32[B]) -> f32[B] { return x }\n",
     "2:1: expected a 'model NAME { ... }' declaration; a file holds exactly "
     "one model"},
    {"model m {\n  y = 99999999999999999999\n}\n",
     "2:7: integer literal is too large (the maximum is "
     "9223372036854775807)"},
    {"model m {\n  y = 1 = 2\n}\n",
     "2:9: expected a newline or ';' after the statement, found '='"},
    {"model m {\n  batch = 3\n}\n",
     "2:11: expected the name of the batch dim, found number '3'"},
};

INSTANTIATE_TEST_SUITE_P(Cases, FrontendParserError,
                         ::testing::ValuesIn(kErrorCases));

TEST(FrontendParser, FullErrorOutput) {
  ParseResult result = parse("model m {\n  y = f(a, b\n  return y\n}\n");
  EXPECT_EQ(result.output,
            "test.kiln:2:13: error: expected ',' or ')' to close '(' at 2:8, "
            "found end of line\n"
            "  y = f(a, b\n"
            "            ^\n");
}

TEST(FrontendParser, DuplicateNotesPointAtTheFirst) {
  ParseResult result = parse("model m {\n  y = f(x, axis=1, axis=2)\n}\n");
  ASSERT_GE(result.records.size(), 2u);
  EXPECT_EQ(result.records[1].severity, Diagnostics::Severity::Note);
  EXPECT_EQ(result.records[1].message, "first given here");
  EXPECT_EQ(result.records[1].column, 12u);
}

TEST(FrontendParser, RecoversAtTheNextStatement) {
  ParseResult result = parse("model m {\n"
                             "  input x : f23[B]\n"
                             "  y = (a + \n"
                             "  param w : f32[D]\n"
                             "  z = ok(1)\n"
                             "  for l in 0..2 {\n"
                             "    q = $\n"
                             "  }\n"
                             "  return y\n"
                             "}\n"
                             "train { steps = }\n");
  EXPECT_FALSE(result.ok());
  ASSERT_EQ(result.numErrors(), 5u) << result.output;
  std::vector<unsigned> lines;
  for (const auto &record : result.records)
    lines.push_back(record.line);
  EXPECT_EQ(lines, (std::vector<unsigned>{2, 3, 4, 7, 11}));
}

TEST(FrontendParser, StopsAfterTenErrors) {
  std::string source = "model m {\n";
  for (int i = 0; i < 50; ++i)
    source += "  y = )\n";
  source += "}\n";
  ParseResult result = parse(source);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.numErrors(), 10u);
  EXPECT_NE(result.output.find("too many errors"), std::string::npos);
}

} // namespace
