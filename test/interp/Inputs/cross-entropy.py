"""Writes inputs for examples/cross_entropy.tk and checks what tkc-interp
computed from them against a float64 reference, in plain Python.

    cross-entropy.py write DIR R V SEED   logits X, targets T (some ignored),
                                          dLoss, the reference Lse, and the
                                          outputs poisoned with NaN
    cross-entropy.py check IN OUT R V SEED KERNEL...
"""

import math
import random
import struct
import sys
from pathlib import Path


def bf16_bits(v):
    """Round-to-nearest-even of an f32 to bf16 (finite values only)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def problem(rows, cols, seed):
    """(logits as bf16 bits, targets, dLoss); the logits spread wide enough
    that the running maximum changes between chunks."""
    rng = random.Random(seed)
    x = [bf16_bits(rng.gauss(0.0, 4.0) + (6.0 if rng.random() < 0.01 else 0.0)) for _ in range(rows * cols)]
    t = []
    for r in range(rows):
        kind = r % 7
        t.append(-100 if kind == 3 else -1 if kind == 5 else 0 if kind == 1 else cols - 1 if kind == 2
                 else rng.randrange(cols))
    dloss = [rng.randrange(1, 64) / 64.0 for _ in range(rows)]
    return x, t, dloss


def reference(rows, cols, seed):
    """Per row: (lse, loss, [dX]) in float64."""
    x, t, dloss = problem(rows, cols, seed)
    out = []
    for r in range(rows):
        row = [bf16_value(b) for b in x[r * cols:(r + 1) * cols]]
        m = max(row)
        s = sum(math.exp(v - m) for v in row)
        lse = m + math.log(s)
        ignored = t[r] < 0
        loss = 0.0 if ignored else lse - row[t[r]]
        scale = 0.0 if ignored else dloss[r]
        dx = [(math.exp(v - lse) - (1.0 if c == t[r] else 0.0)) * scale for c, v in enumerate(row)]
        out.append((lse, loss, dx, ignored))
    return out


def write(folder, rows, cols, seed):
    x, t, dloss = problem(rows, cols, seed)
    ref = reference(rows, cols, seed)
    nan = struct.pack("<f", math.nan)
    files = {
        "X": struct.pack(f"<{rows * cols}H", *x),
        "T": struct.pack(f"<{rows}i", *t),
        "dLoss": struct.pack(f"<{rows}f", *dloss),
        "Lse": struct.pack(f"<{rows}f", *[r[0] for r in ref]),
        "Loss": nan * rows,
        "dX": struct.pack("<H", 0x7FC0) * (rows * cols),
    }
    for name, data in files.items():
        (folder / f"{name}.bin").write_bytes(data)


def read(folder, name, kind):
    data = (folder / f"{name}.bin").read_bytes()
    size = struct.calcsize(kind)
    return list(struct.unpack(f"<{len(data) // size}{kind}", data))


def check(inputs, outputs, rows, cols, seed, kernels):
    ref = reference(rows, cols, seed)
    ignored = sum(1 for r in ref if r[3])
    same = all((inputs / f"{n}.bin").read_bytes() == (outputs / f"{n}.bin").read_bytes() for n in ("X", "T", "dLoss")
               if (outputs / f"{n}.bin").exists())
    print("inputs unchanged" if same else "inputs CHANGED")
    if "fwd" in kernels:
        lse, loss = read(outputs, "Lse", "f"), read(outputs, "Loss", "f")
        lse_err = max(abs(g - r[0]) / max(1.0, abs(r[0])) for g, r in zip(lse, ref))
        loss_err = max(abs(g - r[1]) / max(1.0, abs(r[1])) for g, r in zip(loss, ref))
        zeros = all(g == 0.0 for g, r in zip(loss, ref) if r[3])
        print(f"Lse {'within 1e-5' if lse_err <= 1e-5 else f'OFF by {lse_err}'}")
        print(f"Loss {'within 1e-5' if loss_err <= 1e-5 else f'OFF by {loss_err}'}, "
              f"{ignored} ignored rows {'exactly 0' if zeros else 'NOT 0'}")
    if "bwd" in kernels:
        dx = [bf16_value(b) for b in read(outputs, "dX", "H")]
        worst, zeros = 0.0, True
        for r, (_, _, want, ign) in enumerate(ref):
            got = dx[r * cols:(r + 1) * cols]
            if ign:
                zeros = zeros and all(g == 0.0 for g in got)
                continue
            # bf16 keeps 8 bits: half a unit in the last place is 2^-9 of the value.
            worst = max(worst, max(abs(g - w) / (abs(w) * 2.0 ** -8 + 1e-30) for g, w in zip(got, want)))
        print(f"dX {'within bf16 rounding' if worst <= 1.0 else f'OFF by {worst} bf16 units'}, "
              f"{ignored} ignored rows {'exactly 0' if zeros else 'NOT 0'}")


def main():
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        check(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
              sys.argv[7:])


if __name__ == "__main__":
    main()
