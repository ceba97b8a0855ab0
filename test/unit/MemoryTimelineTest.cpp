//===- MemoryTimelineTest.cpp - Tests of the memory timeline's SVG --------===//
//
// Part of Kiln. The timeline drawn from hand-made data: units, what is drawn
// only when the data has it, escaping, and that thinning a long schedule
// keeps its peak (the band still reaches above a budget line set just under
// the peak).
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/MemoryTimeline.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <sstream>

using namespace kiln::plot;

namespace {

std::string draw(const MemoryTimeline &timeline) {
  std::string svg;
  llvm::raw_string_ostream os(svg);
  writeMemoryTimelineSvg(timeline, {}, os);
  return svg;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// The smallest y (the highest point on the page) of the polygon with
/// class `cssClass`, or +inf when there is none.
double topOfPolygon(const std::string &svg, const std::string &cssClass) {
  size_t at = svg.find("<polygon class=\"" + cssClass + "\"");
  if (at == std::string::npos)
    return std::numeric_limits<double>::infinity();
  size_t begin = svg.find("points=\"", at) + 8;
  size_t end = svg.find('"', begin);
  std::istringstream points(svg.substr(begin, end - begin));
  double top = std::numeric_limits<double>::infinity();
  std::string point;
  while (points >> point)
    top = std::min(top, std::stod(point.substr(point.find(',') + 1)));
  return top;
}

/// The y of the budget line.
double budgetLineY(const std::string &svg) {
  size_t at = svg.find("<g class=\"budget\"><line");
  EXPECT_NE(at, std::string::npos);
  size_t begin = svg.find("y1=\"", at) + 4;
  return std::stod(svg.substr(begin));
}

MemoryTimeline smallTimeline() {
  MemoryTimeline timeline;
  timeline.model = "m";
  timeline.entry = "train_step";
  timeline.points = {{1 << 20, 0, 0},
                     {3 << 20, 0, 1 << 19},
                     {2 << 20, 1 << 20, 0},
                     {0, 1 << 20, 0}};
  timeline.persistentBytes = 4 << 20;
  timeline.boundary = 1;
  timeline.peakPoint = 1;
  timeline.arenaBytes = timeline.liveLowerBound = (3 << 20) + (1 << 19);
  return timeline;
}

TEST(MemoryTimeline, DrawsTheBandsBoundaryPeakAndFigures) {
  std::string svg = draw(smallTimeline());
  for (const char *part :
       {"class=\"band persistent\"", "class=\"band activation\"",
        "class=\"band gradient\"", "class=\"band workspace\"",
        "<g class=\"boundary\">", "<g class=\"peak\">", "<g class=\"legend\">",
        "bytes live (MiB)", "Memory of m: @train_step",
        "peak_bytes 7.50 MiB = persistent 4.00 MiB + arena 3.50 MiB",
        "peak: 7.50 MiB live at op 1"})
    EXPECT_TRUE(contains(svg, part)) << part;
  EXPECT_FALSE(contains(svg, "budget"));
  EXPECT_TRUE(contains(svg, "</svg>"));
}

TEST(MemoryTimeline, OnlyWhatTheDataHas) {
  MemoryTimeline timeline = smallTimeline();
  timeline.boundary.reset();
  timeline.peakPoint = -1;
  timeline.persistentBytes = 0;
  std::string svg = draw(timeline);
  EXPECT_FALSE(contains(svg, "class=\"boundary\""));
  EXPECT_FALSE(contains(svg, "class=\"peak\""));
  EXPECT_FALSE(contains(svg, "class=\"band persistent\""));

  // Nothing to draw is still a document.
  std::string empty = draw(MemoryTimeline());
  EXPECT_TRUE(contains(empty, "bytes live (bytes)"));
  EXPECT_TRUE(contains(empty, "</svg>"));
}

TEST(MemoryTimeline, UnitsFollowTheLargestValue) {
  MemoryTimeline timeline = smallTimeline();
  timeline.persistentBytes = int64_t(3) << 30;
  EXPECT_TRUE(contains(draw(timeline), "bytes live (GiB)"));
  timeline.persistentBytes = 0;
  timeline.points = {{2000, 0, 0}};
  timeline.arenaBytes = 2048;
  EXPECT_TRUE(contains(draw(timeline), "bytes live (KiB)"));
}

TEST(MemoryTimeline, BudgetIsALineNearTheDataANoteFarAbove) {
  MemoryTimeline timeline = smallTimeline();
  timeline.budget = 6 << 20;
  std::string svg = draw(timeline);
  EXPECT_TRUE(contains(svg, "<g class=\"budget\"><line"));
  EXPECT_TRUE(contains(svg, "budget 6.00 MiB</text>"));
  // The peak (7.5 MiB) is over a 6 MiB budget: the activation band reaches
  // above the line.
  EXPECT_LT(topOfPolygon(svg, "band activation"), budgetLineY(svg));

  timeline.budget = int64_t(40) << 30;
  svg = draw(timeline);
  EXPECT_FALSE(contains(svg, "<g class=\"budget\"><line"));
  EXPECT_TRUE(contains(svg, "budget 40.00 GiB, above the top of the axis"));
}

TEST(MemoryTimeline, EscapesNames) {
  MemoryTimeline timeline = smallTimeline();
  timeline.model = "a<b&c";
  std::string svg = draw(timeline);
  EXPECT_TRUE(contains(svg, "Memory of a&lt;b&amp;c"));
  EXPECT_FALSE(contains(svg, "a<b"));
}

TEST(MemoryTimeline, ThinningALongScheduleKeepsItsPeak) {
  // 200000 ops at 1 MiB, one at 10 MiB; a budget at 9 MiB. Drawn whole, the
  // document would hold 200000 steps per band; thinned, it must stay small
  // and the spike must still cross the budget line.
  MemoryTimeline timeline;
  timeline.model = "long";
  timeline.entry = "train_step";
  timeline.points.assign(200000, {1 << 20, 0, 0});
  timeline.points[123457].activation = 10 << 20;
  timeline.peakPoint = 123457;
  timeline.arenaBytes = timeline.liveLowerBound = 10 << 20;
  timeline.budget = 9 << 20;
  std::string svg = draw(timeline);
  EXPECT_LT(svg.size(), 400000u);
  EXPECT_LT(topOfPolygon(svg, "band activation"), budgetLineY(svg));

  // Without the spike, the band stays under the line: the check can fail.
  timeline.points[123457].activation = 1 << 20;
  svg = draw(timeline);
  EXPECT_GT(topOfPolygon(svg, "band activation"), budgetLineY(svg));
}

} // namespace
