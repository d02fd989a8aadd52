#!/usr/bin/env bash
# Everything a GPU run checks, in parts that each fit one command on a GPU
# machine with a time budget:
#   gen       random programs against the interpreter (gen_check.py), both
#             targets side by side, each on half the CPUs
#   lineinfo  an example built with nvcc -lineinfo: nvdisasm's line table
#             names the .tk file and lines
#   bench     the examples' correctness checks and the interleaved benchmark
#             (run_on_device.sh --quick)
#   python    the Python package's GPU tests, and launches from several threads,
#             streams and a captured CUDA graph (test_launch_streams.py)
# Needs BUILD/tools/tkc, BUILD/tools/tkc-interp (BUILD: --build, default build) and, for bench,
# BUILD/gpu/*.cu (tools/gpu/generate.sh --no-compile --targets sm_80,sm_90a)
# from the machine that built tkc.
# Logs: $OUT/{gen_check_TARGET,lineinfo,check,bench,python,streams}.log, bench.md, bench.png.
#
# Usage: tools/gpu/full_run.sh [--parts gen,lineinfo,bench,python] [--programs N] [--seed S]
#                              [--gen-seconds S] [--bench-seconds S] [--build DIR]
set -uo pipefail
# Progress and failures reach the logs as they happen, also from a part
# that its time limit cuts short.
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.." || exit 2
parts=gen,lineinfo,bench,python programs=1000 seed=$(($(date +%s) % 100000)) gen_seconds=300 bench_seconds=200
build=build
while (($#)); do
  case "$1" in
    --parts) parts=$2; shift ;;
    --programs) programs=$2; shift ;;
    --seed) seed=$2; shift ;;
    --gen-seconds) gen_seconds=$2; shift ;;
    --bench-seconds) bench_seconds=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
final=${OUT:-build/gpu/out}
work=$(mktemp -d)
mkdir -p "$final"
status=0
has_part() { [[ ",$parts," == *",$1,"* ]]; }
cpus=$(nproc 2>/dev/null || echo 8)

if has_part gen; then
  # Both targets at once: the interpreter and nvcc keep the CPUs busy while
  # the other target's libraries run on the GPU. A target cut short by its
  # time limit has still printed its failures.
  pids=()
  for target in sm_80 sm_90a; do
    OUT= timeout "$gen_seconds" python3 tools/gpu/gen_check.py --build "$build" --targets "$target" \
      --programs "$programs" --seed "$seed" --jobs $((cpus / 2)) --gpu-jobs 2 --work "$work/gen_$target" \
      >"$final/gen_check_$target.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || status=1
  done
  for target in sm_80 sm_90a; do
    grep -E "^(FAIL|gen_check|sm_)" "$final/gen_check_$target.log" | head -40
    # Failing programs, to reproduce here.
    [[ -d $work/gen_$target/failures ]] && cp -r "$work/gen_$target/failures" "$final/failures_$target"
  done
fi

if has_part lineinfo; then
  {
    set -e
    "$build/tools/tkc" examples/layernorm.tk --target=sm_90a -o "$work/layernorm.cu"
    nvcc -std=c++17 -I runtime -lineinfo -gencode=arch=compute_90a,code=sm_90a -cubin "$work/layernorm.cu" \
      -o "$work/layernorm.cubin"
    nvdisasm --print-line-info "$work/layernorm.cubin" >"$work/layernorm.sass"
    echo "instructions: $(grep -c '^ */\*[0-9a-f]*\*/' "$work/layernorm.sass")"
    echo "lines naming layernorm.tk: $(grep -c 'layernorm.tk' "$work/layernorm.sass")"
    grep -o '//## File "[^"]*layernorm.tk", line [0-9]*' "$work/layernorm.sass" | sed 's/.*line /line /' | sort -n -k2 -u |
      tr '\n' ' '
    echo
    grep -m3 -B1 -A3 'layernorm.tk' "$work/layernorm.sass"
  } >"$final/lineinfo.log" 2>&1 || status=1
  cat "$final/lineinfo.log" | head -20
fi

if has_part bench; then
  OUT="$work/device" bash tools/gpu/run_on_device.sh "$build/gpu" --quick --budget "$bench_seconds" >"$work/rod.log" 2>&1 ||
    status=1
  tail -40 "$work/rod.log"
  for f in check.log bench.md bench.png; do
    [[ -f $work/device/$f ]] && cp "$work/device/$f" "$final/"
  done
  cp "$work/rod.log" "$final/bench.log"
fi

if has_part python; then
  TKC="$PWD/$build/tools/tkc" timeout 150 python3 tools/gpu/test_python_package.py >"$final/python.log" 2>&1 || status=1
  tail -8 "$final/python.log"
  TKC="$PWD/$build/tools/tkc" timeout 120 python3 tools/gpu/test_launch_streams.py -v >"$final/streams.log" 2>&1 || status=1
  tail -8 "$final/streams.log"
fi
rm -rf "$work"
exit $status
