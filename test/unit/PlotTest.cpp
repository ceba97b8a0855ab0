//===- PlotTest.cpp - kiln plot: metrics reader, axes, series, SVG --------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/Axis.h"
#include "kiln/Plot/MetricsFile.h"
#include "kiln/Plot/Series.h"
#include "kiln/Plot/SvgPlot.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace kiln::plot;

namespace {

std::vector<std::string> labelsOf(const Axis &axis) {
  std::vector<std::string> labels;
  for (const Tick &tick : axis.ticks())
    labels.push_back(tick.label);
  return labels;
}

/// Parses \p text as "m.jsonl", expecting success.
MetricsRun parseOk(llvm::StringRef text) {
  llvm::Expected<MetricsRun> run = parseMetrics(text, "dir/m.jsonl");
  EXPECT_TRUE(!!run) << (run ? "" : llvm::toString(run.takeError()));
  return run ? std::move(*run) : MetricsRun();
}

/// Parses \p text, expecting failure; returns "LOCATION: MESSAGE".
std::string parseError(llvm::StringRef text) {
  llvm::Expected<MetricsRun> run = parseMetrics(text, "m.jsonl");
  if (run)
    return "(parsed without error)";
  return llvm::toString(run.takeError());
}

//===----------------------------------------------------------------------===//
// Ticks and axes
//===----------------------------------------------------------------------===//

TEST(PlotAxis, NiceStepsAreOneTwoFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(niceTickStep(10, 5), 2);
  EXPECT_DOUBLE_EQ(niceTickStep(2000, 7), 500);
  EXPECT_DOUBLE_EQ(niceTickStep(3.8, 5), 1);
  EXPECT_DOUBLE_EQ(niceTickStep(1, 10), 0.1);
  EXPECT_DOUBLE_EQ(niceTickStep(0.37, 4), 0.1);
  EXPECT_DOUBLE_EQ(niceTickStep(0.011, 5), 0.005);
}

TEST(PlotAxis, LinearWidensToTicks) {
  Axis axis = Axis::linear(1.62, 5.8, 6);
  EXPECT_DOUBLE_EQ(axis.low(), 1);
  EXPECT_DOUBLE_EQ(axis.high(), 6);
  EXPECT_EQ(labelsOf(axis),
            (std::vector<std::string>{"1", "2", "3", "4", "5", "6"}));
  EXPECT_DOUBLE_EQ(axis.fraction(3.5), 0.5);
}

TEST(PlotAxis, LinearWithoutWideningSpansTheDataExactly) {
  Axis axis = Axis::linear(1, 2100, 8, /*widenToTicks=*/false);
  EXPECT_DOUBLE_EQ(axis.low(), 1);
  EXPECT_DOUBLE_EQ(axis.high(), 2100);
  EXPECT_EQ(labelsOf(axis),
            (std::vector<std::string>{"500", "1000", "1500", "2000"}));
}

TEST(PlotAxis, DecimalLabelsHaveNoRoundingNoise) {
  EXPECT_EQ(labelsOf(Axis::linear(0, 0.3, 4)),
            (std::vector<std::string>{"0", "0.1", "0.2", "0.3"}));
  EXPECT_EQ(labelsOf(Axis::linear(0.92, 0.97, 6)),
            (std::vector<std::string>{"0.92", "0.93", "0.94", "0.95", "0.96",
                                      "0.97"}));
}

TEST(PlotAxis, TickLabelFormats) {
  EXPECT_EQ(formatTickLabel(50000, 10000), "50k");
  EXPECT_EQ(formatTickLabel(15000, 5000), "15000");
  EXPECT_EQ(formatTickLabel(3e6, 1e6), "3M");
  EXPECT_EQ(formatTickLabel(1500, 500), "1500");
  EXPECT_EQ(formatTickLabel(0.25, 0.05), "0.25");
  EXPECT_EQ(formatTickLabel(2.0001, 0.0001), "2.0001");
  EXPECT_EQ(formatTickLabel(1e-5, 1e-5), "1e-05");
  EXPECT_EQ(formatTickLabel(-2, 1), "-2");
  EXPECT_EQ(formatTickLabel(1e-17, 0.1), "0");
}

TEST(PlotAxis, ConstantDataStillGetsARangeAndTicks) {
  Axis axis = Axis::linear(2.5, 2.5, 5);
  EXPECT_LT(axis.low(), 2.5);
  EXPECT_GT(axis.high(), 2.5);
  EXPECT_GE(axis.ticks().size(), 2u);
  Axis zero = Axis::linear(0, 0, 5);
  EXPECT_LT(zero.low(), 0);
  EXPECT_GT(zero.high(), 0);
  Axis log = Axis::logarithmic(3, 3, 5);
  EXPECT_LT(log.low(), 3);
  EXPECT_GT(log.high(), 3);
  EXPECT_GE(log.ticks().size(), 2u);
}

TEST(PlotAxis, LogOverAFewDecadesUsesOneTwoFive) {
  Axis axis = Axis::logarithmic(0.04, 6, 10);
  EXPECT_EQ(labelsOf(axis), (std::vector<std::string>{"0.05", "0.1", "0.2",
                                                      "0.5", "1", "2", "5"}));
  EXPECT_NEAR(axis.fraction(std::sqrt(axis.low() * axis.high())), 0.5, 1e-12);
}

TEST(PlotAxis, LogOverManyDecadesUsesPowersOfTen) {
  EXPECT_EQ(labelsOf(Axis::logarithmic(0.01, 5, 8)),
            (std::vector<std::string>{"0.01", "0.1", "1"}));
  // Nine decades and room for five ticks: every other power.
  EXPECT_EQ(labelsOf(Axis::logarithmic(1e-6, 100, 5)),
            (std::vector<std::string>{"1e-06", "0.0001", "0.01", "1", "100"}));
}

TEST(PlotAxis, LogWithinADecadeFallsBackToEvenSteps) {
  // A loss falling from 5.5 to 1.7: 1-2-5 would leave only "2" and "5".
  Axis axis = Axis::logarithmic(1.7, 5.5, 6);
  EXPECT_EQ(labelsOf(axis), (std::vector<std::string>{"2", "3", "4", "5"}));
  EXPECT_LT(axis.low(), 1.7);
  EXPECT_GT(axis.high(), 5.5);
  EXPECT_LT(axis.high(), 6); // not widened to a whole decade
}

TEST(PlotAxis, TicksLieInsideTheAxisForManyRanges) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-6, 6), ratio(0, 4);
  for (int trial = 0; trial < 2000; ++trial) {
    double lo = std::pow(10.0, exponent(rng));
    double hi = lo * std::pow(10.0, ratio(rng));
    unsigned maxTicks = 3 + trial % 8;
    for (bool isLog : {false, true}) {
      Axis axis = isLog ? Axis::logarithmic(lo, hi, maxTicks)
                        : Axis::linear(lo, hi, maxTicks);
      SCOPED_TRACE(testing::Message() << (isLog ? "log " : "linear ") << lo
                                      << ".." << hi << " max " << maxTicks);
      EXPECT_LE(axis.low(), lo);
      EXPECT_GE(axis.high(), hi);
      EXPECT_GE(axis.ticks().size(), 2u);
      EXPECT_LE(axis.ticks().size(), maxTicks + 1);
      for (size_t i = 0; i < axis.ticks().size(); ++i) {
        const Tick &tick = axis.ticks()[i];
        EXPECT_GE(axis.fraction(tick.value), -1e-9);
        EXPECT_LE(axis.fraction(tick.value), 1 + 1e-9);
        if (i > 0) {
          EXPECT_GT(tick.value, axis.ticks()[i - 1].value);
          EXPECT_NE(tick.label, axis.ticks()[i - 1].label);
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Reading metrics files
//===----------------------------------------------------------------------===//

TEST(PlotMetrics, ReadsTrainAndEvalSeriesAndIgnoresOtherKeys) {
  MetricsRun run = parseOk(
      "{\"step\":1,\"loss\":5.5,\"lr\":0.001,\"step_ms\":12.5,\"x\":[1,{}]}\n"
      "{\"step\":2,\"loss\":5.25}\n"
      "\n"
      "{\"step\":2,\"eval_loss\":5.0,\"eval_accuracy\":0.25}\n"
      "{\"model\":\"gpt.kiln\"}\n");
  EXPECT_EQ(run.label, "m");
  EXPECT_EQ(run.path, "dir/m.jsonl");
  ASSERT_EQ(run.trainLoss.size(), 2u);
  EXPECT_EQ(run.trainLoss[1].step, 2);
  EXPECT_EQ(run.trainLoss[1].value, 5.25);
  ASSERT_EQ(run.evalLoss.size(), 1u);
  EXPECT_EQ(run.evalLoss[0].value, 5.0);
  ASSERT_EQ(run.evalAccuracy.size(), 1u);
  EXPECT_EQ(run.evalAccuracy[0].value, 0.25);
  EXPECT_EQ(run.nonFiniteCount, 0u);
  EXPECT_TRUE(run.warnings.empty());
}

TEST(PlotMetrics, NonFiniteValuesInEverySpellingAreSkippedAndCounted) {
  MetricsRun run = parseOk("{\"step\":1,\"loss\":NaN}\n"
                           "{\"step\":2,\"loss\":Infinity}\n"
                           "{\"step\":3,\"loss\":-Infinity}\n"
                           "{\"step\":4,\"loss\":nan}\n"
                           "{\"step\":5,\"loss\":-inf}\n"
                           "{\"step\":6,\"loss\":null}\n"
                           "{\"step\":7,\"loss\":2.0,\"tag\":\"NaN inf\"}\n"
                           "{\"step\":7,\"eval_loss\":inf}\n");
  EXPECT_EQ(run.nonFiniteCount, 7u);
  ASSERT_EQ(run.trainLoss.size(), 1u);
  EXPECT_EQ(run.trainLoss[0].step, 7);
  EXPECT_TRUE(run.evalLoss.empty());
}

TEST(PlotMetrics, AResumedRunReplacesTheStepsItRepeats) {
  MetricsRun run =
      parseOk("{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n"
              "{\"step\":3,\"loss\":3}\n{\"step\":2,\"loss\":4.5}\n"
              "{\"step\":3,\"loss\":3.5}\n");
  ASSERT_EQ(run.trainLoss.size(), 3u);
  EXPECT_EQ(run.trainLoss[1].value, 4.5);
  EXPECT_EQ(run.trainLoss[2].value, 3.5);
}

TEST(PlotMetrics, MalformedLinesAreErrorsNamingFileAndLine) {
  EXPECT_EQ(parseError("{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":}\n"
                       "{\"step\":3,\"loss\":4}\n")
                .rfind("m.jsonl:2: not valid JSON", 0),
            0u);
  EXPECT_EQ(parseError("{\"step\":1,\"loss\":5}\n[1,2]\n"),
            "m.jsonl:2: expected a JSON object such as "
            "{\"step\":1,\"loss\":2.5}");
  EXPECT_EQ(parseError("{\"loss\":5}\n"),
            "m.jsonl:1: \"step\" is missing or not an integer");
  EXPECT_EQ(parseError("{\"step\":1.5,\"loss\":5}\n"),
            "m.jsonl:1: \"step\" is missing or not an integer");
  EXPECT_EQ(parseError("\n\n{\"step\":1,\"eval_loss\":\"low\"}\n"),
            "m.jsonl:3: \"eval_loss\" is not a number");
  // A complete last line that does not parse is no partial write.
  EXPECT_EQ(parseError("{\"step\":1,\"loss\":5}\n{\"step\":2,\"lo\n")
                .rfind("m.jsonl:2: not valid JSON", 0),
            0u);
}

TEST(PlotMetrics, AnUnfinishedLastLineIsAWarning) {
  MetricsRun run =
      parseOk("{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n{\"step\":3,");
  EXPECT_EQ(run.trainLoss.size(), 2u);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_EQ(run.warnings[0].location, "dir/m.jsonl:3");
  EXPECT_NE(run.warnings[0].message.find("incomplete last line"),
            std::string::npos);
}

TEST(PlotMetrics, FilesWithNothingToPlotAreErrors) {
  EXPECT_EQ(parseError(""), "m.jsonl: the metrics file is empty");
  EXPECT_EQ(parseError(" \n\n"), "m.jsonl: the metrics file is empty");
  EXPECT_EQ(parseError("{\"step\":1,\"lr\":0.1}\n"),
            "m.jsonl: no line holds \"loss\", \"eval_loss\" or "
            "\"eval_accuracy\": nothing to plot");
}

TEST(PlotMetrics, AMissingFileIsAnError) {
  llvm::Expected<MetricsRun> run = readMetricsFile("/nonexistent/m.jsonl");
  ASSERT_FALSE(!!run);
  EXPECT_EQ(llvm::toString(run.takeError())
                .rfind("/nonexistent/m.jsonl: cannot open", 0),
            0u);
}

//===----------------------------------------------------------------------===//
// Series
//===----------------------------------------------------------------------===//

TEST(PlotSeries, SmoothingIsADebiasedExponentialAverage) {
  std::vector<MetricsPoint> points = {{1, 1}, {2, 0}, {3, 0}};
  std::vector<MetricsPoint> smoothed = smoothExponential(points, 0.5);
  ASSERT_EQ(smoothed.size(), 3u);
  EXPECT_DOUBLE_EQ(smoothed[0].value, 1);       // starts at the first value
  EXPECT_DOUBLE_EQ(smoothed[1].value, 1.0 / 3); // 0.5*1 / (0.5+1)
  EXPECT_DOUBLE_EQ(smoothed[2].value, 1.0 / 7); // 0.25*1 / (0.25+0.5+1)
  EXPECT_EQ(smoothed[2].step, 3);
  std::vector<MetricsPoint> unsmoothed = smoothExponential(points, 0);
  EXPECT_DOUBLE_EQ(unsmoothed[1].value, 0);
}

TEST(PlotSeries, ThinningKeepsTheEnvelopeOfEachColumn) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise;
  std::vector<MetricsPoint> points;
  for (int64_t step = 0; step < 20000; ++step)
    points.push_back({step, noise(rng)});
  std::vector<MetricsPoint> thinned = thinForDrawing(points, 100);
  EXPECT_LE(thinned.size(), 404u);
  EXPECT_EQ(thinned.front().step, 0);
  EXPECT_EQ(thinned.back().step, 19999);
  auto byValue = [](const MetricsPoint &a, const MetricsPoint &b) {
    return a.value < b.value;
  };
  EXPECT_EQ(std::min_element(thinned.begin(), thinned.end(), byValue)->value,
            std::min_element(points.begin(), points.end(), byValue)->value);
  EXPECT_EQ(std::max_element(thinned.begin(), thinned.end(), byValue)->value,
            std::max_element(points.begin(), points.end(), byValue)->value);
  for (size_t i = 1; i < thinned.size(); ++i)
    EXPECT_LT(thinned[i - 1].step, thinned[i].step);
  // Short series are drawn whole.
  EXPECT_EQ(thinForDrawing(llvm::ArrayRef(points).take_front(50), 100).size(),
            50u);
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

size_t countOf(llvm::StringRef text, llvm::StringRef needle) {
  return text.count(needle);
}

TEST(PlotSvg, DrawsEachRunAndEscapesLabels) {
  MetricsRun a = parseOk("{\"step\":0,\"loss\":5}\n{\"step\":10,\"loss\":NaN}\n"
                         "{\"step\":20,\"loss\":3}\n"
                         "{\"step\":20,\"eval_loss\":3.5}\n");
  a.label = "<a&b>";
  MetricsRun b = parseOk("{\"step\":0,\"loss\":6}\n{\"step\":30,\"loss\":2}\n");
  b.label = "run b";
  std::string svg;
  llvm::raw_string_ostream os(svg);
  PlotOptions options;
  options.title = "A & B";
  writeSvgPlot({a, b}, options, os);

  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(countOf(svg, "class=\"train-loss\""), 2u);
  EXPECT_EQ(countOf(svg, "class=\"train-loss-raw\""), 2u);
  EXPECT_EQ(countOf(svg, "class=\"eval-loss\""), 1u);
  EXPECT_EQ(countOf(svg, "class=\"eval-accuracy\""), 0u);
  EXPECT_NE(svg.find(">&lt;a&amp;b&gt;</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<a&b>"), std::string::npos);
  EXPECT_NE(svg.find(">A &amp; B</text>"), std::string::npos);
  EXPECT_NE(svg.find(">Skipped 1 NaN/Inf value (&lt;a&amp;b&gt;: 1).</text>"),
            std::string::npos);
  EXPECT_NE(svg.find(runColor(0)), std::string::npos);
  EXPECT_NE(svg.find(runColor(1)), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(svg.find("href"), std::string::npos);
}

TEST(PlotSvg, LogScaleSkipsValuesItCannotShow) {
  MetricsRun run = parseOk("{\"step\":0,\"loss\":2}\n{\"step\":1,\"loss\":0}\n"
                           "{\"step\":2,\"loss\":1}\n");
  std::string svg;
  llvm::raw_string_ostream os(svg);
  PlotOptions options;
  options.logY = true;
  writeSvgPlot({run}, options, os);
  EXPECT_NE(svg.find("Skipped 1 value &lt;= 0, which a log axis cannot show."),
            std::string::npos);
  EXPECT_NE(svg.find("loss (log scale)"), std::string::npos);
}

TEST(PlotSvg, PaletteColoursAreDistinct) {
  for (size_t i = 0; i < 8; ++i)
    for (size_t j = 0; j < i; ++j)
      EXPECT_NE(runColor(i), runColor(j));
}

} // namespace
