#!/usr/bin/env bash
# Profiles generated kernels and a workload's peers with Nsight Compute, side
# by side: one launch of each (the last of three), the speed-of-light,
# memory and warp-state sections, and the headline numbers printed at the end.
#   tools/gpu/profile.sh WORKLOAD SIZE_JSON FILE.cu... [--peers]
# e.g. tools/gpu/profile.sh gemm '{"M":4096,"N":4096,"K":4096}' build/gpu/gemm.sm_90a.cu --peers
# Reports go to $OUT (default build/gpu/out)/NAME.ncu-rep.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
workload=$1 size=$2
shift 2
out=${OUT:-build/gpu/out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy)
for what in "$@"; do
  if [[ $what == --peers ]]; then
    name=peers args=(--peers)
  else
    name=$(basename "$what" .cu) args=("$what")
  fi
  echo "== $name"
  # Skip the first two launches (warm-up, and tkc's one-time attribute set-up).
  "$ncu" --launch-skip 2 --launch-count 1 --kernel-name regex:'^(?!.*(Memset|elementwise|fill)).*$' "${sections[@]}" \
    -o "$out/$name" -f python3 tools/gpu/profile_one.py "${args[@]}" "$workload" "$size" >"$out/$name.ncu.log" 2>&1 || {
    tail -5 "$out/$name.ncu.log"; continue; }
  "$ncu" -i "$out/$name.ncu-rep" --print-summary none 2>/dev/null |
    grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp|No Eligible|Block Limit Shared" | head -30
done
