#!/usr/bin/env bash
# Builds tkc (installing dependencies if needed) and runs every test: the
# lit suite (every phase and pass, diagnostics, nvcc compile checks) and
# the unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh "$@"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cmake --build build --target check 2>&1 | tee "$log" || status=$?
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
failed=$(sed -n 's/^ *Failed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
echo "${passed:-0} passed, ${failed:-0} failed"
exit $status
