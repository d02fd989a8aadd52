"""Inputs for Inputs/int-wrap.tk (the outputs zeroed) and the check of what tkc-interp computed,
with 32-bit wrapping done in Python's exact integers.

    int-wrap.py write DIR     A and B: products far past 2^53 among them
    int-wrap.py check IN OUT
"""

import struct
import sys
from pathlib import Path

N = 8
A = [123456789, 987654321, -2147483648, 2147483647, 46341, -99999989, 7, 2147483647]
B = [987654321, 987654323, -1, 2147483647, 46341, 100000007, -3, 1]


def wrap(v):
    return (v + 2**31) % 2**32 - 2**31


def read(path):
    return list(struct.unpack(f"<{N}i", Path(path).read_bytes()))


if sys.argv[1] == "write":
    out = Path(sys.argv[2])
    out.joinpath("A.bin").write_bytes(struct.pack(f"<{N}i", *A))
    out.joinpath("B.bin").write_bytes(struct.pack(f"<{N}i", *B))
    for name in "SDP":
        out.joinpath(name + ".bin").write_bytes(bytes(4 * N))
else:
    got = {name: read(Path(sys.argv[3], name + ".bin")) for name in "SDP"}
    want = {"S": [wrap(a + b) for a, b in zip(A, B)], "D": [wrap(a - b) for a, b in zip(A, B)],
            "P": [wrap(a * b) for a, b in zip(A, B)]}
    wrong = [f"{n}[{i}] = {got[n][i]}, expected {want[n][i]}" for n in "SDP" for i in range(N) if got[n][i] != want[n][i]]
    print("\n".join(wrong) if wrong else "int-wrap: all exact")
