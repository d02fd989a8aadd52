"""Writes inputs for examples/based_bwd.tk and checks what tkc-interp computed
from them against a float64 reference, in plain Python: the gradients of
based.tk's forward summed directly over every pair j <= i (O(N^2)), not
the kernels' chunks or states.

    based_bwd.py selftest                 the reference gradients against
                                          central differences of the forward
    based_bwd.py write DIR B H N SEED     Q, K, V, dO as bf16 bits, dQ, dK,
                                          dV poisoned with NaN, and the
                                          reference (ref.bin) beside them
    based_bwd.py check IN OUT NAMES       NAMES: the outputs to check, as
                                          dQ or dK,dV
"""

import math
import random
import struct
import sys
from pathlib import Path

F, D = 16, 64
NAN_BF16 = 0x7FC0
GRADS = ("dQ", "dK", "dV")


def bf16_bits(v):
    """Round-to-nearest-even of an f32 to bf16 (finite values only)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def dot(x, y):
    return sum(a * b for a, b in zip(x, y))


def forward(q, k, v):
    """O[i] = sum over j <= i of w(q_i.k_j) v_j, w(a) = 1 + a + a^2 / 2, for
    one head: q, k, v are lists of rows."""
    out = []
    for i, qi in enumerate(q):
        acc = [0.0] * len(v[0])
        for j in range(i + 1):
            a = dot(qi, k[j])
            w = 1.0 + a + a * a / 2.0
            acc = [x + w * y for x, y in zip(acc, v[j])]
        out.append(acc)
    return out


def gradients(q, k, v, do):
    """dQ, dK, dV of sum(O * dO) for one head, and per element the sum of
    its terms' magnitudes (dot products taken over the factors' absolute
    values): the scale of the kernels' bf16 roundings. With A = q_i.k_j and
    dW = dO_i.v_j, pair (i, j) adds w(A) dO_i to dV_j and dW w'(A) = dW
    (1 + A) times k_j to dQ_i and times q_i to dK_j."""
    n, f, d = len(q), len(q[0]), len(v[0])
    grad = {g: [[0.0] * w for _ in range(n)] for g, w in zip(GRADS, (f, f, d))}
    mag = {g: [[0.0] * w for _ in range(n)] for g, w in zip(GRADS, (f, f, d))}
    for i in range(n):
        for j in range(i + 1):
            a, absa = dot(q[i], k[j]), dot(map(abs, q[i]), map(abs, k[j]))
            dw, absdw = dot(do[i], v[j]), dot(map(abs, do[i]), map(abs, v[j]))
            w, wmag = 1.0 + a + a * a / 2.0, 1.0 + absa + absa * absa / 2.0
            da, damag = dw * (1.0 + a), absdw * (1.0 + absa)
            for x in range(f):
                grad["dQ"][i][x] += da * k[j][x]
                mag["dQ"][i][x] += damag * abs(k[j][x])
                grad["dK"][j][x] += da * q[i][x]
                mag["dK"][j][x] += damag * abs(q[i][x])
            for c in range(d):
                grad["dV"][j][c] += w * do[i][c]
                mag["dV"][j][c] += wmag * abs(do[i][c])
    return grad, mag


def selftest():
    """The gradients of L = sum(O * dO) against central differences of the
    forward, on a tiny head of arbitrary values (float64 throughout: the
    differences are exact to about 1e-9 of L's scale)."""
    rng = random.Random(7)
    n, f, d = 5, 3, 2
    rows = lambda w: [[rng.uniform(-1.0, 1.0) for _ in range(w)] for _ in range(n)]
    q, k, v, do = rows(f), rows(f), rows(d), rows(d)
    loss = lambda q, k, v: sum(dot(o, g) for o, g in zip(forward(q, k, v), do))
    grad, _ = gradients(q, k, v, do)
    h, worst = 1e-5, 0.0
    for name, t in zip(GRADS, (q, k, v)):
        for r in range(n):
            for c in range(len(t[r])):
                keep = t[r][c]
                t[r][c] = keep + h
                up = loss(q, k, v)
                t[r][c] = keep - h
                down = loss(q, k, v)
                t[r][c] = keep
                numeric = (up - down) / (2.0 * h)
                worst = max(worst, abs(numeric - grad[name][r][c]) / (1.0 + abs(numeric)))
    print(f"reference gradients {'match' if worst < 1e-7 else 'DIFFER from'} central differences"
          f" (worst {worst:.1e})")


def problem(b, h, n, seed):
    """Q, K, V, dO as bf16 bits, [B, H, N, 16 or 64] row-major. q.k is
    spread over about -1.5 .. 1.5, so each of w's three terms matters."""
    rng = random.Random(seed)
    q = [bf16_bits(rng.gauss(0.0, 0.35)) for _ in range(b * h * n * F)]
    k = [bf16_bits(rng.gauss(0.0, 0.35)) for _ in range(b * h * n * F)]
    v = [bf16_bits(rng.gauss(0.0, 1.0)) for _ in range(b * h * n * D)]
    do = [bf16_bits(rng.gauss(0.0, 1.0)) for _ in range(b * h * n * D)]
    return q, k, v, do


def heads(bits, n, width):
    """bf16 bits as one list of rows per head."""
    vals = [bf16_value(x) for x in bits]
    return [[vals[(s + i) * width:(s + i + 1) * width] for i in range(n)] for s in range(0, len(vals) // width, n)]


def pack_bf16(bits):
    return struct.pack(f"<{len(bits)}H", *bits)


def write(folder, b, h, n, seed):
    q, k, v, do = problem(b, h, n, seed)
    for name, bits in zip(("Q", "K", "V", "dO"), (q, k, v, do)):
        (folder / f"{name}.bin").write_bytes(pack_bf16(bits))
    for name, width in zip(GRADS, (F, F, D)):
        (folder / f"{name}.bin").write_bytes(pack_bf16([NAN_BF16] * (b * h * n * width)))
    # The reference, computed once for every kernel and target checked:
    # per gradient its values, then its magnitudes, as float64.
    ref = {g: ([], []) for g in GRADS}
    for hq, hk, hv, hd in zip(heads(q, n, F), heads(k, n, F), heads(v, n, D), heads(do, n, D)):
        grad, mag = gradients(hq, hk, hv, hd)
        for g in GRADS:
            ref[g][0].extend(x for row in grad[g] for x in row)
            ref[g][1].extend(x for row in mag[g] for x in row)
    flat = [x for g in GRADS for part in ref[g] for x in part]
    (folder / "ref.bin").write_bytes(struct.pack(f"<{len(flat)}d", *flat))


def read_bf16(folder, name):
    data = (folder / f"{name}.bin").read_bytes()
    return [bf16_value(x) for x in struct.unpack(f"<{len(data) // 2}H", data)]


def check(inputs, outputs, names):
    same = all((inputs / f"{x}.bin").read_bytes() == (outputs / f"{x}.bin").read_bytes() for x in ("Q", "K", "V", "dO"))
    print("inputs unchanged" if same else "inputs CHANGED")
    data = (inputs / "ref.bin").read_bytes()
    flat = struct.unpack(f"<{len(data) // 8}d", data)
    sizes = {g: len((inputs / f"{g}.bin").read_bytes()) // 2 for g in GRADS}
    at = 0
    for g in GRADS:
        want, mag = flat[at:at + sizes[g]], flat[at + sizes[g]:at + 2 * sizes[g]]
        at += 2 * sizes[g]
        if g not in names:
            continue
        got = read_bf16(outputs, g)
        # As for the forward (Inputs/based.py): the weights, their gradient,
        # the states and the expanded features are each rounded to bf16 once
        # or twice on the way (at most 2^-9 of each term's magnitude per
        # rounding), and the result once more (2^-9 of its value); the f32
        # sums add far less.
        worst, err_sum, mag_sum = 0.0, 0.0, 0.0
        for x, w, m in zip(got, want, mag):
            if math.isnan(x):
                worst = math.inf
                break
            worst = max(worst, abs(x - w) / (2.0 ** -8 * abs(w) + 2.0 ** -7 * m))
            # The mean leaves out most of the result's own rounding, which
            # over one short chunk (few terms, little cancellation) is
            # close to 2^-12 of them by itself.
            err_sum += abs(x - bf16_value(bf16_bits(w)))
            mag_sum += m
        print(f"{g} {'within bf16 rounding of the terms' if worst <= 1.0 else f'OFF by {worst:.3g} units'}")
        # The roundings have either sign and mostly cancel: a term left out
        # or counted twice (the mask's diagonal, a state a chunk early or
        # late) is far above this.
        mean = err_sum / mag_sum if mag_sum else math.inf
        print(f"{g} mean error {'below 2^-12 of the terms' if mean <= 2.0 ** -12 else f'{mean:.3g} of the terms'}")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "selftest":
        selftest()
    elif mode == "write":
        write(Path(args[0]), *map(int, args[1:5]))
    else:
        check(Path(args[0]), Path(args[1]), args[2].split(","))


if __name__ == "__main__":
    main()
