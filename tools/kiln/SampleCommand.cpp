//===- SampleCommand.cpp - kiln sample ------------------------------------===//
//
// Part of Kiln. Generates text from a byte-level language model's checkpoint:
// the model's `predict` entry runs on a window of the last T bytes, and the
// next byte is drawn from the logits of the window's last position
// (temperature, top-k), with a seeded Philox stream so that a run repeats.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"
#include "TrainArtifact.h"
#include "TrainSession.h"

#include "kiln/Philox.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

using namespace llvm;
using namespace kiln;
using namespace kiln::cli;

cl::SubCommand kiln::cli::sampleCommand(
    "sample", "Generate text from a byte-level language model's checkpoint");

#define SAMPLE_OPTION                                                          \
  cl::sub(kiln::cli::sampleCommand), cl::cat(kiln::cli::optionCategory)

static cl::opt<std::string> checkpoint(cl::Positional, cl::Required,
                                       cl::desc("CKPT.safetensors"),
                                       SAMPLE_OPTION);
static cl::opt<std::string> sampleModel("model", cl::Required,
                                        cl::desc("The model the checkpoint "
                                                 "was trained from"),
                                        cl::value_desc("MODEL.kiln"),
                                        SAMPLE_OPTION);
static cl::opt<std::string> prompt("prompt", cl::desc("Text to continue"),
                                   cl::init("\n"), SAMPLE_OPTION);
static cl::opt<int64_t> length("length", cl::desc("Bytes to generate"),
                               cl::init(200), SAMPLE_OPTION);
static cl::opt<double> temperature("temperature",
                                   cl::desc("Softmax temperature (0: the "
                                            "most likely byte)"),
                                   cl::init(0.8), SAMPLE_OPTION);
static cl::opt<int64_t> topK("top-k",
                             cl::desc("Draw among the k most likely bytes "
                                      "(0: all)"),
                             cl::init(40), SAMPLE_OPTION);
static cl::opt<uint64_t> sampleSeed("seed", cl::desc("Seed of the draws"),
                                    cl::init(0), SAMPLE_OPTION);

static int fail(const Twine &message) {
  WithColor::error(errs(), "kiln sample") << message << "\n";
  return 1;
}

/// Draws an index from `logits` with the temperature and top-k settings.
static int64_t drawToken(ArrayRef<float> logits, uint32_t draw) {
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  if (temperature <= 0)
    return order.front();
  size_t kept = topK > 0 ? std::min<size_t>(topK, order.size()) : order.size();
  std::vector<double> weights(kept);
  double top = logits[order.front()], total = 0;
  for (size_t i = 0; i < kept; ++i)
    total += weights[i] = std::exp((logits[order[i]] - top) / temperature);
  double u = philox::uniformFromWord(draw) * total;
  for (size_t i = 0; i < kept; ++i) {
    if (u < weights[i])
      return order[i];
    u -= weights[i];
  }
  return order[kept - 1];
}

int kiln::cli::runSample() {
  if (length < 0)
    return fail("--length must not be negative");
  if (!std::isfinite(temperature) || temperature < 0) {
    char written[32];
    std::snprintf(written, sizeof(written), "%g", double(temperature));
    return fail(Twine("--temperature must be a finite number >= 0 (0: the "
                      "most likely byte), not ") +
                written);
  }
  if (topK < 0)
    return fail("--top-k must not be negative (0: all bytes)");
  TrainCompileOptions options;
  options.inferenceOnly = true;
  Expected<TrainArtifact> artifact = compileForTraining(sampleModel, options);
  if (!artifact)
    return fail(toString(artifact.takeError()));
  Expected<std::unique_ptr<TrainSession>> opened =
      TrainSession::open(std::move(artifact->opened), "cpu", 0);
  if (!opened)
    return fail(toString(opened.takeError()));
  TrainSession &session = **opened;
  if (Error error = session.loadParameters(checkpoint))
    return fail(toString(std::move(error)));

  const PlanInput *tokens = nullptr;
  for (const PlanInput &input : session.inputs())
    if (input.name == "tokens")
      tokens = &input;
  const auto *logitsInfo = session.findOutput("logits");
  if (!tokens || tokens->shape.size() != 2 || !logitsInfo ||
      logitsInfo->second.size() != 3)
    return fail("kiln sample needs a language model with an input "
                "'tokens' [B, T] and an output 'logits' [B, T, V]");
  int64_t batch = tokens->shape[0], window = tokens->shape[1];
  int64_t vocabulary = logitsInfo->second[2];

  std::vector<int64_t> text(prompt.begin(), prompt.end());
  for (int64_t &byte : text)
    byte = static_cast<unsigned char>(byte);
  if (text.empty())
    text.push_back('\n');
  for (int64_t byte : text)
    if (byte >= vocabulary)
      return fail(formatv("the prompt holds byte {0}, outside the model's "
                          "vocabulary of {1}: kiln sample reads bytes",
                          byte, vocabulary));
  outs() << prompt;
  outs().flush();

  npy::Array input;
  input.dtype =
      tokens->dtype == KILN_I64 ? npy::DType::Int64 : npy::DType::Int32;
  input.shape = tokens->shape;
  input.data.assign(batch * window * npy::dtypeSize(input.dtype), 0);
  std::vector<float> logits;
  for (int64_t i = 0; i < length; ++i) {
    // Row 0 holds the last `window` bytes from position 0; attention is
    // causal, so the zeros after them change nothing.
    int64_t used = std::min<int64_t>(window, text.size());
    for (int64_t t = 0; t < used; ++t) {
      int64_t value = text[text.size() - used + t];
      if (input.dtype == npy::DType::Int64)
        input.as<int64_t>()[t] = value;
      else
        input.as<int32_t>()[t] = int32_t(value);
    }
    data::Batch inputs;
    inputs.names = {"tokens"};
    inputs.arrays = {input};
    if (Error error = session.bind(inputs))
      return fail(toString(std::move(error)));
    if (Error error = session.run("predict"))
      return fail(toString(std::move(error)));
    if (Error error = session.readOutput("logits", logits))
      return fail(toString(std::move(error)));
    ArrayRef<float> last(logits.data() + (used - 1) * vocabulary, vocabulary);
    int64_t next = drawToken(last, philox::wordFor(sampleSeed, 0, 0, i));
    text.push_back(next);
    outs() << static_cast<char>(next);
    outs().flush();
  }
  outs() << "\n";
  return 0;
}
