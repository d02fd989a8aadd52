#!/usr/bin/env bash
# Everything a GPU run checks, in one command for a GPU machine with a time
# budget: random programs against the interpreter (gen_check.py, per
# target), the examples' correctness checks and the interleaved benchmark
# (run_on_device.sh), and the Python package's tests. Needs build/tools/tkc,
# build/tools/tkc-interp and build/gpu/*.cu (tools/gpu/generate.sh
# --no-compile --targets sm_80,sm_90a) from the machine that built tkc.
# Logs: $OUT/{gen_check,check,bench,python}.log, bench.md, bench.png.
#
# Usage: tools/gpu/full_run.sh [--programs N] [--seed S] [--gen-seconds S] [--bench-seconds S]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
programs=1000 seed=$(($(date +%s) % 100000)) gen_seconds=300 bench_seconds=200
while (($#)); do
  case "$1" in
    --programs) programs=$2; shift ;;
    --seed) seed=$2; shift ;;
    --gen-seconds) gen_seconds=$2; shift ;;
    --bench-seconds) bench_seconds=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
final=${OUT:-build/gpu/out}
work=$(mktemp -d)
mkdir -p "$final"
status=0

# Each target gets half the generator's time; a target cut short still
# printed its failures.
for target in sm_80 sm_90a; do
  OUT= timeout $((gen_seconds / 2)) python3 tools/gpu/gen_check.py --build build --targets "$target" \
    --programs "$programs" --seed "$seed" --work "$work/gen_$target" 2>&1 | tee -a "$final/gen_check.log" |
    grep -E "^(FAIL|gen_check|sm_)" || true
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
done

OUT="$work/device" bash tools/gpu/run_on_device.sh build/gpu --quick --budget "$bench_seconds" >"$work/rod.log" 2>&1 ||
  status=1
tail -40 "$work/rod.log"
for f in check.log bench.md bench.png; do
  [[ -f $work/device/$f ]] && cp "$work/device/$f" "$final/"
done
cp "$work/rod.log" "$final/bench.log"

timeout 90 python3 tools/gpu/test_python_package.py >"$final/python.log" 2>&1 || status=1
tail -5 "$final/python.log"
rm -rf "$work"
exit $status
