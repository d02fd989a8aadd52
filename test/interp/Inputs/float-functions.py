"""Writes the inputs of float-functions.tk and checks what tkc-interp
computed for them against Python's math, element by element."""

import math
import struct
import sys
from pathlib import Path

COLS = 16
# Zero, small and large magnitudes of both signs, where sigmoid and silu
# saturate (and e^-x overflows f32) and erf reaches +-1.
SPECIAL = [0.0, 1e-3, -1e-3, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 6.0, -6.0, 20.0, -20.0, 100.0, -100.0, -88.5]


def values(rows):
    return [SPECIAL[i % COLS] + (i // COLS) * 0.0625 for i in range(rows * COLS)]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def sigmoid(v):
    return 1 / (1 + math.exp(-v)) if v > -700 else 0.0


def main():
    mode, rows = sys.argv[1], int(sys.argv[3])
    folder = Path(sys.argv[2])
    x = [f32(v) for v in values(rows)]
    if mode == "write":
        (folder / "X.bin").write_bytes(struct.pack(f"<{len(x)}f", *x))
        # The outputs start as NaN, so that an element never written shows.
        for name, count in (("E", len(x)), ("S", len(x)), ("U", len(x)), ("T", rows)):
            (folder / f"{name}.bin").write_bytes(struct.pack(f"<{count}f", *[math.nan] * count))
        return
    expect = {"E": [math.erf(v) for v in x], "S": [sigmoid(v) for v in x], "U": [v * sigmoid(v) for v in x]}
    scalar = math.erf(1) + 0.5 + -2 * sigmoid(-2.0)
    expect["T"] = [scalar] * rows
    for name, want in expect.items():
        data = (folder / f"{name}.bin").read_bytes()
        got = struct.unpack(f"<{len(data) // 4}f", data)
        errors = [abs(g - w) / max(abs(w), 1e-30) if w != 0 else abs(g) for g, w in zip(got, want)]
        worst = max(math.inf if math.isnan(e) else e for e in errors)
        print(f"{name}: {len(got)} values, largest relative error {'below 1e-6' if worst < 1e-6 else worst}")


if __name__ == "__main__":
    main()
