//===- SvgElements.h - Shared pieces of the SVG plot writer -----*- C++ -*-===//
//
// Part of Kiln. Internal to KilnPlot: the geometry of a panel, a run's series
// as drawn, XML escaping, and the legend, shared by SvgPlot.cpp and
// SvgLegend.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_PLOT_SVGELEMENTS_H
#define KILN_LIB_PLOT_SVGELEMENTS_H

#include "kiln/Plot/Axis.h"
#include "kiln/Plot/MetricsFile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace kiln::plot {

/// The dash pattern of the run at \p index: solid for the first round of the
/// palette, then dashed, so that runs stay apart beyond eight.
llvm::StringRef runDashes(size_t index);

/// \p text with the characters XML reserves escaped.
inline std::string escapeXML(llvm::StringRef text) {
  std::string escaped;
  for (char c : text) {
    if (c == '&')
      escaped += "&amp;";
    else if (c == '<')
      escaped += "&lt;";
    else if (c == '>')
      escaped += "&gt;";
    else if (c == '"')
      escaped += "&quot;";
    else
      escaped += c;
  }
  return escaped;
}

/// A rectangle on the page, in pixels, y pointing down.
struct Rect {
  double x, y, width, height;
  bool contains(double px, double py) const {
    return px >= x && px <= x + width && py >= y && py <= y + height;
  }
};

/// A run's series as they will be drawn: filtered for the axis, smoothed and
/// thinned.
struct DrawnRun {
  std::string label;
  std::vector<MetricsPoint> rawLoss, smoothLoss, evalLoss, evalAccuracy;
};

/// One panel: a rectangle on the page and the axes that map into it.
struct Panel {
  Rect area;
  Axis x, y;
  double px(double step) const {
    return area.x + x.fraction(step) * area.width;
  }
  double py(double value) const {
    return area.y + (1 - y.fraction(value)) * area.height;
  }
};

/// The legend: a row per run (its colour and name), then \p keyRows in grey,
/// a key to the line styles (a plain line, then a marked one).
class SvgLegend {
public:
  SvgLegend(llvm::ArrayRef<DrawnRun> runs, std::vector<std::string> keyRows);

  double width() const { return boxWidth; }
  double height() const { return boxHeight; }

  /// A corner of \p panel where the legend hides none of the main curves
  /// (smoothed training loss, or raw without smoothing, and eval loss),
  /// trying top right, bottom right, bottom left, top left.
  std::optional<Rect> freeCorner(const Panel &panel) const;

  /// Writes the legend into \p box.
  void write(llvm::raw_ostream &os, const Rect &box) const;

private:
  size_t pointsCovered(const Panel &panel, const Rect &box) const;

  llvm::ArrayRef<DrawnRun> runs;
  std::vector<std::string> keyRows;
  double boxWidth, boxHeight;
};

} // namespace kiln::plot

#endif // KILN_LIB_PLOT_SVGELEMENTS_H
