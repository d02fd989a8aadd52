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
With --hottest, instead: the instructions with the most stall samples, then
those with at least 0.3% of them in program order.

    python3 tools/gpu/sass_mix.py NAME.sass.csv [--unit COUNT] [--window N]
    python3 tools/gpu/sass_mix.py NAME.sass.csv --hottest
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
    """The table's columns and one dict per instruction, in program order."""
    rows = list(csv.reader(open(path, newline="")))
    head = next((i for i, r in enumerate(rows) if "Source" in r), None)
    if head is None:
        sys.exit(f"{path}: no 'Source' column (not an ncu --page source --csv export)")
    columns = rows[head]
    return columns, [dict(zip(columns, r)) for r in rows[head + 1:] if len(r) == len(columns)]


def hottest(columns, body):
    keys = [c for c in columns if "Sampling" in c and "All" in c] or [c for c in columns if "Sampling" in c]
    if not keys:
        sys.exit("no sampling column in: " + ", ".join(columns))
    key = keys[0]
    total = sum(number(r[key]) for r in body) or 1.0
    print(f"columns: {', '.join(columns)}")
    print(f"total samples {total:.0f}")

    def line(i):
        return f"{i:5d} {100 * number(body[i][key]) / total:5.1f}%  {body[i]['Source'][:90]}"
    for i in sorted(range(len(body)), key=lambda i: -number(body[i][key]))[:60]:
        print(line(i))
    print("\nin program order, the instructions with >= 0.3% of the samples:")
    for i in range(len(body)):
        if number(body[i][key]) / total >= 0.003:
            print(line(i))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--unit", type=float, default=0, help="executions that count as one unit")
    parser.add_argument("--window", type=int, default=50, help="instructions per window")
    parser.add_argument("--hottest", action="store_true", help="the instructions with the most stall samples")
    args = parser.parse_args()
    columns, body = read(args.csv)
    if args.hottest:
        return hottest(columns, body)
    stalls = [c for c in columns if c.startswith("stall_") and "Not Issued" not in c]
    if not body or not stalls or "Instructions Executed" not in columns:
        sys.exit(f"{args.csv}: no per-instruction stall or execution columns")

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
