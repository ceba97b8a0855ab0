// Status.h - The result of a runtime call that can fail.
//
// Part of Kiln's runtime support: plain C++17, no LLVM/MLIR. Runtime calls
// return a Status instead of throwing: no exception crosses the runtime's API.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_STATUS_H
#define KILN_STATUS_H

#include <string>
#include <utility>

namespace kiln {

/// Success, or an error with a message that says what failed and on what.
class Status {
public:
  /// A successful status.
  static Status ok() { return Status(); }
  /// A failed status carrying `message`.
  static Status error(std::string message) {
    Status status;
    status.failed_ = true;
    status.message_ = std::move(message);
    return status;
  }

  /// Whether the call succeeded.
  bool isOk() const { return !failed_; }
  explicit operator bool() const { return isOk(); }
  /// The error message; empty on success.
  const std::string &message() const { return message_; }

private:
  Status() = default;
  bool failed_ = false;
  std::string message_;
};

} // namespace kiln

#endif // KILN_STATUS_H
