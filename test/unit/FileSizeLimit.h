//===- FileSizeLimit.h - Making writes fail, as a full disk does -*- C++
//-*-===//
//
// Part of Kiln's tests. Lowers RLIMIT_FSIZE for the scope: a write past
// `bytes` fails with EFBIG (SIGXFSZ is ignored meanwhile), which exercises
// the same error paths as a full disk, as root too and without a mount.
// NoNewFiles lowers RLIMIT_NOFILE so that a temporary cannot be created.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_FILESIZELIMIT_H
#define KILN_TEST_UNIT_FILESIZELIMIT_H

#include <csignal>
#include <sys/resource.h>
#include <unistd.h>

namespace kiln::testing {

class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previousHandler_ = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previousHandler_);
  }
  FileSizeLimit(const FileSizeLimit &) = delete;
  FileSizeLimit &operator=(const FileSizeLimit &) = delete;

private:
  struct rlimit saved_;
  void (*previousHandler_)(int);
};

/// Lowers RLIMIT_NOFILE for the scope so that no new file can be opened
/// (EMFILE): creating a temporary fails before anything is written.
class NoNewFiles {
public:
  NoNewFiles() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    int lowestFree = ::dup(0);
    ::close(lowestFree);
    struct rlimit limit = saved_;
    limit.rlim_cur = static_cast<rlim_t>(lowestFree);
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  ~NoNewFiles() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  NoNewFiles(const NoNewFiles &) = delete;
  NoNewFiles &operator=(const NoNewFiles &) = delete;

private:
  struct rlimit saved_;
};

} // namespace kiln::testing

#endif // KILN_TEST_UNIT_FILESIZELIMIT_H
