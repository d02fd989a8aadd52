#!/usr/bin/env python3
"""tkgen: random valid .tk kernels, deterministic per seed.

Writes COUNT kernels of SEED to one .tk file (and, with --manifest, a JSON
list of each kernel's parameters, dims and compile-time parameters, from
which tools pick run sizes). Kernel INDEX of SEED is the same whatever
COUNT and START, so `--start INDEX --count 1` reproduces one kernel.

Every kernel is one tkc should accept and compile for sm_80 and sm_90a: an
error from tkc, nvcc or tkc-interp on one is a finding.

  tkgen.py --seed 7 --count 50 -o gen7.tk --manifest gen7.json
  tkgen.py --seed 7 --start 12 --count 1            # kernel 12 alone
  tkgen.py --seed 7 --avoid= -o x.tk               # every feature, known-broken ones too
  tkgen.py --list-features
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen.program import ALL_FEATURES, FEATURES, KNOWN_BROKEN, generate_file  # noqa: E402
from gen.kernels import SKELETONS  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1, help="kernels in the file")
    ap.add_argument("--start", type=int, default=0, help="index of the first kernel")
    ap.add_argument("--avoid", default=KNOWN_BROKEN,
                    help=f"comma list of features to leave out (see --list-features; default {KNOWN_BROKEN})")
    ap.add_argument("-o", "--output", default="-", help=".tk file to write (- for stdout)")
    ap.add_argument("--manifest", default=None, help="JSON file of the kernels' parameters and dims")
    ap.add_argument("--list-features", action="store_true")
    args = ap.parse_args(argv)
    if args.list_features:
        for name in sorted(SKELETONS):
            print(f"{name}: kernels of the `{name}` skeleton")
        for name, what in sorted(FEATURES.items()):
            print(f"{name}: {what}")
        return 0
    avoid = {a for a in args.avoid.split(",") if a}
    unknown = avoid - ALL_FEATURES
    if unknown:
        ap.error(f"unknown feature(s): {', '.join(sorted(unknown))}")
    features = ALL_FEATURES - avoid
    if not features & set(SKELETONS):
        ap.error("--avoid leaves no skeleton")
    text, manifest = generate_file(args.seed, args.count, features, args.start)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    if args.manifest:
        Path(args.manifest).write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
