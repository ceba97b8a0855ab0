//===- Result.h - Errors inside libkiln_runtime -----------------*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR.
//
// Inside the runtime a failing function returns a Result: a kiln_status code
// and a message saying what failed and on what. The C API turns it into the
// call's status and its last-error string. The KILN_* macros below wrap each
// failing system call once, so that every message names the call, its error
// string and what was being done.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_RESULT_H
#define KILN_RUNTIME_RESULT_H

#include "kiln/Status.h"
#include "kiln/runtime.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace kiln {
namespace runtime {

/// Success, or a kiln_status error code with its message.
class [[nodiscard]] Result {
public:
  static Result ok() { return Result(); }
  static Result error(kiln_status code, std::string message) {
    Result result;
    result.code_ = code;
    result.message_ = std::move(message);
    return result;
  }
  /// A support-library Status as a Result with `code` on failure.
  static Result fromStatus(const Status &status, kiln_status code) {
    return status.isOk() ? ok() : error(code, status.message());
  }

  bool isOk() const { return code_ == KILN_OK; }
  kiln_status code() const { return code_; }
  const std::string &message() const { return message_; }

  /// Prefixes the message with `context` and ": ".
  Result &&withContext(const std::string &context) && {
    if (!isOk())
      message_ = context + ": " + message_;
    return std::move(*this);
  }

private:
  Result() = default;
  kiln_status code_ = KILN_OK;
  std::string message_;
};

/// Shorthands for the common error kinds.
inline Result invalidArgument(std::string message) {
  return Result::error(KILN_ERROR_INVALID_ARGUMENT, std::move(message));
}
inline Result invalidFormat(std::string message) {
  return Result::error(KILN_ERROR_INVALID_FORMAT, std::move(message));
}

/// "<what>: <call>: <strerror(errno)>", for a failed system call.
inline Result systemError(const std::string &what, const char *call) {
  int error = errno;
  return Result::error(KILN_ERROR_IO,
                       what + ": " + call + ": " + std::strerror(error));
}

} // namespace runtime
} // namespace kiln

/// Returns the Result of `expr` from the enclosing function if it failed.
#define KILN_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::kiln::runtime::Result kilnResult_ = (expr);                              \
    if (!kilnResult_.isOk())                                                   \
      return kilnResult_;                                                      \
  } while (0)

/// Calls the POSIX function `function` with the parenthesized `arguments`;
/// if it returns -1, returns a KILN_ERROR_IO Result "<what>: <function>:
/// <strerror(errno)>" from the enclosing function. For example
///   KILN_POSIX_TRY(stat, (path.c_str(), &info), "cannot open '" + path + "'");
#define KILN_POSIX_TRY(function, arguments, what)                              \
  do {                                                                         \
    if (::function arguments == -1)                                            \
      return ::kiln::runtime::systemError((what), #function);                  \
  } while (0)

#endif // KILN_RUNTIME_RESULT_H
