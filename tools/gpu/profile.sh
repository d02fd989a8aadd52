#!/usr/bin/env bash
# Profiles generated kernels and a workload's peers with Nsight Compute, side
# by side: one launch of each (the last of three), the speed-of-light,
# memory and warp-state sections, and the headline numbers printed at the end.
# With --stalls, where the warps wait instead: pipe utilisation and the
# warp-state breakdown (stall reasons, in cycles per issued instruction).
# With --pipes, the compute and memory tables: each pipe's utilisation, and
# shared-memory wavefronts and bank conflicts (is a kernel bound by shared
# memory or by the tensor cores?). --kernel REGEX profiles the second launch
# of the kernels whose names match (one kernel of a workload of several).
#   tools/gpu/profile.sh [--stalls|--pipes] [--kernel REGEX] WORKLOAD SIZE_JSON FILE.cu... [--peers]
# e.g. tools/gpu/profile.sh gemm '{"M":4096,"N":4096,"K":4096}' build/gpu/gemm.sm_90a.cu --peers
# Reports go to $OUT (default build/gpu/out)/NAME.ncu-rep (NAME.stalls.ncu-rep).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
stalls=0 pipes=0 kernel='^(?!.*(Memset|elementwise|fill)).*$' skip=2
while [[ ${1:-} == --* ]]; do
  case $1 in
    --stalls) stalls=1 ;;
    --pipes) pipes=1 ;;
    --kernel) kernel=${2:?--kernel needs a regex} skip=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
workload=$1 size=$2
shift 2
out=${OUT:-build/gpu/out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if ((stalls)); then
  suffix=.stalls
  collect=(--section WarpStateStats --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,lts__t_bytes.sum.per_second,smsp__inst_executed.sum,launch__registers_per_thread,launch__occupancy_limit_registers)
elif ((pipes)); then
  suffix=.pipes
  collect=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats)
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
  # Skip the first launches (warm-up, and tkc's one-time attribute set-up).
  "$ncu" --launch-skip "$skip" --launch-count 1 --kernel-name regex:"$kernel" "${collect[@]}" \
    -o "$report" -f python3 tools/gpu/profile_one.py "${args[@]}" "$workload" "$size" >"$report.ncu.log" 2>&1 || {
    tail -5 "$report.ncu.log"; continue; }
  if ((pipes)); then
    "$ncu" -i "$report.ncu-rep" --page details --print-details all 2>/dev/null |
      grep -E "^  [a-zA-Z_]|Duration|Throughput|Pipe|pipe|Shared|shared|Bank|Wavefront|Issue|Stall|Warp Cycles Per Issued|Executed Ipc" |
      grep -vE "Table Description|dshared|_atom|stsm|^ *INF|^ +(the|dominated)" | tee "$report.txt" | head -70
  elif ((stalls)); then
    "$ncu" -i "$report.ncu-rep" --page details --print-details all 2>/dev/null |
      grep -E "^  [a-zA-Z_]|pipe|issue_active|duration|lts__t_bytes|inst_executed|registers|Stall|Warp Cycles Per Issued" | head -60
  else
    "$ncu" -i "$report.ncu-rep" --print-summary none 2>/dev/null |
      grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp|No Eligible|Block Limit Shared" | head -30
  fi
done
