"""Writes all 256 codes of each 8-bit float type as the inputs of
fp8-files.tk, and checks the interpreter's f32 results against an
independent decoding, and its copy and its own write-back of the inputs
byte for byte (NaN codes only as NaN: the interpreter keeps no payload)."""
import math
import struct
import sys


def decode(code, mantissa, bias, e4m3):
    sign = -1.0 if code & 0x80 else 1.0
    exponent, frac = (code & 0x7f) >> mantissa, code & ((1 << mantissa) - 1)
    top = (1 << (7 - mantissa)) - 1
    if e4m3 and exponent == top and frac == (1 << mantissa) - 1:
        return math.nan
    if not e4m3 and exponent == top:
        return math.nan if frac else sign * math.inf
    if exponent == 0:
        return sign * math.ldexp(frac, 1 - bias - mantissa)
    return sign * math.ldexp(frac + (1 << mantissa), exponent - bias - mantissa)


FORMATS = {"A": (3, 7, True), "E": (2, 15, False)}


def same(x, y):
    return (math.isnan(x) and math.isnan(y)) or (x == y and math.copysign(1, x) == math.copysign(1, y))


def main():
    mode, folder = sys.argv[1], sys.argv[2]
    if mode == "write":
        for name in FORMATS:
            open(f"{folder}/{name}.bin", "wb").write(bytes(range(256)))
        for name in ("YA", "YE"):
            open(f"{folder}/{name}.bin", "wb").write(struct.pack("<256f", *([math.nan] * 256)))
        open(f"{folder}/CA.bin", "wb").write(bytes(256))
        return
    out = sys.argv[3]
    for name, fmt in FORMATS.items():
        back = open(f"{out}/{name}.bin", "rb").read()
        bad = [c for c in range(256) if not same(decode(back[c], *fmt), decode(c, *fmt))]
        print(f"{name} written back: {len(bad)} differ")
        got = struct.unpack("<256f", open(f"{out}/Y{name}.bin", "rb").read())
        bad = [c for c in range(256) if not same(got[c], decode(c, *fmt))]
        print(f"Y{name}: {len(bad)} differ" + (f" (first {bad[0]:#04x}: {got[bad[0]]})" if bad else ""))
    copy = open(f"{out}/CA.bin", "rb").read()
    bad = [c for c in range(256) if not same(decode(copy[c], *FORMATS["A"]), decode(c, *FORMATS["A"]))]
    print(f"CA: {len(bad)} differ")


main()
