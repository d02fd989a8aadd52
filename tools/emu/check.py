#!/usr/bin/env python3
"""Runs the CUDA that tkc emits for sm_80 on the CPU (tkc-emu) and compares
its results with tkc-interp's, on the same inputs.

For each kernel: tkc-interp draws the inputs (outputs poisoned with NaN),
checks every pass and writes the inputs and its results; tkc compiles the
.tk for sm_80; tools/emu/build.py builds that into a host library; its
launcher runs on the inputs, in tensors whose rows are padded to 16 bytes
(as the GPU checks lay them out), and every output must match: NaN where
the reference has NaN, elsewhere within TOL of the largest reference
magnitude (i32 exactly).

  tools/emu/check.py FILE.tk --kernel=NAME --size=M=70[,N=...] [--seed S] [--sanitize] [--order reverse] [--cu EDITED.cu]

NAME is the kernel as tkc-interp names it (`attn_fwd__D64__causal1` for a
specialisation); the launcher is the part before the first `__`, and its
argument constants come from the name's `__causal1` parts.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import build as emu_build  # noqa: E402  (tools/emu/build.py)
import launch  # noqa: E402  (tools/emu/launch.py)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", help="the .tk file")
    ap.add_argument("--kernel", required=True, help="the kernel, as tkc-interp names it")
    ap.add_argument("--size", action="append", default=[], help="NAME=VALUE[,...], as tkc-interp takes it")
    ap.add_argument("--ints", action="append", default=[], help="as tkc-interp takes it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tol", type=float, default=2e-2)
    ap.add_argument("--build", default=str(REPO / "build"), help="folder with tools/tkc and tools/tkc-interp")
    ap.add_argument("--cu", default=None, help="run this CUDA instead of compiling the .tk (tkc's sm_80 output, edited)")
    ap.add_argument("--sanitize", action="store_true", help="build the kernels with ASan + UBSan")
    ap.add_argument("--order", choices=["forward", "reverse"], default="forward",
                    help="the order in which a block's threads run between barriers")
    ap.add_argument("--work", default=None, help="keep the inputs, results and library here")
    args = ap.parse_args(argv)

    tmp = None
    if args.work:
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory()
        work = Path(tmp.name)
    tools = Path(args.build) / "tools"
    interp = [str(tools / "tkc-interp"), args.source, f"--kernel={args.kernel}", f"--seed={args.seed}",
              f"--save-inputs={work}/in", f"--outputs={work}/ref"] + [f"--size={s}" for s in args.size] + \
        [f"--ints={i}" for i in args.ints]
    proc = subprocess.run(interp, capture_output=True, text=True)
    if proc.returncode:
        print(f"tkc-emu: tkc-interp failed:\n{proc.stdout}{proc.stderr}", file=sys.stderr)
        return 1
    cu = Path(args.cu) if args.cu else work / "kernel.sm_80.cu"
    if not args.cu:
        proc = subprocess.run([str(tools / "tkc"), args.source, "--target=sm_80", "-o", str(cu)],
                              capture_output=True, text=True)
        if proc.returncode:
            print(f"tkc-emu: tkc failed:\n{proc.stderr}", file=sys.stderr)
            return 1
    so = work / "kernel.sm_80.emu.so"
    try:
        emu_build.build(cu, so, sanitize=args.sanitize)
    except emu_build.EmuBuildError as e:
        print(f"tkc-emu: {e}", file=sys.stderr)
        return 1
    [result] = launch.run_library(so, [{"kernel": args.kernel, "dir": str(work)}], args.tol, args.order,
                                  args.sanitize)
    print(f"{'PASS' if result['ok'] else 'FAIL'} {args.kernel} {' '.join(args.size)}: {result['detail']}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
