#!/usr/bin/env bash
# Writes the SASS of the generated kernels whose names match a pattern, for
# reading instruction mixes and schedules: OUT/FILE.sass per .cu, and an
# opcode histogram of each matching kernel in OUT/FILE.mix.
#   [ARCH=90] tools/gpu/dump_sass.sh PATTERN FILE.cu...
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
pattern=$1
shift
out=${OUT:-build/gpu/out}
mkdir -p "$out"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for cu in "$@"; do
  name=$(basename "${cu%.cu}")
  target=${name##*.}
  # ARCH=90 shows the code the H200 runs for an sm_80 file (the harness
  # builds those for sm_90); by default the file's own target.
  arch=${ARCH:-${target#sm_}}
  # Variant names (STEM@VARIANT) keep to characters every file transfer takes.
  name=${name//@/_}
  tmp=$(mktemp -d)
  "$nvcc" -std=c++17 -O3 -I runtime -cubin -gencode=arch=compute_$arch,code=sm_$arch "$cu" -o "$tmp/k.cubin" || continue
  "$cuobjdump" -sass "$tmp/k.cubin" | awk -v p="$pattern" '/Function :/ {keep = ($0 ~ p)} keep' >"$out/$name.sass"
  # Opcode histogram (predicates dropped, modifiers kept).
  python3 - "$out/$name.sass" >"$out/$name.mix" <<'PY'
import collections, re, sys
ops = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if m:
        ops[m.group(1)] += 1
for op, n in ops.most_common():
    print(f"{n:7d} {op}")
PY
  rm -rf "$tmp"
done
