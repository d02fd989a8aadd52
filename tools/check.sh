#!/usr/bin/env bash
# Builds tkc (installing dependencies if needed) and runs every test, in
# four phases:
#   1. build/: the lit suite (every phase and pass, diagnostics, nvcc
#      compile checks) and the unit tests;
#   2. build-asan/: the same suite against a build with AddressSanitizer,
#      LeakSanitizer and UndefinedBehaviorSanitizer;
#   3. each fuzzer for a short while (ASan + UBSan), when clang is installed;
#   4. random programs (tools/tkgen): tkc, nvcc and tkc-interp on each.
# The last line sums both test runs: `N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh "$@"

# PyTorch (Debian 12: 1.13) for the CPU test of examples/nanogpt
# (test/examples/nanogpt.test), with OpenBLAS: on the reference BLAS its
# matmuls run about 20 times slower. Without torch that test is skipped.
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
  echo "tkc: installing python3-torch and OpenBLAS (for the nanogpt example's test)" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch libopenblas0-pthread >/dev/null; } ||
    echo "tkc: could not install python3-torch; the nanogpt example's test will be skipped" >&2
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
passed=0
failed=0

# Adds the `Passed:` / `Failed:` counts of lit's summary in $log.
count_results() {
  local p f
  p=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  f=$(sed -n 's/^ *Failed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  echo "$1: ${p:-0} passed, ${f:-0} failed"
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
}

echo "== phase 1: test suite"
cmake --build build --target check 2>&1 | tee "$log" || status=$?
count_results "phase 1"

# The nvcc compile tests check the generated CUDA, which phase 1 already
# did; here only the compiler's own memory safety is in question. -O1 keeps
# the instrumented build quick to compile and still fast enough to run.
echo "== phase 2: test suite under ASan + LSan + UBSan (nvcc compile tests skipped: TKC_SKIP_NVCC=1; packaging tests skipped)"
cmake -S . -B build-asan -G Ninja -DTKC_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
# Sanitizer reports go to files rather than stderr: a test that expects
# tkc to fail (`not tkc ...`) would otherwise pass on a sanitizer abort too.
reports="$PWD/build-asan/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
# Tests of the packaging around tkc (the CMake package, the Python package,
# the editor grammar), the generator's own test, which phase 4 covers at
# scale, and the emulated CUDA runs (their own C++ code, not tkc's) ran in
# phase 1 and add nothing here but minutes.
LIT_OPTS="--filter-out=(cmake-package/|editors/|tools/python-package|tools/tkgen|emu/)" \
TKC_SKIP_NVCC=1 ASAN_OPTIONS="detect_leaks=1:log_path=$reports/asan" \
  UBSAN_OPTIONS="print_stacktrace=1:log_path=$reports/ubsan" \
  cmake --build build-asan --target check 2>&1 | tee "$log" || status=$?
count_results "phase 2"
if compgen -G "$reports/*" >/dev/null; then
  echo "phase 2: sanitizer reports (the tests that caused them may have passed):"
  cat "$reports"/*
  failed=$((failed + 1))
  status=1
fi

echo "== phase 3: fuzzers, ${TKC_FUZZ_SECONDS:=30} s each"
if command -v clang++-19 >/dev/null; then
  tools/fuzz/run.sh "$TKC_FUZZ_SECONDS" || status=$?
else
  echo "fuzz: skipped, clang++-19 is not installed"
fi

# 500 programs, each for both targets, in files of 100 kernels per nvcc run:
# about 4 minutes on 2 cores, nvcc most of it (tools/tkgen/README.md); then
# their sm_80 CUDA on the CPU (tools/emu), built with AddressSanitizer so
# that a read past a tensor through a plain pointer is caught too, about 2
# minutes more.
echo "== phase 4: generated programs (tools/tkgen/run.py)"
if tools/tkgen/run.py --build build --programs "${TKGEN_PROGRAMS:-500}" --seed "${TKGEN_SEED:-1}" --emu-sanitize; then
  :
else
  status=1
  failed=$((failed + 1))
fi

echo "${passed} passed, ${failed} failed"
exit $status
