//===- SvgPlot.cpp - Loss curves of training runs as an SVG ---------------===//
//
// Part of Kiln. Layout, top to bottom: the title, the loss panel, the
// accuracy panel (when any run has eval_accuracy), the step axis's labels,
// and the notes. The legend sits inside the loss panel, in a corner where it
// hides no curve, or else to the right of the panels.
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/SvgPlot.h"

#include "SvgElements.h"
#include "kiln/Plot/Axis.h"
#include "kiln/Plot/Series.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

using namespace llvm;
using namespace kiln::plot;

StringRef kiln::plot::runColor(size_t index) {
  static constexpr StringLiteral okabeIto[] = {"#0072B2", "#D55E00", "#009E73",
                                               "#CC79A7", "#E69F00", "#56B4E9",
                                               "#000000", "#F0E442"};
  return okabeIto[index % std::size(okabeIto)];
}

StringRef kiln::plot::runDashes(size_t index) {
  static constexpr StringLiteral dashes[] = {"", "7 3", "2 2", "7 2 2 2"};
  return dashes[(index / 8) % std::size(dashes)];
}

namespace {
/// Writes one document: the constructor prepares the series (filter, smooth,
/// thin, count what is skipped), write() lays out and draws.
class SvgPlot {
public:
  SvgPlot(ArrayRef<MetricsRun> runs, const PlotOptions &options,
          raw_ostream &os);
  void write();

private:
  void prepareSeries(ArrayRef<MetricsRun> runs);
  void drawPanel(const Panel &panel, StringRef yLabel, bool stepLabels);
  void drawPolyline(const Panel &panel, ArrayRef<MetricsPoint> points,
                    size_t run, StringRef cssClass, double strokeWidth,
                    double opacity);
  void drawMarkers(const Panel &panel, ArrayRef<MetricsPoint> points,
                   size_t run);
  std::vector<std::string> legendKeyRows() const;

  const PlotOptions &options;
  raw_ostream &os;
  std::vector<DrawnRun> drawn;
  std::vector<std::string> notes;
  bool hasEval = false, hasAccuracy = false;
};
} // namespace

SvgPlot::SvgPlot(ArrayRef<MetricsRun> runs, const PlotOptions &options,
                 raw_ostream &os)
    : options(options), os(os) {
  prepareSeries(runs);
}

void SvgPlot::prepareSeries(ArrayRef<MetricsRun> runs) {
  unsigned nonFinite = 0, nonPositive = 0;
  std::string nonFiniteRuns;
  unsigned columns = options.width;
  for (const MetricsRun &run : runs) {
    DrawnRun &out = drawn.emplace_back();
    out.label = run.label;
    auto keep = [&](ArrayRef<MetricsPoint> points) {
      std::vector<MetricsPoint> kept;
      for (const MetricsPoint &point : points) {
        if (options.logY && point.value <= 0)
          ++nonPositive;
        else
          kept.push_back(point);
      }
      return kept;
    };
    out.rawLoss = keep(run.trainLoss);
    if (options.smoothing > 0)
      out.smoothLoss = smoothExponential(out.rawLoss, options.smoothing);
    out.rawLoss = thinForDrawing(out.rawLoss, columns);
    out.smoothLoss = thinForDrawing(out.smoothLoss, columns);
    out.evalLoss = keep(run.evalLoss);
    out.evalAccuracy = run.evalAccuracy;
    hasEval |= !out.evalLoss.empty();
    hasAccuracy |= !out.evalAccuracy.empty();
    if (run.nonFiniteCount) {
      nonFinite += run.nonFiniteCount;
      nonFiniteRuns += (nonFiniteRuns.empty() ? "" : ", ") + run.label + ": " +
                       std::to_string(run.nonFiniteCount);
    }
  }
  if (nonFinite)
    notes.push_back("Skipped " + std::to_string(nonFinite) + " NaN/Inf value" +
                    (nonFinite == 1 ? "" : "s") + " (" + nonFiniteRuns + ").");
  if (nonPositive)
    notes.push_back("Skipped " + std::to_string(nonPositive) + " value" +
                    (nonPositive == 1 ? "" : "s") +
                    " <= 0, which a log axis cannot show.");
}

void SvgPlot::drawPolyline(const Panel &panel, ArrayRef<MetricsPoint> points,
                           size_t run, StringRef cssClass, double strokeWidth,
                           double opacity) {
  if (points.empty())
    return;
  os << formatv("<polyline class=\"{0}\" fill=\"none\" stroke=\"{1}\" ",
                cssClass, runColor(run))
     << format("stroke-width=\"%g\" stroke-linejoin=\"round\"", strokeWidth);
  if (opacity < 1)
    os << format(" stroke-opacity=\"%g\"", opacity);
  if (!runDashes(run).empty())
    os << formatv(" stroke-dasharray=\"{0}\"", runDashes(run));
  os << " points=\"";
  for (const MetricsPoint &point : points)
    os << format("%.1f,%.1f ", panel.px(point.step), panel.py(point.value));
  os << "\"/>\n";
}

void SvgPlot::drawMarkers(const Panel &panel, ArrayRef<MetricsPoint> points,
                          size_t run) {
  // Markers on a dense series would merge into a thick smear.
  if (points.empty() || points.size() > panel.area.width / 8)
    return;
  os << formatv("<g class=\"eval-points\" fill=\"white\" stroke=\"{0}\" "
                "stroke-width=\"1.5\">\n",
                runColor(run));
  for (const MetricsPoint &point : points)
    os << format("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\"/>\n",
                 panel.px(point.step), panel.py(point.value));
  os << "</g>\n";
}

void SvgPlot::drawPanel(const Panel &panel, StringRef yLabel, bool stepLabels) {
  const Rect &area = panel.area;
  os << format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "fill=\"none\" stroke=\"#888\"/>\n",
               area.x, area.y, area.width, area.height);
  for (const Tick &tick : panel.x.ticks()) {
    double x = panel.px(tick.value);
    os << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                 "stroke=\"#e4e4e4\"/>\n",
                 x, area.y, x, area.y + area.height);
    if (stepLabels)
      os << format("<text class=\"tick x\" x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">",
                   x, area.y + area.height + 16)
         << tick.label << "</text>\n";
  }
  for (const Tick &tick : panel.y.ticks()) {
    double y = panel.py(tick.value);
    os << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                 "stroke=\"#e4e4e4\"/>\n",
                 area.x, y, area.x + area.width, y)
       << format("<text class=\"tick y\" x=\"%.1f\" y=\"%.1f\" "
                 "text-anchor=\"end\">",
                 area.x - 6, y + 4)
       << tick.label << "</text>\n";
  }
  double labelX = area.x - 46, labelY = area.y + area.height / 2;
  os << format("<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" "
               "text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">",
               labelX, labelY, labelX, labelY)
     << escapeXML(yLabel) << "</text>\n";
}

std::vector<std::string> SvgPlot::legendKeyRows() const {
  if (!hasEval)
    return {};
  std::string trainKey = "train loss";
  if (options.smoothing > 0)
    raw_string_ostream(trainKey) << format(" (EMA %g)", options.smoothing);
  return {trainKey, "eval loss"};
}

/// The extent of the values of \p select over all runs, as {min, max}.
template <typename Select>
static std::pair<double, double> valueRange(ArrayRef<DrawnRun> runs,
                                            Select select) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const DrawnRun &run : runs)
    for (ArrayRef<MetricsPoint> series : select(run))
      for (const MetricsPoint &point : series) {
        lo = std::min(lo, point.value);
        hi = std::max(hi, point.value);
      }
  return {lo, hi};
}

void SvgPlot::write() {
  double width = options.width, height = options.height;
  const double left = 70, right = 20, panelGap = 26;
  double top = options.title.empty() ? 16 : 42;
  double bottom = 46 + 16 * notes.size();
  double plotHeight = height - top - bottom;
  double lossHeight = hasAccuracy ? (plotHeight - panelGap) * 0.68 : plotHeight;
  double accuracyHeight = plotHeight - panelGap - lossHeight;
  double plotWidth = width - left - right;

  // Step axis: shared by both panels, spanning the data exactly.
  int64_t firstStep = std::numeric_limits<int64_t>::max(), lastStep = 0;
  for (const DrawnRun &run : drawn)
    for (ArrayRef<MetricsPoint> series :
         {ArrayRef(run.rawLoss), ArrayRef(run.evalLoss),
          ArrayRef(run.evalAccuracy)})
      for (const MetricsPoint &point : series) {
        firstStep = std::min(firstStep, point.step);
        lastStep = std::max(lastStep, point.step);
      }
  if (firstStep > lastStep)
    firstStep = lastStep = 0;
  // Runs log from step 0 or 1: start the axis at 0 so that it has a label.
  if (firstStep > 0 && firstStep < lastStep / 20)
    firstStep = 0;

  auto [lossLo, lossHi] = valueRange(drawn, [](const DrawnRun &run) {
    return std::vector<ArrayRef<MetricsPoint>>{run.rawLoss, run.evalLoss};
  });
  if (lossLo > lossHi)
    lossLo = lossHi = 1;
  unsigned lossTicks = std::max(3.0, lossHeight / 32);
  Axis lossAxis = options.logY ? Axis::logarithmic(lossLo, lossHi, lossTicks)
                               : Axis::linear(lossLo, lossHi, lossTicks);
  auto makeStepAxis = [&] {
    return Axis::linear(firstStep, lastStep, std::max(2.0, plotWidth / 90),
                        /*widenToTicks=*/false);
  };
  Panel lossPanel{{left, top, plotWidth, lossHeight}, makeStepAxis(), lossAxis};

  // The legend goes in a corner of the loss panel where it hides no curve;
  // when every corner would, it goes to the right of the panels instead.
  SvgLegend legend(drawn, legendKeyRows());
  std::optional<Rect> legendBox = legend.freeCorner(lossPanel);
  if (!legendBox && legend.width() < width * 0.4) {
    plotWidth -= legend.width() + 10;
    lossPanel.area.width = plotWidth;
    lossPanel.x = makeStepAxis();
    legendBox =
        Rect{left + plotWidth + 10, top, legend.width(), legend.height()};
  } else if (!legendBox) {
    legendBox = Rect{left + plotWidth - 10 - legend.width(), top + 10,
                     legend.width(), legend.height()};
  }
  Axis stepAxis = lossPanel.x;

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                "height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
                "font-size=\"12\" fill=\"#222\">\n",
                options.width, options.height)
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    os << format("<text class=\"title\" x=\"%.1f\" y=\"26\" "
                 "text-anchor=\"middle\" font-size=\"16\" "
                 "font-weight=\"bold\">",
                 left + plotWidth / 2)
       << escapeXML(options.title) << "</text>\n";

  drawPanel(lossPanel, options.logY ? "loss (log scale)" : "loss",
            !hasAccuracy);
  // Every point lies inside its panel's axes by construction (the log axis
  // drops what it cannot show), so nothing needs clipping; markers on the
  // frame stay whole.
  for (auto [index, run] : enumerate(drawn)) {
    os << "<g class=\"run\"><title>" << escapeXML(run.label) << "</title>\n";
    if (options.smoothing > 0) {
      drawPolyline(lossPanel, run.rawLoss, index, "train-loss-raw", 1, 0.22);
      drawPolyline(lossPanel, run.smoothLoss, index, "train-loss", 2, 1);
    } else {
      drawPolyline(lossPanel, run.rawLoss, index, "train-loss", 1.5, 1);
    }
    drawPolyline(lossPanel, run.evalLoss, index, "eval-loss", 1.5, 1);
    drawMarkers(lossPanel, run.evalLoss, index);
    os << "</g>\n";
  }
  legend.write(os, *legendBox);

  double stepLabelBase = top + lossHeight;
  if (hasAccuracy) {
    auto [accLo, accHi] = valueRange(drawn, [](const DrawnRun &run) {
      return std::vector<ArrayRef<MetricsPoint>>{run.evalAccuracy};
    });
    Axis accuracyAxis =
        Axis::linear(accLo, accHi, std::max(3.0, accuracyHeight / 28));
    Panel accuracyPanel{
        {left, top + lossHeight + panelGap, plotWidth, accuracyHeight},
        stepAxis,
        accuracyAxis};
    drawPanel(accuracyPanel, "eval accuracy", /*stepLabels=*/true);
    for (auto [index, run] : enumerate(drawn)) {
      drawPolyline(accuracyPanel, run.evalAccuracy, index, "eval-accuracy", 1.5,
                   1);
      drawMarkers(accuracyPanel, run.evalAccuracy, index);
    }
    stepLabelBase = accuracyPanel.area.y + accuracyHeight;
  }
  os << format("<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" "
               "text-anchor=\"middle\">step</text>\n",
               left + plotWidth / 2, stepLabelBase + 34);
  for (auto [index, note] : enumerate(notes))
    os << format("<text class=\"note\" x=\"%.1f\" y=\"%.1f\" fill=\"#a33\">",
                 left, stepLabelBase + 56 + 16 * index)
       << escapeXML(note) << "</text>\n";
  os << "</svg>\n";
}

void kiln::plot::writeSvgPlot(ArrayRef<MetricsRun> runs,
                              const PlotOptions &options, raw_ostream &os) {
  SvgPlot(runs, options, os).write();
}
