//===- PlotCommand.cpp - kiln plot ----------------------------------------===//
//
// Part of Kiln. Draws the loss curves of one or more `kiln train --metrics`
// files as an SVG, one line per run, to compare runs at a glance.
//
//===----------------------------------------------------------------------===//

#include "Commands.h"

#include "kiln/Plot/MetricsFile.h"
#include "kiln/Plot/SvgPlot.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace kiln::plot;

cl::SubCommand kiln::cli::plotCommand(
    "plot", "Draw the loss curves of training runs (kiln train --metrics "
            "files) as an SVG");

static cl::list<std::string> plotInputs(cl::Positional, cl::OneOrMore,
                                        cl::desc("METRICS.jsonl..."),
                                        cl::sub(kiln::cli::plotCommand),
                                        cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string>
    plotOutput("o", cl::Required, cl::value_desc("FILE.svg"),
               cl::desc("Write the SVG here (replaced atomically)"),
               cl::sub(kiln::cli::plotCommand),
               cl::cat(kiln::cli::optionCategory));
static cl::list<std::string>
    plotLabels("label", cl::value_desc("NAME"),
               cl::desc("A run's name in the legend, once per file in order "
                        "(default: the file's stem)"),
               cl::sub(kiln::cli::plotCommand),
               cl::cat(kiln::cli::optionCategory));
static cl::opt<std::string> plotTitle("title", cl::value_desc("TEXT"),
                                      cl::desc("A title above the plot"),
                                      cl::sub(kiln::cli::plotCommand),
                                      cl::cat(kiln::cli::optionCategory));
static cl::opt<bool> plotLogY("log-y",
                              cl::desc("A log scale for the loss axis"),
                              cl::sub(kiln::cli::plotCommand),
                              cl::cat(kiln::cli::optionCategory));
static cl::opt<double> plotSmoothing(
    "smooth", cl::value_desc("W"), cl::init(PlotOptions().smoothing),
    cl::desc("Exponential-moving-average weight for the training loss, in "
             "[0, 1); the raw curve stays faintly visible behind it; 0 draws "
             "the raw curve alone (default 0.9)"),
    cl::sub(kiln::cli::plotCommand), cl::cat(kiln::cli::optionCategory));
static cl::opt<unsigned> plotWidth("width", cl::value_desc("PIXELS"),
                                   cl::init(PlotOptions().width),
                                   cl::desc("Width of the image (default 800)"),
                                   cl::sub(kiln::cli::plotCommand),
                                   cl::cat(kiln::cli::optionCategory));
static cl::opt<unsigned> plotHeight(
    "height", cl::value_desc("PIXELS"), cl::init(PlotOptions().height),
    cl::desc("Height of the image (default 500)"),
    cl::sub(kiln::cli::plotCommand), cl::cat(kiln::cli::optionCategory));

static int usageError(const Twine &message) {
  WithColor::error(errs(), "kiln plot") << message << "\n";
  return 1;
}

/// Gives runs whose files share a stem (run1/m.jsonl, run2/m.jsonl) the
/// parent directory too, so that the legend tells them apart.
static void disambiguateLabels(std::vector<MetricsRun> &runs) {
  StringMap<unsigned> stemCounts;
  for (const MetricsRun &run : runs)
    ++stemCounts[run.label];
  for (MetricsRun &run : runs) {
    if (stemCounts[run.label] < 2)
      continue;
    StringRef parent = sys::path::filename(sys::path::parent_path(run.path));
    if (!parent.empty())
      run.label = (parent + "/" + run.label).str();
  }
}

int kiln::cli::runPlot() {
  if (!plotLabels.empty() && plotLabels.size() != plotInputs.size())
    return usageError("--label is given " + Twine(plotLabels.size()) +
                      " times for " + Twine(plotInputs.size()) +
                      " metrics files; give it once per file or not at all");
  if (!(plotSmoothing >= 0 && plotSmoothing < 1))
    return usageError("--smooth must be in [0, 1), got " +
                      formatv("{0}", plotSmoothing.getValue()));
  if (plotWidth < minPlotWidth || plotHeight < minPlotHeight)
    return usageError("the image must be at least " + Twine(minPlotWidth) +
                      "x" + Twine(minPlotHeight) + " pixels");

  std::vector<MetricsRun> runs;
  for (const std::string &path : plotInputs) {
    Expected<MetricsRun> run = readMetricsFile(path);
    if (!run) {
      handleAllErrors(run.takeError(), [](const MetricsError &error) {
        WithColor::error(errs(), error.getDiagnostic().location)
            << error.getDiagnostic().message << "\n";
      });
      return 1;
    }
    for (const MetricsDiagnostic &warning : run->warnings)
      WithColor::warning(errs(), warning.location) << warning.message << "\n";
    runs.push_back(std::move(*run));
  }
  if (plotLabels.empty())
    disambiguateLabels(runs);
  else
    for (auto [run, label] : llvm::zip(runs, plotLabels))
      run.label = label;

  if (llvm::all_of(runs, [](const MetricsRun &run) { return run.empty(); }))
    return usageError("no finite value to plot in any metrics file");

  PlotOptions options;
  options.title = plotTitle;
  options.width = plotWidth;
  options.height = plotHeight;
  options.logY = plotLogY;
  options.smoothing = plotSmoothing;
  // writeToOutput writes a temporary file next to the output and renames it
  // over the output, so a reader never sees half an SVG.
  if (Error error = writeToOutput(plotOutput, [&](raw_ostream &os) {
        writeSvgPlot(runs, options, os);
        return Error::success();
      })) {
    WithColor::error(errs(), plotOutput)
        << "cannot write the plot: " << toString(std::move(error)) << "\n";
    return 1;
  }
  return 0;
}
