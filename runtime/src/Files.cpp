//===- Files.cpp - The one place Kiln reads and writes users' files -------===//
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//

#include "kiln/Files.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

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

/// The last component of `path`.
std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// What a non-regular file is, for messages.
const char *describeMode(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISLNK(mode))
    return "a symbolic link";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
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

/// Takes an exclusive lock on `fd`, waiting through signals.
bool lockExclusive(int fd) {
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR)
      return false;
  return true;
}

/// Whether `path` still names the file open as `fd` (a cleaner may have
/// removed it between its creation and our lock).
bool stillNames(const std::string &path, int fd) {
  struct stat byName, byFd;
  return ::lstat(path.c_str(), &byName) == 0 && ::fstat(fd, &byFd) == 0 &&
         byName.st_dev == byFd.st_dev && byName.st_ino == byFd.st_ino;
}

/// Creates PATH.tmp.XXXXXX (a file, or a directory when `directory`),
/// opens it as `fd` and locks it. A cleaner may remove a fresh temporary
/// before its creator holds the lock: then it makes another.
Status createLockedTemporary(const std::string &path, bool directory,
                             std::string &tempPath, int &fd) {
  const std::string what = directory ? "directory" : "file";
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string pattern = temporaryPrefix(path) + "XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (directory) {
      fd = -1;
      if (::mkdtemp(name.data()))
        fd = ::open(name.data(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else {
      fd = ::mkostemp(name.data(), O_CLOEXEC);
    }
    if (fd < 0) {
      Status status = systemError("cannot create a temporary " + what, pattern);
      if (directory)
        ::rmdir(name.data()); // Made, but not opened.
      return status;
    }
    tempPath = name.data();
    if (!lockExclusive(fd)) {
      Status status = systemError("cannot lock temporary " + what, tempPath);
      ::close(fd);
      directory ? ::rmdir(tempPath.c_str()) : ::unlink(tempPath.c_str());
      return status;
    }
    if (stillNames(tempPath, fd)) {
      ::fchmod(fd, directory ? 0755 : 0644);
      return Status::ok();
    }
    ::close(fd);
  }
  return Status::error("cannot keep a temporary " + what + " for '" + path +
                       "'");
}

/// Removes the temporary file and closes it (its lock goes with it).
void abandon(int fd, const std::string &tempPath) {
  ::unlink(tempPath.c_str());
  ::close(fd);
}

Status fsyncDirectory(const std::string &directory, const char *after) {
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0)
    return systemError(std::string(after) + " but cannot open its directory",
                       directory);
  int syncResult = ::fsync(dirFd);
  Status status =
      syncResult == 0
          ? Status::ok()
          : systemError(std::string(after) + " but cannot fsync its directory",
                        directory);
  ::close(dirFd);
  return status;
}

/// Removes `path` (a file or a tree) if nobody holds a lock on it.
bool removeIfUnlocked(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  bool removed = false;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && stillNames(path, fd)) {
    struct stat info;
    if (::fstat(fd, &info) == 0)
      removed = S_ISDIR(info.st_mode) ? removeTree(path).isOk()
                                      : ::unlink(path.c_str()) == 0;
  }
  ::close(fd);
  return removed;
}

/// Removes the stale temporaries in `directory` whose names start with
/// `prefix` (a file name prefix, no slash) and go on with ".tmp.".
size_t removeStale(const std::string &directory, const std::string &prefix,
                   bool anyName) {
  DIR *dir = ::opendir(directory.c_str());
  if (!dir)
    return 0;
  std::vector<std::string> candidates;
  while (struct dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (anyName ? name.find(".tmp.") == std::string::npos
                : name.compare(0, prefix.size(), prefix) != 0)
      continue;
    candidates.push_back(directory + "/" + name);
  }
  ::closedir(dir);
  size_t removed = 0;
  for (const std::string &candidate : candidates)
    removed += removeIfUnlocked(candidate);
  return removed;
}

/// renameat2(RENAME_EXCHANGE) through syscall(2): glibc 2.36 has no
/// wrapper everywhere.
int exchangePaths(const std::string &from, const std::string &to) {
#ifdef SYS_renameat2
  constexpr unsigned kRenameExchange = 1u << 1;
  return static_cast<int>(::syscall(SYS_renameat2, AT_FDCWD, from.c_str(),
                                    AT_FDCWD, to.c_str(), kRenameExchange));
#else
  errno = ENOSYS;
  return -1;
#endif
}

/// Fsyncs every regular file directly inside `directory`, then it.
Status fsyncTree(const std::string &directory) {
  DIR *dir = ::opendir(directory.c_str());
  if (!dir)
    return systemError("cannot open directory", directory);
  Status status = Status::ok();
  while (struct dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..")
      continue;
    std::string path = directory + "/" + name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
      continue;
    if (::fsync(fd) != 0 && status.isOk())
      status = systemError("cannot fsync", path);
    ::close(fd);
  }
  ::closedir(dir);
  if (!status.isOk())
    return status;
  return fsyncDirectory(directory, "wrote its files");
}

} // namespace

std::string temporaryPrefix(const std::string &path) { return path + ".tmp."; }

Status readWholeFile(const std::string &path, std::string &out) {
  out.clear();
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return systemError("cannot open", path);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    Status status = systemError("cannot stat", path);
    ::close(fd);
    return status;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error("cannot read '" + path + "': it is " +
                         describeMode(info.st_mode) + ", not a regular file");
  }
  size_t size = static_cast<size_t>(info.st_size);
  try {
    out.resize(size);
  } catch (const std::bad_alloc &) {
    ::close(fd);
    return Status::error("cannot read '" + path + "': " + std::to_string(size) +
                         " bytes do not fit in memory");
  }
  size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(fd, &out[done], size - done);
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
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  if (done != size) {
    out.clear();
    return Status::error("cannot read '" + path + "': it shrank from " +
                         std::to_string(size) + " to " + std::to_string(done) +
                         " bytes while being read");
  }
  return Status::ok();
}

Status checkReplaceable(const std::string &path) {
  if (path.empty())
    return Status::error("cannot write a file with an empty path");
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT)
      return Status::ok();
    return systemError("cannot stat", path);
  }
  if (!S_ISREG(info.st_mode))
    return Status::error("refusing to replace '" + path + "': it is " +
                         describeMode(info.st_mode) +
                         "; Kiln replaces only regular files");
  return Status::ok();
}

Status writeFileAtomically(const std::string &path, const void *data,
                           size_t size) {
  if (Status status = checkReplaceable(path); !status.isOk())
    return status;
  removeStaleTemporaries(path);
  std::string tempPath;
  int fd = -1;
  if (Status status =
          createLockedTemporary(path, /*directory=*/false, tempPath, fd);
      !status.isOk())
    return status;
  if (!writeAll(fd, static_cast<const uint8_t *>(data), size)) {
    Status status = systemError("cannot write temporary file", tempPath);
    abandon(fd, tempPath);
    return status;
  }
  if (::fsync(fd) != 0) {
    Status status = systemError("cannot fsync temporary file", tempPath);
    abandon(fd, tempPath);
    return status;
  }
  // Checked again right before the rename: nothing but a regular file is
  // ever replaced, even if one appeared meanwhile.
  if (Status status = checkReplaceable(path); !status.isOk()) {
    abandon(fd, tempPath);
    return status;
  }
  // The lock is held through the rename, so that no cleaner takes the
  // temporary for a dead writer's.
  if (::rename(tempPath.c_str(), path.c_str()) != 0) {
    Status status = systemError("cannot rename '" + tempPath + "' over", path);
    abandon(fd, tempPath);
    return status;
  }
  ::close(fd);
  // The rename is durable only once the directory entry is on disk.
  return fsyncDirectory(directoryOf(path), "wrote the file");
}

size_t removeStaleTemporaries(const std::string &path) {
  return removeStale(directoryOf(path), baseName(temporaryPrefix(path)),
                     /*anyName=*/false);
}

size_t removeStaleTemporariesIn(const std::string &directory) {
  return removeStale(directory, "", /*anyName=*/true);
}

Status removeTree(const std::string &path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0)
    return errno == ENOENT ? Status::ok() : systemError("cannot stat", path);
  if (S_ISDIR(info.st_mode)) {
    DIR *dir = ::opendir(path.c_str());
    if (!dir)
      return systemError("cannot open directory", path);
    std::vector<std::string> names;
    while (struct dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(dir);
    for (const std::string &name : names)
      if (Status status = removeTree(path + "/" + name); !status.isOk())
        return status;
    if (::rmdir(path.c_str()) != 0)
      return systemError("cannot remove directory", path);
    return Status::ok();
  }
  if (::unlink(path.c_str()) != 0)
    return systemError("cannot remove", path);
  return Status::ok();
}

TemporaryDirectory::~TemporaryDirectory() {
  if (!path_.empty())
    (void)removeTree(path_);
  if (lockFd_ >= 0)
    ::close(lockFd_);
}

Status TemporaryDirectory::create(const std::string &target) {
  if (target.empty())
    return Status::error("cannot write a directory with an empty path");
  target_ = target;
  removeStaleTemporaries(target);
  int fd = -1;
  std::string created;
  if (Status status =
          createLockedTemporary(target, /*directory=*/true, created, fd);
      !status.isOk())
    return status;
  path_ = created;
  lockFd_ = fd;
  return Status::ok();
}

Status TemporaryDirectory::commit(bool (*replaceable)(const std::string &)) {
  if (Status status = fsyncTree(path_); !status.isOk())
    return status;
  struct stat info;
  bool exists = ::lstat(target_.c_str(), &info) == 0;
  if (!exists && errno != ENOENT)
    return systemError("cannot stat", target_);
  if (exists && !S_ISDIR(info.st_mode))
    return Status::error("refusing to replace '" + target_ + "': it is " +
                         describeMode(info.st_mode) + ", not a directory");
  if (exists && !replaceable(target_))
    return Status::error("refusing to replace the directory '" + target_ +
                         "': it holds files other than a Kiln artifact's");
  if (!exists) {
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      return systemError("cannot rename '" + path_ + "' to", target_);
  } else {
    // Swap both names in one step: at no moment is the target missing or
    // half-written. The old contents now sit at the temporary's name.
    if (exchangePaths(path_, target_) != 0)
      return systemError("cannot exchange '" + path_ + "' with", target_);
  }
  Status synced = fsyncDirectory(directoryOf(target_), "wrote the directory");
  if (exists)
    (void)removeTree(path_); // The old artifact.
  path_.clear();
  return synced;
}

} // namespace kiln
