//===- MetricsFile.cpp - Reading `kiln train --metrics` files -------------===//
//
// Part of Kiln. See MetricsFile.h for the format and the rules.
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/MetricsFile.h"
#include "kiln/Support/UserFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using namespace kiln::plot;

char MetricsError::ID = 0;

void MetricsError::log(raw_ostream &os) const {
  os << diagnostic.location << ": " << diagnostic.message;
}

std::error_code MetricsError::convertToErrorCode() const {
  return inconvertibleErrorCode();
}

static Error makeError(const Twine &location, const Twine &message) {
  return make_error<MetricsError>(
      MetricsDiagnostic{location.str(), message.str()});
}

/// The spellings of non-finite numbers that writers use where JSON has none,
/// longest first so that "Infinity" is not read as "inf" followed by junk.
static constexpr StringLiteral nonFiniteTokens[] = {
    "-Infinity", "Infinity", "-NaN", "NaN", "-nan", "nan", "-inf", "inf"};

/// Returns \p line with each bare non-finite token (outside strings) replaced
/// by `null`, so that llvm::json can parse it.
static std::string replaceNonFiniteTokens(StringRef line) {
  std::string result;
  result.reserve(line.size());
  bool inString = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (inString) {
      result += c;
      if (c == '\\' && i + 1 < line.size())
        result += line[++i];
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
      result += c;
      continue;
    }
    bool replaced = false;
    for (StringRef token : nonFiniteTokens) {
      if (!line.substr(i).starts_with(token))
        continue;
      size_t end = i + token.size();
      if (end < line.size() && isAlnum(line[end]))
        continue;
      result += "null";
      i = end - 1;
      replaced = true;
      break;
    }
    if (!replaced)
      result += c;
  }
  return result;
}

namespace {
/// Reads the lines of one file into a MetricsRun.
class MetricsParser {
public:
  MetricsParser(StringRef path) { run.path = path.str(); }

  Error parse(StringRef text);
  MetricsRun takeRun() { return std::move(run); }

private:
  Error parseLine(StringRef line, unsigned lineNumber, bool isUnterminated);
  Error addValue(const json::Object &object, StringRef key, int64_t step,
                 std::vector<MetricsPoint> &series, const Twine &location);

  MetricsRun run;
  bool sawPlottedKey = false;
};
} // namespace

Error MetricsParser::parse(StringRef text) {
  if (text.trim().empty())
    return makeError(run.path, "the metrics file is empty");
  unsigned lineNumber = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    bool isUnterminated = rest.empty() && !text.ends_with("\n");
    text = rest;
    ++lineNumber;
    if (Error error = parseLine(line, lineNumber, isUnterminated))
      return error;
  }
  if (!sawPlottedKey)
    return makeError(run.path, "no line holds \"loss\", \"eval_loss\" or "
                               "\"eval_accuracy\": nothing to plot");
  return Error::success();
}

Error MetricsParser::parseLine(StringRef line, unsigned lineNumber,
                               bool isUnterminated) {
  line = line.trim();
  if (line.empty())
    return Error::success();
  std::string location = (run.path + ":" + Twine(lineNumber)).str();

  Expected<json::Value> value = json::parse(replaceNonFiniteTokens(line));
  if (!value) {
    std::string reason = toString(value.takeError());
    if (isUnterminated) {
      run.warnings.push_back(
          {location, "skipped an incomplete last line (a run still being "
                     "written?): " +
                         reason});
      return Error::success();
    }
    return makeError(location, "not valid JSON: " + reason);
  }
  const json::Object *object = value->getAsObject();
  if (!object)
    return makeError(location, "expected a JSON object such as "
                               "{\"step\":1,\"loss\":2.5}");

  bool hasPlottedKey = object->get("loss") || object->get("eval_loss") ||
                       object->get("eval_accuracy");
  if (!hasPlottedKey)
    return Error::success();
  sawPlottedKey = true;

  const json::Value *stepValue = object->get("step");
  std::optional<int64_t> step =
      stepValue ? stepValue->getAsInteger() : std::nullopt;
  if (!step)
    return makeError(location, "\"step\" is missing or not an integer");

  if (Error error = addValue(*object, "loss", *step, run.trainLoss, location))
    return error;
  if (Error error =
          addValue(*object, "eval_loss", *step, run.evalLoss, location))
    return error;
  return addValue(*object, "eval_accuracy", *step, run.evalAccuracy, location);
}

Error MetricsParser::addValue(const json::Object &object, StringRef key,
                              int64_t step, std::vector<MetricsPoint> &series,
                              const Twine &location) {
  const json::Value *value = object.get(key);
  if (!value)
    return Error::success();
  // A resumed run that restarts at an earlier step supersedes what followed.
  while (!series.empty() && series.back().step >= step)
    series.pop_back();
  if (value->kind() == json::Value::Null) {
    ++run.nonFiniteCount;
    return Error::success();
  }
  std::optional<double> number = value->getAsNumber();
  if (!number)
    return makeError(location, "\"" + key + "\" is not a number");
  if (!std::isfinite(*number)) {
    ++run.nonFiniteCount;
    return Error::success();
  }
  series.push_back({step, *number});
  return Error::success();
}

Expected<MetricsRun> kiln::plot::parseMetrics(StringRef text, StringRef path) {
  MetricsParser parser(path);
  if (Error error = parser.parse(text))
    return std::move(error);
  MetricsRun run = parser.takeRun();
  run.label = sys::path::stem(path).str();
  return run;
}

Expected<MetricsRun> kiln::plot::readMetricsFile(StringRef path) {
  Expected<std::unique_ptr<MemoryBuffer>> buffer = readUserFile(path);
  if (!buffer)
    return makeError(path, toString(buffer.takeError()));
  return parseMetrics((*buffer)->getBuffer(), path);
}
