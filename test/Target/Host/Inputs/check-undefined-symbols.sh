#!/usr/bin/env bash
# Prints every undefined symbol of the shared object $1 that neither libc
# nor libm defines; exits non-zero if there is one. kernels.so must need
# nothing else (DESIGN.md, "Kernel code generation").
set -euo pipefail
so="$1"
libc="$(gcc -print-file-name=libc.so.6)"
libm="$(gcc -print-file-name=libm.so.6)"
# Strong undefined symbols (weak ones, like a C runtime's __gmon_start__, may
# stay unresolved).
undefined="$(nm -u -P "$so" | awk '$2 == "U" { print $1 }' | sed 's/@.*//' |
             sort -u)"
provided="$(nm -D --defined-only --format=just-symbols "$libc" "$libm" |
            sed 's/@.*//' | sort -u)"
extra="$(comm -23 <(echo "$undefined") <(echo "$provided") | sed '/^$/d')"
echo "undefined: $(echo $undefined)"
if [ -n "$extra" ]; then
  echo "not in libc or libm: $extra"
  exit 1
fi
