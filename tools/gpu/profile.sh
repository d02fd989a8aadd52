#!/usr/bin/env bash
# Profiles generated kernels and a workload's peers with Nsight Compute, side
# by side: one launch of each (the last of three), the speed-of-light,
# memory and warp-state sections, and the headline numbers printed at the end.
# With --stalls, where the warps wait instead: pipe utilisation and the
# warp-state breakdown (stall reasons, in cycles per issued instruction).
#   tools/gpu/profile.sh [--stalls] WORKLOAD SIZE_JSON FILE.cu... [--peers]
# e.g. tools/gpu/profile.sh gemm '{"M":4096,"N":4096,"K":4096}' build/gpu/gemm.sm_90a.cu --peers
# Reports go to $OUT (default build/gpu/out)/NAME.ncu-rep (NAME.stalls.ncu-rep).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
stalls=0
[[ ${1:-} == --stalls ]] && { stalls=1; shift; }
workload=$1 size=$2
shift 2
out=${OUT:-build/gpu/out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if ((stalls)); then
  suffix=.stalls
  collect=(--section WarpStateStats --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,lts__t_bytes.sum.per_second)
else
  suffix=
  collect=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy)
fi
for what in "$@"; do
  if [[ $what == --peers ]]; then
    name=peers args=(--peers)
  else
    name=$(basename "$what" .cu) args=("$what")
  fi
  echo "== $name"
  report=$out/$name$suffix
  # Skip the first two launches (warm-up, and tkc's one-time attribute set-up).
  "$ncu" --launch-skip 2 --launch-count 1 --kernel-name regex:'^(?!.*(Memset|elementwise|fill)).*$' "${collect[@]}" \
    -o "$report" -f python3 tools/gpu/profile_one.py "${args[@]}" "$workload" "$size" >"$report.ncu.log" 2>&1 || {
    tail -5 "$report.ncu.log"; continue; }
  if ((stalls)); then
    "$ncu" -i "$report.ncu-rep" --page details --print-details all 2>/dev/null |
      grep -E "^  [a-zA-Z_]|pipe|issue_active|duration|lts__t_bytes|Stall|Warp Cycles Per Issued" | head -60
  else
    "$ncu" -i "$report.ncu-rep" --print-summary none 2>/dev/null |
      grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp|No Eligible|Block Limit Shared" | head -30
  fi
done
