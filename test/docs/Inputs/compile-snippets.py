"""Compiles every ```tk block of a Markdown file with tkc, for each target.

Usage: compile-snippets.py MARKDOWN OUTDIR TARGET...

Each block is written to OUTDIR/NAME.tk, NAME being its first kernel's
name (or snippet-N without one), so that later RUN lines can use it. Prints
one `ok NAME TARGET` line per compile; exits 1 if any block fails to
compile (with tkc's diagnostics and the block's line in the Markdown) or if
the file has no ```tk block at all.
"""
import os
import re
import subprocess
import sys


def tk_blocks(text):
    """Yields (line number of the opening fence, source) of each ```tk block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```tk":
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            if i == len(lines):
                sys.exit(f"{start}: unterminated ```tk block")
            yield start, "\n".join(lines[start:i]) + "\n"
        i += 1


def main():
    markdown, outdir, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(markdown, encoding="utf-8") as f:
        blocks = list(tk_blocks(f.read()))
    if not blocks:
        sys.exit(f"{markdown}: no ```tk block")
    os.makedirs(outdir, exist_ok=True)
    failed = 0
    for n, (line, source) in enumerate(blocks, 1):
        kernel = re.search(r"^\s*kernel\s+(\w+)", source, re.MULTILINE)
        name = kernel.group(1) if kernel else f"snippet-{n}"
        path = os.path.join(outdir, name + ".tk")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        for target in targets:
            result = subprocess.run(["tkc", path, f"--target={target}", "-o", path[:-3] + f".{target}.cu"],
                                    capture_output=True, text=True)
            if result.returncode != 0 or result.stderr:
                print(f"{markdown}:{line}: the ```tk block does not compile cleanly for {target}:\n{result.stderr}")
                failed += 1
            else:
                print(f"ok {name} {target}")
    sys.exit(1 if failed else 0)


main()
