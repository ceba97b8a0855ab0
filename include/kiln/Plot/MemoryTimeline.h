//===- MemoryTimeline.h - Live bytes over a step, as an SVG -----*- C++ -*-===//
//
// Part of Kiln. `kiln compile --memory-timeline FILE.svg` draws the bytes
// live at each program point of the training step: the persistent buffers
// as a grey base, and on it the transients stacked by kind (activation,
// gradient, workspace; BufferLiveness's TransientKind), with the memory
// budget as a horizontal line, the forward/backward boundary and the peak
// marked, a legend, and a title with the figures. The data comes from the
// compiler (lib/Pipelines/MemoryTimelineData.cpp); this file only draws, so
// that KilnPlot stays free of MLIR.
//
// Elements carry classes (band activation, band gradient, band workspace,
// band persistent, budget, boundary, peak, legend, title, tick, axis-label)
// so that tests and style sheets can find them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PLOT_MEMORYTIMELINE_H
#define KILN_PLOT_MEMORYTIMELINE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace kiln::plot {

/// Transient bytes live at one program point, by kind.
struct TimelinePoint {
  int64_t activation = 0, gradient = 0, workspace = 0;
  int64_t total() const { return activation + gradient + workspace; }
};

/// What the timeline shows.
struct MemoryTimeline {
  /// The model's name and the entry drawn ("train_step").
  std::string model, entry;
  /// One per program point of the entry's schedule.
  std::vector<TimelinePoint> points;
  /// Parameters, gradients, optimizer state, inputs, outputs, constants:
  /// resident through the whole step.
  int64_t persistentBytes = 0;
  /// The last program point of the forward (-1: before every op); none for
  /// an entry without a backward.
  std::optional<int64_t> boundary;
  /// A point where the transients' live bytes peak (-1: none live).
  int64_t peakPoint = -1;
  /// The module's arena and the entry's live lower bound.
  int64_t arenaBytes = 0, liveLowerBound = 0;
  /// The memory budget (0: none).
  int64_t budget = 0;

  /// peak_bytes: persistent buffers plus the arena.
  int64_t peakBytes() const { return persistentBytes + arenaBytes; }
};

/// Size of the image, in pixels.
struct TimelineOptions {
  unsigned width = 960, height = 540;
};

/// Writes the SVG document for `timeline` to `os`.
void writeMemoryTimelineSvg(const MemoryTimeline &timeline,
                            const TimelineOptions &options,
                            llvm::raw_ostream &os);

} // namespace kiln::plot

#endif // KILN_PLOT_MEMORYTIMELINE_H
