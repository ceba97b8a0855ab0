//===- AtomicFile.h - Replacing a file so that a crash never damages it ---===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
// writeFileAtomically(PATH, bytes) writes the bytes to PATH.tmp.<pid> in the
// same directory, fsyncs that file, renames it over PATH (an atomic step on
// POSIX file systems) and fsyncs the directory, so that the rename itself is
// durable. At every moment PATH holds either its old contents or the new
// ones, whole: a save interrupted by an error, a full disk, a signal or a
// power cut never damages an existing checkpoint. On failure the temporary
// file is removed and PATH is left untouched.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ATOMICFILE_H
#define KILN_ATOMICFILE_H

#include "kiln/Status.h"

#include <cstddef>
#include <string>

namespace kiln {

/// The temporary file writeFileAtomically uses for `path`: PATH.tmp.<pid>.
std::string atomicTemporaryPath(const std::string &path);

/// Replaces the file at `path` with `size` bytes at `data`, atomically and
/// durably (see above). Errors name the path, the failing system call and
/// its error string.
Status writeFileAtomically(const std::string &path, const void *data,
                           size_t size);

/// Reads the whole file at `path` into `out`. Errors name the path.
Status readWholeFile(const std::string &path, std::string &out);

} // namespace kiln

#endif // KILN_ATOMICFILE_H
