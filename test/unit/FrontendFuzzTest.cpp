//===- FrontendFuzzTest.cpp - The whole front end on hostile models -------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// Thousands of mutated and generated model files go through the whole front
// end in-process (kiln::frontend::loadModel: lexer, parser, IR generation and
// the verifier). For every input the front end must survive, and either
// return a module that passes mlir::verify, or return null with at least one
// located error (`fuzz.kiln:LINE:COL: error: ...`): never a crash, a hang, or
// a silent failure.
//
// Every category uses std::mt19937 with a fixed seed, so a failure reproduces
// exactly; a failing input is written to the test's temporary directory, and
// if the process dies on a signal, the input being processed is written there
// too (kiln-fuzz-crash.kiln) before the process exits.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Graph/IR/GraphDialect.h"
#include "kiln/Frontend/Frontend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace kiln;

namespace {

/// One input may take at most this long: far above the few milliseconds a
/// model takes, so only a real hang (or a quadratic blow-up) trips it.
constexpr double kSlowInputSeconds = 10.0;
/// Stop reporting a category after this many failing inputs.
constexpr int kMaxReportedFailures = 5;

//===----------------------------------------------------------------------===//
// Crash reproduction
//===----------------------------------------------------------------------===//

/// The input being processed, for the signal handler.
const std::string *currentInput = nullptr;
/// "category input #N (what)", for the signal handler.
std::string currentLabel;
std::string crashPath;

void writeCurrentInputOnCrash(void *) {
  if (!currentInput || crashPath.empty())
    return;
  int fd = ::open(crashPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return;
  const char *data = currentInput->data();
  size_t left = currentInput->size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written <= 0)
      break;
    data += written;
    left -= written;
  }
  ::close(fd);
  static const char message[] =
      "FrontendFuzz: the input that crashed is in kiln-fuzz-crash.kiln in the "
      "test's temporary directory: ";
  (void)!::write(2, message, sizeof(message) - 1);
  (void)!::write(2, currentLabel.data(), currentLabel.size());
  (void)!::write(2, "\n", 1);
}

//===----------------------------------------------------------------------===//
// The oracle
//===----------------------------------------------------------------------===//

/// Whether `text` holds a line that starts `fuzz.kiln:LINE:COL: error: ` with
/// LINE and COL positive.
bool hasLocatedError(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (!line.consume_front("fuzz.kiln:"))
      continue;
    unsigned lineNo = 0, column = 0;
    if (line.consumeInteger(10, lineNo) || lineNo == 0 ||
        !line.consume_front(":") || line.consumeInteger(10, column) ||
        column == 0)
      continue;
    if (line.starts_with(": error: ") && line.size() > 9)
      return true;
  }
  return false;
}

/// What happened to the inputs of one category.
struct Tally {
  std::string category;
  int inputs = 0;
  int accepted = 0;
  int rejected = 0;
  int failures = 0;
  double seconds = 0;
  double slowest = 0;
};

class FrontendFuzz : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    mlp = readExample("mlp.kiln");
    gpt = readExample("gpt.kiln");
    crashPath = ::testing::TempDir() + "kiln-fuzz-crash.kiln";
    static bool installed = false;
    if (!installed) {
      llvm::sys::AddSignalHandler(writeCurrentInputOnCrash, nullptr);
      installed = true;
    }
  }

  static std::string readExample(llvm::StringRef name) {
    std::string path = std::string(KILN_SOURCE_DIR) + "/examples/" + name.str();
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      ADD_FAILURE() << "cannot read " << path;
      return "";
    }
    return (*buffer)->getBuffer().str();
  }

  FrontendFuzz() {
    context.getOrLoadDialect<graph::GraphDialect>();
    context.getOrLoadDialect<mlir::func::FuncDialect>();
    // One input at a time; the verifier need not spawn threads.
    context.disableMultithreading();
  }

  ~FrontendFuzz() override {
    // The totals, one line per category, in the test log.
    for (const Tally &tally : tallies)
      std::printf("[ fuzz     ] %-28s %6d inputs: %6d accepted, %6d rejected "
                  "with a located error; %.2f s (slowest %.3f s)\n",
                  tally.category.c_str(), tally.inputs, tally.accepted,
                  tally.rejected, tally.seconds, tally.slowest);
  }

  Tally &beginCategory(llvm::StringRef name) {
    tallies.push_back({});
    tallies.back().category = name.str();
    return tallies.back();
  }

  /// Runs one input through the whole front end and checks the oracle.
  /// Returns whether a module came back.
  bool check(const std::string &source, Tally &tally, llvm::StringRef what) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, "fuzz.kiln"),
        llvm::SMLoc());
    std::string errors;
    llvm::raw_string_ostream os(errors);

    currentLabel = tally.category + " input #" +
                   std::to_string(tally.inputs + 1) + " (" + what.str() + ")";
    currentInput = &source;
    auto start = std::chrono::steady_clock::now();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        frontend::loadModel(sourceMgr, context, os);
    bool verified = module && succeeded(mlir::verify(*module));
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    currentInput = nullptr;

    ++tally.inputs;
    tally.seconds += seconds;
    tally.slowest = std::max(tally.slowest, seconds);
    std::string problem;
    if (module) {
      ++tally.accepted;
      if (!verified)
        problem = "loadModel returned a module that fails mlir::verify";
      else if (llvm::StringRef(errors).contains(": error: "))
        problem = "loadModel returned a module but reported an error";
    } else {
      ++tally.rejected;
      if (errors.empty())
        problem = "loadModel returned null without any error";
      else if (!hasLocatedError(errors))
        problem = "loadModel returned null without a located "
                  "'fuzz.kiln:LINE:COL: error:'";
    }
    if (seconds > kSlowInputSeconds)
      problem = "the input took " + std::to_string(seconds) + " s";
    if (!problem.empty())
      reportFailure(tally, what, source, problem, errors);
    return static_cast<bool>(module);
  }

  void reportFailure(Tally &tally, llvm::StringRef what,
                     const std::string &source, const std::string &problem,
                     const std::string &errors) {
    if (++tally.failures > kMaxReportedFailures)
      return;
    std::string path = ::testing::TempDir() + "kiln-fuzz-" + tally.category +
                       "-" + std::to_string(tally.inputs) + ".kiln";
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec);
    if (!ec)
      file << source;
    ADD_FAILURE() << tally.category << " input #" << tally.inputs << " ("
                  << what.str() << "): " << problem << "\n  input saved to "
                  << path << " (" << source.size() << " bytes)"
                  << "\n  errors (first 2000 bytes):\n"
                  << errors.substr(0, 2000);
  }

  mlir::MLIRContext context;
  std::vector<Tally> tallies;
  static std::string mlp, gpt;
};

std::string FrontendFuzz::mlp;
std::string FrontendFuzz::gpt;

//===----------------------------------------------------------------------===//
// Mutators
//===----------------------------------------------------------------------===//

using Rng = std::mt19937;

size_t pick(Rng &rng, size_t size) {
  return size == 0 ? 0 : std::uniform_int_distribution<size_t>(0, size - 1)(rng);
}

bool chance(Rng &rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

/// Bytes worth inserting: structure, NUL, controls and invalid UTF-8.
char interestingByte(Rng &rng) {
  static const char bytes[] = {'(', ')', '[', ']', '{', '}', ',', '=', ':',
                               '.', '@', '*', '-', '+', '/', '#', '\n', '\r',
                               '\t', ' ', '0', '9', 'e', 'x', '_', '\0',
                               '\x01', '\x7f', '\x80', '\xbf', '\xc0', '\xe2',
                               '\xf0', '\xff', '"', '\'', '\\', '$', ';',
                               '<', '>', '!'};
  if (chance(rng, 0.3))
    return static_cast<char>(pick(rng, 256));
  return bytes[pick(rng, sizeof(bytes))];
}

/// One byte-level mutation: flip, delete, insert or duplicate.
void mutateBytes(std::string &text, Rng &rng) {
  switch (pick(rng, 4)) {
  case 0: // Flip one bit.
    if (!text.empty())
      text[pick(rng, text.size())] ^= static_cast<char>(1u << pick(rng, 8));
    break;
  case 1: { // Delete a range.
    if (text.empty())
      break;
    size_t at = pick(rng, text.size());
    text.erase(at, 1 + pick(rng, 16));
    break;
  }
  case 2: // Insert a byte.
    text.insert(text.begin() + pick(rng, text.size() + 1), interestingByte(rng));
    break;
  case 3: { // Duplicate a range elsewhere.
    if (text.empty())
      break;
    size_t from = pick(rng, text.size());
    std::string piece = text.substr(from, 1 + pick(rng, 64));
    text.insert(pick(rng, text.size() + 1), piece);
    break;
  }
  }
}

/// A rough tokenization that keeps every byte: identifiers, numbers,
/// comments, whitespace runs and single punctuation characters.
std::vector<std::string> tokenize(llvm::StringRef text) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    char c = text[i];
    if (llvm::isAlpha(c) || c == '_') {
      while (i < text.size() && (llvm::isAlnum(text[i]) || text[i] == '_'))
        ++i;
    } else if (llvm::isDigit(c)) {
      while (i < text.size() && (llvm::isAlnum(text[i]) || text[i] == '.'))
        ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n')
        ++i;
    } else if (c == ' ' || c == '\t') {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
        ++i;
    } else {
      ++i;
    }
    tokens.push_back(text.slice(start, i).str());
  }
  return tokens;
}

bool isWord(const std::string &token) {
  return !token.empty() && (llvm::isAlpha(token[0]) || token[0] == '_');
}
bool isNumber(const std::string &token) {
  return !token.empty() && llvm::isDigit(token[0]);
}
bool isBlank(const std::string &token) {
  return token.empty() || token[0] == ' ' || token[0] == '\t' ||
         token[0] == '\n' || token[0] == '#';
}

const char *const kWords[] = {
    // Keywords and builtins of the language.
    "fn", "model", "train", "param", "input", "output", "dim", "for", "in",
    "return", "true", "false", "batch", "relu", "gelu", "tanh", "exp", "log", "sigmoid", "silu", "abs", "sin", "cos", "erf", "argmax", "one_hot", "arange", "maximum", "minimum", "clamp", "rms_norm", "mse", "where", "rotary",
    "sqrt", "rsqrt", "neg", "pow", "matmul", "transpose", "reshape",
    "broadcast", "sum", "max", "mean", "slice", "concat", "split", "heads",
    "merge_heads", "embed", "layer_norm", "softmax", "attention",
    "cross_entropy", "dropout", "cast", "zeros", "ones", "normal", "uniform",
    "constant", "f32", "f64", "f16", "bf16", "i32", "i64", "i1", "adamw",
    "sgd", "momentum", "cosine", "linear", "axis", "causal", "eps", "perm",
    "keepdims", "label_smoothing", "rate", "scale", "block", "x", "h", "B",
    "T", "D", "H", "L", "V", "N", "C", "F",
    // Typos and strangers.
    "layer_nrom", "relu_", "modle", "Dd", "_", "__x", "B0", "forward",
    "loss", "logits"};

const char *const kNumbers[] = {
    "0", "1", "-1", "2", "3", "7", "64", "4096", "0.0", "0.5", "1e-30",
    "1e308", "1e400", "1e-400", "9223372036854775807", "9223372036854775808",
    "18446744073709551616", "99999999999999999999999999999999", "1GiB",
    "40GiB", "0x10", "1.5e", "00", "3.", ".5", "1_000", "2147483648",
    "4294967296", "1000000000"};

std::string randomIdentifier(Rng &rng) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzBTDHLV_0123456789";
  std::string name(1, "abcxyzBTDH_"[pick(rng, 11)]);
  size_t length = pick(rng, 12);
  for (size_t i = 0; i < length; ++i)
    name.push_back(alphabet[pick(rng, sizeof(alphabet) - 1)]);
  return name;
}

std::string randomNumber(Rng &rng) {
  switch (pick(rng, 3)) {
  case 0:
    return kNumbers[pick(rng, std::size(kNumbers))];
  case 1:
    return std::to_string(std::uniform_int_distribution<int64_t>(
        0, std::numeric_limits<int64_t>::max())(rng));
  default:
    return std::to_string(pick(rng, 100));
  }
}

/// One token-level mutation.
void mutateTokens(std::vector<std::string> &tokens, Rng &rng) {
  if (tokens.empty())
    return;
  // Pick a token that is not whitespace, if one is found quickly.
  size_t at = pick(rng, tokens.size());
  for (int tries = 0; tries < 8 && isBlank(tokens[at]); ++tries)
    at = pick(rng, tokens.size());
  switch (pick(rng, 6)) {
  case 0: { // Swap two tokens.
    size_t other = pick(rng, tokens.size());
    std::swap(tokens[at], tokens[other]);
    break;
  }
  case 1: // Delete one.
    tokens.erase(tokens.begin() + at);
    break;
  case 2: // Duplicate one.
    tokens.insert(tokens.begin() + at, tokens[at]);
    break;
  case 3: // Replace a word.
    if (isWord(tokens[at]) || chance(rng, 0.3))
      tokens[at] = chance(rng, 0.6) ? kWords[pick(rng, std::size(kWords))]
                                    : randomIdentifier(rng);
    break;
  case 4: // Replace a number.
    if (isNumber(tokens[at]) || chance(rng, 0.3))
      tokens[at] = randomNumber(rng);
    break;
  case 5: // Move a token elsewhere.
  {
    std::string token = tokens[at];
    tokens.erase(tokens.begin() + at);
    tokens.insert(tokens.begin() + pick(rng, tokens.size() + 1), token);
    break;
  }
  }
}

std::string join(const std::vector<std::string> &pieces) {
  std::string text;
  for (const std::string &piece : pieces)
    text += piece;
  return text;
}

std::vector<std::string> splitLines(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  std::vector<std::string> result;
  for (llvm::StringRef line : lines)
    result.push_back(line.str());
  return result;
}

std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

std::string repeat(llvm::StringRef text, size_t count) {
  std::string result;
  result.reserve(text.size() * count);
  for (size_t i = 0; i < count; ++i)
    result += text;
  return result;
}

//===----------------------------------------------------------------------===//
// A generator of well-formed-ish models
//===----------------------------------------------------------------------===//

/// Generates models from a small grammar that tracks the shapes of its
/// variables, so that most programs are valid and exercise the emitter, and
/// occasionally breaks one rule so that the error paths are reached from
/// otherwise sensible code.
class ModelGenerator {
public:
  explicit ModelGenerator(Rng &rng) : rng(rng) {}

  std::string generate() {
    out.clear();
    vars.clear();
    counter = 0;
    breakRate = chance(rng, 0.5) ? 0.0 : 0.08;
    int64_t h = 1 + pick(rng, 3);
    dims = {{"B", int64_t(1 + pick(rng, 3))},
            {"T", int64_t(1 + pick(rng, 4))},
            {"H", h},
            {"D", h * int64_t(1 + pick(rng, 3))},
            {"V", int64_t(2 + pick(rng, 6))}};

    bool withFunction = chance(rng, 0.5);
    if (withFunction)
      emitFunction();
    out += "model gen {\n  dim ";
    for (size_t i = 0; i < dims.size(); ++i)
      out += (i ? ", " : "") + dims[i].first + " = " + dimValue(i);
    out += "\n";
    if (chance(rng, 0.2))
      out += "  batch = B\n";
    out += "  input ids : i32[B, T]\n";
    out += "  input x : " + maybeBreak("f32[B, T, D]", "f32[B, T, E]") + "\n";
    vars.push_back({"x", "[B, T, D]"});
    out += "  param g : f32[D] = ones\n  param b : f32[D] = zeros\n";
    out += "  param w : f32[D, D] = " + initializer() + "\n";
    out += "  param w3 : f32[D, 3*D] = normal(0.02)\n";
    out += "  param table : f32[V, D] = uniform(-0.1, 0.1)\n";
    vars.push_back({"g", "[D]"});
    vars.push_back({"b", "[D]"});

    size_t statements = 1 + pick(rng, 12);
    for (size_t i = 0; i < statements; ++i)
      emitStatement(withFunction, /*inLoop=*/false);
    if (chance(rng, 0.3))
      out += "  output out = " + anyVar("[B, T, D]") + "\n";
    // The loss: a scalar, most of the time.
    switch (pick(rng, 3)) {
    case 0:
      out += "  return mean(" + anyVar("[B, T, D]") + ")\n";
      break;
    case 1:
      out += "  logits = " + anyVar("[B, T, D]") + " @ transpose(table)\n";
      out += "  return cross_entropy(logits, " + maybeBreak("ids", "x") +
             ", label_smoothing=" + maybeBreak("0.1", "1.5") + ")\n";
      break;
    default:
      out += "  return sum(" + anyVar("[B, T, D]") + ", axis=" +
             maybeBreak("[0, 1, 2]", "[0, 3]") + ")\n";
      break;
    }
    out += "}\n";
    if (chance(rng, 0.6))
      emitTrain();
    return out;
  }

private:
  struct Var {
    std::string name;
    std::string shape;
  };

  std::string maybeBreak(const std::string &good, const std::string &bad) {
    return chance(rng, breakRate) ? bad : good;
  }

  std::string dimValue(size_t i) {
    if (chance(rng, breakRate))
      return pick(rng, 2) ? "0" : "-3";
    // Write D as arithmetic on H sometimes: dims may refer to earlier dims.
    if (dims[i].first == "D" && chance(rng, 0.5))
      return "H * " + std::to_string(dims[i].second / dims[2].second);
    return std::to_string(dims[i].second);
  }

  std::string initializer() {
    static const char *const inits[] = {"zeros", "ones", "normal(0.02)",
                                        "uniform(-1, 1)", "constant(0.5)"};
    static const char *const bad[] = {"normal", "uniform(1, -1)", "nromal(1)",
                                      "normal(-1)", "constant(x)",
                                      "normal(std=1)"};
    if (chance(rng, breakRate))
      return bad[pick(rng, std::size(bad))];
    return inits[pick(rng, std::size(inits))];
  }

  /// A variable of `shape`, or (rarely) a wrong or unknown one.
  std::string anyVar(const std::string &shape) {
    if (chance(rng, breakRate))
      return pick(rng, 2) ? "undefined_" + std::to_string(counter) : "ids";
    std::vector<const Var *> matching;
    for (const Var &var : vars)
      if (var.shape == shape)
        matching.push_back(&var);
    if (matching.empty())
      return "x";
    return matching[pick(rng, matching.size())]->name;
  }

  std::string fresh() { return "v" + std::to_string(counter++); }

  /// An expression of shape [B, T, D].
  std::string expression(int depth) {
    std::string a = anyVar("[B, T, D]");
    if (depth > 3)
      return a;
    switch (pick(rng, 16)) {
    case 0:
      return "relu(" + expression(depth + 1) + ")";
    case 1:
      return "gelu(" + expression(depth + 1) + ")";
    case 2:
      return "tanh(" + a + ")";
    case 3:
      return a + " + " + expression(depth + 1);
    case 4:
      return a + " * " + maybeBreak("0.5", "ids");
    case 5:
      return "(" + a + " - " + anyVar("[D]") + ") / 2";
    case 6:
      return a + " @ " + maybeBreak("w", "w3");
    case 7:
      return "layer_norm(" + a + ", g, b" +
             (chance(rng, 0.5) ? std::string(", eps=") +
                                     maybeBreak("1e-5", "0")
                               : "") +
             ")";
    case 8:
      return "softmax(" + a + ", axis=" + maybeBreak("-1", "3") + ")";
    case 9:
      return "merge_heads(attention(heads(" + a + ", H), heads(" + a +
             ", H), heads(" + a + ", " + maybeBreak("H", "D + 1") +
             "), causal=" + maybeBreak("true", "1") + "))";
    case 10:
      return "dropout(" + a + ", rate=" + maybeBreak("0.1", "1") + ")";
    case 11:
      return "embed(table, ids) + " + a;
    case 12:
      return "transpose(transpose(" + a + "))";
    case 13:
      return "reshape(" + a + ", [B, T, " + maybeBreak("D", "D + 1") + "])";
    case 14:
      return "-" + a + " ** 2";
    default:
      return "broadcast(mean(" + a + ", axis=-1, keepdims=true), [B, T, D])";
    }
  }

  void emitStatement(bool withFunction, bool inLoop) {
    std::string indent = inLoop ? "    " : "  ";
    switch (pick(rng, 7)) {
    case 0:
    case 1:
    case 2: {
      std::string name = fresh();
      out += indent + name + " = " + expression(0) + "\n";
      vars.push_back({name, "[B, T, D]"});
      break;
    }
    case 3: { // Tuple unpacking from split.
      std::string q = fresh(), k = fresh(), v = fresh();
      out += indent + q + ", " + k + ", " + maybeBreak(v + " = ", " = ") +
             "split(" + anyVar("[B, T, D]") + " @ w3, " +
             maybeBreak("3", "4") + ", axis=-1)\n";
      vars.push_back({q, "[B, T, D]"});
      vars.push_back({k, "[B, T, D]"});
      vars.push_back({v, "[B, T, D]"});
      break;
    }
    case 4: { // A loop; its body reassigns x.
      if (inLoop)
        break;
      out += indent + "for l in 0.." + maybeBreak(std::to_string(pick(rng, 4)), "D / 0") +
             " {\n";
      size_t body = 1 + pick(rng, 2);
      for (size_t i = 0; i < body; ++i) {
        if (withFunction && chance(rng, 0.6))
          out += indent + "  x = layer(x)\n";
        else
          out += indent + "  x = x + " + expression(2) + "\n";
      }
      out += indent + "}\n";
      break;
    }
    case 5:
      if (withFunction) {
        std::string name = fresh();
        out += indent + name + " = layer(" + anyVar("[B, T, D]") + ")\n";
        vars.push_back({name, "[B, T, D]"});
      }
      break;
    default: { // A reduction kept as a [B, T, 1] and broadcast back.
      std::string name = fresh();
      out += indent + name + " = " + anyVar("[B, T, D]") + " - max(" +
             anyVar("[B, T, D]") + ", axis=" + maybeBreak("-1", "-4") +
             ", keepdims=true)\n";
      vars.push_back({name, "[B, T, D]"});
      break;
    }
    }
  }

  /// `fn layer`, and sometimes `fn inner` that it calls (nested param names).
  void emitFunction() {
    bool nested = chance(rng, 0.5);
    if (nested)
      out += "fn inner(y: f32[B, T, D]) -> f32[B, T, D] {\n"
             "  param s : f32[D] = " + initializer() + "\n"
             "  return y * s\n}\n\n";
    out += "fn layer(h: f32[B, T, D]) -> " +
           maybeBreak("f32[B, T, D]", "f32[B, D, T]") + " {\n";
    out += "  param wl : f32[D, D] = normal(0.02)\n";
    out += "  param bl : f32[D] = zeros\n";
    out += "  h = h + relu(h @ wl + bl)\n";
    if (nested)
      out += "  h = inner(h)\n";
    if (chance(rng, breakRate))
      out += "  h = layer(h)\n";
    out += "  return h\n}\n\n";
  }

  void emitTrain() {
    out += "train {\n";
    static const char *const optimizers[] = {
        "adamw(lr=1e-3)", "adamw(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, "
                          "clip=1.0)",
        "sgd(lr=0.1)", "momentum(lr=0.1, momentum=0.9, nesterov=true)"};
    static const char *const badOptimizers[] = {
        "adamw", "adam(lr=1)", "adamw(lr=-1)", "sgd(0.1)",
        "adamw(lr=1, betas=(1.5, 0.9))", "momentum(lr=1, nesterov=1)"};
    out += "  optimizer = " +
           (chance(rng, breakRate) ? std::string(badOptimizers[pick(
                                         rng, std::size(badOptimizers))])
                                   : std::string(optimizers[pick(
                                         rng, std::size(optimizers))])) +
           "\n";
    if (chance(rng, 0.5))
      out += "  schedule = " + maybeBreak("cosine(warmup=10)", "cosine(10)") +
             "\n";
    if (chance(rng, 0.5))
      out += "  steps = " + maybeBreak("100", "0") + "\n";
    if (chance(rng, 0.3))
      out += "  precision = " + maybeBreak("bf16", "bf61") + "\n";
    if (chance(rng, 0.3))
      out += "  memory = " + maybeBreak("1GiB", "-1") + "\n";
    if (chance(rng, breakRate))
      out += "  stpes = 10\n";
    out += "}\n";
  }

  Rng &rng;
  std::string out;
  std::vector<std::pair<std::string, int64_t>> dims;
  std::vector<Var> vars;
  int counter = 0;
  double breakRate = 0;
};

//===----------------------------------------------------------------------===//
// The tests
//===----------------------------------------------------------------------===//

TEST_F(FrontendFuzz, ExamplesLoad) {
  // The unmutated examples are the baseline every mutation starts from.
  Tally &tally = beginCategory("examples");
  EXPECT_TRUE(check(mlp, tally, "examples/mlp.kiln"));
  EXPECT_TRUE(check(gpt, tally, "examples/gpt.kiln"));
}

TEST_F(FrontendFuzz, ByteMutations) {
  for (const auto &[name, source] :
       {std::pair<const char *, const std::string *>{"mlp", &mlp},
        {"gpt", &gpt}}) {
    Tally &tally = beginCategory(std::string("bytes-") + name);
    Rng rng(std::string(name) == "mlp" ? 1001 : 1002);
    for (int i = 0; i < 20000; ++i) {
      std::string text = *source;
      size_t mutations = 1 + pick(rng, 4);
      for (size_t m = 0; m < mutations; ++m)
        mutateBytes(text, rng);
      check(text, tally, "byte mutation");
    }
  }
}

TEST_F(FrontendFuzz, TokenMutations) {
  for (const auto &[name, source] :
       {std::pair<const char *, const std::string *>{"mlp", &mlp},
        {"gpt", &gpt}}) {
    Tally &tally = beginCategory(std::string("tokens-") + name);
    Rng rng(std::string(name) == "mlp" ? 2001 : 2002);
    std::vector<std::string> tokens = tokenize(*source);
    ASSERT_EQ(join(tokens), *source) << "the tokenizer must keep every byte";
    for (int i = 0; i < 20000; ++i) {
      std::vector<std::string> mutated = tokens;
      size_t mutations = 1 + pick(rng, 3);
      for (size_t m = 0; m < mutations; ++m)
        mutateTokens(mutated, rng);
      check(join(mutated), tally, "token mutation");
    }
  }
}

TEST_F(FrontendFuzz, LineSplicing) {
  Tally &tally = beginCategory("splice-lines");
  Rng rng(3001);
  std::vector<std::string> files[] = {splitLines(mlp), splitLines(gpt)};
  for (int i = 0; i < 10000; ++i) {
    size_t into = pick(rng, 2);
    std::vector<std::string> lines = files[into];
    const std::vector<std::string> &donor = files[pick(rng, 2)];
    switch (pick(rng, 4)) {
    case 0: { // Insert a run of the other file's lines.
      size_t from = pick(rng, donor.size());
      size_t count = 1 + pick(rng, 6);
      size_t at = pick(rng, lines.size() + 1);
      for (size_t k = 0; k < count && from + k < donor.size(); ++k)
        lines.insert(lines.begin() + std::min(at + k, lines.size()),
                     donor[from + k]);
      break;
    }
    case 1: // Replace one line.
      lines[pick(rng, lines.size())] = donor[pick(rng, donor.size())];
      break;
    case 2: { // Delete a run of lines.
      size_t at = pick(rng, lines.size());
      size_t count = 1 + pick(rng, 4);
      lines.erase(lines.begin() + at,
                  lines.begin() + std::min(lines.size(), at + count));
      break;
    }
    case 3: { // Swap two lines.
      std::swap(lines[pick(rng, lines.size())], lines[pick(rng, lines.size())]);
      break;
    }
    }
    check(joinLines(lines), tally, "line splice");
  }
  // Whole files glued together: two models, two train blocks.
  check(mlp + gpt, tally, "mlp + gpt");
  check(gpt + mlp, tally, "gpt + mlp");
}

TEST_F(FrontendFuzz, Extremes) {
  Tally &tally = beginCategory("extremes");
  constexpr size_t kDeep = 100000;
  constexpr size_t kTenMB = 10 * 1024 * 1024;
  auto inModel = [](const std::string &statements) {
    return "model m {\n  dim B = 2, D = 3\n  input x : f32[B, D]\n" +
           statements + "\n  return mean(x)\n}\n";
  };
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"empty file", ""},
      {"one newline", "\n"},
      {"only a comment", "# nothing here"},
      {"one NUL", std::string(1, '\0')},
      {"NULs", std::string(4096, '\0')},
      {"NUL inside mlp", mlp.substr(0, 200) + std::string(1, '\0') +
                             mlp.substr(200)},
      {"invalid UTF-8 in a name",
       inModel("  y\xff\xfe = x\n")},
      {"invalid UTF-8 in a comment", inModel("  # \xc0\xaf\xed\xa0\x80\n")},
      {"truncated UTF-8 at the end", mlp + "\xe2\x82"},
      {"UTF-8 identifier", inModel("  \xc3\xa9t\xc3\xa9 = x\n")},
      {"byte order mark", "\xef\xbb\xbf" + mlp},
      {"only model keyword", "model"},
      {"model without body", "model m"},
      {"unclosed model", "model m {\n  dim B = 2\n"},
      {"deep parentheses",
       inModel("  y = " + repeat("(", kDeep) + "x" + repeat(")", kDeep))},
      {"deep unclosed parentheses", inModel("  y = " + repeat("(", kDeep))},
      {"deep brackets", inModel("  y = " + repeat("[", kDeep) + "x" +
                                repeat("]", kDeep))},
      {"deep calls", inModel("  y = " + repeat("relu(", kDeep) + "x" +
                             repeat(")", kDeep))},
      {"deep unary minus", inModel("  y = " + repeat("-", kDeep) + "x")},
      {"deep blocks", "model m {\n" + repeat("for l in 0..1 {\n", kDeep) +
                          repeat("}\n", kDeep) + "}\n"},
      {"deep type", "model m {\n  input x : f32[" + repeat("(", kDeep) + "\n}\n"},
      {"long operator chain", inModel("  y = x" + repeat(" + x", kDeep))},
      {"long power chain", inModel("  y = x" + repeat(" ** x", kDeep))},
      {"long statement list", inModel(repeat("  x = relu(x)\n", kDeep))},
      {"many dims", "model m {\n  dim " + [&] {
         std::string dims;
         for (size_t i = 0; i < 20000; ++i)
           dims += (i ? ", D" : "D") + std::to_string(i) + " = 1";
         return dims;
       }() + "\n  input x : f32[D0]\n  return mean(x)\n}\n"},
      {"10 MB comment", "# " + std::string(kTenMB, 'a') + "\n" + mlp},
      {"10 MB identifier", inModel("  " + std::string(kTenMB, 'a') + " = x\n")},
      {"10 MB number", inModel("  y = x * " + std::string(kTenMB, '9') + "\n")},
      {"10 MB of newlines", std::string(kTenMB, '\n') + mlp},
      {"10 MB of random bytes", [] {
         Rng rng(4001);
         std::string bytes(kTenMB, '\0');
         for (char &c : bytes)
           c = static_cast<char>(rng());
         return bytes;
       }()},
      {"10 MB of statements", inModel(repeat("  y = x\n", kTenMB / 8))},
      {"huge dim", "model m {\n  dim B = 9223372036854775807\n  input x : "
                   "f32[B, B]\n  return mean(x)\n}\n"},
      {"dim overflow", "model m {\n  dim B = 4294967296 * 4294967296\n  input "
                       "x : f32[B]\n  return mean(x)\n}\n"},
      {"huge loop", inModel("  for l in 0..1000000000000 { }\n")},
      {"huge loop with ops",
       inModel("  for l in 0..1000000000000 { x = relu(x) }\n")},
      {"huge exponent", inModel("  y = x * 2 ** 1000000000000\n")},
      {"huge float", inModel("  y = x * 1e400\n")},
      {"crlf mlp", [&] {
         std::string text;
         for (char c : mlp) {
           if (c == '\n')
             text += '\r';
           text += c;
         }
         return text;
       }()},
      {"carriage returns only", [&] {
         std::string text = gpt;
         for (char &c : text)
           if (c == '\n')
             c = '\r';
         return text;
       }()},
      {"tabs", [&] {
         std::string text = gpt;
         for (char &c : text)
           if (c == ' ')
             c = '\t';
         return text;
       }()},
      {"recursive function", "fn f(x: f32[2]) -> f32[2] {\n  return f(x)\n}\n"
                             "model m {\n  input x : f32[2]\n  return "
                             "mean(f(x))\n}\n"},
      {"mutual recursion",
       "fn f(x: f32[2]) -> f32[2] {\n  return g(x)\n}\n"
       "fn g(x: f32[2]) -> f32[2] {\n  return f(x)\n}\n"
       "model m {\n  input x : f32[2]\n  return mean(f(x))\n}\n"},
      {"long call chain", [] {
         std::string text;
         for (int i = 0; i < 200; ++i)
           text += "fn f" + std::to_string(i) + "(x: f32[2]) -> f32[2] {\n  "
                   "return " + (i == 199 ? std::string("x") :
                   "f" + std::to_string(i + 1) + "(x)") + "\n}\n";
         return text + "model m {\n  input x : f32[2]\n  return "
                       "mean(f0(x))\n}\n";
       }()},
      {"many errors", inModel(repeat("  y = undefined_name\n", 1000))},
  };
  bool crlfLoads = false, tabsLoad = false;
  for (const auto &[what, text] : inputs) {
    bool loaded = check(text, tally, what);
    if (what == "crlf mlp")
      crlfLoads = loaded;
    if (what == "tabs")
      tabsLoad = loaded;
  }
  // Line endings and indentation are not part of the language.
  EXPECT_TRUE(crlfLoads) << "examples/mlp.kiln with CRLF line endings";
  EXPECT_TRUE(tabsLoad) << "examples/gpt.kiln indented with tabs";
}

TEST_F(FrontendFuzz, GeneratedModels) {
  Tally &tally = beginCategory("generated");
  Rng rng(5001);
  ModelGenerator generator(rng);
  for (int i = 0; i < 30000; ++i)
    check(generator.generate(), tally, "generated model");
  // The generator must reach the emitter's success path, not only errors:
  // half of its models are written without deliberate mistakes.
  EXPECT_GT(tally.accepted, tally.inputs / 4);
  EXPECT_GT(tally.rejected, tally.inputs / 20);
}

TEST_F(FrontendFuzz, GeneratedModelsMutated) {
  // Generated models, then byte- and token-mutated: mutations of code that
  // reaches deeper into the emitter than the two examples do.
  Tally &tally = beginCategory("generated-mutated");
  Rng rng(6001);
  ModelGenerator generator(rng);
  for (int i = 0; i < 20000; ++i) {
    std::string text = generator.generate();
    if (chance(rng, 0.5)) {
      mutateBytes(text, rng);
    } else {
      std::vector<std::string> tokens = tokenize(text);
      mutateTokens(tokens, rng);
      text = join(tokens);
    }
    check(text, tally, "mutated generated model");
  }
}

} // namespace
