//===- Files.h - The one place Kiln reads and writes users' files ---------===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// Reading: readWholeFile reads regular files only. A directory, a device
// (/dev/zero), a FIFO or a socket is refused with a message, before any
// byte is read, so that no stream can be read until memory runs out; the
// buffer is sized from the file's size, never from what its header says.
//
// Writing: writeFileAtomically(PATH, bytes) writes the bytes to a temporary
// PATH.tmp.XXXXXX in the same directory, holding an exclusive flock(2) on it
// while it is written, fsyncs it, renames it over PATH (atomic on POSIX file
// systems) and fsyncs the directory. At every moment PATH holds its old
// contents or the new ones, whole: an error, a full disk, a signal, kill -9
// or a power cut never damages an existing file. Only a regular file (or
// nothing) at PATH is replaced: a symbolic link, a device or a directory
// there is an error, and stays as it is. On failure the temporary is
// removed; a temporary whose writer died (kill -9) is not locked any more,
// and the next write to the same PATH removes it (removeStaleTemporaries).
//
// Directories (compiled artifacts) follow the same rules: a locked temporary
// directory DIR.tmp.XXXXXX, filled, fsynced and put in place whole
// (renameat2(RENAME_EXCHANGE) over an existing one, which is then removed).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FILES_H
#define KILN_FILES_H

#include "kiln/Status.h"

#include <cstddef>
#include <string>

namespace kiln {

/// Reads the whole regular file at `path` into `out`. Errors name the path.
Status readWholeFile(const std::string &path, std::string &out);

/// Fails, naming `path` and what it is, unless `path` is missing or a
/// regular file: what writeFileAtomically would refuse to replace.
Status checkReplaceable(const std::string &path);

/// Replaces the file at `path` with `size` bytes at `data`, atomically and
/// durably (see above). Errors name the path, the failing system call and
/// its error string.
Status writeFileAtomically(const std::string &path, const void *data,
                           size_t size);

/// The prefix of the temporaries writeFileAtomically and
/// TemporaryDirectory make for `path`: "PATH.tmp.".
std::string temporaryPrefix(const std::string &path);

/// Removes the temporaries of `path` (files and directories named
/// PATH.tmp.*) whose writer is gone: those nobody holds a lock on. Returns
/// how many it removed.
size_t removeStaleTemporaries(const std::string &path);

/// Removes every stale temporary (NAME.tmp.*, unlocked) in `directory`.
size_t removeStaleTemporariesIn(const std::string &directory);

/// A locked temporary directory beside `target`, filled by the caller and
/// then put in place whole by commit(); removed if never committed.
class TemporaryDirectory {
public:
  TemporaryDirectory() = default;
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory &) = delete;
  TemporaryDirectory &operator=(const TemporaryDirectory &) = delete;

  /// Creates TARGET.tmp.XXXXXX and locks it. `target` itself may be a
  /// directory holding only `artifactFiles`' kind of content: commit()
  /// replaces it.
  Status create(const std::string &target);
  /// The temporary directory's path.
  const std::string &path() const { return path_; }
  /// Fsyncs the files inside, puts the directory at the target (exchanged
  /// with an existing directory there, which is then removed) and fsyncs
  /// the parent. `replaceable` says whether an existing directory at the
  /// target may be replaced (else the commit fails and leaves it).
  Status commit(bool (*replaceable)(const std::string &directory));

private:
  std::string target_, path_;
  int lockFd_ = -1;
};

/// Removes `path` and everything below it (not following symlinks).
Status removeTree(const std::string &path);

} // namespace kiln

#endif // KILN_FILES_H
