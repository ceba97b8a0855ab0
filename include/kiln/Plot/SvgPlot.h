//===- SvgPlot.h - Loss curves of training runs as an SVG -------*- C++ -*-===//
//
// Part of Kiln. Draws the series of one or more MetricsRuns as a standalone
// SVG document (no scripts, no external fonts): a loss panel with each run's
// training loss (smoothed over a faint raw curve) and its eval loss (a line
// with markers, in the run's colour), and, when any run has it, an eval
// accuracy panel below sharing the step axis. A legend names the runs; notes
// under the plot count the values that could not be drawn.
//
// Elements carry classes (train-loss, train-loss-raw, eval-loss, eval-points,
// eval-accuracy, legend, tick, axis-label, note) so that tests and style
// sheets can find them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PLOT_SVGPLOT_H
#define KILN_PLOT_SVGPLOT_H

#include "kiln/Plot/MetricsFile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace kiln::plot {

/// How to draw the plot.
struct PlotOptions {
  /// Drawn above the panels when not empty.
  std::string title;
  /// Size of the whole image, in pixels.
  unsigned width = 800;
  unsigned height = 500;
  /// A base-10 log scale for the loss axis.
  bool logY = false;
  /// Exponential-moving-average weight for the training loss, in [0, 1).
  /// Above 0 the raw curve is drawn faintly behind the smoothed one.
  double smoothing = 0.9;
};

/// The smallest size the layout works at; the CLI rejects less.
constexpr unsigned minPlotWidth = 240, minPlotHeight = 160;

/// The colour of the run at \p index: the Okabe-Ito palette, which stays
/// distinct under the common colour-vision deficiencies, in an order that
/// puts the colours with the most contrast on white first.
llvm::StringRef runColor(size_t index);

/// Writes the SVG document for \p runs, which must hold at least one point
/// between them, to \p os.
void writeSvgPlot(llvm::ArrayRef<MetricsRun> runs, const PlotOptions &options,
                  llvm::raw_ostream &os);

} // namespace kiln::plot

#endif // KILN_PLOT_SVGPLOT_H
