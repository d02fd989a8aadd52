"""Writes inputs for examples/residual_layernorm.tk and checks what tkc-interp
computed from them against a float64 reference, in plain Python.

    residual-layernorm.py write DIR R D SEED fwd   X, Y, W, Bias; S, Out, Mean and
                                                   Rstd NaN-poisoned
    residual-layernorm.py write DIR R D SEED bwd   dOut, dS_in, W, and S, Mean, Rstd
                                                   as the forward has them; dS, dWp
                                                   and dBp NaN-poisoned
    residual-layernorm.py dwdb-inputs BWD DIR D    dWp, dBp from the backward's
                                                   results, dW and dBias poisoned
    residual-layernorm.py check IN OUT R D SEED fwd|bwd|dwdb
"""

import math
import random
import struct
import sys
from pathlib import Path

EPS = 1e-5
TOL = 1e-6
NAN_BF16 = 0x7FC0


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def bf16_bits(v):
    """Round-to-nearest-even of an f32 to bf16 (finite values only)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def problem(rows, cols, seed):
    """Inputs as bf16 bits: the residual stream X with an offset per row (so
    that the mean matters), the branch output Y, W, Bias, dOut and dS_in."""
    rng = random.Random(seed)
    offsets = [rng.gauss(0.0, 3.0) for _ in range(rows)]
    x = [bf16_bits(rng.gauss(offsets[i // cols], 1.0)) for i in range(rows * cols)]
    y = [bf16_bits(rng.gauss(0.0, 0.5)) for _ in range(rows * cols)]
    w = [bf16_bits(1.0 + rng.gauss(0.0, 0.2)) for _ in range(cols)]
    b = [bf16_bits(rng.gauss(0.0, 0.2)) for _ in range(cols)]
    dout = [bf16_bits(rng.gauss(0.0, 1.0)) for _ in range(rows * cols)]
    dsin = [bf16_bits(rng.gauss(0.0, 1.0)) for _ in range(rows * cols)]
    return x, y, w, b, dout, dsin


def residual(x, y):
    """S as PyTorch's bf16 `x + y` gives it: the f32 sum rounded to bf16."""
    return [bf16_bits(f32(bf16_value(a) + bf16_value(c))) for a, c in zip(x, y)]


def stats(s, rows, cols):
    """Per row (mean, rstd) in float64 of the bf16 values S."""
    out = []
    for r in range(rows):
        row = [bf16_value(v) for v in s[r * cols:(r + 1) * cols]]
        mean = sum(row) / cols
        var = sum((v - mean) ** 2 for v in row) / cols
        out.append((mean, 1.0 / math.sqrt(var + EPS)))
    return out


def reference(rows, cols, seed):
    """S bits; per row (mean, rstd, mean |S|, Out, dS, bounds of Out and
    dS); dW and dBias with the sums of their terms' magnitudes. Each bound
    is the magnitude of the terms its value is computed from (S and the mean
    before they cancel), the scale of the f32 rounding the kernel may add to
    the bf16 one."""
    x, y, w, b, dout, dsin = problem(rows, cols, seed)
    s = residual(x, y)
    wv, bv = [bf16_value(v) for v in w], [bf16_value(v) for v in b]
    per_row = []
    dw, db, dw_mag, db_mag = [0.0] * cols, [0.0] * cols, [0.0] * cols, [0.0] * cols
    for r, (mean, rstd) in enumerate(stats(s, rows, cols)):
        lo, hi = r * cols, (r + 1) * cols
        shat = [(bf16_value(v) - mean) * rstd for v in s[lo:hi]]
        out = [h * wc + bc for h, wc, bc in zip(shat, wv, bv)]
        out_mag = [(abs(bf16_value(v)) + abs(mean)) * rstd * abs(wc) + abs(bc) for v, wc, bc in zip(s[lo:hi], wv, bv)]
        go = [bf16_value(v) for v in dout[lo:hi]]
        g = [d * wc for d, wc in zip(go, wv)]
        a = sum(g) / cols
        c = sum(gc * h for gc, h in zip(g, shat)) / cols
        dsi = [bf16_value(v) for v in dsin[lo:hi]]
        ds = [i + (gc - a - h * c) * rstd for i, gc, h in zip(dsi, g, shat)]
        ds_mag = [abs(i) + (abs(gc) + abs(a) + abs(h * c)) * rstd for i, gc, h in zip(dsi, g, shat)]
        for j in range(cols):
            dw[j] += go[j] * shat[j]
            db[j] += go[j]
            dw_mag[j] += abs(go[j] * shat[j])
            db_mag[j] += abs(go[j])
        per_row.append((mean, rstd, sum(abs(bf16_value(v)) for v in s[lo:hi]) / cols, out, ds, out_mag, ds_mag))
    return s, per_row, (dw, dw_mag), (db, db_mag)


def pack_bf16(bits):
    return struct.pack(f"<{len(bits)}H", *bits)


def pack_f32(values):
    return struct.pack(f"<{len(values)}f", *values)


def write(folder, rows, cols, seed, kernel):
    x, y, w, b, dout, dsin = problem(rows, cols, seed)
    nan = struct.pack("<f", math.nan)
    poisoned = pack_bf16([NAN_BF16] * (rows * cols))
    if kernel == "fwd":
        files = {"X": pack_bf16(x), "Y": pack_bf16(y), "W": pack_bf16(w), "Bias": pack_bf16(b), "S": poisoned,
                 "Out": poisoned, "Mean": nan * rows, "Rstd": nan * rows}
    else:
        # S as the forward writes it, its statistics rounded to f32.
        s = residual(x, y)
        st = stats(s, rows, cols)
        parts = -(-rows // 32)
        files = {"dOut": pack_bf16(dout), "dS_in": pack_bf16(dsin), "S": pack_bf16(s), "W": pack_bf16(w),
                 "Mean": pack_f32([m for m, _ in st]), "Rstd": pack_f32([r for _, r in st]), "dS": poisoned,
                 "dWp": nan * (parts * cols), "dBp": nan * (parts * cols)}
    for name, data in files.items():
        (folder / f"{name}.bin").write_bytes(data)


def dwdb_inputs(bwd, folder, cols):
    nan = struct.pack("<f", math.nan)
    for name in ("dWp", "dBp"):
        (folder / f"{name}.bin").write_bytes((bwd / f"{name}.bin").read_bytes())
    (folder / "dW.bin").write_bytes(nan * cols)
    (folder / "dBias.bin").write_bytes(nan * cols)


def read(folder, name, kind):
    data = (folder / f"{name}.bin").read_bytes()
    size = struct.calcsize(kind)
    return list(struct.unpack(f"<{len(data) // size}{kind}", data))


def within(got, want, bounds, rel, floor):
    """The worst |got - want| in units of rel * |want| + floor * bound (NaN
    counts as out of bounds); at most 1 passes."""
    worst = 0.0
    for g, w, m in zip(got, want, bounds):
        if math.isnan(g):
            return math.inf
        worst = max(worst, abs(g - w) / (rel * abs(w) + floor * m + 1e-30))
    return worst


def report(name, worst, what):
    print(f"{name} {what if worst <= 1.0 else f'OFF by {worst:.3g} units'}")


def check(inputs, outputs, rows, cols, seed, kernel):
    s, per_row, (dw, dw_mag), (db, db_mag) = reference(rows, cols, seed)
    given = ("X", "Y", "W", "Bias") if kernel == "fwd" else ("dOut", "dS_in", "S", "W", "Mean", "Rstd") \
        if kernel == "bwd" else ("dWp", "dBp")
    same = all((inputs / f"{n}.bin").read_bytes() == (outputs / f"{n}.bin").read_bytes() for n in given)
    print("inputs unchanged" if same else "inputs CHANGED")
    # bf16 keeps 8 bits: the rounding is at most 2^-9 of the value; f32
    # arithmetic adds a few units of 2^-24 of the terms' magnitude.
    if kernel == "fwd":
        print(f"S {'exactly bf16(f32(X + Y))' if read(outputs, 'S', 'H') == s else 'DIFFERENT'}")
        mean, rstd = read(outputs, "Mean", "f"), read(outputs, "Rstd", "f")
        report("Mean", within(mean, [r[0] for r in per_row], [r[2] for r in per_row], 0.0, TOL), "within 1e-6")
        report("Rstd", within(rstd, [r[1] for r in per_row], [0.0] * rows, TOL, 0.0), "within 1e-6")
        out = [bf16_value(v) for v in read(outputs, "Out", "H")]
        report("Out", within(out, [v for r in per_row for v in r[3]], [v for r in per_row for v in r[5]],
                             2.0 ** -8, TOL), "within bf16 rounding")
    elif kernel == "bwd":
        ds = [bf16_value(v) for v in read(outputs, "dS", "H")]
        report("dS", within(ds, [v for r in per_row for v in r[4]], [v for r in per_row for v in r[6]],
                            2.0 ** -8, TOL), "within bf16 rounding")
        # Each block's partials: the column sums of its rows (32 a block).
        dwp, dbp = read(outputs, "dWp", "f"), read(outputs, "dBp", "f")
        parts = -(-rows // 32)
        sums_w = [sum(dwp[p * cols + j] for p in range(parts)) for j in range(cols)]
        sums_b = [sum(dbp[p * cols + j] for p in range(parts)) for j in range(cols)]
        report("dWp", within(sums_w, dw, dw_mag, 0.0, TOL), f"{parts} blocks' columns add up to dW within 1e-6")
        report("dBp", within(sums_b, db, db_mag, 0.0, TOL), f"{parts} blocks' columns add up to dBias within 1e-6")
    else:
        report("dW", within(read(outputs, "dW", "f"), dw, dw_mag, 0.0, TOL), "within 1e-6")
        report("dBias", within(read(outputs, "dBias", "f"), db, db_mag, 0.0, TOL), "within 1e-6")


def main():
    mode = sys.argv[1]
    if mode == "write":
        write(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif mode == "dwdb-inputs":
        dwdb_inputs(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        check(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
              sys.argv[7])


if __name__ == "__main__":
    main()
