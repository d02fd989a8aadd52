#!/usr/bin/env bash
# examples/nanogpt on a GPU machine, in one command that fits the 10-minute
# limit of one run:
#   build   the tkc kernels that tkc.ops uses, all at once (nvcc, one
#           process per kernel file), so that training does not wait for
#           them one by one
#   host    tools/gpu/host_time.py: host time of one operator call, tkc.ops
#           eager, through its custom_op, and PyTorch's
#   profile (not by default) tools/gpu/host_profile.py: the host time of a
#           gpt2 step at batch 1, tkc and PyTorch eager, and where it goes
#           (cProfile)
#   check   tools/gpu/test_nanogpt.py: the tkc variant's loss and gradients
#           against the PyTorch variant's, eager and compiled
#   char    the char preset trained with tkc kernels and with PyTorch's
#           from one seed (compare.py): both curves in compare.png, each
#           final validation loss and their ratio
#   ddp     (not by default; 2 GPUs) 20 steps of the char preset with tkc
#           kernels on one process and under torchrun on two: the same
#           losses at the same global batch, to bf16 rounding
#   bench   the gpt2 preset's training tokens/s (tkc, torch eager with SDPA,
#           torch.compile), interleaved, and its per-operator GPU time
# Expected on an H100 (not yet measured): the char model is 10.8M
# parameters, 0.068 GFLOP per token (6 per parameter plus attention), so
# 1.1 TFLOP per step of 64 x 256 tokens: a few ms of math, an eager step
# bound by its ~400 launches at 10-30 ms, 1000 steps 15-30 s per variant.
# The gpt2 model is 124.5M parameters, 0.80 GFLOP per token, 13.2 TFLOP per
# step of 16 x 1024 tokens: 35-70 ms a step; with torch.compile (1-2 min)
# and the profiled steps the bench takes about 3 minutes. All parts about
# 6-8 minutes; --budget (560 s) bounds them.
# Needs build/tools/tkc and build/nanogpt/{meta.json,train.bin,val.bin}
# (examples/nanogpt/prepare.py) from the machine that built tkc.
# Logs and plots: $OUT/{build_*,host,profile,test_nanogpt,char,bench}.log (not check.log, which
# run_on_device.sh writes), $OUT/char/compare.{png,csv,json},
# $OUT/bench/bench.{md,json}.
#
# Usage: tools/gpu/nanogpt_run.sh [--parts build,host,check,char,bench] [--steps N] [--batch B]
#          [--bench-batch B] [--bench-variants LIST] [--seed S] [--budget SECONDS] [--dry-run]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
parts=build,host,check,char,bench steps=1000 batch=64 bench_batch=16 seed=1337 budget=560 dry=0
bench_variants=tkc,torch,tkc-compile,torch-compile
while (($#)); do
  case "$1" in
    --parts) parts=$2; shift ;;
    --steps) steps=$2; shift ;;
    --batch) batch=$2; shift ;;
    --bench-batch) bench_batch=$2; shift ;;
    --bench-variants) bench_variants=$2; shift ;;
    --seed) seed=$2; shift ;;
    --budget) budget=$2; shift ;;
    --dry-run) dry=1 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
final=${OUT:-build/nanogpt/gpu-out}
has_part() { [[ ",$parts," == *",$1,"* ]]; }
# The bench part needs about 5 minutes (torch.compile of the 124M model,
# twice, is most of it); the char part gets what the build leaves before that.
bench_reserve=330
run() { # LOG SECONDS COMMAND...
  local log=$1 secs=$2
  shift 2
  if ((dry)); then
    echo "[${secs}s] $* > $final/$log"
    return 0
  fi
  timeout "$secs" "$@" >"$final/$log" 2>&1
}
left() { echo $((budget - SECONDS)); }
mkdir -p "$final"
export TKC="$PWD/build/tools/tkc"
status=0

if has_part build; then
  # Every kernel file tkc.ops loads, each in its own process.
  stems=$(grep -o 'library("[a-z_0-9]*")' python/tkc/ops.py | sed 's/library("\(.*\)")/\1/' | sort -u)
  pids=() names=()
  for stem in $stems; do
    run "build_$stem.log" 240 python3 -c "import sys; sys.path.insert(0, 'python'); import tkc.ops; tkc.ops.library('$stem')" &
    pids+=($!) names+=("$stem")
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "built ${names[$i]} ($SECONDS s)"
    else
      echo "FAILED to build ${names[$i]}: $final/build_${names[$i]}.log"
      status=1
    fi
  done
fi

if has_part host; then
  run host.log 90 python3 tools/gpu/host_time.py || status=1
  ((dry)) || grep "|" "$final/host.log"
fi

if has_part profile; then
  run profile.log 150 python3 tools/gpu/host_profile.py || status=1
  ((dry)) || grep -A4 "^host time of a step" "$final/profile.log"
fi

if has_part check; then
  run test_nanogpt.log 150 python3 tools/gpu/test_nanogpt.py || status=1
  ((dry)) || tail -4 "$final/test_nanogpt.log"
fi

if has_part char; then
  limit=$(left)
  has_part bench && limit=$((limit - bench_reserve))
  run char.log "$limit" python3 -u examples/nanogpt/compare.py --preset char --steps "$steps" --batch "$batch" \
    --seed "$seed" --out "$final/char" || status=1
  ((dry)) || grep -E "^(\||val loss|wrote|step .*(250|500|750|000) \|)" "$final/char.log" | tail -20
fi

if has_part ddp; then
  common=(--preset char --kernels tkc --steps 20 --batch "$batch" --log-every 10 --eval-every 10 --seed "$seed" --quiet)
  run ddp1.log 120 python3 -u examples/nanogpt/train.py "${common[@]}" --out "$final/ddp1" || status=1
  run ddp2.log 120 torchrun --standalone --nproc-per-node=2 examples/nanogpt/train.py "${common[@]}" --out "$final/ddp2" ||
    status=1
  run ddp.log 10 python3 test/examples/Inputs/nanogpt_check.py same "$final/ddp1/log.json" "$final/ddp2/log.json" 0.02 ||
    status=1
  ((dry)) || cat "$final/ddp.log"
fi

if has_part bench; then
  run bench.log "$(left)" python3 -u examples/nanogpt/train.py --preset gpt2 --bench --batch "$bench_batch" \
    --bench-variants "$bench_variants" --seed "$seed" --out "$final/bench" || status=1
  ((dry)) || grep -E "^(\||bench|GPU time)" "$final/bench.log"
fi
exit $status
