#!/usr/bin/env bash
# Configures (once) and builds Kiln into build/ with Ninja and ccache.
# Usage: scripts/build.sh [ninja targets...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
start=$(date +%s)
ninja -C "$build" "$@"
echo "build: done in $(( $(date +%s) - start )) s"
