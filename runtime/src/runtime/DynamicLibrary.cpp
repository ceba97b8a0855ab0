//===- DynamicLibrary.cpp - A shared library opened at run time -----------===//
//
// Part of Kiln's runtime.
//
//===----------------------------------------------------------------------===//

#include "DynamicLibrary.h"

#include <dlfcn.h>

using namespace kiln::runtime;

DynamicLibrary::~DynamicLibrary() {
  if (handle_)
    ::dlclose(handle_);
}

DynamicLibrary &DynamicLibrary::operator=(DynamicLibrary &&other) noexcept {
  if (this != &other) {
    if (handle_)
      ::dlclose(handle_);
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

bool DynamicLibrary::open(const std::string &path, std::string &reason) {
  if (handle_)
    ::dlclose(handle_);
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *words = ::dlerror();
    reason = words ? words : "dlopen gave no reason";
  }
  return handle_ != nullptr;
}

void *DynamicLibrary::address(const char *symbol) const {
  if (!handle_)
    return nullptr;
  return ::dlsym(handle_, symbol);
}
