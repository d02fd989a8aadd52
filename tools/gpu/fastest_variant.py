#!/usr/bin/env python3
"""Which schedule variant of a workload ran fastest in a bench.json
(tools/gpu/bench.py): the candidate of one target (`tkc.sm_90a`, or
`tkc.sm_90a@VARIANT` built by variants.sh) with the least total time over
the workload's sizes. Prints the variant's name, or `-` for the example's
own schedule, then each candidate's total milliseconds.

    python3 tools/gpu/fastest_variant.py bench.json gelu_bwd [--target sm_90a]
"""

import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_json")
    ap.add_argument("workload")
    ap.add_argument("--target", default="sm_90a")
    args = ap.parse_args()
    own = f"tkc.{args.target}"
    totals = {}
    for row in json.load(open(args.bench_json))["rows"]:
        if row["workload"] != args.workload:
            continue
        for name, ms in row["ms"].items():
            if name == own or name.startswith(own + "@"):
                totals[name] = totals.get(name, 0.0) + ms
    if not totals:
        raise SystemExit(f"no {own} timings of {args.workload} in {args.bench_json}")
    best = min(totals, key=totals.get)
    print(best.partition("@")[2] or "-")
    for name, ms in sorted(totals.items(), key=lambda kv: kv[1]):
        print(f"  {name}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
