#!/usr/bin/env bash
# Generates the CUDA that tools/gpu/run_on_device.sh builds and tests:
# OUT_DIR/NAME.TARGET.cu for every example and target, then (unless
# --no-compile) builds each with nvcc here, so compile errors and register
# spills show up before any GPU time is spent. The builds land next to the
# .cu (NAME.TARGET.so + .so.key) and are reused on the GPU machine when the
# sources, headers, flags and nvcc version are identical.
#
# Usage: tools/gpu/generate.sh [options] [-- extra tkc flags]
#   --out DIR           output folder (default build/gpu)
#   --targets LIST      comma list of tkc targets (default sm_80; e.g. sm_80,sm_90a)
#   --examples LIST     comma list of example names (default: every examples/*.tk)
#   --tkc PATH          compiler (default build/tools/tkc)
#   --src DIR           folder of the .tk files (default examples)
#   --no-compile        only generate
#   --jobs N            parallel nvcc processes (default: number of CPUs)
# Exit status: non-zero if any generation or build failed (the others still run).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

out=build/gpu
targets=sm_80
examples=""
tkc=build/tools/tkc
src_dir=examples
compile=1
jobs=$(nproc 2>/dev/null || echo 8)
extra=()

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --out) out=${2:?}; shift ;;
    --out=*) out=${1#*=} ;;
    --targets) targets=${2:?}; shift ;;
    --targets=*) targets=${1#*=} ;;
    --examples) examples=${2:?}; shift ;;
    --examples=*) examples=${1#*=} ;;
    --tkc) tkc=${2:?}; shift ;;
    --tkc=*) tkc=${1#*=} ;;
    --src) src_dir=${2:?}; shift ;;
    --src=*) src_dir=${1#*=} ;;
    --no-compile) compile=0 ;;
    --jobs) jobs=${2:?}; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [[ ! -x $tkc ]]; then
  echo "no compiler at $tkc (build it first, e.g. tools/setup.sh)" >&2
  exit 2
fi
if [[ -z $examples ]]; then
  names=()
  for f in "$src_dir"/*.tk; do [[ -e $f ]] && names+=("$(basename "$f" .tk)"); done
else
  IFS=, read -r -a names <<<"$examples"
fi
if ((${#names[@]} == 0)); then
  echo "no $src_dir/*.tk to generate" >&2
  exit 2
fi
IFS=, read -r -a target_list <<<"$targets"
mkdir -p "$out"

status=0
generated=0
for name in "${names[@]}"; do
  src=$src_dir/$name.tk
  for t in "${target_list[@]}"; do
    dst=$out/$name.$t.cu
    if [[ ! -f $src ]]; then
      echo "MISSING $src"
      status=1
      continue
    fi
    tmp=$out/.tmp.$$.$name.$t.cu
    if "$tkc" "$src" --target="$t" -o "$tmp" "${extra[@]}" 2>"$tmp.err"; then
      mv -f "$tmp" "$dst"
      echo "GEN OK   $dst ($(wc -l <"$dst") lines)"
      generated=$((generated + 1))
    else
      echo "GEN FAIL $src --target=$t:"
      sed 's/^/    /' "$tmp.err" | head -40
      # A stale file from an earlier run must not be tested in its place.
      rm -f "$tmp" "$dst" "${dst%.cu}.so" "${dst%.cu}.so.key" "${dst%.cu}.ptxas.log"
      status=1
    fi
    [[ -s $tmp.err ]] && grep -qi warning "$tmp.err" && sed 's/^/    /' "$tmp.err" | head -20
    rm -f "$tmp.err"
  done
done

if ((compile && generated > 0)); then
  echo
  : >"$out/ptxas.log"
  python3 tools/gpu/tkc_gpu.py build "$out" --jobs "$jobs" --log "$out/ptxas.log" || status=1
  echo "(full nvcc output: $out/ptxas.log)"
fi
exit "$status"
