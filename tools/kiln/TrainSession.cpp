//===- TrainSession.cpp - A runtime session fed by data loaders -----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "TrainSession.h"
#include "Distributed.h"

#include "kiln/Dialect/Graph/Transforms/TrainStep.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;
using namespace kiln;
using namespace kiln::cli;

static std::optional<npy::DType> toNpyDType(kiln_dtype dtype) {
  switch (dtype) {
  case KILN_F32:
    return npy::DType::Float32;
  case KILN_F64:
    return npy::DType::Float64;
  case KILN_I32:
    return npy::DType::Int32;
  case KILN_I64:
    return npy::DType::Int64;
  case KILN_U8:
    return npy::DType::UInt8;
  default:
    return std::nullopt;
  }
}

static std::optional<kiln_dtype> toKilnDType(npy::DType dtype) {
  switch (dtype) {
  case npy::DType::Float32:
    return KILN_F32;
  case npy::DType::Float64:
    return KILN_F64;
  case npy::DType::Int32:
    return KILN_I32;
  case npy::DType::Int64:
    return KILN_I64;
  case npy::DType::UInt8:
    return KILN_U8;
  default:
    return std::nullopt;
  }
}

static Error statusError(const Status &status) {
  return createStringError(status.message());
}

Expected<std::vector<std::pair<std::string, std::string>>>
kiln::cli::parseNamedFiles(ArrayRef<std::string> specs, StringRef option) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string &spec : specs) {
    auto [name, path] = StringRef(spec).split('=');
    if (name.empty() || path.empty())
      return createStringError(
          formatv("expected --{0} NAME=FILE, got '{1}'", option, spec));
    for (const auto &pair : pairs)
      if (pair.first == name)
        return createStringError(
            formatv("--{0}: input '{1}' is given twice", option, name));
    pairs.emplace_back(name.str(), path.str());
  }
  return pairs;
}

TrainSession::~TrainSession() {
  kiln_session_destroy(session);
  kiln_artifact_close(artifact);
}

Error TrainSession::lastError(StringRef what) const {
  const char *message =
      session ? kiln_session_last_error(session) : kiln_last_error();
  return createStringError(what + ": " + (message ? message : "unknown error"));
}

Expected<std::unique_ptr<TrainSession>>
TrainSession::open(ArtifactHandle artifact, const std::string &device,
                   int32_t numThreads, bool deterministic,
                   int32_t deviceIndex) {
  std::unique_ptr<TrainSession> result(new TrainSession());
  result->artifact = artifact.release();
  result->device = device;
  size_t count = 0;
  kiln_artifact_buffer_count(result->artifact, &count);
  for (size_t i = 0; i < count; ++i) {
    kiln_buffer_info info;
    if (kiln_artifact_buffer_info(result->artifact, i, &info) != KILN_OK)
      return result->lastError("cannot read the plan");
    std::vector<int64_t> shape(info.shape, info.shape + info.rank);
    // ZeRO-1's global norm is the runtime's to bind, not the data's.
    if (info.kind == KILN_BUFFER_INPUT &&
        StringRef(info.name) != kiln::graph::kZeroGradNormInput)
      result->planInputs.push_back({info.name, info.dtype, shape});
    else if (info.kind == KILN_BUFFER_OUTPUT)
      result->outputs[info.name] = {info.dtype, shape};
  }
  size_t entryCount = 0;
  kiln_artifact_entry_count(result->artifact, &entryCount);
  for (size_t i = 0; i < entryCount; ++i) {
    const char *name = nullptr;
    kiln_artifact_entry_name(result->artifact, i, &name);
    result->entries.push_back(name);
  }
  kiln_session_options options;
  kiln_session_options_init(&options);
  options.device = device.c_str();
  options.num_threads = numThreads;
  options.deterministic = deterministic;
  options.device_index = deviceIndex;
  if (kiln_session_create_with_options(result->artifact, &options,
                                       &result->session) != KILN_OK)
    return result->lastError("cannot create a session");
  return std::move(result);
}

bool TrainSession::hasEntry(StringRef name) const {
  return llvm::is_contained(entries, name);
}

const PlanInput *TrainSession::findInput(StringRef name) const {
  for (const PlanInput &input : planInputs)
    if (input.name == name)
      return &input;
  return nullptr;
}

Expected<std::unique_ptr<data::Dataset>>
TrainSession::openDataset(const DataSource &source, bool training,
                          uint64_t seed, int64_t evalBatches) {
  data::Order order =
      training ? data::Order::Shuffled : data::Order::Sequential;
  if (!source.tokenFile.empty()) {
    const PlanInput *tokens = findInput("tokens");
    const PlanInput *targets = findInput("targets");
    if (!tokens || !targets || tokens->shape.size() != 2 ||
        tokens->shape != targets->shape)
      return createStringError(
          "--tokens feeds a language model's 'tokens' and 'targets' inputs "
          "of shape [B, T]; this model has no such pair");
    data::TokenDatasetOptions options;
    // A data-parallel rank reads whole batches and binds its slice.
    options.batchSize = tokens->shape[0] * (training ? world : 1);
    options.contextLength = tokens->shape[1];
    options.seed = seed;
    options.order = order;
    options.sequentialBatches = training ? 0 : evalBatches;
    std::unique_ptr<data::TokenDataset> dataset;
    if (Status status =
            data::TokenDataset::open(source.tokenFile, options, dataset);
        !status)
      return statusError(status);
    return std::unique_ptr<data::Dataset>(std::move(dataset));
  }

  std::vector<data::ArrayInput> inputs;
  int64_t batchSize = 0;
  for (const auto &[name, path] : source.arrays) {
    const PlanInput *input = findInput(name);
    if (!input) {
      std::string names;
      for (const PlanInput &candidate : planInputs)
        names += (names.empty() ? "" : ", ") + candidate.name;
      return createStringError(formatv(
          "the model has no input '{0}' (its inputs: {1})", name, names));
    }
    std::optional<npy::DType> dtype = toNpyDType(input->dtype);
    if (!dtype || input->shape.empty())
      return createStringError(formatv(
          "input '{0}' cannot be fed from a .npy file (it needs a batch "
          "dim and a numeric type)",
          name));
    batchSize = input->shape[0];
    inputs.push_back(
        {name, path, *dtype,
         std::vector<int64_t>(input->shape.begin() + 1, input->shape.end())});
  }
  for (const PlanInput &input : planInputs)
    if (!llvm::any_of(source.arrays, [&](const auto &pair) {
          return pair.first == input.name;
        }))
      return createStringError(
          formatv("input '{0}' has no data: add {1} {0}=FILE.npy", input.name,
                  training ? "--data" : "--eval"));
  data::ArrayDatasetOptions options;
  options.batchSize = batchSize * (training ? world : 1);
  options.seed = seed;
  options.order = order;
  std::unique_ptr<data::ArrayDataset> dataset;
  if (Status status = data::ArrayDataset::open(inputs, options, dataset);
      !status)
    return statusError(status);
  return std::unique_ptr<data::Dataset>(std::move(dataset));
}

/// Rows [first, first + count) of `array` (a batch-major array).
static npy::Array sliceRows(const npy::Array &array, int64_t first,
                            int64_t count) {
  npy::Array slice;
  slice.dtype = array.dtype;
  slice.shape = array.shape;
  slice.shape[0] = count;
  size_t rowBytes = array.byteSize() / size_t(array.shape[0]);
  auto begin = array.data.begin() + ptrdiff_t(first * rowBytes);
  slice.data.assign(begin, begin + ptrdiff_t(count * rowBytes));
  return slice;
}

Error TrainSession::bind(const data::Batch &batch) {
  for (size_t i = 0; i < batch.names.size(); ++i) {
    npy::Array rankSlice;
    const npy::Array *whole = &batch.arrays[i];
    // A whole batch of a data-parallel run: this rank's contiguous rows.
    if (const PlanInput *input = findInput(batch.names[i]);
        world > 1 && input && !input->shape.empty() && !whole->shape.empty() &&
        whole->shape[0] == input->shape[0] * world) {
      rankSlice = sliceRows(*whole, rank * input->shape[0], input->shape[0]);
      whole = &rankSlice;
    }
    const npy::Array &array = *whole;
    std::optional<kiln_dtype> dtype = toKilnDType(array.dtype);
    if (!dtype)
      return createStringError("input '" + batch.names[i] +
                               "' has an unsupported dtype");
    if (kiln_session_bind_input(session, batch.names[i].c_str(),
                                array.data.data(), *dtype, array.shape.data(),
                                static_cast<int32_t>(array.shape.size())) !=
        KILN_OK)
      return lastError("cannot bind input '" + batch.names[i] + "'");
  }
  return Error::success();
}

Error TrainSession::run(const char *entry) {
  if (kiln_session_run(session, entry) != KILN_OK)
    return lastError(formatv("{0} failed", entry).str());
  return Error::success();
}

Error TrainSession::finish(const char *entry) {
  if (kiln_session_synchronize(session) != KILN_OK)
    return lastError(formatv("{0} failed", entry).str());
  return Error::success();
}

std::optional<double> TrainSession::readScalar(const char *name) {
  auto it = outputs.find(name);
  if (it == outputs.end() || !it->second.second.empty())
    return std::nullopt;
  if (it->second.first == KILN_F64) {
    double value = 0;
    if (kiln_session_read_output(session, name, KILN_F64, &value,
                                 sizeof(value)) != KILN_OK)
      return std::nullopt;
    return value;
  }
  float value = 0;
  if (kiln_session_read_output(session, name, KILN_F32, &value,
                               sizeof(value)) != KILN_OK)
    return std::nullopt;
  return value;
}

/// The integer input that holds the classes `logits` predicts: the one
/// named targets, y or labels whose shape is the logits' without the class
/// dim.
static const npy::Array *findTargets(const data::Batch &batch,
                                     ArrayRef<int64_t> logitsShape) {
  for (const char *name : {"targets", "y", "labels"}) {
    const npy::Array *array = batch.find(name);
    if (array && !logitsShape.empty() &&
        ArrayRef<int64_t>(array->shape) == logitsShape.drop_back() &&
        (array->dtype == npy::DType::Int32 ||
         array->dtype == npy::DType::Int64))
      return array;
  }
  return nullptr;
}

Expected<EvalResult> TrainSession::evaluate(data::Dataset &dataset) {
  if (!hasEntry("eval_step"))
    return createStringError("the artifact has no eval_step entry");
  auto logitsInfo = outputs.find("logits");
  EvalResult result;
  double lossSum = 0;
  int64_t correct = 0, scored = 0;
  std::vector<float> logits;
  if (Status status = dataset.seek({0, 0}); !status)
    return statusError(status);
  for (int64_t b = 0, e = dataset.batchesPerEpoch(); b < e; ++b) {
    data::Batch batch;
    if (Status status = dataset.next(batch); !status)
      return statusError(status);
    if (Error error = bind(batch))
      return std::move(error);
    if (Error error = run("eval_step"))
      return std::move(error);
    std::optional<double> loss = readScalar("loss");
    if (!loss)
      return createStringError("eval_step has no scalar 'loss' output");
    // The padded last batch of a sequential array dataset repeats rows: its
    // loss is weighted by the rows that are real (an approximation for that
    // one batch, since its mean includes the repeats).
    lossSum += *loss * double(batch.validRows);
    result.examples += batch.validRows;

    if (logitsInfo == outputs.end() || logitsInfo->second.first != KILN_F32)
      continue;
    const std::vector<int64_t> &shape = logitsInfo->second.second;
    const npy::Array *targets = findTargets(batch, shape);
    if (!targets)
      continue;
    int64_t classes = shape.back();
    int64_t rows = 1;
    for (int64_t dim : ArrayRef<int64_t>(shape).drop_back())
      rows *= dim;
    logits.resize(rows * classes);
    if (kiln_session_read_output(session, "logits", KILN_F32, logits.data(),
                                 logits.size() * sizeof(float)) != KILN_OK)
      return lastError("cannot read logits");
    // Rows of one example: everything after the batch dim.
    int64_t rowsPerExample = rows / shape[0];
    int64_t validRows = batch.validRows * rowsPerExample;
    for (int64_t row = 0; row < validRows; ++row) {
      const float *scores = logits.data() + row * classes;
      int64_t best = std::max_element(scores, scores + classes) - scores;
      int64_t target = targets->dtype == npy::DType::Int32
                           ? targets->as<int32_t>()[row]
                           : targets->as<int64_t>()[row];
      correct += best == target;
      ++scored;
    }
  }
  if (result.examples == 0)
    return createStringError("the eval data holds no complete batch");
  result.loss = lossSum / double(result.examples);
  if (scored)
    result.accuracy = double(correct) / double(scored);
  return result;
}

Error TrainSession::initialize(uint64_t seed) {
  if (kiln_session_initialize(session, seed) != KILN_OK)
    return lastError("cannot initialize the parameters");
  return Error::success();
}

Error TrainSession::loadParameters(const std::string &path) {
  if (kiln_session_load_checkpoint(session, path.c_str(), KILN_LOAD_PARAMS_ONLY,
                                   nullptr) != KILN_OK)
    return lastError("cannot load '" + path + "'");
  return Error::success();
}

Expected<std::string> TrainSession::resume(const std::string &path) {
  char *metadata = nullptr;
  if (kiln_session_load_checkpoint(session, path.c_str(), 0, &metadata) !=
      KILN_OK)
    return lastError("cannot resume from '" + path + "'");
  std::string text = metadata ? metadata : "";
  kiln_string_free(metadata);
  return text;
}

Error TrainSession::save(const std::string &path, const std::string &metadata) {
  if (kiln_session_save_checkpoint(session, path.c_str(), metadata.c_str()) !=
      KILN_OK)
    return lastError("cannot save '" + path + "'");
  return Error::success();
}

std::vector<StateBuffer> TrainSession::optimizerState() const {
  std::vector<StateBuffer> states;
  size_t count = 0;
  kiln_artifact_buffer_count(artifact, &count);
  for (size_t id = 0; id < count; ++id) {
    kiln_buffer_info info;
    if (kiln_artifact_buffer_info(artifact, id, &info) != KILN_OK ||
        info.kind != KILN_BUFFER_OPTIMIZER_STATE)
      continue;
    uint64_t elements = 1;
    for (int32_t dim = 0; dim < info.rank; ++dim)
      elements *= uint64_t(info.shape[dim]);
    states.push_back({info.name, uint64_t(info.size_bytes), elements});
  }
  return states;
}

Expected<void *> TrainSession::bufferData(StringRef name) {
  void *data = nullptr;
  if (kiln_session_buffer_data(session, name.str().c_str(), &data) != KILN_OK)
    return lastError(formatv("cannot reach '{0}'", name).str());
  return data;
}

Error TrainSession::bindScalar(StringRef name, double value) {
  size_t index = 0;
  kiln_buffer_info info;
  if (kiln_artifact_find_buffer(artifact, name.str().c_str(), &index) !=
          KILN_OK ||
      kiln_artifact_buffer_info(artifact, index, &info) != KILN_OK)
    return lastError("cannot find the input '" + name.str() + "'");
  float single = float(value);
  const void *data =
      info.dtype == KILN_F64 ? static_cast<const void *>(&value) : &single;
  if (kiln_session_bind_input(session, name.str().c_str(), data, info.dtype,
                              nullptr, 0) != KILN_OK)
    return lastError("cannot bind '" + name.str() + "'");
  return Error::success();
}

uint64_t TrainSession::step() const {
  uint64_t step = 0;
  kiln_session_get_step(session, &step);
  return step;
}

std::string TrainSession::describeDevice(std::string &warning) const {
  int32_t threads = 0;
  kiln_session_num_threads(session, &threads);
  std::string text = formatv("{0} thread{1}", threads, threads == 1 ? "" : "s");
  kiln_gemm_info gemm;
  if (kiln_session_gemm_info(session, &gemm) != KILN_OK)
    return text;
  // On the GPU the host threads do no work: the GPU and how its kernels
  // were loaded instead.
  if (device == "cuda")
    return formatv("{0}; GEMMs: {1}", gemm.isa, gemm.version).str();
  text += formatv("; GEMMs: {0} ({1})", gemm.version, gemm.isa).str();
  if (*gemm.others)
    text += formatv(", {0}", gemm.others).str();
  warning = gemm.warning;
  return text;
}

Error TrainSession::setCheckNumerics(bool enabled) {
  if (kiln_session_set_check_numerics(session, enabled ? 1 : 0) != KILN_OK)
    return lastError("cannot set check-numerics");
  return Error::success();
}

const std::pair<kiln_dtype, std::vector<int64_t>> *
TrainSession::findOutput(StringRef name) const {
  auto it = outputs.find(name);
  return it == outputs.end() ? nullptr : &it->second;
}

Error TrainSession::readOutput(const char *name, std::vector<float> &values) {
  const auto *output = findOutput(name);
  if (!output || output->first != KILN_F32)
    return createStringError(formatv("the plan has no f32 output '{0}'", name));
  int64_t count = 1;
  for (int64_t dim : output->second)
    count *= dim;
  values.resize(count);
  if (kiln_session_read_output(session, name, KILN_F32, values.data(),
                               values.size() * sizeof(float)) != KILN_OK)
    return lastError(formatv("cannot read '{0}'", name).str());
  return Error::success();
}

Error TrainSession::enableProfiling() {
  if (kiln_session_set_profiling(session, 1) != KILN_OK)
    return lastError("cannot enable profiling");
  return Error::success();
}

void TrainSession::printProfile(raw_ostream &os, size_t limit) const {
  // Ops of the same kind from the same model line (the per-layer copies of a
  // function body differ in their call site) are added up.
  struct Row {
    std::string name, where, entry;
    uint64_t calls = 0;
    double ms = 0;
    /// A GEMM's library, problem and algorithm, for each distinct one.
    std::vector<std::string> details;
  };
  std::vector<Row> rows;
  StringMap<size_t> index;
  double total = 0;
  size_t count = 0;
  kiln_session_profile_count(session, &count);
  for (size_t i = 0; i < count; ++i) {
    kiln_op_profile profile;
    if (kiln_session_profile_op(session, i, &profile) != KILN_OK ||
        profile.calls == 0)
      continue;
    std::string where = profile.line ? formatv("{0}:{1}:{2}", profile.file,
                                               profile.line, profile.column)
                                           .str()
                                     : std::string("-");
    std::string key = (Twine(profile.entry) + "|" + profile.name + "|" +
                       profile.call + "|" + where)
                          .str();
    auto [it, inserted] = index.try_emplace(key, rows.size());
    if (inserted)
      rows.push_back({(Twine(profile.call) + " " + profile.name).str(), where,
                      profile.entry});
    rows[it->second].calls += profile.calls;
    rows[it->second].ms += profile.total_ms;
    const char *detail = nullptr;
    if (StringRef(profile.call) == "gemm" &&
        kiln_session_op_detail(session, i, &detail) == KILN_OK && *detail &&
        !llvm::is_contained(rows[it->second].details, detail))
      rows[it->second].details.push_back(detail);
    total += profile.total_ms;
  }
  llvm::sort(rows, [](const Row &a, const Row &b) { return a.ms > b.ms; });
  os << formatv("profile: {0:f1} ms in ops, most expensive first\n", total);
  os << formatv("  {0,8} {1,6} {2,8}  {3,-40} {4}\n", "ms", "%", "calls", "op",
                "model line");
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    os << formatv("  {0,8:f1} {1,6:f1} {2,8}  {3,-40} {4}  ({5})\n", rows[i].ms,
                  100 * rows[i].ms / std::max(total, 1e-9), rows[i].calls,
                  rows[i].name, rows[i].where, rows[i].entry);
    for (const std::string &detail : rows[i].details)
      os << "                              " << detail << "\n";
  }
}
