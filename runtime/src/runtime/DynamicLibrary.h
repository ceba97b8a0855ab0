//===- DynamicLibrary.h - A shared library opened at run time ---*- C++ -*-===//
//
// Part of Kiln's runtime: plain C++17, no LLVM/MLIR. The runtime opens the
// libraries it does not link (the CUDA driver, cuBLASLt, NCCL, OpenBLAS and
// an artifact's kernels) through this: dlopen with RTLD_NOW | RTLD_LOCAL, so
// that a missing symbol fails at the open and nothing leaks into the
// process's namespace, and dlclose when the object goes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_DYNAMICLIBRARY_H
#define KILN_RUNTIME_DYNAMICLIBRARY_H

#include <string>
#include <type_traits>

namespace kiln {
namespace runtime {

class DynamicLibrary {
public:
  DynamicLibrary() = default;
  ~DynamicLibrary();
  DynamicLibrary(DynamicLibrary &&other) noexcept : handle_(other.handle_) {
    other.handle_ = nullptr;
  }
  DynamicLibrary &operator=(DynamicLibrary &&other) noexcept;
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;

  /// Opens `path` (a name dlopen searches for, or a path), closing what was
  /// open before. On failure returns false, with dlerror()'s words in
  /// `reason`.
  bool open(const std::string &path, std::string &reason);
  bool isOpen() const { return handle_ != nullptr; }

  /// The address of `symbol`, or null where the library has none.
  void *address(const char *symbol) const;

  /// Sets `function` to `symbol`'s address as its type; false (and null)
  /// where the library has none.
  template <typename Function>
  bool resolve(const char *symbol, Function &function) const {
    static_assert(std::is_pointer_v<Function>, "a function pointer");
    function = reinterpret_cast<Function>(address(symbol));
    return function != nullptr;
  }

  /// Leaves the library loaded until the process ends (its code may still
  /// run after this object goes): nothing closes it, and this object
  /// resolves nothing more.
  void keepLoaded() { handle_ = nullptr; }

private:
  void *handle_ = nullptr;
};

} // namespace runtime
} // namespace kiln

#endif // KILN_RUNTIME_DYNAMICLIBRARY_H
