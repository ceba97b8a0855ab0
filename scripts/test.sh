#!/usr/bin/env bash
# Installs the dependencies, builds Kiln, and runs every test: the lit suite
# (dialects, passes, front-end diagnostics, CLI) and the GoogleTest unit tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
"$root/scripts/build.sh" check-kiln
