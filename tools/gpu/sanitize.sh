#!/usr/bin/env bash
# Runs every generated kernel once at sizes that are not multiples of its
# tiles under compute-sanitizer's memcheck, racecheck and synccheck, on the
# GPU machine. Usage: bash tools/gpu/sanitize.sh [GPU_DIR [CASE_REGEX]]
# (default build/gpu, every case; the regex is matched against
# 'WORKLOAD SIZE_JSON', e.g. 'attn_fwd.*"D":64'; TOOLS="racecheck synccheck" picks
# the tools)
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build/gpu}
only=${2:-.}
export PYTHONUNBUFFERED=1
cases=(
  'gemm {"M":257,"N":520,"K":136}'
  'gemm_tn {"M":136,"N":520,"K":257}'
  'gemm_splitk {"M":136,"N":200,"K":1000}'
  'gemm_splitk {"M":257,"N":520,"K":136}'
  'attn_fwd {"B":1,"H":2,"N":150,"D":64,"causal":0}'
  'attn_fwd {"B":1,"H":2,"N":150,"D":64,"causal":1}'
  'attn_fwd {"B":1,"H":1,"N":100,"D":128,"causal":0}'
  'attn_fwd {"B":1,"H":1,"N":100,"D":128,"causal":1}'
  'attn_fwd {"B":1,"H":1,"N":300,"D":128,"causal":1}'
  'attn_fwd {"B":1,"H":2,"N":400,"D":64,"causal":0}'
  'attn_fwd {"B":1,"H":2,"N":400,"D":64,"causal":1}'
  'attn_fwd {"B":4,"H":32,"N":400,"D":64,"causal":0}'
  'attn_fwd {"B":4,"H":32,"N":400,"D":64,"causal":1}'
  # Two tiles per block of a persistent kernel on 132 multiprocessors
  # (memcheck takes about a minute, racecheck more than five).
  'attn_fwd {"B":2,"H":66,"N":200,"D":64,"causal":1}'
  'attn_bwd {"B":1,"H":2,"N":150,"D":64,"causal":1}'
  'attn_bwd {"B":1,"H":1,"N":100,"D":128,"causal":0}'
  'attn_bwd {"B":1,"H":1,"N":300,"D":128,"causal":1}'
  'attn_bwd {"B":1,"H":2,"N":200,"D":64,"causal":0}'
  'attn_bwd {"B":1,"H":66,"N":200,"D":128,"causal":1}'   # likewise
  'layernorm {"R":6,"D":1024}'
  'layernorm {"R":5,"D":4096}'
  'bias_grad {"R":100,"C":70}'
)
declare -A stem=([gemm]=gemm [gemm_tn]=gemm_tn [gemm_splitk]=gemm_splitk [attn_fwd]=attention_fwd [attn_bwd]=attention_bwd [layernorm]=layernorm [bias_grad]=bias_grad)
failures=0 runs=0
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  for target in sm_80 sm_90a; do
    for c in "${cases[@]}"; do
      workload=${c%% *} size=${c#* }
      [[ "$workload $size" =~ $only ]] || continue
      cu="$dir/${stem[$workload]}.$target.cu"
      [[ -f $cu ]] || continue
      log=$(compute-sanitizer --tool "$tool" --error-exitcode 3 python3 tools/gpu/profile_one.py "$cu" "$workload" "$size" 2>&1)
      status=$?
      runs=$((runs + 1))
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" <<<"$log" | tail -1)
      if [[ $status -ne 0 ]]; then
        failures=$((failures + 1))
        echo "FAIL $tool $target $workload $size (exit $status) $summary"
        grep -m 5 -E "Invalid|Race|Barrier|error" <<<"$log"
      else
        echo "PASS $tool $target $workload $size $summary"
      fi
    done
  done
done
echo "sanitizer: $runs runs, $failures with reports"
[[ $failures -eq 0 ]]
