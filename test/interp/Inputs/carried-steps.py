"""Checks what tkc-interp computed for Inputs/carried-steps.tk against a
float64 reference, in plain Python.

    carried-steps.py KERNEL IN OUT M N

(N is S's second extent: the columns of X, or of B for gemm_colsum.)

IN holds the inputs tkc-interp used (--save-inputs), OUT its results
(--outputs). Prints `S matches` or where it is off.
"""

import math
import struct
import sys
from pathlib import Path


def read_f32(path):
    data = path.read_bytes()
    return list(struct.unpack(f"<{len(data) // 4}f", data))


def read_bf16(path):
    data = path.read_bytes()
    bits = struct.unpack(f"<{len(data) // 2}H", data)
    return [struct.unpack("<f", struct.pack("<I", b << 16))[0] for b in bits]


def reference(kernel, given, rows, cols, parts):
    """S as the kernel defines it, NaN where the kernel writes nothing."""
    s = [[math.nan] * cols for _ in range(parts)]
    if kernel == "gemm_colsum":
        a, b = read_bf16(given / "A.bin"), read_bf16(given / "B.bin")
        inner = len(a) // rows
        for p in range(parts):
            for c in range(cols):
                s[p][c] = sum(a[r * inner + i] * b[i * cols + c]
                              for r in range(p * 128, min(rows, p * 128 + 128)) for i in range(inner))
        return s
    x = read_f32(given / "X.bin")
    at = lambda r, c: x[r * cols + c]
    if kernel in ("colsum_steps", "colmax_steps"):
        for p in range(parts):
            block = range(p * 512, min(rows, p * 512 + 512))
            for c in range(cols):
                if kernel == "colsum_steps":
                    s[p][c] = sum(2.0 * at(r, c) - 1.0 for r in block)
                else:
                    s[p][c] = max(5.0 - 10.0 * at(r, c) for r in block)
    elif kernel == "shifted_steps":
        for c in range(cols):
            s[0][c] = sum(at(r, c) for r in range(rows))
    elif kernel == "kept_rows":
        for p in range(parts):
            for c in range(cols):
                total = 0.0
                for r in range(p * 64, p * 64 + 64):
                    v = 1.0
                    if r < rows:
                        for _ in range(3):
                            v = v * 0.5 + at(r, c)
                    total += v
                s[p][c] = total
    elif kernel == "fold_steps":
        for b in range(64):
            v = 0.0
            for r in range(b, rows, 64):
                v = v * 0.5 + at(r, 0)
            s[0][b] = v
    else:
        raise SystemExit(f"unknown kernel {kernel}")
    return s


def main():
    kernel, given, results, rows, cols = sys.argv[1:]
    rows, cols = int(rows), int(cols)
    got = read_f32(Path(results) / "S.bin")
    parts = len(got) // cols
    want = reference(kernel, Path(given), rows, cols, parts)
    worst, where = 0.0, None
    for p in range(parts):
        for c in range(cols):
            w, g = want[p][c], got[p * cols + c]
            if math.isnan(w):
                continue  # not written: whatever the poisoned file held
            err = abs(g - w) / max(1.0, abs(w))
            if not err <= 1e-5:
                if where is None or not worst >= err:
                    worst, where = err, (p, c, g, w)
    if where is None:
        print("S matches")
    else:
        p, c, g, w = where
        print(f"S OFF at [{p}, {c}]: {g} instead of {w}")


if __name__ == "__main__":
    main()
