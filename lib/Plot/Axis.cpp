//===- Axis.cpp - Plot axes: scales, nice ticks and their labels ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/Axis.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace kiln::plot;

/// Relative slack for comparisons of values computed as multiples of a step.
static constexpr double epsilon = 1e-9;

double kiln::plot::niceTickStep(double range, unsigned maxIntervals) {
  assert(range > 0 && std::isfinite(range) && "range must be positive");
  double rawStep = range / std::max(1u, maxIntervals);
  double magnitude = std::pow(10.0, std::floor(std::log10(rawStep)));
  for (double multiple : {1.0, 2.0, 5.0})
    if (multiple * magnitude >= rawStep * (1 - epsilon))
      return multiple * magnitude;
  return 10 * magnitude;
}

std::string kiln::plot::formatTickLabel(double value, double step) {
  if (std::fabs(value) < step * 1e-6)
    return "0";
  std::string label;
  llvm::raw_string_ostream os(label);
  // Suffixes only for labels of five digits or more: 1500 reads better than
  // 1.5k, 150k better than 150000.
  if (step >= 1e6 - epsilon) {
    os << llvm::format("%.0fM", value / 1e6);
    return label;
  }
  if (step >= 1e4 - epsilon) {
    os << llvm::format("%.0fk", value / 1e3);
    return label;
  }
  int decimals = std::max(0, (int)std::ceil(-std::log10(step) - epsilon));
  if (decimals <= 4 || std::fabs(value) >= 0.01) {
    os << llvm::format("%.*f", decimals, value);
    return label;
  }
  // Tiny values: 1e-05 reads better than 0.00001.
  int mantissaDigits =
      std::max(0, (int)(std::floor(std::log10(std::fabs(value)) + epsilon) -
                        std::floor(std::log10(step) + epsilon)));
  os << llvm::format("%.*e", mantissaDigits, value);
  return label;
}

/// The multiples of \p step in [lo, hi], labelled for that step.
static std::vector<Tick> linearTicks(double lo, double hi, double step) {
  std::vector<Tick> ticks;
  double first = std::ceil(lo / step - epsilon);
  double last = std::floor(hi / step + epsilon);
  for (double i = first; i <= last; ++i) {
    double value = i * step;
    if (std::fabs(value) < step * epsilon)
      value = 0;
    ticks.push_back({value, formatTickLabel(value, step)});
  }
  return ticks;
}

Axis Axis::linear(double lo, double hi, unsigned maxTicks, bool widenToTicks) {
  assert(lo <= hi && std::isfinite(lo) && std::isfinite(hi));
  if (hi - lo <= std::fabs(hi) * epsilon) {
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  double step = niceTickStep(hi - lo, std::max(1u, maxTicks - 1));
  Axis axis(lo, hi, /*isLog=*/false);
  if (widenToTicks) {
    axis.lo = std::floor(lo / step + epsilon) * step;
    axis.hi = std::ceil(hi / step - epsilon) * step;
  }
  axis.tickList = linearTicks(axis.lo, axis.hi, step);
  return axis;
}

/// The values m x 10^k in [lo, hi] for m in \p multiples and every
/// \p decadeStride-th k, each labelled with its own decade's precision.
static std::vector<Tick> decadeTicks(double lo, double hi,
                                     std::initializer_list<double> multiples,
                                     int decadeStride) {
  std::vector<Tick> ticks;
  int firstDecade = (int)std::floor(std::log10(lo)) - 1;
  int lastDecade = (int)std::ceil(std::log10(hi));
  for (int k = firstDecade; k <= lastDecade; ++k) {
    if (k % decadeStride != 0)
      continue;
    double power = std::pow(10.0, k);
    for (double multiple : multiples) {
      double value = multiple * power;
      if (value >= lo * (1 - epsilon) && value <= hi * (1 + epsilon))
        ticks.push_back({value, formatTickLabel(value, power)});
    }
  }
  return ticks;
}

Axis Axis::logarithmic(double lo, double hi, unsigned maxTicks) {
  assert(lo > 0 && lo <= hi && std::isfinite(hi));
  if (hi / lo < 1 + epsilon) {
    lo /= 1.5;
    hi *= 1.5;
  }
  // Log axes are not widened to whole decades: 1.7..5.5 would become 1..10
  // and squeeze the curves into half the panel. A 3% margin keeps the
  // extreme points off the frame.
  double margin = std::pow(hi / lo, 0.03);
  Axis axis(lo / margin, hi * margin, /*isLog=*/true);

  std::vector<Tick> oneTwoFive = decadeTicks(axis.lo, axis.hi, {1, 2, 5}, 1);
  if (oneTwoFive.size() >= 3 && oneTwoFive.size() <= maxTicks) {
    axis.tickList = std::move(oneTwoFive);
    return axis;
  }
  std::vector<Tick> powers = decadeTicks(axis.lo, axis.hi, {1}, 1);
  if (powers.size() >= 2) {
    int stride = (int)((powers.size() + maxTicks - 1) / std::max(1u, maxTicks));
    axis.tickList = decadeTicks(axis.lo, axis.hi, {1}, std::max(1, stride));
    return axis;
  }
  // Less than about a decade: evenly spaced values read best (2, 3, 4, 5).
  // The axis is not widened to them, so ask for more if too few fall inside.
  for (unsigned intervals = std::max(1u, maxTicks - 1);
       axis.tickList.size() < 2; ++intervals)
    axis.tickList = linearTicks(axis.lo, axis.hi,
                                niceTickStep(axis.hi - axis.lo, intervals));
  return axis;
}

double Axis::fraction(double value) const {
  if (isLog)
    return (std::log10(value) - std::log10(lo)) /
           (std::log10(hi) - std::log10(lo));
  return (value - lo) / (hi - lo);
}
