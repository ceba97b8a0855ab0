//===- Series.cpp - Preparing metric series for drawing -------------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "kiln/Plot/Series.h"

#include <algorithm>
#include <cassert>

using namespace llvm;
using namespace kiln::plot;

std::vector<MetricsPoint>
kiln::plot::smoothExponential(ArrayRef<MetricsPoint> points, double weight) {
  assert(weight >= 0 && weight < 1 && "smoothing weight must be in [0, 1)");
  std::vector<MetricsPoint> smoothed;
  smoothed.reserve(points.size());
  double weightedSum = 0, weightTotal = 0;
  for (const MetricsPoint &point : points) {
    weightedSum = weight * weightedSum + (1 - weight) * point.value;
    weightTotal = weight * weightTotal + (1 - weight);
    smoothed.push_back({point.step, weightedSum / weightTotal});
  }
  return smoothed;
}

std::vector<MetricsPoint>
kiln::plot::thinForDrawing(ArrayRef<MetricsPoint> points, unsigned columns) {
  if (columns == 0 || points.size() <= 4 * (size_t)columns)
    return points.vec();
  int64_t firstStep = points.front().step;
  double span = std::max<int64_t>(1, points.back().step - firstStep);
  std::vector<MetricsPoint> thinned;
  size_t begin = 0;
  while (begin < points.size()) {
    auto columnOf = [&](const MetricsPoint &point) {
      return (int64_t)((point.step - firstStep) / span * columns);
    };
    int64_t column = columnOf(points[begin]);
    size_t end = begin;
    size_t lowest = begin, highest = begin;
    while (end < points.size() && columnOf(points[end]) == column) {
      if (points[end].value < points[lowest].value)
        lowest = end;
      if (points[end].value > points[highest].value)
        highest = end;
      ++end;
    }
    // The four indices in order, each once.
    size_t kept[] = {begin, std::min(lowest, highest),
                     std::max(lowest, highest), end - 1};
    for (size_t i = 0; i < 4; ++i)
      if (i == 0 || kept[i] != kept[i - 1])
        thinned.push_back(points[kept[i]]);
    begin = end;
  }
  return thinned;
}
