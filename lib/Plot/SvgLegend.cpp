//===- SvgLegend.cpp - The legend of the SVG plot -------------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "SvgElements.h"

#include "kiln/Plot/SvgPlot.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;
using namespace kiln::plot;

static constexpr double fontSize = 12, rowHeight = 18, swatchWidth = 24,
                        padding = 8;

/// A rough width of \p text in a sans-serif font at fontSize: enough to size
/// the box without measuring glyphs.
static double textWidth(StringRef text) {
  return text.size() * fontSize * 0.58;
}

SvgLegend::SvgLegend(ArrayRef<DrawnRun> runs, std::vector<std::string> keyRows)
    : runs(runs), keyRows(std::move(keyRows)) {
  double textSpan = 0;
  for (const DrawnRun &run : runs)
    textSpan = std::max(textSpan, textWidth(run.label));
  for (const std::string &row : this->keyRows)
    textSpan = std::max(textSpan, textWidth(row));
  boxWidth = padding * 3 + swatchWidth + textSpan;
  boxHeight = padding * 2 + rowHeight * (runs.size() + this->keyRows.size());
}

size_t SvgLegend::pointsCovered(const Panel &panel, const Rect &box) const {
  size_t covered = 0;
  for (const DrawnRun &run : runs) {
    // The faint raw curve may run behind the legend; the main curves not.
    ArrayRef<MetricsPoint> train =
        run.smoothLoss.empty() ? run.rawLoss : run.smoothLoss;
    for (ArrayRef<MetricsPoint> series : {train, ArrayRef(run.evalLoss)})
      for (const MetricsPoint &point : series)
        covered += box.contains(panel.px(point.step), panel.py(point.value));
  }
  return covered;
}

std::optional<Rect> SvgLegend::freeCorner(const Panel &panel) const {
  const Rect &area = panel.area;
  double left = area.x + 10, right = area.x + area.width - 10 - boxWidth;
  double top = area.y + 10, bottom = area.y + area.height - 10 - boxHeight;
  if (left > right || top > bottom)
    return std::nullopt;
  for (Rect corner : {Rect{right, top, boxWidth, boxHeight},
                      Rect{right, bottom, boxWidth, boxHeight},
                      Rect{left, bottom, boxWidth, boxHeight},
                      Rect{left, top, boxWidth, boxHeight}})
    if (!pointsCovered(panel, corner))
      return corner;
  return std::nullopt;
}

void SvgLegend::write(raw_ostream &os, const Rect &box) const {
  os << "<g class=\"legend\">\n"
     << format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n",
               box.x, box.y, box.width, box.height);
  double lineX = box.x + padding, textX = lineX + swatchWidth + padding;
  double y = box.y + padding + rowHeight / 2;
  for (auto [index, run] : enumerate(runs)) {
    os << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" ",
                 lineX, y, lineX + swatchWidth, y)
       << "stroke-width=\"2.5\" stroke=\"" << runColor(index)
       << "\" stroke-dasharray=\"" << runDashes(index) << "\"/>\n"
       << format("<text x=\"%.1f\" y=\"%.1f\">", textX, y + 4)
       << escapeXML(run.label) << "</text>\n";
    y += rowHeight;
  }
  for (auto [index, row] : enumerate(keyRows)) {
    os << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                 "stroke=\"#666\" stroke-width=\"2\"/>\n",
                 lineX, y, lineX + swatchWidth, y);
    if (index == 1)
      os << format("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"white\" "
                   "stroke=\"#666\" stroke-width=\"1.5\"/>\n",
                   lineX + swatchWidth / 2, y);
    os << format("<text x=\"%.1f\" y=\"%.1f\" fill=\"#444\">", textX, y + 4)
       << escapeXML(row) << "</text>\n";
    y += rowHeight;
  }
  os << "</g>\n";
}
