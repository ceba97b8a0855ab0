//===- Series.h - Preparing metric series for drawing -----------*- C++ -*-===//
//
// Part of Kiln. Smoothing of noisy training losses, and thinning of long
// series to what a plot of a given width can show.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PLOT_SERIES_H
#define KILN_PLOT_SERIES_H

#include "kiln/Plot/MetricsFile.h"

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace kiln::plot {

/// The exponential moving average of \p points with weight \p weight in
/// [0, 1): each point becomes the average of itself and all earlier points,
/// the one k points back weighted by weight^k. The average is debiased (it
/// is divided by the sum of the weights so far), so that it starts at the
/// first value rather than creeping up from it. weight 0 returns the points.
std::vector<MetricsPoint> smoothExponential(llvm::ArrayRef<MetricsPoint> points,
                                            double weight);

/// At most about 4 x \p columns of \p points, in order, that draw the same
/// picture on a plot \p columns pixels wide: in each column, the first, the
/// lowest, the highest and the last point. Series that are short enough are
/// returned whole.
std::vector<MetricsPoint> thinForDrawing(llvm::ArrayRef<MetricsPoint> points,
                                         unsigned columns);

} // namespace kiln::plot

#endif // KILN_PLOT_SERIES_H
