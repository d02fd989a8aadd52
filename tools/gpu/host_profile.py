#!/usr/bin/env python3
"""Where the host time of a training step of examples/nanogpt goes.

At a batch of one sequence the GPU finishes a step's kernels long before
the host has issued them, so the wall time of a step is its host time.
This measures that for each variant (interleaved rounds, median), then
runs a few steps of each under cProfile and prints the functions with the
most time of their own, and the tkc package's functions by total time.

    python3 tools/gpu/host_profile.py [--preset gpt2] [--batch 1] [--variants tkc,torch]
        [--steps 10] [--rounds 5] [--profile-steps 5] [--top 25] [--package DIR]

--package takes the tkc package from DIR (a folder holding tkc/) instead
of python/."""

import argparse
import contextlib
import cProfile
import io
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = sys.argv[sys.argv.index("--package") + 1] if "--package" in sys.argv else str(ROOT / "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, str(ROOT / "examples" / "nanogpt"))

import torch  # noqa: E402

from bench import Variant  # noqa: E402
from train import Dist, build_parser, make_streams  # noqa: E402


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def device_name():
    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def step_ms(v, n):
    sync()
    t0 = time.perf_counter()
    v.steps(n)
    sync()
    return (time.perf_counter() - t0) / n * 1e3


def profile_table(v, n, top):
    prof = cProfile.Profile()
    # The backward's Python (the tkc operators' backward functions) runs on
    # autograd's device threads, which cProfile does not see; without
    # multithreading it runs on this one.
    single = getattr(torch.autograd, "set_multithreading_enabled", None)
    sync()
    with single(False) if single else contextlib.nullcontext():
        prof.enable()
        v.steps(n)
        sync()
        prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    own = out.getvalue()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(r"tkc/|model\.py", top)
    return own, out.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="gpt2")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--variants", default="tkc,torch")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--package", help="the folder holding the tkc package (default: python/)")
    args = ap.parse_args()
    targs = build_parser().parse_args(["--preset", args.preset, "--batch", str(args.batch), "--data", "random"])
    d = Dist(None)
    streams = make_streams(targs, d.device, targs.seed)
    variants = [Variant(name, targs, d, streams, streams[2]) for name in args.variants.split(",")]
    for v in variants:
        v.steps(3)
    times = {v.name: [] for v in variants}
    for _ in range(args.rounds):
        for v in random.sample(variants, len(variants)):
            times[v.name].append(step_ms(v, args.steps))
    print(f"host time of a step ({args.preset}, batch {args.batch}; {device_name()}, "
          f"torch {torch.__version__}; median of {args.rounds} rounds of {args.steps} steps)")
    print("| variant | ms/step | spread |")
    print("|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.2f} | {min(ts):.2f}-{max(ts):.2f} |")
    for v in variants:
        own, tkc = profile_table(v, args.profile_steps, args.top)
        print(f"\n=== {v.name}: cProfile of {args.profile_steps} steps, by own time ===\n{own}")
        print(f"=== {v.name}: tkc and model functions, by total time ===\n{tkc}")


if __name__ == "__main__":
    main()
