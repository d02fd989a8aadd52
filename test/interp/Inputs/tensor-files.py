"""Writes the inputs of tensor-files.tk and checks the outputs tkc-interp
wrote for them, element by element, in each element type's own encoding."""

import math
import struct
import sys
from pathlib import Path

COLS = 16


def half_bits(v):
    return struct.unpack("<H", struct.pack("<e", v))[0]


def bf16_bits(v):  # exact for the values used here
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16


def inputs(rows):
    x = [(i % 7 - 3) * 0.25 + (i // 7) * 0.125 for i in range(rows * COLS)]
    h = [(-1) ** i * (i % 11) * 0.5 for i in range(rows * COLS)]
    b = [(i % 5 - 2) * 1.5 for i in range(rows * COLS)]
    nan = [math.nan] * (rows * COLS)
    return {"X": ("f", x), "H": ("e", h), "B": ("bf16", b), "Y": ("f", nan), "I": ("i", [0] * (rows * COLS)),
            "G": ("e", nan), "C": ("bf16", nan)}


def pack(kind, values):
    if kind == "bf16":
        return b"".join(struct.pack("<H", bf16_bits(v) if not math.isnan(v) else 0x7fc0) for v in values)
    return b"".join(struct.pack("<" + kind, v) for v in values)


def main():
    mode, folder = sys.argv[1], Path(sys.argv[2])
    if mode == "same":
        names = [n for n in "XYIGC" if (folder / f"{n}.bin").read_bytes() == (Path(sys.argv[3]) / f"{n}.bin").read_bytes()]
        print(" ".join(names), "identical")
        return
    if mode == "nan":
        data = folder.read_bytes()
        values = struct.unpack(f"<{len(data) // 4}f", data)
        print(f"{sum(map(math.isnan, values))} of {len(values)} NaN")
        return
    if mode == "write":
        for name, (kind, values) in inputs(int(sys.argv[3])).items():
            (folder / f"{name}.bin").write_bytes(pack(kind, values))
        return
    out, rows = Path(sys.argv[3]), int(sys.argv[4])
    given = inputs(rows)
    same = all((folder / f"{n}.bin").read_bytes() == (out / f"{n}.bin").read_bytes() for n in ("X", "H", "B"))
    print("inputs unchanged" if same else "inputs CHANGED")
    x, h, b = given["X"][1], given["H"][1], given["B"][1]
    n = rows * COLS
    expected = {
        "Y": pack("f", [struct.unpack("<f", struct.pack("<f", x[i] * 2.0 + h[i]))[0] for i in range(n)]),
        "I": pack("i", [(i // COLS) % 64 * 100 + i % COLS for i in range(n)]),
        "G": pack("e", [x[i] * 1000.0 for i in range(n)]),
        "C": pack("bf16", [b[i] * 0.5 for i in range(n)]),
    }
    for name, want in expected.items():
        print(f"{name} {'exact' if (out / f'{name}.bin').read_bytes() == want else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
