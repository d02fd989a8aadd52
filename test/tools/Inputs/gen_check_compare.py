"""Checks gen_check.py's comparison of GPU outputs with the interpreter's,
without a GPU: raw little-endian elements of each type in, a verdict out."""

import math
import struct
import sys

sys.path.insert(0, sys.argv[1])
import gen_check as gc  # noqa: E402


def f32(*v):
    return struct.pack(f"<{len(v)}f", *v)


def bf16(*v):
    return b"".join(struct.pack("<f", x)[2:] for x in v)


def f16(*v):
    return struct.pack(f"<{len(v)}e", *v)


def i32(*v):
    return struct.pack(f"<{len(v)}i", *v)


cases = [
    ("same", f32(1, 2, math.nan), f32(1, 2, math.nan), "f32"),
    ("within", f32(1, 2.01, -4), f32(1, 2, -4), "f32"),
    ("beyond", f32(1, 2.5, -4), f32(1, 2, -4), "f32"),
    ("nan-missing", f32(1, 2, 3), f32(1, 2, math.nan), "f32"),
    ("nan-extra", bf16(1, math.nan), bf16(1, 2), "bf16"),
    ("inf-sign", f16(1, -math.inf), f16(1, math.inf), "f16"),
    ("bf16-decoded", bf16(1.5, -3), bf16(1.5, -3.015625), "bf16"),
    ("i32-exact", i32(3, 4), i32(3, 4), "i32"),
    ("i32-off-by-one", i32(1000, 4), i32(1000, 5), "i32"),
]
for name, got, ref, dtype in cases:
    ok, detail = gc.compare(got, ref, dtype, 2e-2)
    print(f"{name}: {'ok' if ok else 'FAIL'}: {detail}")
