//===- Diagnostics.h - Located error reporting for the DSL ------*- C++ -*-===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// Reports front-end diagnostics in the form users of compilers expect:
//
//   model.kiln:12:9: error: expected ')' to close '(' at 12:4
//     x = f(a, b
//           ^
//
// The output format is that of llvm::SourceMgr::PrintMessage. The source line
// is printed by this class rather than by SourceMgr so that lines holding
// control bytes or invalid UTF-8 are shown sanitized, and very long lines are
// shown as a window around the caret: a diagnostic never dumps binary data or a
// 10 MB line onto the terminal.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_DIAGNOSTICS_H
#define KILN_FRONTEND_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"

#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace kiln {

/// A 1-based line and byte column, as mlir::FileLineColLoc expects them.
struct LineColumn {
  unsigned line = 0;
  unsigned column = 0;
};

/// Returns the 1-based line and column of \p loc, or {0, 0} if \p loc does not
/// point into a buffer of \p sourceMgr.
LineColumn getLineColumn(const llvm::SourceMgr &sourceMgr, llvm::SMLoc loc);

/// Returns "line:col" for \p loc, for use inside messages ("opened at 3:14").
std::string formatLineColumn(const llvm::SourceMgr &sourceMgr, llvm::SMLoc loc);

/// Returns the candidate closest to \p name by edit distance, or an empty
/// StringRef when none is close enough to be a plausible typo. Close enough
/// means at most name.size() / 3 edits, where swapping two adjacent
/// characters counts as one edit; an exact match is returned.
llvm::StringRef suggestClosest(llvm::StringRef name,
                               llvm::ArrayRef<llvm::StringRef> candidates);

/// Returns "; did you mean 'X'?" for the closest candidate, or "" when there is
/// none. Meant to be appended to an error message.
std::string didYouMean(llvm::StringRef name,
                       llvm::ArrayRef<llvm::StringRef> candidates);

/// Collects, prints and counts diagnostics for source held by a SourceMgr.
class Diagnostics {
public:
  enum class Severity { Error, Warning, Note };

  /// One reported diagnostic, kept for tests and for tools that want to
  /// summarise (for example `kiln check`).
  struct Record {
    Severity severity;
    unsigned line;
    unsigned column;
    std::string message;
  };

  /// Diagnostics are printed to \p os. After \p errorLimit errors, further
  /// diagnostics are dropped and shouldStop() returns true (0: no limit).
  explicit Diagnostics(const llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os,
                       unsigned errorLimit = 10);

  /// Reports an error at \p loc. If \p range is valid and on the same line,
  /// it is underlined with '~'.
  void error(llvm::SMLoc loc, const llvm::Twine &message,
             llvm::SMRange range = {});
  /// Reports a warning at \p loc.
  void warning(llvm::SMLoc loc, const llvm::Twine &message);
  /// Attaches a note to the previous error or warning (for example "'(' opened
  /// here"). Dropped if that diagnostic was dropped.
  void note(llvm::SMLoc loc, const llvm::Twine &message);

  unsigned getNumErrors() const { return numErrors; }
  bool hasErrors() const { return numErrors != 0; }
  /// True once the error limit is reached: callers should stop parsing.
  bool shouldStop() const { return stopped; }

  const std::vector<Record> &getRecords() const { return records; }
  const llvm::SourceMgr &getSourceMgr() const { return sourceMgr; }

  /// Convenience wrappers of the free functions above.
  LineColumn getLineColumn(llvm::SMLoc loc) const;
  std::string formatLineColumn(llvm::SMLoc loc) const;

private:
  void report(Severity severity, llvm::SMLoc loc, const llvm::Twine &message,
              llvm::SMRange range);
  void printSourceLine(llvm::SMLoc loc, llvm::SMRange range);

  const llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
  unsigned errorLimit;
  unsigned numErrors = 0;
  bool stopped = false;
  /// Whether the last error or warning was printed (notes follow it).
  bool lastPrinted = true;
  std::vector<Record> records;
};

} // namespace kiln

#endif // KILN_FRONTEND_DIAGNOSTICS_H
