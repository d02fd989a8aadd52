"""Writes inputs for examples/based.tk and checks what tkc-interp computed
from them against a float64 reference, in plain Python: the quadratic form
summed directly over every pair j <= i (O(N^2)), not the kernel's chunks.

    based.py write DIR B H N SEED   Q, K, V as bf16 bits, O poisoned with NaN
    based.py check IN OUT B H N SEED
"""

import math
import random
import struct
import sys
from pathlib import Path

F, D = 16, 64
NAN_BF16 = 0x7FC0


def bf16_bits(v):
    """Round-to-nearest-even of an f32 to bf16 (finite values only)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def problem(b, h, n, seed):
    """Q, K, V as bf16 bits, [B, H, N, 16 or 64] row-major. q.k is spread
    over about -1.5 .. 1.5, so each of the three terms matters."""
    rng = random.Random(seed)
    q = [bf16_bits(rng.gauss(0.0, 0.35)) for _ in range(b * h * n * F)]
    k = [bf16_bits(rng.gauss(0.0, 0.35)) for _ in range(b * h * n * F)]
    v = [bf16_bits(rng.gauss(0.0, 1.0)) for _ in range(b * h * n * D)]
    return q, k, v


def reference(b, h, n, seed):
    """O in float64, [B * H * N * 64], and per element the sum of its terms'
    magnitudes, the weights taken over |q_a k_a|: the scale of the bf16
    roundings of the weights, the states and the expanded features."""
    q, k, v = problem(b, h, n, seed)
    q, k, v = [bf16_value(x) for x in q], [bf16_value(x) for x in k], [bf16_value(x) for x in v]
    out, mag = [0.0] * (b * h * n * D), [0.0] * (b * h * n * D)
    for head in range(b * h):
        for i in range(n):
            qi = q[(head * n + i) * F:(head * n + i + 1) * F]
            acc, bound = [0.0] * D, [0.0] * D
            for j in range(i + 1):
                kj = k[(head * n + j) * F:(head * n + j + 1) * F]
                dot = sum(x * y for x, y in zip(qi, kj))
                absdot = sum(abs(x * y) for x, y in zip(qi, kj))
                w = 1.0 + dot + dot * dot / 2.0
                wmag = 1.0 + absdot + absdot * absdot / 2.0
                vj = v[(head * n + j) * D:(head * n + j + 1) * D]
                for c in range(D):
                    acc[c] += w * vj[c]
                    bound[c] += wmag * abs(vj[c])
            base = (head * n + i) * D
            out[base:base + D] = acc
            mag[base:base + D] = bound
    return out, mag


def write(folder, b, h, n, seed):
    q, k, v = problem(b, h, n, seed)
    pack = lambda bits: struct.pack(f"<{len(bits)}H", *bits)
    (folder / "Q.bin").write_bytes(pack(q))
    (folder / "K.bin").write_bytes(pack(k))
    (folder / "V.bin").write_bytes(pack(v))
    (folder / "O.bin").write_bytes(pack([NAN_BF16] * (b * h * n * D)))


def read_bf16(folder, name):
    data = (folder / f"{name}.bin").read_bytes()
    return [bf16_value(x) for x in struct.unpack(f"<{len(data) // 2}H", data)]


def check(inputs, outputs, b, h, n, seed):
    same = all((inputs / f"{x}.bin").read_bytes() == (outputs / f"{x}.bin").read_bytes() for x in "QKV")
    print("inputs unchanged" if same else "inputs CHANGED")
    want, mag = reference(b, h, n, seed)
    got = read_bf16(outputs, "O")
    # A bound: the weights, the states and the features are each rounded to
    # bf16 once or twice on the way (at most 2^-9 of each term's magnitude
    # per rounding, four in a row for the quadratic term), and O once more
    # (2^-9 of its value); the f32 sums add far less.
    worst, err_sum, mag_sum = 0.0, 0.0, 0.0
    for g, w, m in zip(got, want, mag):
        if math.isnan(g):
            worst = math.inf
            break
        worst = max(worst, abs(g - w) / (2.0 ** -8 * abs(w) + 2.0 ** -7 * m))
        err_sum += abs(g - w)
        mag_sum += m
    print(f"O {'within bf16 rounding of the terms' if worst <= 1.0 else f'OFF by {worst:.3g} units'}")
    # The roundings have either sign and mostly cancel: over a few chunks of
    # rows the mean error is about 2^-13 of the terms' magnitude (one row
    # alone shows O's own rounding, up to 2^-9). A term left out or counted
    # twice (the mask's diagonal, a state a chunk early) is far above the
    # bound, and weights off by 0.01 (about 2^-7 of them) fail this.
    mean = err_sum / mag_sum if mag_sum else math.inf
    print(f"O mean error {'below 2^-12 of the terms' if mean <= 2.0 ** -12 else f'{mean:.3g} of the terms'}")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "write":
        write(Path(args[0]), *map(int, args[1:5]))
    else:
        check(Path(args[0]), Path(args[1]), *map(int, args[2:6]))


if __name__ == "__main__":
    main()
