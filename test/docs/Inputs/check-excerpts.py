"""Checks that the code a Markdown page quotes is what the compiler printed.

Usage: check-excerpts.py MARKDOWN DIR

A fenced block right after a line `<!-- excerpt: FILE -->` quotes DIR/FILE.
A line of the block that is only `...` stands for lines left out; the
stretches between such lines must each appear in FILE as consecutive lines,
in the order the block gives them. A line that ends in `...` stands for
any line that starts with what comes before it (a long line cut short).
Lines compare without their leading and trailing blanks, and FILE's `#line`
directives are skipped, so a quote may be indented differently and leave
the directives out. Prints one
`ok excerpt FILE` line per block that matches; exits 1 if one does not
(with the first line not found) or if the page quotes nothing.
"""
import os
import re
import sys

MARKER = re.compile(r"^<!--\s*excerpt:\s*(\S+)\s*-->\s*$")


def excerpts(text):
    """Yields (line number of the fence, file name, quoted lines)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j == len(lines) or not lines[j].lstrip().startswith("```"):
            sys.exit(f"{i + 1}: an excerpt marker not followed by a fenced block")
        end = j + 1
        while end < len(lines) and not lines[end].lstrip().startswith("```"):
            end += 1
        if end == len(lines):
            sys.exit(f"{j + 1}: unterminated fenced block")
        yield j + 1, marker.group(1), lines[j + 1:end]


def stretches(quoted):
    """Splits the quoted lines at `...` lines into stretches of stripped lines."""
    current = []
    for line in quoted:
        if line.strip() == "...":
            if current:
                yield current
            current = []
        else:
            current.append(line.strip())
    if current:
        yield current


def same(printed, quoted):
    if quoted.endswith("...") and quoted != "...":
        return printed.startswith(quoted[:-3])
    return printed == quoted


def find(haystack, needle, start):
    """The index of the first occurrence of needle in haystack from start, or -1."""
    for i in range(start, len(haystack) - len(needle) + 1):
        if all(same(p, q) for p, q in zip(haystack[i:i + len(needle)], needle)):
            return i
    return -1


def main():
    markdown, folder = sys.argv[1], sys.argv[2]
    with open(markdown, encoding="utf-8") as f:
        blocks = list(excerpts(f.read()))
    if not blocks:
        sys.exit(f"{markdown}: no excerpt")
    failed = 0
    for line, name, quoted in blocks:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            printed = [l.strip() for l in f.read().split("\n") if not l.lstrip().startswith("#line ")]
        position = 0
        for stretch in stretches(quoted):
            found = find(printed, stretch, position)
            if found < 0:
                # The longest start of the stretch that is there says which
                # line differs.
                n = len(stretch) - 1
                while n > 0 and find(printed, stretch[:n], position) < 0:
                    n -= 1
                print(f"{markdown}:{line}: the excerpt of {name} is not what tkc printed: "
                      f"{stretch[n]!r} not found where the excerpt puts it")
                failed += 1
                break
            position = found + len(stretch)
        else:
            print(f"ok excerpt {name}")
    sys.exit(1 if failed else 0)


main()
