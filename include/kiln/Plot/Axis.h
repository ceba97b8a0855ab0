//===- Axis.h - Plot axes: scales, nice ticks and their labels --*- C++ -*-===//
//
// Part of Kiln. An Axis maps data values to a fraction of the plot's extent
// and carries its ticks. Ticks are "nice": 1, 2 or 5 times a power of ten on
// a linear axis, powers of ten (or 1-2-5 within a decade) on a log axis.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PLOT_AXIS_H
#define KILN_PLOT_AXIS_H

#include <string>
#include <vector>

namespace kiln::plot {

/// The smallest step of the form {1, 2, 5} x 10^k that cuts \p range into at
/// most \p maxIntervals intervals. \p range must be positive and finite.
double niceTickStep(double range, unsigned maxIntervals);

/// One tick: where it is, in data units, and what it reads.
struct Tick {
  double value;
  std::string label;
};

/// One axis of a panel, from data values to a fraction of its length.
class Axis {
public:
  /// A linear axis over [lo, hi] with at most about \p maxTicks ticks. With
  /// \p widenToTicks it extends outward to the nearest ticks (a value axis
  /// that starts and ends on a label); without, it spans the data exactly (a
  /// step axis whose curves should fill the width). lo == hi is widened
  /// around the value.
  static Axis linear(double lo, double hi, unsigned maxTicks,
                     bool widenToTicks = true);

  /// A base-10 log axis over [lo, hi], both > 0, with at most about
  /// \p maxTicks ticks: powers of ten when the data spans a few decades, 1-2-5
  /// multiples when it spans about one, and plain linear steps (2, 3, 4, ...)
  /// when it spans less than that, so that a log axis always has ticks.
  static Axis logarithmic(double lo, double hi, unsigned maxTicks);

  /// Where \p value falls: 0 at the low end, 1 at the high end.
  double fraction(double value) const;

  double low() const { return lo; }
  double high() const { return hi; }
  bool isLogarithmic() const { return isLog; }
  const std::vector<Tick> &ticks() const { return tickList; }

private:
  Axis(double lo, double hi, bool isLog) : lo(lo), hi(hi), isLog(isLog) {}

  double lo, hi;
  bool isLog;
  std::vector<Tick> tickList;
};

/// The label of a tick at \p value on an axis whose ticks are \p step apart:
/// as many decimals as the step needs, and k or M for steps of 10000 or more
/// (50000 -> "50k"), so that labels stay short and never read 0.30000000004.
std::string formatTickLabel(double value, double step);

} // namespace kiln::plot

#endif // KILN_PLOT_AXIS_H
