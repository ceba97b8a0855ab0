#!/usr/bin/env bash
# Installs the dependencies, builds Kiln, and runs every test: the lit suite
# (dialects, front-end diagnostics, CLI, interpreter results) and the
# GoogleTest unit tests (run under lit, one test per case).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
"$root/scripts/build.sh" check-kiln 2>&1 | tee "$log" || status=$?

# One closing line that any reader of the log can count.
count() { awk -v pattern="$1" '$0 ~ "^ *(" pattern ") *: *[0-9]+" {
  sub(/.*: */, ""); sub(/ .*/, ""); total += $0 } END { print total + 0 }' "$log"; }
passed=$(count "Passed")
failed=$(count "Failed|Unresolved|Timed Out")
skipped=$(count "Unsupported|Skipped")
echo "tests: $passed passed, $failed failed, $skipped skipped"
if [ "$passed" -eq 0 ] && [ "$status" -eq 0 ]; then
  echo "test.sh: no test ran" >&2
  exit 1
fi
exit "$status"
