#!/usr/bin/env python3
"""Trains the same model twice from one seed, with tkc kernels and with
PyTorch's, on the same batches in the same order; plots both loss curves in
OUT/compare.png (CSV: OUT/compare.csv) and prints each final validation
loss and their ratio. Takes train.py's options (--kernels excepted).

    python3 examples/nanogpt/compare.py --preset char --steps 1000 --out build/nanogpt/compare
"""

import copy
import json
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plot import write_curves  # noqa: E402
from train import build_parser, train  # noqa: E402


def main():
    ap = build_parser()
    ap.add_argument("--variants", default="tkc,torch", help="kernel sets to train, in order")
    args = ap.parse_args()
    runs, failed = {}, []
    for kernels in args.variants.split(","):
        run_args = copy.copy(args)
        run_args.kernels, run_args.out = kernels, args.out / kernels
        try:  # one variant failing still leaves the other's curve
            runs[kernels] = train(run_args)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            print(f"{kernels} FAILED")
            failed.append(kernels)
    if not runs:
        sys.exit("no variant ran")
    summary = {k: {"final_val_loss": log["final_val_loss"],
                   "median_tokens_per_s": sorted(i["tokens_per_s"] for i in log["intervals"])[len(log["intervals"]) // 2]}
               for k, log in runs.items()}
    names = list(runs)
    if len(names) == 2:
        a, b = names
        summary["ratio"] = {f"{a}/{b}": runs[a]["final_val_loss"] / runs[b]["final_val_loss"]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.json").write_text(json.dumps(summary, indent=1))
    files = write_curves(args.out, "compare", runs, f"{args.preset}, seed {args.seed}: " + " vs ".join(names))
    print("| kernels | final val loss | median tokens/s |")
    print("|---|---|---|")
    for k in names:
        print(f"| {k} | {summary[k]['final_val_loss']:.4f} | {summary[k]['median_tokens_per_s']:,.0f} |")
    if "ratio" in summary:
        (key, value), = summary["ratio"].items()
        print(f"val loss ratio {key} = {value:.4f}")
    print("wrote " + ", ".join(str(f) for f in files) + ("" if len(files) > 1 else " (no matplotlib: CSV only)"))
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
