#!/usr/bin/env python3
"""What one kernel's SASS executes and where its warps wait, per iteration:
reads the per-instruction table that tools/gpu/stall_lines.sh exports from
Nsight Compute (NAME.sass.csv) and prints

  - the stall reasons over the whole kernel, as shares of the samples;
  - the executed instructions by opcode, per unit of work: by default the
    execution count of the most executed mma instruction (HMMA or HGMMA),
    which is one warp's pass through the main loop;
  - the program in windows of 50 instructions: each window's share of the
    samples with its top stall reasons, and its opcodes per unit.

A branch around every one of a loop's memory operations, or a copy loop
that should have been one round, shows up as BSSY, BRA and ISETP per unit.

    python3 tools/gpu/sass_mix.py NAME.sass.csv [--unit COUNT] [--window N]
"""
import argparse
import collections
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    words = source.split()
    if not words:
        return ""
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def read(path):
    rows = list(csv.reader(open(path, newline="")))
    head = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if head is None:
        sys.exit(f"{path}: no 'Source' column (not an ncu --page source --csv export)")
    columns = rows[head]
    body = [dict(zip(columns, r)) for r in rows[head + 1:] if len(r) == len(columns)]
    stalls = [c for c in columns if c.startswith("stall_") and "Not Issued" not in c]
    if not body or not stalls or "Instructions Executed" not in columns:
        sys.exit(f"{path}: no per-instruction stall or execution columns")
    return body, stalls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--unit", type=float, default=0, help="executions that count as one unit")
    parser.add_argument("--window", type=int, default=50, help="instructions per window")
    args = parser.parse_args()
    body, stalls = read(args.csv)

    def executed(r):
        return number(r["Instructions Executed"])

    unit = args.unit or max((executed(r) for r in body if opcode(r["Source"]) in ("HMMA", "HGMMA")), default=0)
    if unit <= 0:
        sys.exit("no mma instruction to count a unit by; pass --unit")

    totals = collections.Counter()
    for r in body:
        for c in stalls:
            totals[c[len("stall_"):]] += number(r[c])
    samples = sum(totals.values()) or 1.0
    print("stall reasons: " + "  ".join(f"{k} {100 * v / samples:.1f}%" for k, v in totals.most_common(10)))

    mix = collections.Counter()
    for r in body:
        mix[opcode(r["Source"])] += executed(r) / unit
    print(f"unit: {unit:.0f} executions; {sum(mix.values()):.0f} instructions per unit")
    print("  " + "  ".join(f"{k} {v:.1f}" for k, v in mix.most_common(40) if k))

    print(f"\nwindows of {args.window} instructions: samples (top reasons) | instructions per unit")
    for start in range(0, len(body), args.window):
        window = body[start:start + args.window]
        reasons = collections.Counter()
        ops = collections.Counter()
        for r in window:
            for c in stalls:
                reasons[c[len("stall_"):]] += number(r[c])
            if executed(r) / unit >= 0.05:
                ops[opcode(r["Source"])] += executed(r) / unit
        share = sum(reasons.values()) / samples
        if share < 0.01 and not ops:
            continue
        top = " ".join(f"{k} {100 * v / samples:.1f}" for k, v in reasons.most_common(3) if v)
        print(f"{start:5d} {100 * share:5.1f}% ({top}) | " + " ".join(f"{k} {v:.1f}" for k, v in ops.most_common(8)))


if __name__ == "__main__":
    main()
