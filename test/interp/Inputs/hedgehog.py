"""Writes inputs for examples/hedgehog.tk and checks what tkc-interp
computed from them against a float64 reference, in plain Python: every
query's window of keys and every earlier key weighed directly (O(N^2)), not
through the kernel's running states.

    hedgehog.py write DIR B H N SEED   Q, K, V, Wq, Wk as bf16 bits, O poisoned with NaN
    hedgehog.py check IN OUT B H N SEED
"""

import math
import random
import struct
import sys
from pathlib import Path

D, F, CHUNK = 64, 64, 64
NAN_BF16 = 0x7FC0


def bf16_bits(v):
    """Round-to-nearest-even of an f32 to bf16 (finite values only)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def problem(b, h, n, seed):
    """Q, K, V [B, H, N, 64] and Wq, Wk [H, 64, 64] as bf16 bits. The
    projections x W are about N(0, 1), so the feature maps are far from
    uniform, and the scores q.k / 8 about N(0, 1)."""
    rng = random.Random(seed)
    draw = lambda count, sigma: [bf16_bits(rng.gauss(0.0, sigma)) for _ in range(count)]
    return {"Q": draw(b * h * n * D, 1.0), "K": draw(b * h * n * D, 1.0), "V": draw(b * h * n * D, 1.0),
            "Wq": draw(h * D * F, 0.125), "Wk": draw(h * D * F, 0.125)}


def feature_map(x, w):
    """softmax(x W) over the 64 features."""
    proj = [sum(x[d] * w[d * F + f] for d in range(D)) for f in range(F)]
    top = max(proj)
    e = [math.exp(p - top) for p in proj]
    total = sum(e)
    return [v / total for v in e]


def reference(b, h, n, seed):
    """O in float64, [B * H * N * 64], and per element the weighted sum of
    |v| over the same weights: the scale of the bf16 roundings of the
    weights and the state."""
    t = {name: [bf16_value(x) for x in bits] for name, bits in problem(b, h, n, seed).items()}
    out, mag = [0.0] * (b * h * n * D), [0.0] * (b * h * n * D)
    for head in range(b * h):
        hh = head % h
        wq, wk = t["Wq"][hh * D * F:(hh + 1) * D * F], t["Wk"][hh * D * F:(hh + 1) * D * F]
        row = lambda name, i: t[name][(head * n + i) * D:(head * n + i + 1) * D]
        fk = [feature_map(row("K", j), wk) for j in range(n)]
        for i in range(n):
            qi, fq = row("Q", i), feature_map(row("Q", i), wq)
            start = i // CHUNK * CHUNK
            weights = [math.exp(sum(x * y for x, y in zip(qi, row("K", j))) / 8.0) for j in range(start, i + 1)]
            weights = [(j, w) for j, w in zip(range(start, i + 1), weights)]
            weights += [(j, sum(x * y for x, y in zip(fq, fk[j]))) for j in range(start)]
            den = sum(w for _, w in weights)
            acc, bound = [0.0] * D, [0.0] * D
            for j, w in weights:
                vj = row("V", j)
                for c in range(D):
                    acc[c] += w * vj[c]
                    bound[c] += w * abs(vj[c])
            base = (head * n + i) * D
            out[base:base + D] = [a / den for a in acc]
            mag[base:base + D] = [m / den for m in bound]
    return out, mag


def write(folder, b, h, n, seed):
    tensors = problem(b, h, n, seed)
    tensors["O"] = [NAN_BF16] * (b * h * n * D)
    for name, bits in tensors.items():
        (folder / f"{name}.bin").write_bytes(struct.pack(f"<{len(bits)}H", *bits))


def read_bf16(folder, name):
    data = (folder / f"{name}.bin").read_bytes()
    return [bf16_value(x) for x in struct.unpack(f"<{len(data) // 2}H", data)]


def check(inputs, outputs, b, h, n, seed):
    names = ["Q", "K", "V", "Wq", "Wk"]
    same = all((inputs / f"{x}.bin").read_bytes() == (outputs / f"{x}.bin").read_bytes() for x in names)
    print("inputs unchanged" if same else "inputs CHANGED")
    want, mag = reference(b, h, n, seed)
    got = read_bf16(outputs, "O")
    # A bound: the feature maps, the weights and the state are each rounded
    # to bf16 (2^-9 of a term per rounding, a few in a row for the linear
    # part), O once more (2^-9 of its value); the f32 sums add far less.
    worst, err_sum, mag_sum = 0.0, 0.0, 0.0
    for g, w, m in zip(got, want, mag):
        if math.isnan(g):
            worst = math.inf
            break
        worst = max(worst, abs(g - w) / (2.0 ** -8 * abs(w) + 2.0 ** -7 * m))
        err_sum += abs(g - w)
        mag_sum += m
    print(f"O {'within bf16 rounding of the terms' if worst <= 1.0 else f'OFF by {worst:.3g} units'}")
    # The roundings have either sign and mostly cancel. A key left out or
    # counted twice (the mask's diagonal, a state a chunk early or late)
    # is far above this.
    mean = err_sum / mag_sum if mag_sum else math.inf
    print(f"O mean error {'below 2^-10 of the terms' if mean <= 2.0 ** -10 else f'{mean:.3g} of the terms'}")
    print(f"(worst {worst:.3g} of the bound, mean {mean:.3g})", file=sys.stderr)


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "write":
        write(Path(args[0]), *map(int, args[1:5]))
    else:
        check(Path(args[0]), Path(args[1]), *map(int, args[2:6]))


if __name__ == "__main__":
    main()
