"""Writes inputs for Inputs/gather.tk and checks what tkc-interp computed
from them against a float64 reference, in plain Python.

    gather.py write DIR KERNEL SIZES SEED   inputs (indices in range, negative
                                            and past the end), outputs
                                            poisoned with NaN
    gather.py check IN OUT KERNEL SIZES SEED

SIZES is R,V (pick_rows, pick_cols, colmax_pick) or N,M (lookup).
"""

import math
import random
import struct
import sys
from pathlib import Path


def bf16_bits(v):
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def indices(rng, count, bound):
    """Every seventh index negative, every fifth past the end, the rest in range."""
    out = []
    for i in range(count):
        out.append(-1 - rng.randrange(100) if i % 7 == 3 else bound + rng.randrange(3) if i % 5 == 2
                   else rng.randrange(bound))
    return out


def problem(kernel, a, b, seed):
    """(tensors to write as {name: (format, values)}, output name, reference)."""
    rng = random.Random(seed)
    if kernel == "pick_rows":
        rows, cols = a, b
        x = [bf16_bits(rng.uniform(-8, 8)) for _ in range(rows * cols)]
        t = indices(rng, rows, cols)
        ref = [2.0 * (bf16_value(x[r * cols + t[r]]) if 0 <= t[r] < cols else 0.0) + 1.0 for r in range(rows)]
        return {"X": ("H", x), "T": ("i", t)}, ("Y", rows), ref
    if kernel == "pick_cols":
        rows, cols = a, b
        x = [rng.uniform(-8, 8) for _ in range(rows * cols)]
        c = indices(rng, cols, rows)
        ref = [f32(x[c[j] * cols + j]) if 0 <= c[j] < rows else 0.0
               for j in range(cols)]
        return {"X": ("f", x), "C": ("i", c)}, ("Y", cols), ref
    if kernel == "lookup":
        n, m = a, b
        w = [rng.uniform(-8, 8) for _ in range(n)]
        i = indices(rng, m, n)
        ref = [f32(w[k]) if 0 <= k < n else 0.0 for k in i]
        return {"W": ("f", w), "I": ("i", i)}, ("Y", m), ref
    if kernel == "colmax_pick":
        rows, cols = a, b
        blocks = (rows + 15) // 16
        # Negative values: a padded row that colmax did not skip would give
        # 0, as an index outside the row does. The last block's indices are
        # all in range, so only its padding could.
        x = [rng.uniform(-8, -1) for _ in range(rows * cols)]
        t = indices(rng, 16 * blocks, cols)
        for r in range(16 * (blocks - 1), 16 * blocks):
            t[r] = rng.randrange(cols)
        x32 = [f32(v) for v in x]
        picked = [x32[r * cols + t[r]] if 0 <= t[r] < cols else 0.0 for r in range(rows)]
        ref = []
        for blk in range(blocks):
            mine = picked[blk * 16:min(rows, blk * 16 + 16)]
            # The kernel adds in f32; rounding is monotonic, so the maximum
            # of the rounded sums is the rounded sum of the maximum.
            ref.extend(f32(max(mine) + c) for c in range(64))
        return {"X": ("f", x), "T": ("i", t)}, ("S", blocks * 64), ref
    raise SystemExit(f"unknown kernel {kernel}")


def write(folder, kernel, a, b, seed):
    tensors, (out, count), _ = problem(kernel, a, b, seed)
    for name, (kind, values) in tensors.items():
        (folder / f"{name}.bin").write_bytes(struct.pack(f"<{len(values)}{kind}", *values))
    (folder / f"{out}.bin").write_bytes(struct.pack("<f", math.nan) * count)


def check(inputs, outputs, kernel, a, b, seed):
    tensors, (out, count), ref = problem(kernel, a, b, seed)
    same = all((inputs / f"{n}.bin").read_bytes() == (outputs / f"{n}.bin").read_bytes() for n in tensors)
    print("inputs unchanged" if same else "inputs CHANGED")
    data = (outputs / f"{out}.bin").read_bytes()
    got = struct.unpack(f"<{count}f", data)
    # Reading and converting are exact: every value must be the reference's.
    wrong = [i for i, (g, r) in enumerate(zip(got, ref)) if not g == r]
    ignored = sum(1 for v in tensors[[n for n in tensors if n in "TCI"][0]][1] if v < 0)
    if wrong:
        print(f"{out} DIFFERS at {len(wrong)} of {count}, first {wrong[0]}: {got[wrong[0]]} != {ref[wrong[0]]}")
    else:
        print(f"{out} exact, {count} elements, {ignored} negative indices")


def main():
    a, b = (int(v) for v in sys.argv[4 if sys.argv[1] == "write" else 5].split(","))
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), sys.argv[3], a, b, int(sys.argv[5]))
    else:
        check(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], a, b, int(sys.argv[6]))


if __name__ == "__main__":
    main()
