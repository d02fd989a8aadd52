#!/usr/bin/env bash
# Where one generated kernel's warps wait, instruction by instruction: samples
# the warp states with Nsight Compute (SourceCounters) and writes the SASS
# with its stall samples, hottest first, to OUT/NAME.stalls.txt, and the
# executed opcodes per loop iteration with the stalls of each stretch of the
# program (tools/gpu/sass_mix.py) to OUT/NAME.mix.txt.
#   tools/gpu/stall_lines.sh WORKLOAD SIZE_JSON KERNEL_REGEX FILE.cu
# e.g. tools/gpu/stall_lines.sh gemm '{"M":4096,"N":4096,"K":4096}' gemm build/gpu/gemm.sm_80.cu
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
workload=$1 size=$2 kernel=$3 cu=$4
out=${OUT:-build/gpu/out}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
name=$(basename "$cu" .cu)
"$ncu" --launch-skip 2 --launch-count 1 --kernel-name "regex:$kernel" \
  --section SourceCounters --section WarpStateStats -f -o "$out/$name.src" \
  python3 tools/gpu/profile_one.py "$cu" "$workload" "$size" >"$out/$name.src.log" 2>&1 || { tail "$out/$name.src.log"; exit 1; }
"$ncu" -i "$out/$name.src.ncu-rep" --page source --csv --print-source sass >"$out/$name.sass.csv" 2>>"$out/$name.src.log"
python3 tools/gpu/sass_mix.py --hottest "$out/$name.sass.csv" >"$out/$name.stalls.txt"
python3 tools/gpu/sass_mix.py "$out/$name.sass.csv" >"$out/$name.mix.txt"
tail -n +1 "$out/$name.stalls.txt" | head -70
echo "(opcodes per iteration and stalls by window: $out/$name.mix.txt)"
