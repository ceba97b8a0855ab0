//===- FileSizeLimit.h - Making writes fail, as a full disk does -*- C++
//-*-===//
//
// Part of Kiln's tests. Lowers RLIMIT_FSIZE for the scope: a write past
// `bytes` fails with EFBIG (SIGXFSZ is ignored meanwhile), which exercises
// the same error paths as a full disk, as root too and without a mount.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_UNIT_FILESIZELIMIT_H
#define KILN_TEST_UNIT_FILESIZELIMIT_H

#include <csignal>
#include <sys/resource.h>

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

} // namespace kiln::testing

#endif // KILN_TEST_UNIT_FILESIZELIMIT_H
