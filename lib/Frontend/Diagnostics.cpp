//===- Diagnostics.cpp - Located error reporting for the DSL --------------===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//

#include "kiln/Frontend/Diagnostics.h"

#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Unicode.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace kiln;
using llvm::SMLoc;
using llvm::SMRange;
using llvm::StringRef;

/// Lines longer than this many bytes are shown as a window around the caret.
static constexpr size_t kMaxShownLineBytes = 160;
/// Bytes shown before the caret when a line is windowed.
static constexpr size_t kWindowBytesBeforeCaret = 70;

LineColumn kiln::getLineColumn(const llvm::SourceMgr &sourceMgr, SMLoc loc) {
  if (!loc.isValid())
    return {};
  unsigned bufferId = sourceMgr.FindBufferContainingLoc(loc);
  if (bufferId == 0)
    return {};
  auto [line, column] = sourceMgr.getLineAndColumn(loc, bufferId);
  return {line, column};
}

std::string kiln::formatLineColumn(const llvm::SourceMgr &sourceMgr,
                                   SMLoc loc) {
  LineColumn lc = getLineColumn(sourceMgr, loc);
  return std::to_string(lc.line) + ":" + std::to_string(lc.column);
}

/// Levenshtein distance, except that swapping two adjacent characters
/// ("modle" for "model") counts as one edit, as typos usually do.
static unsigned typoDistance(StringRef name, StringRef candidate,
                             unsigned maxDistance) {
  unsigned distance =
      name.edit_distance(candidate, /*AllowReplacements=*/true, maxDistance);
  if (distance != 2 || name.size() != candidate.size())
    return distance;
  size_t i = 0;
  while (name[i] == candidate[i])
    ++i;
  if (i + 1 < name.size() && name[i] == candidate[i + 1] &&
      name[i + 1] == candidate[i] &&
      name.drop_front(i + 2) == candidate.drop_front(i + 2))
    return 1;
  return distance;
}

StringRef kiln::suggestClosest(StringRef name,
                               llvm::ArrayRef<StringRef> candidates) {
  // One edit per three characters: "f23" -> "f32", but no guess for "D".
  unsigned maxDistance = name.size() / 3;
  StringRef best;
  unsigned bestDistance = maxDistance + 1;
  for (StringRef candidate : candidates) {
    unsigned distance = typoDistance(name, candidate, maxDistance + 1);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

std::string kiln::didYouMean(StringRef name,
                             llvm::ArrayRef<StringRef> candidates) {
  StringRef best = suggestClosest(name, candidates);
  if (best.empty() || best == name)
    return "";
  return ("; did you mean '" + best + "'?").str();
}

Diagnostics::Diagnostics(const llvm::SourceMgr &sourceMgr,
                         llvm::raw_ostream &os, unsigned errorLimit)
    : sourceMgr(sourceMgr), os(os), errorLimit(errorLimit) {}

LineColumn Diagnostics::getLineColumn(SMLoc loc) const {
  return kiln::getLineColumn(sourceMgr, loc);
}

std::string Diagnostics::formatLineColumn(SMLoc loc) const {
  return kiln::formatLineColumn(sourceMgr, loc);
}

void Diagnostics::error(SMLoc loc, const llvm::Twine &message, SMRange range) {
  report(Severity::Error, loc, message, range);
}

void Diagnostics::warning(SMLoc loc, const llvm::Twine &message) {
  report(Severity::Warning, loc, message, {});
}

void Diagnostics::note(SMLoc loc, const llvm::Twine &message) {
  report(Severity::Note, loc, message, {});
}

void Diagnostics::report(Severity severity, SMLoc loc,
                         const llvm::Twine &message, SMRange range) {
  if (severity == Severity::Note) {
    if (!lastPrinted)
      return;
  } else {
    lastPrinted = false;
    if (stopped)
      return;
    if (severity == Severity::Error) {
      if (errorLimit != 0 && numErrors >= errorLimit) {
        stopped = true;
        llvm::WithColor::error(os) << "too many errors emitted (limit is "
                                   << errorLimit << "), stopping now\n";
        return;
      }
      ++numErrors;
    }
    lastPrinted = true;
  }

  std::string text = message.str();
  LineColumn lc = getLineColumn(loc);
  records.push_back({severity, lc.line, lc.column, text});

  std::string prefix;
  if (lc.line != 0) {
    unsigned bufferId = sourceMgr.FindBufferContainingLoc(loc);
    prefix = (sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier() + ":" +
              llvm::Twine(lc.line) + ":" + llvm::Twine(lc.column))
                 .str();
  }
  switch (severity) {
  case Severity::Error:
    llvm::WithColor::error(os, prefix);
    break;
  case Severity::Warning:
    llvm::WithColor::warning(os, prefix);
    break;
  case Severity::Note:
    llvm::WithColor::note(os, prefix);
    break;
  }
  {
    llvm::WithColor bold(os, llvm::raw_ostream::SAVEDCOLOR, /*Bold=*/true);
    os << text;
  }
  os << "\n";
  if (lc.line != 0)
    printSourceLine(loc, range);
}

namespace {
/// The sanitized text of (part of) a source line, with the display column of
/// every byte so that the caret lines up.
struct ShownLine {
  std::string text;
  /// displayColumn[i] is the column at which byte i of the window starts;
  /// one extra entry for the end.
  std::vector<unsigned> displayColumn;
};
} // namespace

/// Makes \p bytes printable: valid, printable UTF-8 is kept, a tab becomes a
/// space, and every other byte (control characters, NUL, invalid UTF-8)
/// becomes '?'.
static ShownLine sanitize(StringRef bytes) {
  ShownLine shown;
  shown.displayColumn.resize(bytes.size() + 1);
  unsigned column = 0;
  size_t i = 0;
  while (i < bytes.size()) {
    unsigned char c = bytes[i];
    size_t length = 1;
    if (c >= 0x20 && c < 0x7f) {
      shown.text.push_back(c);
    } else if (c == '\t') {
      shown.text.push_back(' ');
    } else if (c >= 0x80) {
      length = llvm::getNumBytesForUTF8(c);
      const auto *start =
          reinterpret_cast<const llvm::UTF8 *>(bytes.data() + i);
      int width = -1;
      if (i + length <= bytes.size() &&
          llvm::isLegalUTF8Sequence(start, start + length))
        width = llvm::sys::unicode::columnWidthUTF8(bytes.substr(i, length));
      if (width < 0) {
        length = 1;
        shown.text.push_back('?');
      } else {
        shown.text.append(bytes.data() + i, length);
      }
      for (size_t k = 0; k < length; ++k)
        shown.displayColumn[i + k] = column;
      column += width < 0 ? 1 : width;
      i += length;
      continue;
    } else {
      shown.text.push_back('?');
    }
    shown.displayColumn[i] = column;
    ++column;
    ++i;
  }
  shown.displayColumn[bytes.size()] = column;
  return shown;
}

void Diagnostics::printSourceLine(SMLoc loc, SMRange range) {
  unsigned bufferId = sourceMgr.FindBufferContainingLoc(loc);
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  const char *bufferStart = buffer->getBufferStart();
  const char *bufferEnd = buffer->getBufferEnd();
  const char *lineStart = loc.getPointer();
  while (lineStart != bufferStart && lineStart[-1] != '\n')
    --lineStart;
  const char *lineEnd = loc.getPointer();
  while (lineEnd != bufferEnd && *lineEnd != '\n')
    ++lineEnd;
  // Drop the '\r' of a CRLF line ending unless the caret points at it.
  if (lineEnd != lineStart && lineEnd[-1] == '\r' &&
      loc.getPointer() != lineEnd - 1)
    --lineEnd;

  StringRef line(lineStart, lineEnd - lineStart);
  size_t caret = loc.getPointer() - lineStart;

  // Choose the window of the line to show.
  size_t windowBegin = 0, windowEnd = line.size();
  if (line.size() > kMaxShownLineBytes) {
    windowBegin =
        caret > kWindowBytesBeforeCaret ? caret - kWindowBytesBeforeCaret : 0;
    windowEnd = std::min(line.size(), windowBegin + kMaxShownLineBytes);
    // Do not cut a UTF-8 sequence in two.
    while (windowBegin < caret && (line[windowBegin] & 0xC0) == 0x80)
      ++windowBegin;
    while (windowEnd > caret + 1 && windowEnd < line.size() &&
           (line[windowEnd] & 0xC0) == 0x80)
      --windowEnd;
  }
  StringRef window = line.slice(windowBegin, windowEnd);
  ShownLine shown = sanitize(window);
  StringRef ellipsisBefore = windowBegin > 0 ? "..." : "";
  StringRef ellipsisAfter = windowEnd < line.size() ? "..." : "";
  os << ellipsisBefore << shown.text << ellipsisAfter << "\n";

  auto columnOf = [&](const char *ptr) -> unsigned {
    size_t offset = ptr - lineStart;
    offset = std::clamp(offset, windowBegin, windowEnd) - windowBegin;
    return ellipsisBefore.size() + shown.displayColumn[offset];
  };
  unsigned caretColumn = columnOf(loc.getPointer());
  std::string marks(caretColumn + 1, ' ');
  if (range.isValid() && range.Start.getPointer() >= lineStart &&
      range.End.getPointer() <= lineEnd &&
      range.Start.getPointer() < range.End.getPointer()) {
    unsigned from = columnOf(range.Start.getPointer());
    unsigned to = columnOf(range.End.getPointer());
    if (marks.size() < to)
      marks.resize(to, ' ');
    for (unsigned c = from; c < to; ++c)
      marks[c] = '~';
  }
  marks[caretColumn] = '^';
  while (!marks.empty() && marks.back() == ' ')
    marks.pop_back();
  llvm::WithColor(os, llvm::raw_ostream::GREEN, /*Bold=*/true) << marks;
  os << "\n";
}
