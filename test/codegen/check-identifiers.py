#!/usr/bin/env python3
"""Checks that a source name can never mean something else in generated CUDA.

usage: check-identifiers.py TKC SOURCE.tk TARGET

The emitter's own names (loop counters, fragment helpers, launcher locals,
temporaries) must be reserved: a source value spelled like one would be
shadowed by it. To find every name the emitter introduces, the source is
compiled with each of its names renamed (`acc` -> `acc_zq`); in that
output every identifier (outside comments, string literals, inline assembly,
qualified names and members) must then be a renamed source name, a name a
pass gave a value (which the emitter declares through its table of names),
or reserved (tkc spells a source name of that spelling differently).
Prints each other identifier and exits 1.
"""
import os
import re
import subprocess
import sys
import tempfile

IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
MARK = "_zq"


def strip_cuda(text):
    # The wgmma wrappers are functions of their own, with no source name in
    # scope.
    text = re.sub(r"__device__ __forceinline__ void wgmma_.*?\n}\n", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"asm\s*(volatile\s*)?\((?:[^()]|\([^()]*\))*\)", "", text)
    text = re.sub(r'"(\\.|[^"\\])*"', "", text)
    text = re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)
    # Qualified names and members do not meet local names.
    return re.sub(r"(::|\.|->)\s*[A-Za-z_][A-Za-z0-9_]*", "", text)


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def ir_names(text):
    return set(re.findall(r"%([A-Za-z_][A-Za-z0-9_]*)", text))


def main():
    tkc, source, target = sys.argv[1:4]
    with open(source) as f:
        text = f.read()
    lowered = run([tkc, source, f"--target={target}", "--emit=ir", "--stop-after=lower", "-o", "-"])
    # Value names, and the compile-time parameters that the launcher takes.
    names = ir_names(lowered) | set(re.findall(r"\bwhere\s+([A-Za-z_][A-Za-z0-9_]*)", text))
    # Not after a dot: `block.x` names an axis, not a value.
    renamed = re.sub(r"(?<![.\w])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b",
                     lambda m: m.group(1) + MARK, text)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, os.path.basename(source))
        with open(path, "w") as f:
            f.write(renamed)
        cuda = run([tkc, path, f"--target={target}", "-o", "-"])
        given_by_passes = ir_names(run([tkc, path, f"--target={target}", "--emit=ir", "-o", "-"]))
        tokens = set(IDENT.findall(strip_cuda(cuda)))
        words = os.path.join(tmp, "words.txt")
        with open(words, "w") as f:
            f.write("\n".join(sorted(tokens | given_by_passes)) + "\n")
        spelled = dict(line.split() for line in run([tkc, "--spell-identifiers", words]).splitlines())
    # Pass-given names as the emitter spells them, with their versions.
    from_passes = {spelled[n] for n in given_by_passes}
    candidates = sorted(t for t in tokens if MARK not in t and re.sub(r"_[0-9]+$", "", t) not in from_passes)
    bad = [t for t in candidates if spelled.get(t, t) == t]
    for name in bad:
        print(f"{source} ({target}): the output declares or uses `{name}`, which a source name can be spelled as")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
