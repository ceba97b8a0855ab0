//===- MemoryTimeline.cpp - Live bytes over a step, as an SVG -------------===//
//
// Part of Kiln. Layout, top to bottom: the title and a line of figures, the
// panel (bands, budget, boundary, peak), the program-point axis's labels. The
// legend sits to the right of the panel, where it hides nothing.
//
// Program point i covers [i, i + 1) on the x axis, so that every op has a
// width and the bands are step functions, as the bytes are.
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/MemoryTimeline.h"

#include "SvgElements.h"
#include "kiln/ByteSize.h"
#include "kiln/Plot/Axis.h"
#include "kiln/Plot/SvgPlot.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>

using namespace llvm;
using namespace kiln::plot;

namespace {
/// A band of the stack, bottom to top.
struct Band {
  StringRef cssClass, label, color;
  int64_t TimelinePoint::*field;
};

/// A unit for the value axis: values are drawn as bytes / `bytes`.
struct SizeUnit {
  StringRef name;
  double bytes;
};
} // namespace

/// The transient bands, bottom to top: activations (saved for the backward)
/// lowest, where the eye reads the forward's climb; workspace on top. The
/// colours are the Okabe-Ito palette's first three.
static const std::array<Band, 3> &transientBands() {
  static const std::array<Band, 3> bands = {
      Band{"activation", "activations", runColor(0),
           &TimelinePoint::activation},
      Band{"gradient", "gradients (backward, update)", runColor(1),
           &TimelinePoint::gradient},
      Band{"workspace", "workspace (one op's scratch)", runColor(2),
           &TimelinePoint::workspace}};
  return bands;
}
static constexpr StringLiteral kPersistentColor = "#c8c8c8";
static constexpr StringLiteral kBudgetColor = "#c0002a";
/// Labels drawn over the bands and lines get a white outline under their
/// glyphs, so that they stay readable over anything.
static constexpr StringLiteral kHalo =
    "paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\" "
    "stroke-linejoin=\"round\"";

/// The largest binary unit that keeps `bytes` at least 1.
static SizeUnit unitFor(double bytes) {
  static constexpr std::pair<StringLiteral, double> units[] = {
      {"TiB", 1099511627776.0},
      {"GiB", 1073741824.0},
      {"MiB", 1048576.0},
      {"KiB", 1024.0}};
  for (auto [name, size] : units)
    if (bytes >= size)
      return {name, size};
  return {"bytes", 1};
}

/// At most about 2 x `columns` points that draw the same stack: in each run
/// of consecutive points, the one with the most bytes live (so the peak
/// survives), drawn over the whole run. Returns {first point, point} pairs.
static std::vector<std::pair<int64_t, TimelinePoint>>
thinTimeline(const std::vector<TimelinePoint> &points, unsigned columns) {
  std::vector<std::pair<int64_t, TimelinePoint>> kept;
  int64_t n = points.size();
  int64_t stride = std::max<int64_t>(1, (n + 2 * columns - 1) / (2 * columns));
  for (int64_t first = 0; first < n; first += stride) {
    int64_t best = first;
    for (int64_t i = first; i < std::min(n, first + stride); ++i)
      if (points[i].total() > points[best].total())
        best = i;
    kept.push_back({first, points[best]});
  }
  return kept;
}

namespace {
class TimelineWriter {
public:
  TimelineWriter(const MemoryTimeline &timeline,
                 const TimelineOptions &options, raw_ostream &os)
      : timeline(timeline), options(options), os(os) {}
  void write();

private:
  void drawFrameAndTicks(const Panel &panel);
  void drawBands(const Panel &panel);
  void drawBudget(const Panel &panel);
  void drawBoundary(const Panel &panel);
  void drawPeak(const Panel &panel);
  void drawLegend(double x, double y);
  std::string figures() const;

  const MemoryTimeline &timeline;
  const TimelineOptions &options;
  raw_ostream &os;
  SizeUnit unit{"bytes", 1};
  /// Whether the budget is drawn as a line; a budget far above the data
  /// would flatten it, so it is then only named.
  bool budgetOnScale = false;
};
} // namespace

std::string TimelineWriter::figures() const {
  std::string text;
  raw_string_ostream line(text);
  line << "peak_bytes " << kiln::formatByteSize(timeline.peakBytes())
       << " = persistent " << kiln::formatByteSize(timeline.persistentBytes)
       << " + arena " << kiln::formatByteSize(timeline.arenaBytes)
       << "; live lower bound "
       << kiln::formatByteSize(timeline.liveLowerBound);
  if (timeline.budget > 0)
    line << "; budget " << kiln::formatByteSize(timeline.budget);
  return text;
}

void TimelineWriter::drawFrameAndTicks(const Panel &panel) {
  const Rect &area = panel.area;
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
  for (const Tick &tick : panel.x.ticks())
    os << format("<text class=\"tick x\" x=\"%.1f\" y=\"%.1f\" "
                 "text-anchor=\"middle\">",
                 panel.px(tick.value), area.y + area.height + 16)
       << tick.label << "</text>\n";
  double labelX = area.x - 52, labelY = area.y + area.height / 2;
  os << format("<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" "
               "text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">",
               labelX, labelY, labelX, labelY)
     << "bytes live (" << unit.name << ")</text>\n"
     << format("<text class=\"axis-label\" x=\"%.1f\" y=\"%.1f\" "
               "text-anchor=\"middle\">",
               area.x + area.width / 2, area.y + area.height + 36)
     << "program point (op " << "of @" << escapeXML(timeline.entry)
     << "'s schedule, in order)</text>\n";
}

void TimelineWriter::drawBands(const Panel &panel) {
  const Rect &area = panel.area;
  double base = timeline.persistentBytes / unit.bytes;
  int64_t n = timeline.points.size();
  if (timeline.persistentBytes > 0)
    os << format("<rect class=\"band persistent\" x=\"%.1f\" y=\"%.1f\" "
                 "width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                 area.x, panel.py(base), area.width,
                 panel.py(0) - panel.py(base), kPersistentColor.data());
  if (n == 0)
    return;

  auto kept = thinTimeline(timeline.points, area.width);
  // The top of each band at each kept point, in axis units.
  std::vector<std::array<double, 4>> tops(kept.size());
  for (auto [index, entry] : enumerate(kept)) {
    double level = base;
    tops[index][0] = level;
    for (auto [band, spec] : enumerate(transientBands())) {
      level += entry.second.*spec.field / unit.bytes;
      tops[index][band + 1] = level;
    }
  }
  auto startOf = [&](size_t index) { return double(kept[index].first); };
  auto endOf = [&](size_t index) {
    return index + 1 < kept.size() ? double(kept[index + 1].first) : double(n);
  };
  for (auto [band, spec] : enumerate(transientBands())) {
    // Upper edge left to right, then the lower edge back.
    os << formatv("<polygon class=\"band {0}\" fill=\"{1}\" "
                  "stroke=\"none\" points=\"",
                  spec.cssClass, spec.color);
    for (size_t i = 0; i < kept.size(); ++i)
      os << format("%.1f,%.1f %.1f,%.1f ", panel.px(startOf(i)),
                   panel.py(tops[i][band + 1]), panel.px(endOf(i)),
                   panel.py(tops[i][band + 1]));
    for (size_t i = kept.size(); i-- > 0;)
      os << format("%.1f,%.1f %.1f,%.1f ", panel.px(endOf(i)),
                   panel.py(tops[i][band]), panel.px(startOf(i)),
                   panel.py(tops[i][band]));
    os << "\"/>\n";
  }
}

void TimelineWriter::drawBudget(const Panel &panel) {
  if (timeline.budget <= 0)
    return;
  const Rect &area = panel.area;
  std::string label = "budget " + kiln::formatByteSize(timeline.budget);
  if (!budgetOnScale) {
    // Above the frame's top right corner, clear of the boundary's labels.
    os << format("<text class=\"budget\" x=\"%.1f\" y=\"%.1f\" "
                 "text-anchor=\"end\" fill=\"%s\">",
                 area.x + area.width, area.y - 5, kBudgetColor.data())
       << escapeXML(label) << ", above the top of the axis</text>\n";
    return;
  }
  double y = panel.py(timeline.budget / unit.bytes);
  os << format("<g class=\"budget\"><line x1=\"%.1f\" y1=\"%.1f\" "
               "x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
               "stroke-dasharray=\"8 4\"/>\n",
               area.x, y, area.x + area.width, y, kBudgetColor.data())
     << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
               "fill=\"%s\" font-weight=\"bold\" %s>",
               area.x + area.width - 6, y - 6, kBudgetColor.data(),
               kHalo.data())
     << escapeXML(label) << "</text></g>\n";
}

void TimelineWriter::drawBoundary(const Panel &panel) {
  if (!timeline.boundary)
    return;
  const Rect &area = panel.area;
  double x = panel.px(*timeline.boundary + 1);
  os << format("<g class=\"boundary\"><line x1=\"%.1f\" y1=\"%.1f\" "
               "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" stroke-width=\"1.2\" "
               "stroke-dasharray=\"3 3\"/>\n",
               x, area.y, x, area.y + area.height)
     << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
               "fill=\"#333\" %s>forward</text>\n",
               x - 5, area.y + 14, kHalo.data())
     << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\" "
               "fill=\"#333\" %s>backward</text></g>\n",
               x + 5, area.y + 14, kHalo.data());
}

void TimelineWriter::drawPeak(const Panel &panel) {
  int64_t point = timeline.peakPoint;
  if (point < 0 || point >= (int64_t)timeline.points.size())
    return;
  const Rect &area = panel.area;
  int64_t live = timeline.points[point].total();
  double x = panel.px(point + 0.5);
  double y = panel.py((timeline.persistentBytes + live) / unit.bytes);
  std::string label =
      formatv("peak: {0} live at op {1}",
              kiln::formatByteSize(timeline.persistentBytes + live), point)
          .str();
  // The label goes on the side of the marker with more room.
  bool rightOfMarker = x < area.x + area.width / 2;
  os << format("<g class=\"peak\"><path d=\"M %.1f %.1f l -6 -10 l 12 0 z\" "
               "fill=\"#222\"/>\n",
               x, y - 2)
     << format("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" "
               "font-weight=\"bold\" %s>",
               rightOfMarker ? x + 9 : x - 9, y - 8,
               rightOfMarker ? "start" : "end", kHalo.data())
     << escapeXML(label) << "</text></g>\n";
}

void TimelineWriter::drawLegend(double x, double y) {
  struct Row {
    std::string label;
    std::string color;
    bool line;
  };
  std::vector<Row> rows;
  for (const Band &band : llvm::reverse(transientBands()))
    rows.push_back({band.label.str(), band.color.str(), false});
  rows.push_back({"persistent (params, gradients,", kPersistentColor.str(),
                  false});
  rows.push_back({"  optimizer state, I/O)", "", false});
  if (timeline.budget > 0)
    rows.push_back({"memory budget", kBudgetColor.str(), true});
  os << "<g class=\"legend\">\n";
  for (auto [index, row] : enumerate(rows)) {
    double rowY = y + 20 * index;
    if (row.line)
      os << format("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                   "stroke=\"%s\" stroke-width=\"2\" "
                   "stroke-dasharray=\"8 4\"/>\n",
                   x, rowY + 6, x + 16, rowY + 6, row.color.c_str());
    else if (!row.color.empty())
      os << format("<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"12\" "
                   "fill=\"%s\"/>\n",
                   x, rowY, row.color.c_str());
    os << format("<text x=\"%.1f\" y=\"%.1f\">", x + 22, rowY + 10)
       << escapeXML(row.label) << "</text>\n";
  }
  os << "</g>\n";
}

void TimelineWriter::write() {
  double width = options.width, height = options.height;
  const double left = 80, right = 230, top = 62, bottom = 50;
  Rect area{left, top, width - left - right, height - top - bottom};

  int64_t maxLive = 0;
  for (const TimelinePoint &point : timeline.points)
    maxLive = std::max(maxLive, point.total());
  double dataTop =
      std::max<double>(timeline.persistentBytes + maxLive, timeline.peakBytes());
  // A budget up to twice the data is drawn; one far above would squash the
  // bands into a sliver, so it is then named instead.
  budgetOnScale = timeline.budget > 0 && timeline.budget <= 2 * dataTop;
  double axisTop = std::max(budgetOnScale ? double(timeline.budget) : 0.0,
                            dataTop);
  if (axisTop <= 0)
    axisTop = 1;
  unit = unitFor(axisTop);
  // Room above the highest line for the labels drawn over it.
  Axis y = Axis::linear(0, axisTop * 1.08 / unit.bytes,
                        std::max(3.0, area.height / 40));
  int64_t n = std::max<int64_t>(1, timeline.points.size());
  Axis x = Axis::linear(0, n, std::max(2.0, area.width / 80),
                        /*widenToTicks=*/false);
  Panel panel{area, x, y};

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                "height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
                "font-size=\"12\" fill=\"#222\">\n",
                options.width, options.height)
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << format("<text class=\"title\" x=\"%.1f\" y=\"24\" "
               "text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">",
               left + area.width / 2)
     << escapeXML(formatv("Memory of {0}: @{1}, bytes live per op",
                          timeline.model, timeline.entry)
                      .str())
     << "</text>\n"
     << format("<text class=\"figures\" x=\"%.1f\" y=\"44\" "
               "text-anchor=\"middle\">",
               left + area.width / 2)
     << escapeXML(figures()) << "</text>\n";

  drawFrameAndTicks(panel);
  drawBands(panel);
  os << format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "fill=\"none\" stroke=\"#888\"/>\n",
               area.x, area.y, area.width, area.height);
  drawBoundary(panel);
  drawBudget(panel);
  drawPeak(panel);
  drawLegend(area.x + area.width + 16, area.y + 4);
  os << "</svg>\n";
}

void kiln::plot::writeMemoryTimelineSvg(const MemoryTimeline &timeline,
                                        const TimelineOptions &options,
                                        raw_ostream &os) {
  TimelineWriter(timeline, options, os).write();
}
