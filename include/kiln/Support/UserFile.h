//===- UserFile.h - Users' files as LLVM memory buffers ---------*- C++ -*-===//
//
// Part of Kiln. The compiler's side of kiln/Files.h: a model, graph IR or
// metrics file is read through readWholeFile (regular files only, sized
// from the file), then handed to LLVM as a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_USERFILE_H
#define KILN_SUPPORT_USERFILE_H

#include "kiln/Files.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

namespace kiln {

/// The regular file at `path`, or an error naming it ("cannot read 'PATH':
/// it is a character device, not a regular file").
inline llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readUserFile(llvm::StringRef path) {
  std::string bytes;
  if (Status status = readWholeFile(path.str(), bytes); !status.isOk())
    return llvm::createStringError(status.message());
  return llvm::MemoryBuffer::getMemBufferCopy(bytes, path);
}

} // namespace kiln

#endif // KILN_SUPPORT_USERFILE_H
