#!/usr/bin/env bash
# Where a kernel's warps wait: Nsight Compute's pipe utilisation and the
# warp-state breakdown (stall reasons, in cycles per issued instruction) for
# one launch of each generated kernel given, side by side with the
# workload's peers (--peers). Complements tools/gpu/profile.sh.
#   tools/gpu/profile_stalls.sh WORKLOAD SIZE_JSON FILE.cu... [--peers]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
workload=$1 size=$2
shift 2
out=${OUT:-build/gpu/out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,lts__t_bytes.sum.per_second
for what in "$@"; do
  if [[ $what == --peers ]]; then
    name=peers args=(--peers)
  else
    name=$(basename "$what" .cu) args=("$what")
  fi
  echo "== $name"
  "$ncu" --launch-skip 2 --launch-count 1 --kernel-name regex:'^(?!.*(Memset|elementwise|fill)).*$' \
    --section WarpStateStats --metrics "$metrics" -o "$out/$name.stalls" -f \
    python3 tools/gpu/profile_one.py "${args[@]}" "$workload" "$size" >"$out/$name.stalls.log" 2>&1 || {
    tail -5 "$out/$name.stalls.log"; continue; }
  "$ncu" -i "$out/$name.stalls.ncu-rep" --page details --print-details all 2>/dev/null |
    grep -E "^  [a-zA-Z_]|pipe|issue_active|duration|lts__t_bytes|Stall|Warp Cycles Per Issued" | head -60
  "$ncu" -i "$out/$name.stalls.ncu-rep" --page raw 2>/dev/null | grep -E "smsp__average_warp_latency_issue_stalled|smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active.ratio" | sort -k3 -n -r | head -14
done
