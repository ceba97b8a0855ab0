//===- AtomicFile.cpp - Replacing a file so that a crash never damages it -===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "kiln/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {

namespace {

/// "what PATH: strerror(errno)", read before anything can change errno.
Status systemError(const std::string &what, const std::string &path) {
  int error = errno;
  return Status::error(what + " '" + path + "': " + std::strerror(error));
}

/// The directory holding `path`: "." when it has no slash.
std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// Writes all `size` bytes, retrying short writes and EINTR.
bool writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

/// Closes `fd` and removes the temporary file, keeping errno of the failure
/// that got us here.
void abandon(int fd, const std::string &tempPath) {
  int error = errno;
  if (fd >= 0)
    ::close(fd);
  ::unlink(tempPath.c_str());
  errno = error;
}

} // namespace

std::string atomicTemporaryPath(const std::string &path) {
  return path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
}

Status writeFileAtomically(const std::string &path, const void *data,
                           size_t size) {
  if (path.empty())
    return Status::error("cannot write a file with an empty path");
  const std::string tempPath = atomicTemporaryPath(path);
  // O_EXCL would refuse a stale temporary left by a crashed process with our
  // pid; truncating it is safe, since nobody else writes PATH.tmp.<our pid>.
  int fd =
      ::open(tempPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return systemError("cannot create temporary file", tempPath);
  if (!writeAll(fd, static_cast<const uint8_t *>(data), size)) {
    abandon(fd, tempPath);
    return systemError("cannot write temporary file", tempPath);
  }
  if (::fsync(fd) != 0) {
    abandon(fd, tempPath);
    return systemError("cannot fsync temporary file", tempPath);
  }
  // close can report a deferred write error (NFS); it counts as a failure.
  if (::close(fd) != 0) {
    abandon(-1, tempPath);
    return systemError("cannot close temporary file", tempPath);
  }
  if (::rename(tempPath.c_str(), path.c_str()) != 0) {
    abandon(-1, tempPath);
    return systemError("cannot rename '" + tempPath + "' over", path);
  }
  // The rename is durable only once the directory entry is on disk.
  const std::string directory = directoryOf(path);
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0)
    return systemError("wrote the file but cannot open its directory",
                       directory);
  int syncResult = ::fsync(dirFd);
  Status status = syncResult == 0
                      ? Status::ok()
                      : systemError("wrote the file but cannot fsync its "
                                    "directory",
                                    directory);
  ::close(dirFd);
  return status;
}

Status readWholeFile(const std::string &path, std::string &out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return systemError("cannot open", path);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    Status status = systemError("cannot stat", path);
    ::close(fd);
    return status;
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd);
    return Status::error("cannot read '" + path + "': it is a directory");
  }
  if (info.st_size > 0)
    out.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      Status status = systemError("cannot read", path);
      ::close(fd);
      out.clear();
      return status;
    }
    if (got == 0)
      break;
    out.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return Status::ok();
}

} // namespace kiln
