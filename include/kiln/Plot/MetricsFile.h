//===- MetricsFile.h - Reading `kiln train --metrics` files -----*- C++ -*-===//
//
// Part of Kiln. A metrics file is JSON lines, one object per line, as
// `kiln train --metrics` writes them:
//
//   {"step":10,"loss":4.21,"lr":0.001,"step_ms":12.5}
//   {"step":100,"eval_loss":3.9,"eval_accuracy":0.41}
//
// The reader keeps the series that `kiln plot` draws (loss, eval_loss,
// eval_accuracy) and ignores every other key.
//
// Rules:
// - Blank lines are skipped. A line that is not a JSON object, a line with a
//   plotted key but no integral "step", and a plotted key whose value is not
//   a number are errors naming FILE:LINE: a metrics file is written by a
//   program, so such a line means the file is not what it claims to be, and
//   a plot that silently left it out would mislead.
// - The one exception is a last line without its newline that does not parse:
//   that is a trainer still running (or killed) in the middle of a write. It
//   is skipped with a warning, so that a live run can be plotted.
// - NaN and infinite values are skipped and counted. JSON has no spelling for
//   them, so `null`, and the bare tokens NaN, Infinity, -Infinity (Python's
//   json) and nan, inf, -inf (printf's %g, as llvm::json writes them) are all
//   read as non-finite.
// - A step that goes back (a run resumed from an earlier checkpoint, appending
//   to the same file) replaces what the series held from that step on.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PLOT_METRICSFILE_H
#define KILN_PLOT_METRICSFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::plot {

/// One value of a series at a training step.
struct MetricsPoint {
  int64_t step;
  double value;
};

/// A message about a metrics file, located as "FILE:LINE" or "FILE".
struct MetricsDiagnostic {
  std::string location;
  std::string message;
};

/// The error that stops reading a metrics file. Printed as
/// "LOCATION: MESSAGE"; the CLI prints it compiler style, with "error:".
class MetricsError : public llvm::ErrorInfo<MetricsError> {
public:
  static char ID;
  explicit MetricsError(MetricsDiagnostic diagnostic)
      : diagnostic(std::move(diagnostic)) {}
  const MetricsDiagnostic &getDiagnostic() const { return diagnostic; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  MetricsDiagnostic diagnostic;
};

/// The series of one training run, read from one metrics file.
struct MetricsRun {
  /// The run's name in the legend; the reader sets it to the file's stem.
  std::string label;
  /// The file it was read from.
  std::string path;
  std::vector<MetricsPoint> trainLoss;
  std::vector<MetricsPoint> evalLoss;
  std::vector<MetricsPoint> evalAccuracy;
  /// Values of the three series above that were NaN or infinite.
  unsigned nonFiniteCount = 0;
  /// Things worth telling the user that did not stop the reading.
  std::vector<MetricsDiagnostic> warnings;

  /// True when no series holds a point.
  bool empty() const {
    return trainLoss.empty() && evalLoss.empty() && evalAccuracy.empty();
  }
};

/// Parses the text of a metrics file; \p path names it in diagnostics and
/// gives the run its label. Fails on an empty file, on a malformed line, and
/// on a file with no plotted key at all.
llvm::Expected<MetricsRun> parseMetrics(llvm::StringRef text,
                                        llvm::StringRef path);

/// Reads and parses the metrics file at \p path.
llvm::Expected<MetricsRun> readMetricsFile(llvm::StringRef path);

} // namespace kiln::plot

#endif // KILN_PLOT_METRICSFILE_H
