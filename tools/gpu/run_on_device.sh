#!/usr/bin/env bash
# The one command for a GPU machine: build the generated kernels in GPU_DIR
# (written by tools/gpu/generate.sh), check them, benchmark them, and print a
# summary at the end. Logs go to $OUT (default GPU_DIR/out):
#   ptxas.log  nvcc/ptxas output of every build + register/spill table
#   check.log  one PASS/FAIL line per case (tools/gpu/check.py)
#   bench.log, bench.md, bench.json, bench.png   (tools/gpu/bench.py)
#
# Usage: tools/gpu/run_on_device.sh [GPU_DIR] [options]
#   --skip-build        do not prebuild (check/bench still build on demand)
#   --skip-check        no correctness checks
#   --skip-bench        no benchmark
#   --only LIST         workloads, e.g. gemm,attn_fwd,layernorm (selftest = axpy)
#   --targets LIST      e.g. sm_80,sm_90a (default: every NAME.TARGET.cu found)
#   --selftest          only the harness's own ABI kernel (tools/gpu/selftest_abi.cu)
#   --quick             fewer benchmark sizes
#   --iters N           timed calls per candidate (default 40)
#   --budget SECONDS    total wall-clock budget (default 480); steps are capped to fit
#   --jobs N            parallel nvcc processes (default: number of CPUs)
#   --dry-run           print the steps and exit
# Exit status: 0 when every step succeeded, else the first failing step's status.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.." || exit 2

GPU_DIR=build/gpu
do_build=1 do_check=1 do_bench=1 dry=0
only="" targets="" selftest=0 quick=0 iters="" budget=480
jobs=$(nproc 2>/dev/null || echo 8)
PY=${PYTHON:-python3}

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --skip-build) do_build=0 ;;
    --skip-check) do_check=0 ;;
    --skip-bench) do_bench=0 ;;
    --only) only=${2:?--only needs a list}; shift ;;
    --only=*) only=${1#*=} ;;
    --targets) targets=${2:?--targets needs a list}; shift ;;
    --targets=*) targets=${1#*=} ;;
    --selftest) selftest=1 ;;
    --quick) quick=1 ;;
    --iters) iters=${2:?--iters needs a number}; shift ;;
    --iters=*) iters=${1#*=} ;;
    --budget) budget=${2:?--budget needs seconds}; shift ;;
    --budget=*) budget=${1#*=} ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --dry-run) dry=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    *) GPU_DIR=$1 ;;
  esac
  shift
done

OUT=${OUT:-$GPU_DIR/out}
mkdir -p "$OUT"
deadline=$((SECONDS + budget))

common=(--gpu-dir "$GPU_DIR")
[[ -n $only ]] && common+=(--only "$only")
[[ -n $targets ]] && common+=(--targets "$targets")
((selftest)) && common+=(--selftest)
bench_extra=(--out "$OUT")
((quick)) && bench_extra+=(--quick)
[[ -n $iters ]] && bench_extra+=(--iters "$iters")

# cap WANT RESERVE: seconds for a step, leaving RESERVE seconds for the later ones.
cap() {
  local want=$1 left=$((deadline - SECONDS - $2))
  ((left < want)) && want=$left
  ((want < 20)) && want=20
  echo "$want"
}

declare -A rc took
run_step() { # name seconds command...
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  echo
  echo "==================== $name (limit ${limit}s) ===================="
  if ((dry)); then
    printf '%q ' timeout -k 10 "$limit" "$@"; echo
    rc[$name]=0 took[$name]=0
    return
  fi
  timeout -k 10 "$limit" "$@"
  rc[$name]=$?
  took[$name]=$((SECONDS - t0))
  if ((rc[$name] == 124 || rc[$name] == 137)); then
    echo "!!! $name timed out after ${limit}s"
  fi
}

echo "tkc GPU run: dir=$GPU_DIR out=$OUT budget=${budget}s $(date -u +%FT%TZ)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
fi
ls "$GPU_DIR"/*.cu 2>/dev/null | sed 's/^/found: /' || echo "found: no .cu in $GPU_DIR"

if ((do_build)); then
  : >"$OUT/ptxas.log"
  build_args=(build "$GPU_DIR" --jobs "$jobs" --selftest --log "$OUT/ptxas.log")
  run_step build "$(cap 180 240)" "$PY" tools/gpu/tkc_gpu.py "${build_args[@]}"
fi
if ((do_check)); then
  run_step check "$(cap 150 $((do_bench ? 120 : 0)))" \
    bash -c 'set -o pipefail; "$@" 2>&1 | tee "$0"' "$OUT/check.log" "$PY" tools/gpu/check.py "${common[@]}"
fi
if ((do_bench)); then
  limit=$(cap 400 10)
  run_step bench "$limit" \
    bash -c 'set -o pipefail; "$@" 2>&1 | tee "$0"' "$OUT/bench.log" \
    "$PY" tools/gpu/bench.py "${common[@]}" "${bench_extra[@]}" --time-budget $((limit > 80 ? limit - 60 : limit / 2))
fi
((dry)) && exit 0

echo
echo "==================== SUMMARY ===================="
status=0
for step in build check bench; do
  [[ -v "rc[$step]" ]] || continue
  echo "step $step: exit ${rc[$step]} in ${took[$step]}s"
  ((status == 0 && rc[$step] != 0)) && status=${rc[$step]}
done
if [[ -s $OUT/ptxas.log ]]; then
  echo
  sed -n '/^## ptxas summary/,$p' "$OUT/ptxas.log"
fi
if [[ -s $OUT/check.log ]]; then
  echo
  sed -n '/^check summary:/,$p' "$OUT/check.log"
fi
if [[ -s $OUT/bench.md ]]; then
  echo
  cat "$OUT/bench.md"
fi
echo
echo "total ${SECONDS}s; files in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
exit "$status"
