#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs
# each for SECONDS, two at a time, from corpora seeded with the examples and
# test inputs:
#   tools/fuzz/run.sh SECONDS [fuzz_frontend fuzz_ir fuzz_pipeline]
# Prints the executions of each and exits non-zero if any fuzzer found a
# crash, hang or sanitizer report; the input that caused it is kept in
# build-fuzz/artifacts/<fuzzer>/ and the log in build-fuzz/logs/.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:?usage: tools/fuzz/run.sh SECONDS [FUZZER...]}"
shift
fuzzers=("$@")
((${#fuzzers[@]})) || fuzzers=(fuzz_frontend fuzz_ir fuzz_pipeline)

cxx=$(command -v clang++-19 || command -v clang++ || true)
[[ -n $cxx ]] || { echo "fuzz: clang++ not found (Debian: apt-get install clang-19 libclang-rt-19-dev)" >&2; exit 1; }

build=build-fuzz
# -O1 with libstdc++'s checked containers: out-of-range indexing that stays
# inside a vector's capacity is then caught as well.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DTKC_FUZZ=ON -DTKC_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -D_GLIBCXX_ASSERTIONS" >/dev/null
cmake --build "$build" --target "${fuzzers[@]}"
tools/fuzz/seed-corpus.sh "$build/corpus"

# Which corpus and dictionary each fuzzer reads.
declare -A corpus=([fuzz_frontend]=frontend [fuzz_ir]=ir [fuzz_pipeline]=pipeline)
declare -A dict=([fuzz_frontend]=tk.dict [fuzz_ir]=tkir.dict [fuzz_pipeline]=tk.dict)

mkdir -p "$build/logs"
run_one() {
  local name=$1 artifacts="$build/artifacts/$1/"
  mkdir -p "$artifacts"
  # A leak is a finding too, but LeakSanitizer needs ptrace, which some
  # containers forbid; FUZZ_DETECT_LEAKS=0 turns it off there.
  ASAN_OPTIONS="detect_leaks=${FUZZ_DETECT_LEAKS:-1}" UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tools/fuzz/$name" "$build/corpus/${corpus[$name]}" \
    -dict="tools/fuzz/${dict[$name]}" -max_total_time="$seconds" -timeout=10 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$artifacts" >"$build/logs/$name.log" 2>&1
}

# Two cores: at most two fuzzers at once.
declare -A status
pending=("${fuzzers[@]}")
while ((${#pending[@]})); do
  batch=("${pending[@]:0:2}")
  pending=("${pending[@]:2}")
  declare -A pids=()
  for name in "${batch[@]}"; do
    run_one "$name" &
    pids[$name]=$!
  done
  for name in "${batch[@]}"; do
    rc=0
    wait "${pids[$name]}" || rc=$?
    status[$name]=$rc
  done
  unset pids
done

failed=0
for name in "${fuzzers[@]}"; do
  log="$build/logs/$name.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  if ((status[$name] == 0)); then
    echo "fuzz: $name: ok, ${execs:-?} executions in ${seconds}s (${secs:-?}/s)"
  else
    failed=1
    echo "fuzz: $name: FAILED (exit ${status[$name]}), see $log and $build/artifacts/$name/"
    grep -m1 -E 'ERROR: |runtime error:|invariant broken|Timeout|deadly signal' "$log" || true
  fi
done
exit $failed
